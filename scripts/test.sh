#!/usr/bin/env bash
# The whole test suite, as `make test` and CI run it. On a fresh Debian machine,
# as root, it installs what the tests need (git, Chromium, Node.js and npm; the
# Docker packages come with scripts/dockerd.sh), starts a private Docker daemon,
# a real Gitea (scripts/gitea.sh) and a real Forgejo (scripts/forgejo.sh, built
# in the background from the start the first time, then cached), installs the agent CLIs from the npm
# registry on the Node.js pinned with them (scripts/agent-clis.sh; Debian's
# Node.js and npm only fetch it), and the previous pins of scripts/agent-clis.sh
# --previous, builds the bot and agent images on a Debian root filesystem made
# with debootstrap (scripts/images.sh), starts a two-node Kubernetes cluster
# (scripts/k8s.sh; its components are built from the Go module proxy in the
# background from the start, the first time, then cached), runs every test and
# stops the daemon, the forges and the cluster it started.
# Nothing here skips: a missing part fails the run.
# Arguments name the packages to test (default ./...; make e2e gives ./e2e/).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '== %s\n' "$*" >&2; }

need=()
command -v git >/dev/null || need+=(git)
[ -x /usr/lib/git-core/git-http-backend ] || need+=(git)
command -v chromium >/dev/null || need+=(chromium fonts-dejavu-core)
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
command -v docker-compose >/dev/null || need+=(docker-compose) # deploy/: docker-compose config
if [ ${#need[@]} -gt 0 ]; then
	log "installing ${need[*]}"
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}"
fi
# The tests commit as someone.
git config --global user.name >/dev/null || git config --global user.name "Alfred tests"
git config --global user.email >/dev/null || git config --global user.email "tests@alfred.invalid"

log "lint"
make --no-print-directory lint

# Builds that run in the background while the rest is made, by name: their
# PIDs and logs.
declare -A build_pid build_log

# build_behind NAME WHAT: starts `bash scripts/NAME.sh build` in the background.
build_behind() {
	build_log[$1]=$(mktemp "/tmp/alfred-$1-build.XXXXXX")
	log "building $2 in the background (log: ${build_log[$1]})"
	bash "scripts/$1.sh" build >"${build_log[$1]}" 2>&1 &
	build_pid[$1]=$!
}

# await_build NAME WHAT: waits for NAME's build; a failed one stops the run
# with the end of its log.
await_build() {
	if ! wait "${build_pid[$1]}"; then
		tail -n 30 "${build_log[$1]}" >&2
		log "the $2 build failed (whole log: ${build_log[$1]})"
		exit 1
	fi
}

# The Kubernetes components take the longest to build (20-60 min the first
# time on two cores); Forgejo builds from the source tarball beside the
# repository (4-8 min).
build_behind k8s "the Kubernetes components"
build_behind forgejo Forgejo
stop_all() {
	kill "${build_pid[@]}" 2>/dev/null || true
	bash scripts/k8s.sh stop >/dev/null 2>&1 || true
	bash scripts/gitea.sh stop || true
	bash scripts/forgejo.sh stop || true
	bash scripts/dockerd.sh stop || true
}
trap stop_all EXIT

log "starting a private Docker daemon"
docker_env=$(bash scripts/dockerd.sh start) # a failed start stops the run here
eval "$docker_env"

log "starting a real Gitea (built from its Go module the first time, then cached)"
gitea_env=$(bash scripts/gitea.sh start) # a failed build or start stops the run here
eval "$gitea_env"

log "waiting for the Forgejo build, then starting it"
await_build forgejo Forgejo
forgejo_env=$(bash scripts/forgejo.sh start) # a failed start stops the run here
eval "$forgejo_env"

log "installing the agent CLIs, and the previous pins the real-CLI tests also run"
clis_env=$(bash scripts/agent-clis.sh) # ALFRED_AGENT_CLIS_BIN
eval "$clis_env"
previous_env=$(bash scripts/agent-clis.sh --previous) # ALFRED_AGENT_CLIS_PREVIOUS_BIN
eval "$previous_env"

log "building the bot and agent images (about 10 min the first time, seconds when cached)"
images_env=$(bash scripts/images.sh) # a failed build stops the run here, naming the step
eval "$images_env"

log "waiting for the Kubernetes build, then starting the cluster"
await_build k8s Kubernetes
k8s_env=$(bash scripts/k8s.sh start) # a failed start stops the run here
eval "$k8s_env"

log "go test ${*:-./...}"
go test -count=1 -timeout 45m "${@:-./...}"
