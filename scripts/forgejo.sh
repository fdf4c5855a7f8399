#!/bin/sh
# forgejo.sh - a real Forgejo for Alfred's forge tests: scripts/gitea.sh's
# twin (both are scripts/lib/forge.sh), with the same commands (start, env,
# stop, build), accounts, tokens, repository and refusal to run as root (as
# root it runs as the system user alfred-forgejo).
#
# The build: Forgejo's source at a tag, prepared to build with the Go module
# proxy alone (../shared/forgejo/README.md says how and what differs from an
# official build): the tarball is checked against its pinned sha256, unpacked
# and built with the sqlite tags; cached under the checksum, with the tree's
# options/ and templates/ (no bindata, no frontend assets: the API, webhooks,
# OAuth2, git over HTTP and the bare server-rendered pages work).
#
#   env=$(scripts/forgejo.sh start) && eval "$env" && go test ./forges/...
#
# It prints ALFRED_TEST_FORGEJO_* variables, as gitea.sh prints
# ALFRED_TEST_GITEA_* ones; _API_VERSION is what /api/v1/version says
# (15.0.3+gitea-1.22.0: the Gitea SDK reads the Gitea version after the '+').
#
# Environment:
#   ALFRED_FORGEJO_SRC    the source tarball (default: forgejo-src-v$VERSION.tar.gz
#                         in ../shared/forgejo/ beside the repository)
#   ALFRED_FORGEJO_CACHE  cache root; the build goes to $ALFRED_FORGEJO_CACHE/<sha256>
#                         (default /var/cache/alfred/forgejo)
#   ALFRED_FORGEJO_STATE  state folder (default /tmp/alfred-test-forgejo)
#   ALFRED_FORGEJO_PORT   HTTP port on 127.0.0.1 (default: a free one)
#   ALFRED_FORGEJO_WAIT   seconds to wait for Forgejo to answer (default 120)
set -eu

FORGE=forgejo
TITLE=Forgejo
VERSION=15.0.3
# The Gitea version this Forgejo says it is compatible with.
COMPAT=1.22.0
SHA256=60c42b0653a27accc5751411e421be69074fc34b916d01cccdfe8b2eee8b5478
repo_root=$(cd "$(dirname "$0")/.." && pwd)
TARBALL=${ALFRED_FORGEJO_SRC:-$repo_root/../shared/forgejo/forgejo-src-v$VERSION.tar.gz}
SOURCE=$TARBALL
CACHE=${ALFRED_FORGEJO_CACHE:-/var/cache/alfred/forgejo}/$SHA256
OPT=ALFRED_FORGEJO
TEST_PREFIX=ALFRED_TEST_FORGEJO
RUN_AS=alfred-forgejo
stamp="$VERSION+gitea-$COMPAT"
LDFLAGS="-s -w -X 'main.Version=$stamp' -X 'main.ForgejoVersion=$stamp' -X 'main.Tags=sqlite sqlite_unlock_notify'"
# The prepared tree's go.mod replaces modules with folders under third_party/
# and leaves go.sum to the build.
GOFLAGS_EXTRA=-mod=mod

# fetch_source DIR: the tarball, its checksum checked, unpacked to DIR/src.
fetch_source() {
	[ -f "$TARBALL" ] || die "build of Forgejo $VERSION failed: no source tarball at $TARBALL (set ALFRED_FORGEJO_SRC)"
	got=$(sha256sum "$TARBALL" | cut -d' ' -f1)
	[ "$got" = "$SHA256" ] || die "build of Forgejo $VERSION failed: $TARBALL has sha256 $got, want $SHA256"
	mkdir "$1/unpack"
	tar -xzf "$TARBALL" -C "$1/unpack" || die "build of Forgejo $VERSION failed: unpacking $TARBALL"
	mv "$1/unpack/forgejo-v$VERSION" "$1/src" || die "build of Forgejo $VERSION failed: no forgejo-v$VERSION/ in $TARBALL"
}

# shellcheck source-path=SCRIPTDIR source=lib/forge.sh
. "$(dirname "$0")/lib/forge.sh"
forge_main "$@"
