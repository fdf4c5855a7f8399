#!/bin/sh
# dockerd.sh - a private Docker daemon for Alfred's sandbox tests.
#
# Usage (as root):
#   scripts/dockerd.sh start   install docker.io and busybox-static when missing,
#                              start our own dockerd, import the test image and
#                              print the variables the tests read
#   scripts/dockerd.sh env     print those variables again (daemon must be running)
#   scripts/dockerd.sh stop    stop the daemon this script started (by its pidfile PID)
#   scripts/dockerd.sh purge   stop, then delete the state folder (images, containers)
#
# From a shell (a failed start must stop the chain: `eval "$(...)"` alone would
# hide it, since eval of nothing succeeds):
#   env=$(scripts/dockerd.sh start) && eval "$env" && go test ./...; rc=$?; scripts/dockerd.sh stop; exit $rc
# or read the env file it writes: $ALFRED_DOCKER_STATE/env (KEY=VALUE lines).
#
# Only the printed `export` lines go to stdout; progress goes to stderr.
#
# The daemon is ours alone: its own --data-root, --exec-root, --pidfile, unix socket
# and containerd namespace under the state folder, an empty --config-file (so
# /etc/docker/daemon.json of another daemon is not read), and no networking of its
# own (--bridge=none, no iptables), so it does not disturb a daemon started by
# someone else, which this script never touches.
#
# Environment:
#   ALFRED_DOCKER_STATE          state folder (default /tmp/alfred-test-docker; keep it
#                                short: the containerd socket path must fit 108 bytes)
#   ALFRED_DOCKER_STORAGE        storage drivers to try in order (default "overlay2 vfs":
#                                overlay2 needs a data root off overlayfs, vfs works anywhere)
#   ALFRED_DOCKER_CGROUP_DRIVER  cgroupfs (default) or systemd
#   ALFRED_DOCKER_WAIT           seconds to wait for the daemon (default 60)
#   ALFRED_TEST_IMAGE            name of the imported test image
#                                (default alfred-test/busybox:latest)
set -eu
# shellcheck source-path=SCRIPTDIR source=lib/pidfile.sh
. "$(dirname "$0")/lib/pidfile.sh"
# shellcheck source-path=SCRIPTDIR source=lib/rootfs.sh
. "$(dirname "$0")/lib/rootfs.sh"
# dockerd lives in /usr/sbin, which a non-login root shell may lack.
PATH=$PATH:/usr/sbin:/sbin:/usr/bin:/bin
export PATH

STATE=${ALFRED_DOCKER_STATE:-/tmp/alfred-test-docker}
SOCK="$STATE/docker.sock"
PIDFILE="$STATE/docker.pid"
EXEC_ROOT="$STATE/exec"
DATA_ROOT="$STATE/data"
LOG="$STATE/dockerd.log"
ENVFILE="$STATE/env"
IMAGE=${ALFRED_TEST_IMAGE:-alfred-test/busybox:latest}
WAIT=${ALFRED_DOCKER_WAIT:-60}
STORAGE=${ALFRED_DOCKER_STORAGE:-overlay2 vfs}
CGROUP_DRIVER=${ALFRED_DOCKER_CGROUP_DRIVER:-cgroupfs}
DOCKER_HOST_URL="unix://$SOCK"

