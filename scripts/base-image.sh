#!/bin/sh
# base-image.sh - a minimal Debian image made on this machine, for building
# Alfred's images where no container registry is reachable.
#
# Usage (as root):
#   scripts/base-image.sh             build (or reuse) the image; print its tag as
#                                     `export ALFRED_BASE_IMAGE=<tag>`
#   scripts/base-image.sh --refresh   build the root filesystem again and re-import it
#
# Steps: read the Debian mirror this machine's apt uses (/etc/apt/sources.list,
# sources.list.d/*.list and deb822 *.sources), debootstrap --variant=minbase from
# it, trim the result like Debian's slim images (no docs, man pages or locales;
# apt pointed at the same mirror, so `RUN apt-get ...` works in a
# `docker build --network host`), tar it into the cache and `docker import` it.
#
# Idempotent: nothing is done when the tag exists with the same key (suite,
# architecture, mirrors, what is included); the tarball is cached as
# $ALFRED_BASE_CACHE/<suite>-<arch>-<key>.tar, so an image deleted from the
# daemon comes back in seconds. --refresh picks up Debian's newer packages.
#
# Only the `export` line goes to stdout; progress goes to stderr. A failure
# exits non-zero with the step that failed.
#
# Environment:
#   ALFRED_TEST_DOCKER_HOST      daemon to import into (scripts/dockerd.sh prints it);
#                                unset: the docker CLI's default (DOCKER_HOST or the socket)
#   ALFRED_BASE_SUITE            Debian suite (default bookworm)
#   ALFRED_BASE_IMAGE            tag (default alfred-local/debian:<suite>)
#   ALFRED_BASE_CACHE            tarball cache (default /var/cache/alfred/base)
#   ALFRED_BASE_MIRROR           Debian mirror URL (default: the one apt uses here)
#   ALFRED_BASE_SECURITY_MIRROR  security mirror URL (default: the one apt uses here;
#                                "none" leaves it out)
set -eu
PATH=$PATH:/usr/sbin:/sbin
export PATH
umask 022

SUITE=${ALFRED_BASE_SUITE:-bookworm}
TAG=${ALFRED_BASE_IMAGE:-alfred-local/debian:$SUITE}
CACHE=${ALFRED_BASE_CACHE:-/var/cache/alfred/base}
VARIANT=minbase
# SHAPE names what this script does to the root filesystem after debootstrap:
# change it when that changes, so cached tarballs are not reused.
SHAPE=1
REFRESH=false

log() { printf 'base-image.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
now_ms() { date +%s%3N; }

for arg in "$@"; do
	case "$arg" in
	--refresh) REFRESH=true ;;
	*) die "unknown argument $arg (usage: $0 [--refresh])" ;;
	esac
done

docker_cli() {
	if [ -n "${ALFRED_TEST_DOCKER_HOST:-}" ]; then
		docker -H "$ALFRED_TEST_DOCKER_HOST" "$@"
	else
		docker "$@"
	fi
}

# apt_sources prints "URI SUITE" for every enabled `deb` source of this machine,
# in apt's order: one-line sources.list files, then deb822 .sources files.
apt_sources() {
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		# deb [opt=a opt=b] URI SUITE COMPONENT...
		sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" | awk '$1 == "deb" && NF >= 3 { print $2, $3 }'
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk '
			function flush(   i, j, nu, ns, u, s) {
				if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no") {
					nu = split(uris, u, " "); ns = split(suites, s, " ")
					for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++) print u[i], s[j]
				}
				types = uris = suites = ""; enabled = "yes"
			}
			BEGIN { enabled = "yes" }
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			{
				key = tolower($1); sub(/:$/, "", key)
				val = $0; sub(/^[^:]*:[ \t]*/, "", val)
				if (key == "types") types = val
				else if (key == "uris") uris = val
				else if (key == "suites") suites = val
				else if (key == "enabled") enabled = val
			}
			END { flush() }
		' "$f"
	done
}

# pick_uri prints the URI of the first source whose suite is $1, else of the
# first whose suite matches the extended regex $2.
pick_uri() {
	srcs=$(apt_sources)
	uri=$(printf '%s\n' "$srcs" | awk -v s="$1" '$2 == s { print $1; exit }')
	[ -n "$uri" ] || uri=$(printf '%s\n' "$srcs" | awk -v re="$2" '$2 ~ re { print $1; exit }')
	printf '%s' "${uri%/}"
}

