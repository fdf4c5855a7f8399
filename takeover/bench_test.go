package takeover

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/alchemic-studio/alfred/agents/claudecode"
	botrun "github.com/alchemic-studio/alfred/bot/run"
)

// BenchmarkWrite archives a session folder of 64 transcripts of 256 KiB
// (16 MiB), without secrets to scrub (the baseline: reading, tar, gzip)
// and with the dozen a bot holds, each found in every transcript:
//
//	go test -run '^$' -bench Write -count 6 ./takeover | benchstat -col /secrets -
func BenchmarkWrite(b *testing.B) {
	base := b.TempDir()
	dir, err := botrun.SessionStore{Base: base}.Ensure(mailbox, claudecode.ID, os.Getuid(), os.Getgid())
	if err != nil {
		b.Fatal(err)
	}
	var secrets []string
	for i := range 12 {
		secrets = append(secrets, fmt.Sprintf("secret-value-%02d-0123456789abcdef", i))
	}
	line := `{"type":"assistant","message":{"content":"` + strings.Repeat("the agent said something long ", 30) + secrets[3] + `"}}` + "\n"
	body := strings.Repeat(line, 256<<10/len(line))
	if err := os.MkdirAll(dir+"/-workspace", 0o700); err != nil {
		b.Fatal(err)
	}
	for i := range 64 {
		if err := os.WriteFile(fmt.Sprintf("%s/-workspace/%02d.jsonl", dir, i), []byte(body), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	l, _ := claudecode.New()
	s := Session{Mailbox: mailbox, Descriptor: l.Descriptor(), NativeID: "x"}
	for _, n := range []int{0, len(secrets)} {
		b.Run(fmt.Sprintf("secrets=%d", n), func(b *testing.B) {
			e := Exporter{Sessions: botrun.SessionStore{Base: base}, Secrets: func() []string { return secrets[:n] }}
			b.SetBytes(int64(64 * len(body)))
			for b.Loop() {
				if _, err := e.Write(context.Background(), io.Discard, s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
