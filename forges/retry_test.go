package forges

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"7", 7 * time.Second, true},
		{" 0 ", 0, true},
		{"-3", 0, false},
		{"Mon, 30 Nov 2026 09:00:30 GMT", 30 * time.Second, true},
		{"Mon, 30 Nov 2026 08:59:00 GMT", 0, true}, // in the past: now
		{"soon", 0, false},
	}
	for _, tt := range tests {
		if got, ok := RetryAfter(tt.v, now); got != tt.want || ok != tt.ok {
			t.Errorf("RetryAfter(%q) = %v %v, want %v %v", tt.v, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSleepEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); err != context.Canceled {
		t.Errorf("Sleep on a canceled context = %v", err)
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep = %v", err)
	}
}

func TestCancelOnClose(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	body := CancelOnClose(io.NopCloser(strings.NewReader("x")), cancel)
	if ctx.Err() != nil {
		t.Fatal("canceled before the body was closed")
	}
	body.Close()
	if ctx.Err() == nil {
		t.Error("closing the body did not release the attempt")
	}
}
