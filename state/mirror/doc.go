// Package mirror owns the copy of Alfred's state branch on a remote git
// repository (ALFRED_STATE_REMOTE): it restores an empty state directory
// from the remote, refuses to go on when the remote has commits the local
// branch lacks (another process wrote there), and pushes the branch in the
// background after each commit batch (with the state journal, after each
// fold: writes not folded yet are not on the branch, and are not pushed),
// with compare-and-swap on the remote ref (each push states the commit it
// expects to replace), retried with a capped, jittered backoff. A push never blocks the store's writes; how far
// the remote is behind is in Status.
//
// It drives the git CLI. Credentials travel in the environment of each git
// command (an http.extraHeader through GIT_CONFIG_*), never on its argv, in
// a file or in a log; URLs are shown without their userinfo, and errors are
// scrubbed of the password.
//
// The last tip pushed to a remote is kept in {state dir}/alfred-mirror.json,
// so that a remote left exactly as this directory last pushed it is
// recognised as its own even when the local history was rewritten since
// (`alfred state compact`).
package mirror