has_suite() { apt_sources | awk -v s="$1" '$2 == s { found = 1 } END { exit !found }'; }

codenames='(buster|bullseye|bookworm|trixie|forky|duke|sid|oldstable|stable|testing|unstable)'
MIRROR=${ALFRED_BASE_MIRROR:-$(pick_uri "$SUITE" "^$codenames\$")}
[ -n "$MIRROR" ] || die "step mirror: no Debian source found in /etc/apt/sources.list{,.d/*.list,.d/*.sources}; set ALFRED_BASE_MIRROR"
SECURITY=${ALFRED_BASE_SECURITY_MIRROR:-$(pick_uri "$SUITE-security" "^$codenames-security\$")}
[ "$SECURITY" = none ] && SECURITY=""
UPDATES=""
has_suite "$SUITE-updates" && UPDATES="$SUITE-updates"
ARCH=$(dpkg --print-architecture) || die "step arch: dpkg --print-architecture failed"

INCLUDE=""
case "$MIRROR" in https:*) INCLUDE=ca-certificates ;; esac

KEY=$(printf '%s\n' "$SUITE" "$ARCH" "$VARIANT" "$INCLUDE" "$MIRROR" "$SECURITY" "$UPDATES" "$SHAPE" |
	sha256sum | cut -c1-12)
TARBALL="$CACHE/$SUITE-$ARCH-$KEY.tar"

print_env() { printf 'export ALFRED_BASE_IMAGE=%s\n' "$TAG"; }

log "suite $SUITE ($ARCH) from $MIRROR${SECURITY:+, security $SECURITY}; key $KEY"
docker_cli version --format '{{.Server.Version}}' >/dev/null ||
	die "step docker: no Docker daemon answers at ${ALFRED_TEST_DOCKER_HOST:-the default address}"

have=$(docker_cli image inspect --format '{{ index .Config.Labels "alfred.base.key" }}' "$TAG" 2>/dev/null) || have=""
if [ "$have" = "$KEY" ] && ! $REFRESH; then
	log "$TAG is up to date (key $KEY)"
	print_env
	exit 0
fi

mkdir -p "$CACHE" || die "step cache: cannot create $CACHE"
# One build at a time per cache folder.
exec 9>"$CACHE/.lock"
flock 9 || die "step lock: cannot lock $CACHE/.lock"

