package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// Benchmarks compare the store with SQLite (modernc.org/sqlite, WAL,
// synchronous=FULL, the same JSON records in a table keyed by path) in the
// same run. Fixtures are built once per process in a temporary folder that
// TestMain removes.

var (
	fixtureMu   sync.Mutex
	fixtureDirs = map[string]string{}
	fixtureRoot string
)

func removeFixtures() {
	if fixtureRoot != "" {
		os.RemoveAll(fixtureRoot)
	}
}

// fixtureRecords returns n records shaped like the bot's: per mailbox one
// mailbox, two runs and two llm sessions, over 20 projects.
func fixtureRecords(n int, put func(path string, v any) error) error {
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for i := 0; i*5 < n; i++ {
		m := benchMailbox(i)
		m.ID = m.Key().ID()
		m.FormatVersion = FormatVersion
		if err := put(m.Key().dir()+"/mailbox.json", &m); err != nil {
			return err
		}
		for j := range 2 {
			r := Run{FormatVersion: FormatVersion, ID: fmt.Sprintf("run-%d-%d", i, j), MailboxID: m.ID, Phase: "development",
				Runner: "image", AdapterID: "claude-code", Status: RunSucceeded, CreatedAt: t0.Add(time.Duration(j) * time.Hour),
				Outcome: "pushed 3 commits", Log: "agent output\n"}
			p, _ := runPath(m.ID, r.ID)
			if err := put(p, &r); err != nil {
				return err
			}
			ls := LLMSession{FormatVersion: FormatVersion, ID: fmt.Sprintf("ls-%d-%d", i, j), RunID: r.ID, MailboxID: m.ID,
				AdapterID: "claude-code", Provider: "anthropic", Model: "sonnet", InputTokens: 12000, OutputTokens: 800,
				CostUSD: 0.042, DurationMS: 61000, Outcome: "ok", SessionName: ptr("agent/issue-1-x"),
				NativeSessionID: ptr(fmt.Sprintf("native-%d-%d", i, j)), Resumed: j > 0, CreatedAt: r.CreatedAt}
			p, _ = sessionPath(m.ID, ls.ID)
			if err := put(p, &ls); err != nil {
				return err
			}
		}
	}
	return nil
}

func benchMailbox(i int) Mailbox {
	m := testMailbox(int64(i/20 + 1))
	m.Project = fmt.Sprintf("p%02d", i%20)
	return m
}

