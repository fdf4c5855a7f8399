#!/usr/bin/env bash
# The whole test suite, as `make test` and CI run it. On a fresh Debian machine,
# as root, it installs what the tests need (git, Chromium, Node.js and npm; the
# Docker packages come with scripts/dockerd.sh), starts a private Docker daemon,
# installs the agent CLIs from the npm registry, runs every test and stops the
# daemon it started. Nothing here skips: a missing part fails the run.
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

log "installing the agent CLIs"
clis_env=$(bash scripts/agent-clis.sh)
eval "$clis_env"

log "go test ${*:-./...}"
go test -count=1 -timeout 45m "${@:-./...}"