WORK=""
# cleanup unmounts what debootstrap may have left mounted in the target
# (proc, sys, a bind of /dev), deepest first, before deleting it.
cleanup() {
	[ -n "$WORK" ] && [ -d "$WORK" ] || return 0
	awk -v w="$WORK/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | while IFS= read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
	if awk -v w="$WORK/" 'index($2, w) == 1 { found = 1 } END { exit !found }' /proc/mounts; then
		log "warning: mounts remain under $WORK; not deleting it"
		return 0
	fi
	rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# write_apt_config points apt at the same mirror and keeps images small.
write_apt_config() {
	root=$1
	rm -f "$root/etc/apt/sources.list"
	{
		printf 'Types: deb\nURIs: %s\nSuites: %s%s\nComponents: main\n' "$MIRROR" "$SUITE" "${UPDATES:+ $UPDATES}"
		printf 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
		if [ -n "$SECURITY" ]; then
			printf '\nTypes: deb\nURIs: %s\nSuites: %s-security\nComponents: main\n' "$SECURITY" "$SUITE"
			printf 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
		fi
	} >"$root/etc/apt/sources.list.d/debian.sources"
	cat >"$root/etc/apt/apt.conf.d/90alfred-image" <<-'EOF'
		// Written by Alfred's scripts/base-image.sh: image builds fetch no
		// translations and keep no downloaded packages.
		Acquire::Languages "none";
		APT::Keep-Downloaded-Packages "false";
		DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
	EOF
	cat >"$root/etc/dpkg/dpkg.cfg.d/90alfred-slim" <<-'EOF'
		# Written by Alfred's scripts/base-image.sh: no documentation, manual
		# pages or translations in images (copyright files stay).
		path-exclude /usr/share/doc/*
		path-include /usr/share/doc/*/copyright
		path-exclude /usr/share/man/*
		path-exclude /usr/share/info/*
		path-exclude /usr/share/locale/*
		path-include /usr/share/locale/locale.alias
		path-exclude /usr/share/lintian/*
	EOF
	# Packages installed in an image build must not start services.
	printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
	chmod 0755 "$root/usr/sbin/policy-rc.d"
}

# trim removes what debootstrap installed that the dpkg excludes now keep out,
# and what a container gets from Docker at run time.
trim() {
	root=$1
	find "$root/usr/share/doc" -mindepth 1 ! -name copyright ! -type d -delete
	find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
	rm -rf "$root/usr/share/man/"* "$root/usr/share/info/"* "$root/usr/share/lintian/"*
	find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
	rm -rf "$root/var/lib/apt/lists/"* "$root/var/cache/apt/"*.bin "$root/var/cache/apt/archives/"*.deb \
		"$root/var/cache/debconf/"*-old "$root/var/lib/dpkg/"*-old "$root/debootstrap"
	find "$root/var/log" -type f -exec truncate -s 0 {} +
	: >"$root/etc/machine-id"
	rm -f "$root/etc/hostname" "$root/etc/resolv.conf"
	for d in dev proc sys run tmp; do
		rm -rf --one-file-system "${root:?}/$d/"*
	done
	chmod 1777 "$root/tmp"
}

build_tarball() {
	if ! command -v debootstrap >/dev/null 2>&1; then
		[ "$(id -u)" = 0 ] || die "step install: debootstrap is missing; run as root to install it"
		log "installing debootstrap"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >&2 ||
			{ apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >&2; } ||
			die "step install: apt-get install debootstrap failed"
	fi
	[ "$(id -u)" = 0 ] || die "step debootstrap: needs root"
	WORK=$(mktemp -d "$CACHE/build.XXXXXX") || die "step debootstrap: mktemp in $CACHE failed"
	root="$WORK/rootfs"
	t0=$(now_ms)
	log "debootstrap --variant=$VARIANT $SUITE from $MIRROR (log: $WORK/debootstrap.log)"
	if ! debootstrap --variant="$VARIANT" --arch="$ARCH" --components=main \
		${INCLUDE:+--include="$INCLUDE"} "$SUITE" "$root" "$MIRROR" >"$WORK/debootstrap.log" 2>&1; then
		tail -n 20 "$WORK/debootstrap.log" >&2
		[ -f "$root/debootstrap/debootstrap.log" ] && tail -n 20 "$root/debootstrap/debootstrap.log" >&2
		cp "$WORK/debootstrap.log" "$CACHE/last-failure.log" 2>/dev/null || true
		die "step debootstrap: failed (log kept in $CACHE/last-failure.log)"
	fi
	log "debootstrap done in $(($(now_ms) - t0)) ms"
	if awk -v r="$root/" 'index($2, r) == 1 { found = 1 } END { exit !found }' /proc/mounts; then
		die "step debootstrap: it left mounts under $root"
	fi
	write_apt_config "$root" || die "step configure: writing apt and dpkg configuration failed"
	trim "$root" || die "step trim: cleaning the root filesystem failed"
	tar -C "$root" --numeric-owner --sort=name -cf "$TARBALL.tmp" . || die "step tar: cannot write $TARBALL.tmp"
	mv "$TARBALL.tmp" "$TARBALL" || die "step tar: cannot move $TARBALL.tmp into place"
	log "cached $TARBALL ($(du -m "$TARBALL" | cut -f1) MiB) in $(($(now_ms) - t0)) ms"
}

t_start=$(now_ms)
if [ -f "$TARBALL" ] && ! $REFRESH; then
	log "reusing $TARBALL"
else
	build_tarball
fi

t0=$(now_ms)
created=$(date -u +%Y-%m-%dT%H:%M:%SZ -r "$TARBALL")
docker_cli import \
	--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	--change 'ENV LANG=C.UTF-8' \
	--change 'CMD ["bash"]' \
	--change "LABEL alfred.base.key=$KEY alfred.base.suite=$SUITE alfred.base.mirror=$MIRROR org.opencontainers.image.created=$created" \
	"$TARBALL" "$TAG" >/dev/null || die "step import: docker import of $TARBALL as $TAG failed"
log "imported $TAG in $(($(now_ms) - t0)) ms (total $(($(now_ms) - t_start)) ms)"
print_env
