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
