// Package agents owns what talks to a model: the Adapter contract, one
// sub-package per coding-agent CLI (claudecode, codex, opencode, copilot,
// gemini, grok), the API adapter, the fake adapter for engine tests, the shared
// local-agent flow with session resume and silent fallback, and detection of
// installed CLIs.
//
// The engine calls Adapter.Run with a Request (prompt, phase, provider,
// model, timeout, the base sandbox.Spec, the Runner, and an optional
// SessionRef) and records the Result in an llm_session.
//
// A local CLI package declares one Descriptor (id, executable, verified
// range, version command and parser, session state path, worktree files,
// environment allowlist and fixed variables, whether the prompt goes to
// stdin, whether the CLI takes a caller-chosen session id, and how it runs
// sealed behind the model gateway: Sealed), which the shared code reads, and
// implements CLI with only what differs per CLI: argv per Mode, the output
// parser and the resume-failure classifier (helped by JSONLines,
// AnyJSONLine, LastJSONLine, ErrorText and FirstLine). It gets its
// Adapter from NewLocal, which runs the shared flow (see Local.Run): no SessionRef means exactly the
// run without the feature; a resume that fails for a reason the CLI's
// classifier recognises is re-run once, fresh, under the same name, within
// what is left of the timeout; the fallback is reported in the Result only.
// agents/fake is a complete worked example; agents/claudecode and
// agents/codex are real ones, with their tests against the real binaries
// (agents/internal/clitest) and the loopback mock model (agents/mockllm).
// The tests every CLI goes through are one table, agents/clis_test.go: its
// descriptor, and with the real binary its version, a missing session, and
// a sealed run (clitest.Sealed: the forwarder, a gateway whose provider is
// the mock, a prompt injection refused).
//
// A CLI that resumes also reads its sessions back (TranscriptReader, in
// its package's transcript.go): ReadTranscript turns what the CLI kept in
// the mailbox's session folder into one list of Steps, the same for every
// CLI (prompt, answer, tool call and result, file edit, other), tested on
// real transcripts recorded with the CLI and the mock model (testdata/
// transcript, `go test ./agents/<cli> -run TestRealTranscript -record`).
//
// Every CLI also decodes what it prints on stdout as it works, one event a
// line, into the same Steps (StreamDecoder, in its package's stream.go;
// Local.DecodeLine): the run page shows them live, and the stall watchdog
// takes a CLI that streams as one that reports its progress
// (Local.ReportsProgress; ProgressReporter for a CLI that prints only at
// its end, as Grok does). Parse reads the final result from the same
// stream. Decoders never fail: a line that is no event is text.
//
// Detect runs each CLI's version command through a Runner and reports an
// Installation; DetectCommand prints them for `alfred agents detect`. A
// Detector keeps them recorded while the server runs (at start, on a
// schedule, on request: the agents screen's button or SIGHUP, which
// NotifyRefresh and ForwardRefresh turn into a request), and a Refresher is
// `alfred agents detect --refresh`, which asks the server holding the state
// store (HangUp) or records itself. Both keep Records behind two small
// interfaces, Records and SharedRecords, which the wiring adapts the state
// store to: agents imports no store.
//
// It never imports bot, forges, state or views: an adapter knows the CLI and
// the sandbox, not the forge or records (the detection loop records
// through Records, which the root package adapts the store to).
package agents
