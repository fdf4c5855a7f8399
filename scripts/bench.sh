#!/usr/bin/env bash
# The benchmarks quoted in README.md, as `make bench` runs them: each -count 6,
# summarized by benchstat (medians). Needs the private Docker daemon, which it
# starts and stops like make test. Results go to ./var/bench/.
set -euo pipefail
cd "$(dirname "$0")/.."
out=var/bench
mkdir -p "$out"
command -v benchstat >/dev/null || PATH=$PATH:$(go env GOPATH)/bin
command -v benchstat >/dev/null || go install golang.org/x/perf/cmd/benchstat@latest

trap 'bash scripts/dockerd.sh stop || true' EXIT
docker_env=$(bash scripts/dockerd.sh start)
eval "$docker_env"

bench() { # package, pattern, extra flags...
	local pkg=$1 pat=$2 name
	shift 2
	name=$(echo "$pkg-$pat" | tr '/|.' '___')
	echo "== $pkg $pat" >&2
	go test "./$pkg" -run '^$' -bench "$pat" -count 6 "$@" | tee "$out/$name.txt"
	benchstat "$out/$name.txt" > "$out/$name.stat" && cat "$out/$name.stat"
}

bench state . -timeout 60m
bench sandbox 'RoundTrip|ContainerPhases'
bench bot 'WebhookIntake' -benchtime 2000x
bench bot 'WebhookToAgentStart' -benchtime 10x
bench forges 'ReplaceSection'
bench forges/forgejo 'VerifyAndParse'
