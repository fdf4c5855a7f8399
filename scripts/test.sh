#!/usr/bin/env bash
# The whole test suite, as `make test` and CI run it. On a fresh Debian machine,
# as root, it installs what the tests need (git, Chromium, Node.js and npm; the
# Docker packages come with scripts/dockerd.sh), starts a private Docker daemon
# and a real Gitea (scripts/gitea.sh), installs the agent CLIs from the npm
# registry, builds the bot and agent images on a Debian root filesystem made
# with debootstrap (scripts/images.sh), runs every test and stops the daemon
# and the Gitea it started.
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

log "starting a private Docker daemon"
trap 'bash scripts/dockerd.sh stop || true' EXIT
docker_env=$(bash scripts/dockerd.sh start) # a failed start stops the run here
eval "$docker_env"

log "starting a real Gitea (built from its Go module the first time, then cached)"
trap 'bash scripts/gitea.sh stop || true; bash scripts/dockerd.sh stop || true' EXIT
gitea_env=$(bash scripts/gitea.sh start) # a failed build or start stops the run here
eval "$gitea_env"

log "installing the agent CLIs"
clis_env=$(bash scripts/agent-clis.sh)
eval "$clis_env"

log "building the bot and agent images (about 10 min the first time, seconds when cached)"
images_env=$(bash scripts/images.sh) # a failed build stops the run here, naming the step
eval "$images_env"

log "go test ${*:-./...}"
go test -count=1 -timeout 45m "${@:-./...}"
