package main

import (
	"net/http"
	"sync/atomic"

	"github.com/alchemic-studio/alfred/bot"
	"github.com/alchemic-studio/alfred/internal/live"
	"github.com/alchemic-studio/alfred/views"
)

// liveRuns lets the run pages follow the output of the engine's runs. The
// engine is made after the pages are registered: until it is set (and
// without a forge, for good) no run is followed, and the pages of runs in
// progress refresh themselves as they do without a live source.
type liveRuns struct {
	engine   atomic.Pointer[bot.Engine]
	stopping chan struct{}
}

// followRuns makes the pages follow the runs of the engine given later to set.
func followRuns(pages *views.Deps) *liveRuns {
	l := &liveRuns{stopping: make(chan struct{})}
	pages.Live, pages.Stopping = l, l.stopping
	return l
}

// Follow implements views.LiveRuns.
func (l *liveRuns) Follow(runID string) (*live.Output, bool) {
	if e := l.engine.Load(); e != nil {
		return e.Follow(runID)
	}
	return nil, false
}

// set is the engine whose runs are followed.
func (l *liveRuns) set(e *bot.Engine) { l.engine.Store(e) }

// stopOn ends the live streams when srv shuts down: Shutdown waits for the
// requests in flight, and a stream lasts as long as its run.
func (l *liveRuns) stopOn(srv *http.Server) {
	srv.RegisterOnShutdown(func() { close(l.stopping) })
}
