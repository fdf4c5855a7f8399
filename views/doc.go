// Package views owns Alfred's HTTP surface for people and probes: the health
// endpoints, the home page, and the run, mailbox, agents and outcomes pages rendered from
// embedded html/templates, with a small JSON API for the same data.
//
// Access. With sign-in configured (a forge's OAuth2 application, with PKCE
// S256: the code_verifier stays in the encrypted state cookie), a project's
// pages, live streams and JSON are for the people who may read the project
// on its forge, and for anyone when the project is public. The check comes
// first, from the project of the record (read from the path, or for a run
// from the run's record, which is all a run id tells), before anything else
// of the record is loaded. What a visitor may not read is answered as what
// does not exist (hidden.go): 404, with the same headers and bytes for a
// missing record, a private one seen anonymously and one seen signed in
// without access; the answer offers the sign-in when it is configured.
//
// /config is for the admins (ALFRED_ADMINS: "login" on any forge signed in
// on, or "forge:login"), signed in; anyone else gets the same 404. Without
// sign-in (no forge, or no forge with an OAuth2 application, as under `make
// run`), it answers only requests from a loopback address that no proxy
// forwarded (no Forwarded, X-Forwarded-For, X-Forwarded-Host or X-Real-Ip
// header): a reverse proxy on the same host then sees a 404 too.
//
// It never imports bot or agents: the root package adapts what the pages
// read (Deps).
package views
