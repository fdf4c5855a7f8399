# pidfile.sh: sourced by the scripts that start a service of their own
# (dockerd.sh, gitea.sh, k8s.sh), so that they stop only what they started.

# pid_of PIDFILE MARK prints the PID written in PIDFILE when that process is
# alive and its command line holds MARK (the option that names PIDFILE, so a
# recycled PID or someone else's server is never touched); else it fails.
pid_of() {
	[ -f "$1" ] || return 1
	pid=$(cat "$1" 2>/dev/null) || return 1
	case "$pid" in '' | *[!0-9]*) return 1 ;; esac
	[ -r "/proc/$pid/cmdline" ] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$2" || return 1
	echo "$pid"
}

# term_then_kill NAME PID stops PID with SIGTERM, then SIGKILL when it is
# still there after 30 s; the caller's log function says each.
term_then_kill() {
	log "stopping $1 pid $2"
	kill -TERM "$2"
	i=0
	while [ -d "/proc/$2" ] && [ $i -lt 150 ]; do
		sleep 0.2
		i=$((i + 1))
	done
	if [ -d "/proc/$2" ]; then
		log "$1 pid $2 ignored SIGTERM for 30s; killing it"
		kill -KILL "$2" 2>/dev/null || true
	fi
}
