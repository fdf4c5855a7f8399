#!/bin/sh
# agent-clis.sh installs the coding-agent CLIs Alfred's adapters are verified
# against, at their pinned versions, from the npm registry into a cache folder,
# and prints the folder holding their executables (for ALFRED_AGENT_CLIS_BIN).
#
#   scripts/agent-clis.sh            # cache in $ALFRED_AGENT_CLIS or /var/cache/alfred/agent-clis
#   ALFRED_AGENT_CLIS=/tmp/clis scripts/agent-clis.sh
#
# Idempotent: a package already installed at its pinned version is skipped.
# Progress goes to stderr; stdout carries only the bin folder.
set -eu

dir=${ALFRED_AGENT_CLIS:-/var/cache/alfred/agent-clis}

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
echo "$bin"