func fixtureDir(b *testing.B, kind string, n int) string {
	b.Helper()
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	key := fmt.Sprintf("%s-%d", kind, n)
	if d := fixtureDirs[key]; d != "" {
		return d
	}
	if fixtureRoot == "" {
		var err error
		if fixtureRoot, err = os.MkdirTemp("", "alfred-state-bench-"); err != nil {
			b.Fatal(err)
		}
	}
	dir := filepath.Join(fixtureRoot, key)
	start := time.Now()
	switch kind {
	case "git":
		s, err := Open(context.Background(), dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		// One commit of n records, as a bulk import would make.
		err = s.Update(context.Background(), func(tx *Tx) error {
			return fixtureRecords(n, tx.putTyped)
		})
		if err == nil {
			err = s.Close()
		}
		if err != nil {
			b.Fatal(err)
		}
	case "sqlite":
		db := openSQLite(b, dir)
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		err = fixtureRecords(n, func(path string, v any) error {
			raw, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				return err
			}
			_, err = tx.Exec(`INSERT INTO records(path, data) VALUES(?, ?)`, path, raw)
			return err
		})
		if err == nil {
			err = tx.Commit()
		}
		if err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
	b.Logf("built %s fixture of %d records in %v", kind, n, time.Since(start))
	fixtureDirs[key] = dir
	return dir
}

func openSQLite(b *testing.B, dir string) *sql.DB {
	b.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "state.db")+
		"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1) // one writer: SQLite serializes writes anyway
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS records(path TEXT PRIMARY KEY, data BLOB NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	return db
}

func sqliteUpsert(db *sql.DB, path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = db.Exec(`INSERT INTO records(path, data) VALUES(?, ?) ON CONFLICT(path) DO UPDATE SET data = excluded.data`, path, append(raw, '\n'))
	return err
}

// cpuTime returns the CPU time (user and system) this process used so far.
// Benchmarks report it per operation next to ns/op: the machines running
// them are shared, and wall time there is mostly waiting for a CPU.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}

var sizes = []struct {
	name string
	n    int
}{{"1k", 1_000}, {"10k", 10_000}, {"100k", 100_000}}

// BenchmarkWrite: one durable transaction rewriting one mailbox record.
func BenchmarkWrite(b *testing.B) {
	for _, size := range sizes {
		b.Run("records="+size.name+"/store=git", func(b *testing.B) {
			s, err := Open(context.Background(), fixtureDir(b, "git", size.n), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			mailboxes := size.n / 5
			runtime.GC() // collect the setup's garbage outside the measurement
			b.ResetTimer()
			cpu := cpuTime()
			for i := 0; b.Loop(); i++ {
				m := benchMailbox(i % mailboxes)
				m.LLMRetries = i
				if err := s.Update(context.Background(), func(tx *Tx) error { return tx.PutMailbox(m) }); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
		b.Run("records="+size.name+"/store=sqlite", func(b *testing.B) {
			db := openSQLite(b, fixtureDir(b, "sqlite", size.n))
			defer db.Close()
			mailboxes := size.n / 5
			runtime.GC() // collect the setup's garbage outside the measurement
			b.ResetTimer()
			cpu := cpuTime()
			for i := 0; b.Loop(); i++ {
				m := benchMailbox(i % mailboxes)
				m.LLMRetries = i
				m.FormatVersion, m.ID, m.UpdatedAt = FormatVersion, m.Key().ID(), now()
				if err := sqliteUpsert(db, m.Key().dir()+"/mailbox.json", &m); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkConcurrentWrite: 8 writers each rewriting their own mailboxes;
// the store may batch them into one commit. ns/op is per transaction.
func BenchmarkConcurrentWrite(b *testing.B) {
	const n = 10_000
	b.Run("writers=8/store=git", func(b *testing.B) {
		s, err := Open(context.Background(), fixtureDir(b, "git", n), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		var next atomic.Int64
		b.SetParallelism(max(1, 8/runtimeProcs()))
		runtime.GC()
		b.ResetTimer()
		cpu := cpuTime()
		defer func() { reportCPU(b, cpu) }()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := int(next.Add(1))
				m := benchMailbox(i % (n / 5))
				m.LLMRetries = i
				if err := s.Update(context.Background(), func(tx *Tx) error { return tx.PutMailbox(m) }); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("writers=8/store=sqlite", func(b *testing.B) {
		db := openSQLite(b, fixtureDir(b, "sqlite", n))
		defer db.Close()
		var next atomic.Int64
		b.SetParallelism(max(1, 8/runtimeProcs()))
		runtime.GC()
		b.ResetTimer()
		cpu := cpuTime()
		defer func() { reportCPU(b, cpu) }()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := int(next.Add(1))
				m := benchMailbox(i % (n / 5))
				m.LLMRetries = i
				m.FormatVersion, m.ID, m.UpdatedAt = FormatVersion, m.Key().ID(), now()
				if err := sqliteUpsert(db, m.Key().dir()+"/mailbox.json", &m); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkOpen: Open (read the tip with go-git, decode and index every
// record) and Close of a store holding 100k records.
func BenchmarkOpen(b *testing.B) {
	dir := fixtureDir(b, "git", 100_000)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	defer func() { reportCPU(b, cpu) }()
	for b.Loop() {
		s, err := Open(context.Background(), dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if s.Len() < 100_000 {
			b.Fatalf("%d records", s.Len())
		}
		s.Close()
	}
}

// BenchmarkPriorSession: the resolver's lookup of the latest llm session of
// a mailbox for an adapter with a native id, in a 100k-record store.
func BenchmarkPriorSession(b *testing.B) {
	s, err := Open(context.Background(), fixtureDir(b, "git", 100_000), Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, 1024)
	for i := range ids {
		ids[i] = benchMailbox(i * 17 % 20_000).Key().ID()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		ls, found, err := s.PriorSession(ids[i%len(ids)], "claude-code", "")
		if err != nil || !found || ls.NativeSessionID == nil {
			b.Fatalf("PriorSession = %v %v", found, err)
		}
	}
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
