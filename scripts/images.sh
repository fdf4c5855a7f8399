#!/usr/bin/env bash
# images.sh - builds Alfred's two images into a Docker daemon, on the Debian
# image of scripts/base-image.sh (made first, with debootstrap):
#
#   the bot    Dockerfile, target `prebuilt`, with the binary built here by
#              `go build` (the Makefile's flags); see the Dockerfile for why
#   the agent  sandbox/images/agent/Dockerfile: git, the Node.js, npm and
#              agent CLIs pinned in scripts/agent-clis.sh, and alfred-forward
#              (cmd/alfred-forward) built here static
#
# Usage (as root the first time: debootstrap needs it):
#   env=$(scripts/images.sh) && eval "$env"
# prints, on stdout only:
#   export ALFRED_TEST_BOT_IMAGE=alfred:<key>
#   export ALFRED_TEST_BOT_VERSION=<the version the bot image reports>
#   export ALFRED_TEST_AGENT_IMAGE=alfred-agent:<key>
# Progress, build times and failures go to stderr; a failed build names the
# Dockerfile step and keeps the whole log.
#
# Caching by content: each image is tagged with a key made of what goes into it
# (bot: the Dockerfile, the binary, the base image; agent: its Dockerfile,
# scripts/agent-clis.sh, which holds every pin of Node.js, npm and the CLIs with
# their checksums, the forwarder binary, the base image: the whole build
# context and the base). An image that already has its key is
# not built again; an older key of the same name is removed. Both images are
# also tagged :latest, the names deploy/compose.yaml and ALFRED_AGENT_IMAGE use.
#
# Builds run with --network host: the daemon of scripts/dockerd.sh has no
# bridge, and the apt and npm steps need the network.
#
# Environment:
#   ALFRED_TEST_DOCKER_HOST   daemon (scripts/dockerd.sh prints it); unset: docker's default
#   VERSION                   version of the bot (default: git describe, as the Makefile)
#   ALFRED_IMAGES_WORK        logs and build contexts (default /tmp/alfred-images)
#   ALFRED_IMAGES_BOT_FROM    prebuilt (default), or source: the Dockerfile's default
#                             stage, compiled in a Go image made from this machine's
#                             Go toolchain (minutes: it proves the default build)
#   ALFRED_BUILD_CA_DIR       certificates (*.crt) trusted by the builds' downloads, for a
#                             TLS-intercepting proxy (default /usr/local/share/ca-certificates,
#                             where Debian keeps local CAs); never kept in the images
set -euo pipefail
cd "$(dirname "$0")/.."

BOT_NAME=alfred
AGENT_NAME=alfred-agent
WORK=${ALFRED_IMAGES_WORK:-/tmp/alfred-images}
BOT_FROM=${ALFRED_IMAGES_BOT_FROM:-prebuilt}
CA_DIR=${ALFRED_BUILD_CA_DIR:-/usr/local/share/ca-certificates}
VERSION=${VERSION:-$(git describe --always --dirty 2>/dev/null || echo dev)}

log() { printf 'images.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
now_ms() { date +%s%3N; }
secs() { awk -v ms="$1" 'BEGIN { printf "%.1f s", ms / 1000 }'; }

docker_cli() {
	if [ -n "${ALFRED_TEST_DOCKER_HOST:-}" ]; then
		docker -H "$ALFRED_TEST_DOCKER_HOST" "$@"
	else
		docker "$@"
	fi
}

case "$BOT_FROM" in prebuilt | source) ;; *) die "ALFRED_IMAGES_BOT_FROM is $BOT_FROM; it accepts prebuilt or source" ;; esac
command -v docker >/dev/null || die "step docker: the docker CLI is missing"
docker_cli version --format '{{.Server.Version}}' >/dev/null || die "step docker: no daemon answers at ${ALFRED_TEST_DOCKER_HOST:-the default address}"
mkdir -p "$WORK" || die "step work: cannot create $WORK"
CTX=$(mktemp -d "$WORK/context.XXXXXX")
trap 'rm -rf "$CTX"' EXIT

