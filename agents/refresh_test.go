package agents

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRefreshThroughTheServer: with the records held by a server, --refresh
// signals the holder, waits for a detection recorded after its request and
// prints it; records older than the request do not answer it.
func TestRefreshThroughTheServer(t *testing.T) {
	st := &memRecords{held: true, pid: 4242} // the "server"'s
	old := claude
	old.Version = "2.1.150"
	if err := RecordFound(context.Background(), st, []Installation{old}, time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	newTestRefresher := func(signal func(int) error) Refresher {
		return Refresher{Store: st, Runner: "image", Image: "alfred-agent:1", Log: slog.New(slog.DiscardHandler),
			Detect: func(context.Context) []Installation {
				t.Error("detected itself while a server holds the store")
				return nil
			},
			Signal: signal, Poll: 10 * time.Millisecond}
	}

	t.Run("the server detects", func(t *testing.T) {
		var signalled int
		serverDone := make(chan error, 1)
		r := newTestRefresher(func(pid int) error {
			signalled = pid
			go func() {
				serverDone <- RecordFound(context.Background(), st, []Installation{claude}, time.Now())
			}()
			return nil
		})
		var out bytes.Buffer
		if err := r.Run(context.Background(), &out); err != nil {
			t.Fatal(err)
		}
		if err := <-serverDone; err != nil {
			t.Fatal(err)
		}
		if signalled != st.pid {
			t.Errorf("signalled pid %d, want the holder %d", signalled, st.pid)
		}
		if !strings.Contains(out.String(), "2.1.197") || strings.Contains(out.String(), "2.1.150") {
			t.Errorf("printed:\n%s\nwant the new detection only", out.String())
		}
	})

	failures := []struct {
		name   string
		signal func(int) error
		want   string
	}{
		{"the signal fails", func(int) error { return errors.New("send SIGHUP: operation not permitted") },
			"ask the server holding the state store (pid "},
		{"the server records nothing", func(int) error { return nil }, "recorded no detection within"},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRefresher(tt.signal)
			r.Wait = 100 * time.Millisecond
			err := r.Run(context.Background(), &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestRecordRoundTrip: a record says why a CLI there but failing does not
// start, and turns back into the installation detected, as printed.
func TestRecordRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	broken := Installation{AdapterID: "gemini", Runner: "image", Image: "alfred-agent:1", VerifiedRange: ">=0.1.0",
		Reason: ReasonBroken, Error: "gemini --version exited 1: SyntaxError"}
	for _, in := range []Installation{claude, broken} {
		rec := in.Record(at)
		if !rec.DetectedAt.Equal(at) {
			t.Errorf("%s detected at %s, want %s", in.AdapterID, rec.DetectedAt, at)
		}
		if got := rec.Installation(in.VerifiedRange); got != in {
			t.Errorf("%s: record %+v turns back into %+v, want %+v", in.AdapterID, rec, got, in)
		}
	}
	if r := broken.Record(at).Reason; r != "installed but does not start: gemini --version exited 1: SyntaxError" {
		t.Errorf("broken recorded as %q", r)
	}
}
