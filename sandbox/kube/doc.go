// Package kube owns the Kubernetes runner: a sandbox.Runner that runs each
// Spec as a fresh Pod of a cluster, reached through its API server only.
//
// The engine hands every runner the same Spec, whose worktree, session folder
// and credential files are paths on the bot's machine. The Kubernetes runner
// keeps that contract without shared storage: it copies the worktree, the
// session folder and stdin into the Pod (exec + tar through the API server,
// like kubectl cp) before the agent starts, the credentials as a Secret, and
// copies the worktree (when read-write) and the session folder back after the
// agent ended, however it ended. A Pod may therefore land on any node.
//
// The package owns the Pod and what goes with it for one run (a Secret for
// the credentials), their removal after the run, the one standing
// NetworkPolicy of the instance that denies all traffic to the Pods of the
// runs that ask for no network (netpol.go), and the removal of the leftovers
// of a bot that crashed (Cleanup). See README.md for the layout of
// the Pod and what differs from the Docker runner.
package kube