image_id() { docker_cli image inspect --format '{{.Id}}' "$1" 2>/dev/null; }

# build LABEL LOG DOCKER-BUILD-ARGS...: a docker build whose Dockerfile steps
# are shown as they start, whose whole output is kept in LOG, and whose
# failure names the step that failed.
build() {
	local label=$1 logf=$2 rc
	shift 2
	set +e
	docker_cli build --force-rm "$@" 2>&1 | tee "$logf" |
		awk -v p="images.sh: $label: " '/^Step [0-9]+\/[0-9]+ : / || /^#[0-9]+ \[/ { print p substr($0, 1, 150); fflush() }' >&2
	rc=${PIPESTATUS[0]}
	set -e
	[ "$rc" = 0 ] && return 0
	local step
	step=$(grep -E '^Step [0-9]+/[0-9]+ : |^#[0-9]+ \[' "$logf" | tail -n 1 | cut -c1-200)
	tail -n 25 "$logf" >&2
	die "$label: docker build failed at ${step:-its first step} (whole log: $logf)"
}

# retag NAME KEY: tag NAME:KEY as NAME:latest and remove NAME's other keys.
retag() {
	local name=$1 key=$2 old
	docker_cli tag "$name:$key" "$name:latest" || die "step tag: docker tag $name:$key $name:latest failed"
	for old in $(docker_cli image ls --format '{{.Tag}}' "$name"); do
		case "$old" in latest | "$key") ;; [0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f])
			# An older image a container still uses stays (a test's leftover): not an error.
			if docker_cli rmi "$name:$old" >/dev/null 2>&1; then log "removed the older $name:$old"; fi ;;
		esac
	done
}

t_all=$(now_ms)

# 1. The Debian base.
t0=$(now_ms)
base_env=$(bash scripts/base-image.sh) || die "step base image: scripts/base-image.sh failed"
eval "$base_env"
BASE=$ALFRED_BASE_IMAGE
BASE_ID=$(image_id "$BASE") || die "step base image: $BASE is not in the daemon"
log "base image $BASE ready in $(secs $(($(now_ms) - t0)))"

