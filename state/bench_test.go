package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"
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

// keepFixtures, when set, is where the fixtures are built and kept across
// runs: a year already built there is opened, not written again.
var keepFixtures = flag.String("state.keep", "", "build the benchmarks' fixtures in this folder and keep them; BenchmarkScale reuses a year built there")

// benchRoot returns the folder of the fixtures, made on first use; the
// caller holds fixtureMu.
func benchRoot() (string, error) {
	if fixtureRoot == "" && *keepFixtures != "" {
		if err := os.MkdirAll(*keepFixtures, 0o755); err != nil {
			return "", err
		}
		fixtureRoot = *keepFixtures
	}
	if fixtureRoot == "" {
		d, err := os.MkdirTemp("", "alfred-state-bench-")
		if err != nil {
			return "", err
		}
		fixtureRoot = d
	}
	return fixtureRoot, nil
}

func removeFixtures() {
	if fixtureRoot != "" && *keepFixtures == "" {
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
	if _, err := benchRoot(); err != nil {
		b.Fatal(err)
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

var bench1M = flag.Bool("state.1m", false, "BenchmarkWrite also at 1M records (its fixtures take minutes and about 2 GB), BenchmarkScale at 1M instead of 100k")

// storeKinds are the store's write paths the write benchmarks compare:
// a commit per batch (the default), and the journal (Options.Journal).
var storeKinds = []struct {
	name string
	opts Options
}{{"git", Options{}}, {"journal", Options{Journal: true}}}

// BenchmarkWrite: one durable transaction rewriting one mailbox record.
func BenchmarkWrite(b *testing.B) {
	all := sizes
	if *bench1M {
		all = append(slices.Clip(all), struct {
			name string
			n    int
		}{"1M", 1_000_000})
	}
	for _, size := range all {
		for _, kind := range storeKinds {
			b.Run("records="+size.name+"/store="+kind.name, func(b *testing.B) {
				s, err := Open(context.Background(), fixtureDir(b, "git", size.n), kind.opts)
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
		}
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

// BenchmarkWriteFloor: what a lone durable write costs the file system at
// least, with the bytes of one commit of BenchmarkWrite at 10k records (its
// pack and its index). store=append appends them to one open file and
// fdatasyncs it: SQLite's WAL does no less. store=gitproto makes the files
// a git commit needs, with no store logic: the pack created, its index
// created and renamed into place, the pack fsynced, the ref's lock created and renamed over the ref, the
// ref's folder fsynced, and the pack and index removed as a merge later
// removes them.
func BenchmarkWriteFloor(b *testing.B) {
	pack, idx := commitBytes(b)
	b.Run("store=append", func(b *testing.B) {
		f, err := os.OpenFile(filepath.Join(b.TempDir(), "wal"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		b.ResetTimer()
		cpu := cpuTime()
		for b.Loop() {
			if _, err := f.Write(pack); err != nil {
				b.Fatal(err)
			}
			if _, err := f.Write(idx); err != nil {
				b.Fatal(err)
			}
			if err := syscall.Fdatasync(int(f.Fd())); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, cpu)
	})
	b.Run("store=gitproto", func(b *testing.B) {
		dir := b.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "ref"), []byte("x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		cpu := cpuTime()
		for i := 0; b.Loop(); i++ {
			if err := gitProtoWrite(dir, i, pack, idx); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, cpu)
	})
}

// gitProtoWrite makes the files of commit i as writeCommitPack and moveRef
// do, then removes the pack and its index.
func gitProtoWrite(dir string, i int, pack, idx []byte) error {
	base := filepath.Join(dir, fmt.Sprintf("pack-%d", i))
	fd, err := createFile(base+".pack", pack, 0o444)
	if err != nil {
		return err
	}
	xfd, err := replaceFile(base+".idx", idx, 0o444)
	if err != nil {
		unix.Close(fd)
		return err
	}
	unix.Close(xfd)
	err = fsyncFD(fd, base+".pack")
	unix.Close(fd)
	if err != nil {
		return err
	}
	lfd, err := createFile(filepath.Join(dir, "ref.lock"), []byte(plumbing.ZeroHash.String()+"\n"), 0o644)
	if err != nil {
		return err
	}
	unix.Close(lfd)
	if err := unix.Rename(filepath.Join(dir, "ref.lock"), filepath.Join(dir, "ref")); err != nil {
		return err
	}
	if err := syncDirFD(dir); err != nil {
		return err
	}
	if err := unix.Unlink(base + ".idx"); err != nil {
		return err
	}
	return unix.Unlink(base + ".pack")
}

// commitBytes returns the pack and the index of one BenchmarkWrite commit
// at 10k records, made in a copy of its fixture.
func commitBytes(b *testing.B) (pack, idx []byte) {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "state")
	if err := os.CopyFS(dir, os.DirFS(fixtureDir(b, "git", 10_000))); err != nil {
		b.Fatal(err)
	}
	s, err := Open(context.Background(), dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	m := benchMailbox(7)
	m.LLMRetries = -1
	if err := s.Update(context.Background(), func(tx *Tx) error { return tx.PutMailbox(m) }); err != nil {
		b.Fatal(err)
	}
	s.packMu.Lock()
	name := s.packs[len(s.packs)-1].name
	s.packMu.Unlock()
	base := filepath.Join(packDir(dir), name)
	if pack, err = os.ReadFile(base + ".pack"); err == nil {
		idx, err = os.ReadFile(base + ".idx")
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("one commit: pack %d bytes, index %d bytes", len(pack), len(idx))
	return pack, idx
}

// BenchmarkConcurrentWrite: 8 and 32 writers, each transaction rewriting
// one mailbox (a different one each time); the store batches concurrent
// transactions into one commit (group commit), SQLite serializes them on
// its one writer connection. Each writer returns only once its record is
// durable. ns/op is per transaction: throughput is its inverse.
func BenchmarkConcurrentWrite(b *testing.B) {
	const n = 10_000
	for _, writers := range []int{8, 32} {
		for _, kind := range storeKinds {
			b.Run(fmt.Sprintf("writers=%d/store=%s", writers, kind.name), func(b *testing.B) {
				var commits atomic.Int64
				opts := kind.opts
				opts.Observe = func(time.Duration, error) { commits.Add(1) }
				s, err := Open(context.Background(), fixtureDir(b, "git", n), opts)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				runWriters(b, writers, func(i int) error {
					m := benchMailbox(i % (n / 5))
					m.LLMRetries = i
					return s.Update(context.Background(), func(tx *Tx) error { return tx.PutMailbox(m) })
				})
				// How many transactions a commit (or a journal frame, or a fold) carried.
				b.ReportMetric(float64(b.N)/float64(max(1, commits.Load())), "tx/commit")
			})
		}
		b.Run(fmt.Sprintf("writers=%d/store=sqlite", writers), func(b *testing.B) {
			db := openSQLite(b, fixtureDir(b, "sqlite", n))
			defer db.Close()
			runWriters(b, writers, func(i int) error {
				m := benchMailbox(i % (n / 5))
				m.LLMRetries = i
				m.FormatVersion, m.ID, m.UpdatedAt = FormatVersion, m.Key().ID(), now()
				return sqliteUpsert(db, m.Key().dir()+"/mailbox.json", &m)
			})
		})
	}
}

// runWriters runs b.N calls of write, numbered from 1, on writers goroutines.
func runWriters(b *testing.B, writers int, write func(i int) error) {
	var next atomic.Int64
	runtime.GC()
	b.ResetTimer()
	cpu := cpuTime()
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)); i <= b.N; i = int(next.Add(1)) {
				if err := write(i); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	reportCPU(b, cpu)
}

// BenchmarkOpen: a cold open of 100k records. The store reads the tip's
// trees and blobs from its packs, decodes every record and builds its
// indexes; SQLite, for reference, opens its database and reads and decodes
// every record into the same typed values, without indexes.
func BenchmarkOpen(b *testing.B) {
	const n = 100_000
	b.Run("records=100k/store=git", func(b *testing.B) {
		dir := fixtureDir(b, "git", n)
		runtime.GC()
		b.ReportAllocs()
		b.ResetTimer()
		cpu := cpuTime()
		for b.Loop() {
			s, err := Open(context.Background(), dir, Options{})
			if err != nil {
				b.Fatal(err)
			}
			if s.Len() < n {
				b.Fatalf("%d records", s.Len())
			}
			s.Close()
		}
		reportCPU(b, cpu)
	})
	b.Run("records=100k/store=sqlite", func(b *testing.B) {
		dir := fixtureDir(b, "sqlite", n)
		runtime.GC()
		b.ReportAllocs()
		b.ResetTimer()
		cpu := cpuTime()
		for b.Loop() {
			if got := sqliteLoadAll(b, dir); got < n {
				b.Fatalf("%d records", got)
			}
		}
		reportCPU(b, cpu)
	})
}

// sqliteLoadAll opens the SQLite fixture and decodes every record.
func sqliteLoadAll(b *testing.B, dir string) int {
	db := openSQLite(b, dir)
	defer db.Close()
	rows, err := db.Query(`SELECT path, data FROM records`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	all := map[string]any{}
	for rows.Next() {
		var path string
		var raw []byte
		if err := rows.Scan(&path, &raw); err != nil {
			b.Fatal(err)
		}
		v, err := decodeRecord(path, raw)
		if err != nil {
			b.Fatal(err)
		}
		all[path] = v
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return len(all)
}

// BenchmarkRSS: a fresh process (this test binary, in the role rssChild)
// opening the 100k-record store, as the bot does when it starts: its
// resident memory idle and then holding the store (both after a garbage
// collection returned what it could to the system), the live heap the
// store holds, and the cold open's time and CPU.
func BenchmarkRSS(b *testing.B) {
	dir := fixtureDir(b, "git", 100_000)
	var idle, open, heap, ms, cpuMS float64
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = childEnv(dir, false)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("rss child: %v\n%s", err, out)
		}
		if _, err := fmt.Sscanf(string(out), "idle %g open %g heap %g ms %g cpu %g", &idle, &open, &heap, &ms, &cpuMS); err != nil {
			b.Fatalf("rss child said %q: %v", out, err)
		}
	}
	b.ReportMetric(idle, "rss-idle-MiB")
	b.ReportMetric(open, "rss-100k-MiB")
	b.ReportMetric(heap, "heap-100k-MiB")
	b.ReportMetric(ms, "open-ms")
	b.ReportMetric(cpuMS, "open-cpu-ms")
}

const (
	rssChildEnv    = "ALFRED_STATE_RSS_CHILD"
	rssWritableEnv = "ALFRED_STATE_RSS_WRITABLE" // "1": open writable, as the bot does
	rssProfileEnv  = "ALFRED_STATE_RSS_HEAP"     // a file: the child writes its heap profile there
	rssCPUEnv      = "ALFRED_STATE_RSS_CPU"      // a file: the child writes its Open's CPU profile there
	rssNoCkEnv     = "ALFRED_STATE_RSS_NO_CK"    // "1": the child reads every record, not the open checkpoint
)

var (
	heapProfile = flag.String("state.heapprofile", "", "BenchmarkRSS and BenchmarkScale: the fresh process writes its heap profile with the store open to this file")
	cpuProfile  = flag.String("state.cpuprofile", "", "BenchmarkRSS and BenchmarkScale: the fresh process writes its Open's CPU profile to this file")
)

// childEnv is the environment of an rssChild opening dir.
func childEnv(dir string, writable bool) []string {
	env := append(os.Environ(), rssChildEnv+"="+dir)
	if writable {
		env = append(env, rssWritableEnv+"=1")
	}
	if *heapProfile != "" {
		env = append(env, rssProfileEnv+"="+*heapProfile)
	}
	if *cpuProfile != "" {
		env = append(env, rssCPUEnv+"="+*cpuProfile)
	}
	return env
}

// rssChild prints its resident memory idle and with the store at dir open,
// and how long the open took.
func rssChild(dir string) {
	useCheckpoint = os.Getenv(rssNoCkEnv) != "1"
	idle := settledRSS()
	stopCPU := startCPUProfile(os.Getenv(rssCPUEnv))
	start, cpu := time.Now(), cpuTime()
	s, err := Open(context.Background(), dir, Options{ReadOnly: os.Getenv(rssWritableEnv) != "1"})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	took, cpuTook := time.Since(start), cpuTime()-cpu
	stopCPU()
	open := settledRSS()
	if path := os.Getenv(rssProfileEnv); path != "" {
		if err := writeHeapProfile(path); err != nil {
			fmt.Println("heap profile:", err)
			os.Exit(2)
		}
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	fmt.Printf("idle %.1f open %.1f heap %.1f ms %.1f cpu %.1f\n", idle, open, float64(m.HeapAlloc)/(1<<20),
		float64(took)/float64(time.Millisecond), float64(cpuTook)/float64(time.Millisecond))
	runtime.KeepAlive(s)
}

// startCPUProfile starts a CPU profile to path (none when empty) and
// returns what stops it.
func startCPUProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Println("cpu profile:", err)
		os.Exit(2)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// settledRSS collects garbage, returns free memory to the system and reads
// VmRSS in MiB.
func settledRSS() float64 {
	runtime.GC()
	debug.FreeOSMemory()
	raw, _ := os.ReadFile("/proc/self/status")
	for line := range strings.Lines(string(raw)) {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
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
