// Package fakeforge holds what the importable fake forges (forgejotest,
// gitlabtest) share: a git host serving a bare repository over smart HTTP
// with the real git (GitHost), an ordered webhook sender that records each
// delivery (Sender), and small helpers for webhook bodies and headers. What
// differs between forges (payload shapes, header names, auth rules, URL
// layout) stays in each fake.
package fakeforge