# Certificates the downloads of the builds trust (npm, Go modules).
CA_CERTS=""
if [ -d "$CA_DIR" ]; then
	mapfile -t ca_files < <(find "$CA_DIR" -name '*.crt' -type f | sort)
	if [ ${#ca_files[@]} -gt 0 ]; then
		CA_CERTS=$(cat "${ca_files[@]}")
		log "builds trust ${#ca_files[@]} certificate file(s) of $CA_DIR while downloading"
	fi
fi

# 2. The bot.
t0=$(now_ms)
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$VERSION" -o "$CTX/alfred" . ||
	die "step bot binary: go build failed"
log "bot binary $VERSION built in $(secs $(($(now_ms) - t0)))"
mkdir -p "$CTX/bot"
bot_args=(--network host --build-arg "BASE_IMAGE=$BASE" --build-arg "VERSION=$VERSION")
if [ "$BOT_FROM" = source ]; then
	# The default stage compiles in GO_IMAGE: make one from this machine's Go.
	goroot=$(go env GOROOT) || die "step go image: go env GOROOT failed"
	gover=$(go env GOVERSION) || die "step go image: go env GOVERSION failed"
	go_key=$(printf '%s %s %s\n' "$gover" "$goroot" "$BASE_ID" | sha256sum | cut -c1-12)
	GO_IMAGE="alfred-local/golang:$gover-$go_key"
	if ! image_id "$GO_IMAGE" >/dev/null; then
		t0=$(now_ms)
		mkdir -p "$CTX/go"
		cp -a "$goroot" "$CTX/go/go" || die "step go image: copying $goroot failed"
		printf '%s\n' "FROM $BASE" \
			'RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*' \
			'COPY go /usr/local/go' \
			'ENV GOPATH=/go PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
			'RUN mkdir -p /go && go version' >"$CTX/go/Dockerfile"
		build "go image" "$WORK/go.log" --network host -t "$GO_IMAGE" "$CTX/go"
		rm -rf "$CTX/go"
		log "go image $GO_IMAGE built in $(secs $(($(now_ms) - t0)))"
	fi
	# The sources git knows of (tracked, or new and not ignored), and the
	# binary: the legacy builder builds the stage `prebuilt` on the way.
	git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
		xargs -0 cp --parents -t "$CTX/bot" || die "step bot sources: copying the sources failed"
	install -D -m 0755 "$CTX/alfred" "$CTX/bot/bin/alfred"
	bot_args+=(--target image --build-arg "GO_IMAGE=$GO_IMAGE" --build-arg "BUILD_CA_CERTS=$CA_CERTS")
	bot_key=$( (cd "$CTX/bot" && find . -type f -print0 | sort -z | xargs -0 sha256sum; echo "$BASE_ID $GO_IMAGE $VERSION source") | sha256sum | cut -c1-12)
else
	install -D -m 0755 "$CTX/alfred" "$CTX/bot/bin/alfred"
	cp Dockerfile "$CTX/bot/Dockerfile"
	bot_args+=(--target prebuilt)
	bot_key=$( (cat "$CTX/bot/Dockerfile" "$CTX/bot/bin/alfred"; echo "$BASE_ID prebuilt") | sha256sum | cut -c1-12)
fi
BOT="$BOT_NAME:$bot_key"
if image_id "$BOT" >/dev/null; then
	log "bot image $BOT is up to date"
else
	t0=$(now_ms)
	build "bot image" "$WORK/bot.log" "${bot_args[@]}" -t "$BOT" "$CTX/bot"
	log "bot image $BOT built ($BOT_FROM) in $(secs $(($(now_ms) - t0)))"
fi
retag "$BOT_NAME" "$bot_key"

# 3. The agent: a context of its Dockerfile, the script holding the pins and
# the model gateway's forwarder, built static here (the image reaches no Go).
mkdir -p "$CTX/agent/scripts" "$CTX/agent/sandbox/images/agent" "$CTX/agent/bin"
cp scripts/agent-clis.sh "$CTX/agent/scripts/"
cp sandbox/images/agent/Dockerfile "$CTX/agent/sandbox/images/agent/"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$CTX/agent/bin/alfred-forward" ./cmd/alfred-forward ||
	die "step agent forwarder: go build ./cmd/alfred-forward failed"
# The key hashes every file of the context (the Dockerfile, the pins, the
# forwarder), by path, and the base image.
agent_key=$( (cd "$CTX/agent" && find . -type f -print0 | sort -z | xargs -0 sha256sum; echo "$BASE_ID") | sha256sum | cut -c1-12)
AGENT="$AGENT_NAME:$agent_key"
if image_id "$AGENT" >/dev/null; then
	log "agent image $AGENT is up to date"
else
	t0=$(now_ms)
	build "agent image" "$WORK/agent.log" --network host -f "$CTX/agent/sandbox/images/agent/Dockerfile" \
		--build-arg "BASE_IMAGE=$BASE" --build-arg "BUILD_CA_CERTS=$CA_CERTS" -t "$AGENT" "$CTX/agent"
	log "agent image $AGENT built in $(secs $(($(now_ms) - t0)))"
fi
retag "$AGENT_NAME" "$agent_key"

log "images ready in $(secs $(($(now_ms) - t_all)))"
printf "export ALFRED_TEST_BOT_IMAGE='%s'\n" "$BOT"
printf "export ALFRED_TEST_BOT_VERSION='%s'\n" "$VERSION"
printf "export ALFRED_TEST_AGENT_IMAGE='%s'\n" "$AGENT"
