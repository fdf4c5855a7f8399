// Package agents owns what talks to a model: the Adapter contract, one
// sub-package per coding-agent CLI (claudecode, codex, opencode, copilot,
// gemini, grok), the API adapter, the fake adapter for engine tests, the shared
// local-agent flow with session resume and silent fallback, and detection of
// installed CLIs.
package agents