log() { printf 'dockerd.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# docker runs the Docker CLI against our daemon only.
docker_cli() { docker -H "$DOCKER_HOST_URL" "$@"; }

now_ms() { date +%s%3N; }

# ours_pid prints the PID of the daemon this script started, if it is alive.
# A PID is ours only when the process is a dockerd started with our pidfile,
# so a recycled PID or another daemon is never touched.
ours_pid() { pid_of "$PIDFILE" "--pidfile $PIDFILE "; }

print_env() {
	printf 'export ALFRED_TEST_DOCKER_HOST=%s\n' "$DOCKER_HOST_URL"
	printf 'export ALFRED_TEST_IMAGE=%s\n' "$IMAGE"
}

write_envfile() {
	{
		printf 'ALFRED_TEST_DOCKER_HOST=%s\n' "$DOCKER_HOST_URL"
		printf 'ALFRED_TEST_IMAGE=%s\n' "$IMAGE"
	} >"$ENVFILE"
}

# install_packages installs docker.io and busybox-static when missing. A
# policy-rc.d that exits 101 is put in place first so the package does not start
# Debian's default daemon (with a bridge and iptables rules); it is removed
# afterwards only if this script created it.
install_packages() {
	need=""
	command -v dockerd >/dev/null 2>&1 || need="$need docker.io"
	dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || need="$need busybox-static"
	[ -z "$need" ] && return 0
	[ "$(id -u)" = 0 ] || die "missing packages:$need; run as root to install them"
	created_policy=""
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 0755 /usr/sbin/policy-rc.d
		created_policy=1
	fi
	log "installing$need"
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need >&2 ||
		{ apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need >&2; }
	if [ -n "$created_policy" ]; then rm -f /usr/sbin/policy-rc.d; fi
}

# launch starts dockerd with storage driver $1 and waits until it answers.
launch() {
	driver=$1
	mkdir -p "$STATE" "$EXEC_ROOT" "$DATA_ROOT"
	chmod 0711 "$STATE"
	[ -f "$STATE/daemon.json" ] || echo '{}' >"$STATE/daemon.json"
	rm -f "$SOCK" "$PIDFILE"
	log "starting dockerd (storage driver $driver, cgroup driver $CGROUP_DRIVER) in $STATE"
	# setsid: the daemon outlives this script and a Ctrl-C of the caller.
	setsid dockerd \
		--host "$DOCKER_HOST_URL" \
		--pidfile "$PIDFILE" \
		--data-root "$DATA_ROOT" \
		--exec-root "$EXEC_ROOT" \
		--config-file "$STATE/daemon.json" \
		--containerd-namespace alfred-test \
		--containerd-plugins-namespace alfred-test-plugins \
		--storage-driver "$driver" \
		--exec-opt "native.cgroupdriver=$CGROUP_DRIVER" \
		--bridge=none --iptables=false --ip6tables=false \
		--ip-forward=false --ip-masq=false --userland-proxy=false \
		--log-level=warn \
		</dev/null >"$LOG" 2>&1 &
	launched=$!
	deadline=$(($(date +%s) + WAIT))
	while :; do
		if docker_cli version --format '{{.Server.Version}}' >/dev/null 2>&1; then
			return 0
		fi
		# setsid may have forked: the pidfile then names the daemon.
		if ! kill -0 "$launched" 2>/dev/null && ! ours_pid >/dev/null; then
			log "dockerd exited during start; last log lines:"
			tail -n 15 "$LOG" >&2
			return 1
		fi
		if [ "$(date +%s)" -ge "$deadline" ]; then
			log "dockerd did not answer within ${WAIT}s; last log lines:"
			tail -n 15 "$LOG" >&2
			stop_daemon
			return 1
		fi
		sleep 0.2
	done
}

# import_image builds a tiny rootfs from busybox-static (every applet as a
# symlink, a user 1000 "agent") and imports it as $IMAGE.
import_image() {
	rootfs="$STATE/rootfs"
	rm -rf "$rootfs"
	mkdir -p "$rootfs/bin" "$rootfs/etc" "$rootfs/tmp" "$rootfs/home" "$rootfs/workspace" \
		"$rootfs/proc" "$rootfs/sys" "$rootfs/dev"
	chmod 1777 "$rootfs/tmp"
	cp /bin/busybox "$rootfs/bin/busybox"
	for applet in $(/bin/busybox --list); do
		[ "$applet" = busybox ] || ln -s busybox "$rootfs/bin/$applet"
	done
	write_users "$rootfs"
	tar -C "$rootfs" --numeric-owner --owner=0 --group=0 -cf - . |
		docker_cli import \
			--change 'ENV PATH=/bin' \
			--change 'WORKDIR /workspace' \
			--change 'LABEL alfred.test-image=busybox-static' \
			- "$IMAGE" >/dev/null
	rm -rf "$rootfs"
}

# smoke_test runs a container as the agent user with no network: it proves
# that the storage driver can mount layers and that cgroups can be set up.
smoke_test() {
	out=$(docker_cli run --rm --network none --user 1000:1000 --cap-drop ALL \
		--security-opt no-new-privileges --init --pids-limit 64 --memory 64m \
		"$IMAGE" id -u 2>&1) && [ "$out" = 1000 ] && return 0
	log "smoke test failed: $out"
	log "hint: on cgroup v2 without systemd try ALFRED_DOCKER_CGROUP_DRIVER=cgroupfs (the default);"
	log "      with systemd as PID 1 try ALFRED_DOCKER_CGROUP_DRIVER=systemd; dockerd log: $LOG"
	return 1
}

start() {
	[ "$(id -u)" = 0 ] || die "start needs root (it runs dockerd)"
	install_packages
	if pid=$(ours_pid); then
		log "dockerd already running (pid $pid, storage $(docker_cli info --format '{{.Driver}}'))"
		t0=$(now_ms)
		import_image
		log "imported $IMAGE in $(($(now_ms) - t0)) ms"
	else
		ok=""
		for driver in $STORAGE; do
			t0=$(now_ms)
			launch "$driver" || { log "storage driver $driver failed"; continue; }
			log "dockerd ready in $(($(now_ms) - t0)) ms (pid $(cat "$PIDFILE"), storage $(docker_cli info --format '{{.Driver}}'))"
			t0=$(now_ms)
			if import_image; then
				t1=$(now_ms)
				log "imported $IMAGE in $((t1 - t0)) ms"
				if smoke_test; then
					log "ran a smoke container in $(($(now_ms) - t1)) ms"
					ok=1
					break
				fi
			fi
			log "storage driver $driver cannot run containers here"
			stop_daemon
		done
		[ -n "$ok" ] || die "dockerd did not start with any of: $STORAGE (log: $LOG)"
	fi
	write_envfile
	print_env
}

stop() {
	if ! ours_pid >/dev/null; then
		log "no dockerd of ours is running (pidfile $PIDFILE)"
		return 0
	fi
	stop_daemon
	rm -f "$ENVFILE"
}

# stop_daemon stops the dockerd of our pidfile, if it runs, and the containerd
# it started for itself.
stop_daemon() {
	pid=$(ours_pid) || return 0
	term_then_kill dockerd "$pid"
	# The containerd that dockerd started for itself stops with it; after a
	# SIGKILL it may linger: stop it too, again only by its own pidfile.
	cpidfile="$EXEC_ROOT/containerd/containerd.pid"
	if [ -f "$cpidfile" ]; then
		cpid=$(cat "$cpidfile")
		if [ -r "/proc/$cpid/cmdline" ] && tr '\0' ' ' <"/proc/$cpid/cmdline" | grep -qF -- "$EXEC_ROOT"; then
			kill -TERM "$cpid" 2>/dev/null || true
		fi
	fi
}

case "${1:-}" in
start) start ;;
stop) stop ;;
env)
	ours_pid >/dev/null || die "no dockerd of ours is running; run: $0 start"
	print_env
	;;
purge)
	stop
	# dockerd leaves its data root bind-mounted on itself (a private mount):
	# unmount what remains under the state folder, deepest first.
	for m in $(awk -v s="$STATE/" 'index($2, s) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount "$m" || die "cannot unmount $m; not deleting $STATE"
	done
	rm -rf "$STATE"
	;;
*)
	echo "usage: $0 start|stop|env|purge" >&2
	exit 2
	;;
esac
