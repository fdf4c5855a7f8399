#!/bin/sh
# agent-clis.sh installs the coding-agent CLIs Alfred's adapters are verified
# against, at their pinned versions, from the npm registry into a cache folder,
# and prints the folder holding their executables, as a shell assignment the
# tests read (ALFRED_AGENT_CLIS_BIN):
#
#   eval "$(scripts/agent-clis.sh)"          # export ALFRED_AGENT_CLIS_BIN=<cache>/node_modules/.bin
#   scripts/agent-clis.sh --bin              # print only the folder
#   scripts/agent-clis.sh --link DIR         # also symlink the six executables into DIR
#                                            # (the agent image: --link /usr/local/bin)
#   scripts/agent-clis.sh --pins             # print the pins (name@version lines), install nothing
#   ALFRED_AGENT_CLIS=/tmp/clis scripts/agent-clis.sh   # cache elsewhere
#
# The cache is $ALFRED_AGENT_CLIS, default /var/cache/alfred/agent-clis.
# Idempotent: a package already installed at its pinned version is skipped.
# Needs node and npm (Node >= 20 for the Gemini CLI). Progress goes to stderr.
# This file is the only copy of the pins: sandbox/images/agent/Dockerfile runs it.
set -eu

dir=${ALFRED_AGENT_CLIS:-/var/cache/alfred/agent-clis}
only_bin=false
link_dir=''
print_pins=false
while [ $# -gt 0 ]; do
	case "$1" in
	--bin) only_bin=true ;;
	--pins) print_pins=true ;;
	--link)
		[ $# -ge 2 ] || { echo "agent-clis: --link needs a folder" >&2; exit 2; }
		link_dir=$2
		shift
		;;
	*) echo "agent-clis: unknown argument $1 (usage: $0 [--bin] [--link DIR] | --pins)" >&2; exit 2 ;;
	esac
	shift
done

# name@version, one per line. Keep in step with the verified ranges in agents/*.
pins='@anthropic-ai/claude-code@2.1.197
@openai/codex@0.171.0
opencode-ai@1.18.33
@github/copilot@1.0.102
@google/gemini-cli@0.61.0
@vibe-kit/grok-cli@0.0.34'
# The executables they install, in the same order.
exes='claude codex opencode copilot gemini grok'

if $print_pins; then
	printf '%s\n' "$pins"
	exit 0
fi

for tool in node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "agent-clis: $tool is missing: install Node.js >= 20 with npm (e.g. apt-get install nodejs npm)" >&2
		exit 1
	fi
done

mkdir -p "$dir"
missing=''
for pin in $pins; do
	name=${pin%@*}
	want=${pin##*@}
	pj="$dir/node_modules/$name/package.json"
	have=''
	if [ -f "$pj" ]; then
		have=$(node -p "require(process.argv[1]).version" "$pj" 2>/dev/null || true)
	fi
	if [ "$have" = "$want" ]; then
		echo "agent-clis: $name@$want already installed" >&2
	else
		missing="$missing $pin"
	fi
done

if [ -n "$missing" ]; then
	echo "agent-clis: installing$missing into $dir" >&2
	# shellcheck disable=SC2086 # one word per package on purpose
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error $missing >&2
fi

bin="$dir/node_modules/.bin"
for exe in $exes; do
	if [ ! -x "$bin/$exe" ]; then
		echo "agent-clis: $exe missing from $bin after install" >&2
		exit 1
	fi
done
if [ -n "$link_dir" ]; then
	mkdir -p "$link_dir"
	for exe in $exes; do
		ln -sfn "$bin/$exe" "$link_dir/$exe"
	done
	echo "agent-clis: linked $exes into $link_dir" >&2
fi
if $only_bin; then
	echo "$bin"
else
	echo "export ALFRED_AGENT_CLIS_BIN='$bin'"
fi
