#!/bin/sh
# gitea.sh - a real Gitea for Alfred's forge tests (scripts/forgejo.sh is its
# twin for Forgejo; both are scripts/lib/forge.sh).
#
# Usage:
#   scripts/gitea.sh start   build Gitea from the Go module proxy (once: the binary is
#                            cached), start it on 127.0.0.1 with a fresh state, create
#                            the test accounts and repository, and print the
#                            variables the tests read
#   scripts/gitea.sh env     print those variables again (Gitea must be running)
#   scripts/gitea.sh stop    stop the Gitea this script started (by its pidfile PID)
#                            and delete the state folder (never the cache)
#   scripts/gitea.sh build   build into the cache unless it holds the build
#
# From a shell (a failed start must stop the chain: `eval "$(...)"` alone would
# hide it, since eval of nothing succeeds):
#   env=$(scripts/gitea.sh start) && eval "$env" && go test ./forges/...
# or read the env file it writes: $ALFRED_GITEA_STATE/env (KEY=VALUE lines).
#
# Only the printed `export` lines go to stdout; progress goes to stderr.
#
# The build: `go mod download` of code.gitea.io/gitea@v$VERSION, a writable copy of
# the module, `go build` with the sqlite tags (cgo: gcc is needed). It is cached
# with the options/ and templates/ folders of the module, which Gitea reads from
# disk (STATIC_ROOT_PATH) since it is built without bindata. The web UI's
# JavaScript and CSS are not built (that needs npm): the API, git over HTTP and
# the server-rendered pages work, the pages look bare.
#
# What start creates: an admin `gitea-admin`, the bot `alfred-bot` and a person
# `alice`, each with an access token of scope all, and the public repository
# alice/demo (an initial commit on main) where alfred-bot is an admin
# collaborator: Gitea lets only site admins and repository admins read another
# user's permission (GET .../collaborators/{user}/permission), which the bot
# needs to know who may steer it.
#
# Gitea refuses to run as root. As root this script runs it (and its admin
# commands) as the unprivileged system user alfred-gitea, created when missing;
# it does not use Gitea's undocumented I_AM_BEING_UNSAFE_RUNNING_AS_ROOT escape
# hatch. As another user, Gitea runs as that user.
#
# Environment:
#   ALFRED_GITEA_VERSION  Gitea version (default 1.27.3)
#   ALFRED_GITEA_CACHE    cache root; the build goes to $ALFRED_GITEA_CACHE/$VERSION
#                         (default /var/cache/alfred/gitea)
#   ALFRED_GITEA_STATE    state folder: config, database, repositories, logs
#                         (default /tmp/alfred-test-gitea)
#   ALFRED_GITEA_PORT     HTTP port on 127.0.0.1 (default: a free one)
#   ALFRED_GITEA_WAIT     seconds to wait for Gitea to answer (default 120)
set -eu

FORGE=gitea
TITLE=Gitea
VERSION=${ALFRED_GITEA_VERSION:-1.27.3}
VERSION=${VERSION#v}
MODULE=code.gitea.io/gitea@v$VERSION
SOURCE="$MODULE (the Go module proxy)"
CACHE=${ALFRED_GITEA_CACHE:-/var/cache/alfred/gitea}/$VERSION
OPT=ALFRED_GITEA
TEST_PREFIX=ALFRED_TEST_GITEA
RUN_AS=alfred-gitea
LDFLAGS="-s -w -X main.Version=$VERSION -X 'main.Tags=sqlite sqlite_unlock_notify'"
GOFLAGS_EXTRA=

# fetch_source DIR: the module from the proxy, copied writable to DIR/src.
fetch_source() {
	go mod download -json "$MODULE" >"$1/module.json" 2>>"$BUILD_LOG" ||
		{ cat "$1/module.json" >>"$BUILD_LOG"; die "build of $MODULE failed: download; see $BUILD_LOG"; }
	dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p' "$1/module.json")
	[ -d "$dir" ] || die "build of $MODULE failed: no module folder in the answer of go mod download: $(cat "$1/module.json")"
	# The module cache is read-only: build in a writable copy.
	cp -R "$dir" "$1/src" || die "build of $MODULE failed: copy of $dir"
	chmod -R u+w "$1/src" || die "build of $MODULE failed: chmod of its copy"
}

# shellcheck source-path=SCRIPTDIR source=lib/forge.sh
. "$(dirname "$0")/lib/forge.sh"
forge_main "$@"
