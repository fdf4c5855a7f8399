#!/bin/sh
# agent-clis.sh installs the coding-agent CLIs Alfred's adapters are verified
# against, at their pinned versions, from the npm registry into a cache folder,
# and prints the folder holding their executables, as a shell assignment the
# tests read (ALFRED_AGENT_CLIS_BIN):
#
#   eval "$(scripts/agent-clis.sh)"          # export ALFRED_AGENT_CLIS_BIN=<cache>/node_modules/.bin
#   scripts/agent-clis.sh --bin              # print only the folder
#   ALFRED_AGENT_CLIS=/tmp/clis scripts/agent-clis.sh   # cache elsewhere
#
# The cache is $ALFRED_AGENT_CLIS, default /var/cache/alfred/agent-clis.
# Idempotent: a package already installed at its pinned version is skipped.
# Needs node and npm (Node >= 20 for the Gemini CLI). Progress goes to stderr.
set -eu

dir=${ALFRED_AGENT_CLIS:-/var/cache/alfred/agent-clis}
only_bin=false
[ "${1:-}" = "--bin" ] && only_bin=true

for tool in node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "agent-clis: $tool is missing: install Node.js >= 20 with npm (e.g. apt-get install nodejs npm)" >&2
		exit 1
	fi
done

# name@version, one per line. Keep in step with the verified ranges in agents/*.
pins='@anthropic-ai/claude-code@2.1.197
@openai/codex@0.171.0
opencode-ai@1.18.33
@github/copilot@1.0.102
@google/gemini-cli@0.61.0
@vibe-kit/grok-cli@0.0.34'

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
for exe in claude codex opencode copilot gemini grok; do
	if [ ! -x "$bin/$exe" ]; then
		echo "agent-clis: $exe missing from $bin after install" >&2
		exit 1
	fi
done
if $only_bin; then
	echo "$bin"
else
	echo "export ALFRED_AGENT_CLIS_BIN='$bin'"
fi
