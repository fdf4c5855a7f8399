package main

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/alchemic-studio/alfred/views"
)

// TestShutdownEndsLiveStreams: a request that lasts as long as a run (a live
// stream) ends when the server shuts down, so Shutdown does not wait for the
// run; before an engine is set no run is followed.
func TestShutdownEndsLiveStreams(t *testing.T) {
	var pages views.Deps
	follow := followRuns(&pages)
	if _, ok := pages.Live.Follow("any"); ok {
		t.Error("a run is followed without an engine")
	}

	started := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		close(started)
		<-pages.Stopping // as the live stream does, with the run's output
	})}
	follow.stopOn(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)

	resp, err := http.Get("http://" + ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a stream open: %v", err)
	}
}
