package bot

import (
	"sync"
	"time"
)

// The engine's parts besides the lifecycle (bot/lifecycle, handle.go,
// outcome.go): what comes in, and what runs.

// intake is the way in (inbox.go): the durable journal an event is written
// to before its webhook is answered, the redelivery filter, and the records
// of handled events, written in batches (flushLoop).
type intake struct {
	journal *journal

	seenMu sync.Mutex
	seen   map[string]time.Time // delivery ids recorded, with when they came

	finMu     sync.Mutex
	finished  []finished    // handled events waiting for their record
	flushing  []finished    // the batch being written
	flushNow  chan struct{} // a full batch
	stopFlush chan struct{}
	flushed   chan struct{} // flushLoop is done
}

// registry is the run side of the mailbox workers (execute.go): the runs
// launched and not yet ended, by id, the slots that bound how many execute
// at once, and the wait for them when the engine closes.
type registry struct {
	slots   chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	running map[string]*liveRun
}
