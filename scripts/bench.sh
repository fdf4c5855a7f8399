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

bench state . -skip Scale -timeout 60m
# Issue 34's scale test: a synthetic year of ten busy projects (1M records
# written through the store's API), then a fresh process's RSS and cold
# open, the overview's pages, verify and compact on it. One process, five
# rounds (the figures are their medians; compact rewrites the fixture, so it
# runs once, after them).
echo "== state Scale (1M records)" >&2
go test ./state -run '^$' -bench Scale -state.1m -count 1 -benchtime 5x -timeout 60m | tee "$out/state-scale.txt"
# The state store against SQLite in the same run (issue 18): benchstat's
# columns by store, then each median as a ratio, git's time over SQLite's
# (below 1 under concurrency: git's throughput is higher). Open's target is
# absolute (< 1 s); BenchmarkRSS reports the memory idle and with 100k records.
# WriteFloor's columns (append, gitproto) are the file system's floor of a
# lone durable write, for SQLite's way and for git's (issue 34); the write
# benchmarks' columns are git (a commit per batch), journal (the state
# journal, as serve writes) and sqlite.
vs_sqlite() {
	local in=$1 filter='.name:(Write OR ConcurrentWrite OR WriteFloor OR Open)'
	benchstat -col /store -filter "$filter" "$in"
	echo
	benchstat -format csv -col /store -filter "$filter" "$in" 2>/dev/null |
		awk -F, '/^,git,/ {for (i = 2; i <= NF; i++) if ($i != "") col[$i] = i; next}
			/^,/ {unit = $2; next}
			$1 != "geomean" && col["sqlite"] && $col["sqlite"] > 0 {
				for (k in col) if (k != "sqlite" && $col[k] > 0) printf "%-36s %-10s %s/sqlite %.2fx\n", $1, unit, k, $col[k] / $col["sqlite"]
			}'
}
vs_sqlite "$out/state-_.txt" | tee "$out/state-vs-sqlite.stat"
bench sandbox 'RoundTrip|ContainerPhases'
bench bot 'WebhookIntake' -benchtime 2000x
bench bot 'WebhookToAgentStart' -benchtime 10x
bench forges 'ReplaceSection'
bench forges/forgejo 'VerifyAndParse'
