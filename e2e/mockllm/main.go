// Command mockllm serves agents/mockllm on a loopback address, for the
// end-to-end test image: it runs inside the agent's container (network none),
// beside the agent CLI, and answers every model request with one reply, or,
// with -write-dir, first with the Write of a new file where the prompt asks
// for changes.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/alchemic-studio/alfred/agents/mockllm"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4000", "listen address")
	reply := flag.String("reply", "ok", "the assistant's reply")
	delay := flag.Duration("delay", 0, "hold every answer back this long")
	ready := flag.String("ready", "", "file to create once listening")
	writeDir := flag.String("write-dir", "", "edit files like a coding agent: a Write tool use of a new file in this folder")
	readOnly := flag.String("read-only-phrase", "", "no file edit for a prompt with this phrase")
	resolve := flag.String("resolve-phrase", "", "for a prompt with this phrase, rewrite the first file listed after it")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mockllm:", err)
		os.Exit(1)
	}
	if *ready != "" {
		if err := os.WriteFile(*ready, nil, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "mockllm:", err)
			os.Exit(1)
		}
	}
	h := mockllm.Handler(mockllm.Options{Reply: *reply, Delay: *delay, WriteDir: *writeDir, ReadOnlyPhrase: *readOnly, ResolvePhrase: *resolve})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "mockllm:", err)
		os.Exit(1)
	}
}
