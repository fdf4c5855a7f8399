# forge.sh: what scripts/gitea.sh and scripts/forgejo.sh share. Both start a
# real forge of the Gitea family for Alfred's tests the same way: built once
# into a cache, started on 127.0.0.1 with a fresh state as an unprivileged
# user, with the same accounts, tokens and repository, and the variables the
# tests read printed.
#
# The script that sources this file sets, then calls forge_main "$@":
#   FORGE        the forge's name: gitea or forgejo (the binary's name in the
#                cache, the log prefix, the default state folder)
#   TITLE        how the logs name it (Gitea, Forgejo)
#   VERSION      the version it builds
#   SOURCE       what it builds from, for the logs
#   CACHE        the folder of the build: the binary $FORGE, options/, templates/
#   OPT          the prefix of its settings: ALFRED_GITEA, ALFRED_FORGEJO
#   TEST_PREFIX  the prefix of the variables it prints: ALFRED_TEST_GITEA, ...
#   RUN_AS       the system user it runs as under root
#   LDFLAGS      the -ldflags of its build (its version stamped in)
#   GOFLAGS_EXTRA  GOFLAGS of its build (may be empty)
# and defines fetch_source DIR: put the source tree, writable, in DIR.
#
# Settings read here ($OPT_...): _STATE (state folder, default
# /tmp/alfred-test-$FORGE), _PORT (default: a free one), _WAIT (seconds to
# wait for the forge to answer, default 120).

# shellcheck source-path=SCRIPTDIR source=pidfile.sh
. "$(dirname "$0")/lib/pidfile.sh"
PATH=$PATH:/usr/local/go/bin:/usr/sbin:/sbin:/usr/bin:/bin
export PATH

opt() { eval "printf '%s' \"\${${OPT}_$1:-$2}\""; }

STATE=$(opt STATE "/tmp/alfred-test-$FORGE")
WAIT=$(opt WAIT 120)
CACHE_ROOT=$(dirname "$CACHE")
BUILD_LOG=$CACHE_ROOT/build-$(basename "$CACHE").log
PIDFILE=$STATE/$FORGE.pid
CONFIG=$STATE/app.ini
LOG_DIR=$STATE/log
LOG=$LOG_DIR/$FORGE.log
STDLOG=$STATE/$FORGE.out
ENVFILE=$STATE/env

ADMIN=gitea-admin
BOT=alfred-bot
PERSON=alice
REPO=demo

log() { printf '%s.sh: %s\n' "$FORGE" "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

now_ms() { date +%s%3N; }

# ours_pid prints the PID of the forge this script started, if it is alive. A
# PID is ours only when the process is a `web` started with our pidfile, so a
# recycled PID or another forge is never touched.
ours_pid() { pid_of "$PIDFILE" "web --pid $PIDFILE "; }

# AS_FORGE prefixes a command to run it as the user the forge runs as;
# setpriv and env exec, so the command keeps their PID. (Split on spaces on
# purpose: it holds none but between words.)
if [ "$(id -u)" = 0 ]; then
	AS_FORGE="setpriv --reuid=$RUN_AS --regid=$RUN_AS --init-groups env USER=$RUN_AS"
else
	AS_FORGE="env"
fi

# forge runs the cached binary on our configuration, as the forge's user.
# shellcheck disable=SC2086
forge() { $AS_FORGE HOME="$STATE/home" "$CACHE/$FORGE" --work-path "$STATE" --config "$CONFIG" "$@"; }

# launch_web starts `web` in the background (setsid: it outlives this script
# and a Ctrl-C of the caller); $launched is its PID.
launch_web() {
	# shellcheck disable=SC2086
	setsid $AS_FORGE HOME="$STATE/home" "$CACHE/$FORGE" --work-path "$STATE" --config "$CONFIG" web --pid "$PIDFILE" \
		</dev/null >>"$STDLOG" 2>&1 &
	launched=$!
}

# install_packages installs the Debian packages named when their command is
# missing: "command:package ..." pairs.
install_packages() {
	need=""
	for pair in "$@"; do
		command -v "${pair%%:*}" >/dev/null 2>&1 || need="$need ${pair#*:}"
	done
	[ -z "$need" ] && return 0
	[ "$(id -u)" = 0 ] || die "missing packages:$need; install them or run as root"
	log "installing$need"
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need >&2 ||
		{ apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need >&2; } ||
		die "installation of$need failed"
}

# ensure_user creates the unprivileged system user the forge runs as under
# root (Gitea and Forgejo refuse to run as root; their undocumented escape
# hatch is not used).
ensure_user() {
	[ "$(id -u)" = 0 ] || return 0
	id -u "$RUN_AS" >/dev/null 2>&1 && return 0
	log "creating the system user $RUN_AS ($TITLE refuses to run as root)"
	useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$RUN_AS" ||
		die "creation of the system user $RUN_AS failed"
}

# cached tells whether the cache holds a complete build.
cached() { [ -x "$CACHE/$FORGE" ] && [ -d "$CACHE/options" ] && [ -d "$CACHE/templates" ]; }

# build builds the forge into a temporary folder next to the cache and
# renames it into place, so that a killed build never leaves a half cache.
build() {
	command -v go >/dev/null 2>&1 || die "build of $SOURCE failed: the go command is missing"
	install_packages gcc:gcc gcc:libc6-dev # cgo, for SQLite
	mkdir -p "$CACHE_ROOT" || die "cannot create the cache folder $CACHE_ROOT"
	tmp=$(mktemp -d "$CACHE_ROOT/.build.XXXXXX") || die "cannot create a build folder in $CACHE_ROOT"
	# The temporary folder goes whatever happens; a signal ends the script too.
	trap 'rm -rf "$tmp"' EXIT
	trap 'exit 1' INT TERM HUP
	t0=$(date +%s)
	log "building $TITLE $VERSION from $SOURCE (several minutes; log: $BUILD_LOG)"
	: >"$BUILD_LOG"
	fetch_source "$tmp"
	mkdir "$tmp/out"
	(cd "$tmp/src" && GOFLAGS="$GOFLAGS_EXTRA" CGO_ENABLED=1 go build -trimpath -tags "sqlite sqlite_unlock_notify" \
		-ldflags "$LDFLAGS" -o "$tmp/out/$FORGE" .) \
		>>"$BUILD_LOG" 2>&1 || die "build of $SOURCE failed: see $BUILD_LOG"
	cp -R "$tmp/src/options" "$tmp/src/templates" "$tmp/out/" || die "build of $SOURCE failed: copy of options/ and templates/"
	chmod -R a+rX "$tmp/out"
	# mv -T refuses to move into an existing folder: another start may have
	# finished the same build first, and its cache is as good as ours.
	if ! mv -T "$tmp/out" "$CACHE" 2>/dev/null; then
		cached || die "cannot rename the build into $CACHE"
		log "another start cached $TITLE $VERSION meanwhile; using it"
	fi
	rm -rf "$tmp"
	trap - EXIT INT TERM HUP
	log "built $TITLE $VERSION in $(($(date +%s) - t0)) s into $CACHE"
}

# listening prints the TCP ports something listens on, in hex as the kernel
# lists them in /proc/net/tcp and tcp6.
listening() {
	awk 'FNR > 1 && $4 == "0A" { split($2, a, ":"); print a[2] }' /proc/net/tcp /proc/net/tcp6 2>/dev/null | sort -u
}

# port_in_use tells whether something listens on port $1.
port_in_use() { listening | grep -qx "$(printf '%04X' "$1")"; }

# free_port prints a TCP port that nothing listens on.
free_port() {
	i=0
	while [ $i -lt 100 ]; do
		port=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 30000))
		if ! port_in_use "$port"; then
			echo "$port"
			return 0
		fi
		i=$((i + 1))
	done
	return 1
}

secret() { "$CACHE/$FORGE" generate secret "$1"; }

random_password() { od -An -N18 -tx1 /dev/urandom | tr -d ' \n'; }

write_config() {
	secret_key=$(secret SECRET_KEY) || die "start failed: $FORGE generate secret SECRET_KEY"
	internal_token=$(secret INTERNAL_TOKEN) || die "start failed: $FORGE generate secret INTERNAL_TOKEN"
	jwt_secret=$(secret JWT_SECRET) || die "start failed: $FORGE generate secret JWT_SECRET"
	lfs_jwt_secret=$(secret JWT_SECRET) || die "start failed: $FORGE generate secret JWT_SECRET"
	run_user=$(id -un)
	[ "$(id -u)" = 0 ] && run_user=$RUN_AS
	# The settings, one per line; the section headers start with '['.
	{
		echo "; Written by scripts/$FORGE.sh for Alfred's tests; deleted by its stop."
		printf '%s\n' "APP_NAME = Alfred test $TITLE" "RUN_MODE = prod" "RUN_USER = $run_user" "WORK_PATH = $STATE"
		printf '\n%s\n' "[server]"
		printf '%s\n' "PROTOCOL = http" "HTTP_ADDR = 127.0.0.1" "HTTP_PORT = $PORT" "DOMAIN = 127.0.0.1" \
			"ROOT_URL = http://127.0.0.1:$PORT/" "DISABLE_SSH = true" "START_SSH_SERVER = false" "OFFLINE_MODE = true" \
			"LFS_START_SERVER = false" "LFS_JWT_SECRET = $lfs_jwt_secret" "STATIC_ROOT_PATH = $CACHE" "APP_DATA_PATH = $STATE/data"
		printf '\n%s\n' "[database]"
		printf '%s\n' "DB_TYPE = sqlite3" "PATH = $STATE/data/$FORGE.db" "SQLITE_JOURNAL_MODE = WAL"
		printf '\n%s\n' "[security]"
		printf '%s\n' "INSTALL_LOCK = true" "SECRET_KEY = $secret_key" "INTERNAL_TOKEN = $internal_token"
		printf '\n%s\n' "[oauth2]"
		printf '%s\n' "JWT_SECRET = $jwt_secret"
		printf '\n%s\n' "[api]"
		echo "; The default is 50: lower, the tests' lists take several pages."
		printf '%s\n' "MAX_RESPONSE_ITEMS = 20" "DEFAULT_PAGING_NUM = 20"
		printf '\n%s\n' "[repository]"
		printf '%s\n' "ROOT = $STATE/repos" "DEFAULT_BRANCH = main"
		printf '\n%s\n' "[mailer]"
		printf '%s\n' "ENABLED = false"
		printf '\n%s\n' "[service]"
		printf '%s\n' "DISABLE_REGISTRATION = true" "REQUIRE_SIGNIN_VIEW = false" "ENABLE_NOTIFY_MAIL = false"
		printf '\n%s\n' "[webhook]"
		printf '%s\n' "ALLOWED_HOST_LIST = loopback" "SKIP_TLS_VERIFY = true"
		printf '\n%s\n' "[log]"
		printf '%s\n' "MODE = file" "LEVEL = info" "ROOT_PATH = $LOG_DIR"
		printf '\n%s\n' "[indexer]"
		printf '%s\n' "ISSUE_INDEXER_TYPE = db" "REPO_INDEXER_ENABLED = false"
		printf '\n%s\n' "[queue]"
		printf '%s\n' "TYPE = channel"
		printf '\n%s\n' "[cron.update_checker]"
		printf '%s\n' "ENABLED = false"
		printf '\n%s\n' "[actions]"
		printf '%s\n' "ENABLED = false"
	} >"$CONFIG"
}

# api calls the API with a token: api TOKEN METHOD PATH [JSON]. It prints the
# answer; on an error status it prints the answer to stderr and fails.
api() {
	out=$STATE/api.out
	code=$(curl -sS -o "$out" -w '%{http_code}' -X "$2" -H "Authorization: token $1" -H 'Content-Type: application/json' \
		${4:+-d "$4"} "$URL/api/v1$3") || return 1
	case "$code" in
	2??) cat "$out" ;;
	*)
		log "$2 $3 answered HTTP $code: $(cat "$out")"
		return 1
		;;
	esac
}

# create_account creates a user (--admin for an admin) and prints a new access
# token of scope all.
create_account() {
	name=$1
	shift
	forge admin user create --username "$name" --email "$name@alfred.invalid" \
		--password "$(random_password)" --must-change-password=false "$@" >>"$STDLOG" 2>&1 ||
		fail_start "$FORGE admin user create $name"
	forge admin user generate-access-token --username "$name" --token-name alfred-test \
		--scopes all --raw 2>>"$STDLOG" || fail_start "$FORGE admin user generate-access-token $name"
}

# fail_start reports a failed start step with the tail of the forge's logs,
# stops what was started and exits.
fail_start() {
	log "start failed: $1; last lines of $LOG and $STDLOG:"
	tail -n 20 "$LOG" >&2 2>/dev/null || true
	tail -n 20 "$STDLOG" >&2 2>/dev/null || true
	stop_launched
	die "start failed: $1 (state kept in $STATE)"
}

# wait_ready waits until the forge answers /api/v1/version (returns 0), or
# it exited or $1 seconds passed (returns 1, saying which in $why).
wait_ready() {
	deadline=$(($(date +%s) + $1))
	while :; do
		curl -fsS --max-time 5 -o /dev/null "$URL/api/v1/version" 2>/dev/null && return 0
		kill -0 "$launched" 2>/dev/null || { why="$FORGE web exited"; return 1; }
		[ "$(date +%s)" -lt "$deadline" ] || { why="$FORGE web did not answer within ${1}s"; return 1; }
		sleep 0.2
	done
}

# start_web starts `web` and waits until it answers. A start that does not
# (seen once: a Forgejo that answered in 1-2 s on every other start hung
# after its git check) is stopped and made once more, on a fresh state and
# port when the port was not chosen: the second failure stops the start.
# The first waits at most 60 s (or WAIT when shorter), the second WAIT.
start_web() {
	first=$WAIT
	[ "$first" -gt 60 ] && first=60
	for try in 1 2; do
		PORT=$(opt PORT "")
		[ -n "$PORT" ] || PORT=$(free_port) || die "start failed: no free port found"
		! port_in_use "$PORT" || die "start failed: port $PORT is in use (${OPT}_PORT)"
		reset_state
		URL=http://127.0.0.1:$PORT
		write_config
		[ "$(id -u)" = 0 ] && chown "$RUN_AS:$RUN_AS" "$CONFIG"
		forge migrate >>"$STDLOG" 2>&1 || fail_start "$FORGE migrate"
		log "starting $TITLE $VERSION on $URL (state in $STATE)"
		launch_web
		wait=$WAIT
		[ "$try" = 1 ] && wait=$first
		wait_ready "$wait" && return 0
		[ "$try" = 2 ] && fail_start "$why"
		log "$why; last lines of $LOG:"
		tail -n 5 "$LOG" >&2 2>/dev/null || true
		log "stopping it and starting once more"
		stop_launched
	done
}

print_env() { sed 's/^/export /' "$ENVFILE"; }

# reset_state empties the state folder of a forge that is not running; it
# refuses to touch a folder that does not look like ours.
reset_state() {
	if [ -e "$STATE" ]; then
		if [ -n "$(ls -A "$STATE")" ] && [ ! -f "$CONFIG" ]; then
			die "state folder $STATE exists and was not made by this script; remove it or set ${OPT}_STATE"
		fi
		rm -rf "$STATE"
	fi
	mkdir -p "$STATE/home" "$STATE/data" "$LOG_DIR" || die "cannot create the state folder $STATE"
	chmod 0700 "$STATE"
	[ "$(id -u)" = 0 ] && chown -R "$RUN_AS:$RUN_AS" "$STATE"
	return 0
}

# api_version prints the version the forge's API says: the one the Gitea SDK
# reads (Forgejo says the Gitea version it is compatible with after a '+').
api_version() {
	curl -fsS "$URL/api/v1/version" | sed -n 's/.*"version":"\([^"]*\)".*/\1/p'
}

# stub_assets gives the pages empty stand-ins for the JavaScript and CSS the
# build lacks (no frontend is built): the forge serves the files of
# $STATE/custom/public/ as its assets. Without them a browser gets 404s, and
# the page's script alerts "Failed to load asset files", a dialog that
# blocks a headless browser's page load.
stub_assets() {
	curl -fsS "$URL/user/login" | grep -o '"/assets/[^"?]*\.\(js\|css\)' | tr -d '"' | sort -u |
		while read -r asset; do
			file=$STATE/custom/public$asset
			mkdir -p "$(dirname "$file")" && : >"$file" || return 1
		done
	[ "$(id -u)" = 0 ] && chown -R "$RUN_AS:$RUN_AS" "$STATE/custom"
	return 0
}

start() {
	if pid=$(ours_pid) && [ -f "$ENVFILE" ]; then
		log "$FORGE already running (pid $pid)"
		print_env
		return 0
	fi
	install_packages git:git curl:curl # the forge runs git; this script talks to the API with curl
	ensure_user
	if cached; then
		log "using the cached build in $CACHE"
	else
		build
	fi
	t0=$(now_ms)
	stop_forge
	start_web
	log "$FORGE answered in $(($(now_ms) - t0)) ms (pid $(cat "$PIDFILE"))"
	said=$(api_version) || fail_start "reading /api/v1/version"
	stub_assets || fail_start "making the stand-ins of the pages' assets"

	admin_token=$(create_account "$ADMIN" --admin)
	bot_token=$(create_account "$BOT")
	person_token=$(create_account "$PERSON")
	api "$person_token" POST /user/repos \
		"{\"name\":\"$REPO\",\"auto_init\":true,\"default_branch\":\"main\",\"readme\":\"Default\",\"private\":false}" \
		>/dev/null || fail_start "creation of $PERSON/$REPO"
	api "$person_token" PUT "/repos/$PERSON/$REPO/collaborators/$BOT" '{"permission":"admin"}' >/dev/null ||
		fail_start "adding $BOT as a collaborator of $PERSON/$REPO"

	umask 077
	{
		echo "${TEST_PREFIX}_URL=$URL"
		echo "${TEST_PREFIX}_VERSION=$VERSION"
		echo "${TEST_PREFIX}_API_VERSION=$said"
		echo "${TEST_PREFIX}_ADMIN=$ADMIN"
		echo "${TEST_PREFIX}_ADMIN_TOKEN=$admin_token"
		echo "${TEST_PREFIX}_BOT=$BOT"
		echo "${TEST_PREFIX}_BOT_TOKEN=$bot_token"
		echo "${TEST_PREFIX}_USER=$PERSON"
		echo "${TEST_PREFIX}_USER_TOKEN=$person_token"
	} >"$ENVFILE"
	log "ready in $(($(now_ms) - t0)) ms: $URL (API version $said), accounts $ADMIN, $BOT and $PERSON, repository $PERSON/$REPO"
	print_env
}

# stop_forge stops the forge of our pidfile, if it runs.
stop_forge() {
	pid=$(ours_pid) || return 0
	term_then_kill "$FORGE" "$pid"
}

# stop_launched stops the forge this start launched, by its pidfile or, before
# the forge wrote it, by the PID it was launched with ($launched).
stop_launched() {
	stop_forge
	if [ -n "${launched:-}" ] && [ -d "/proc/$launched" ]; then
		term_then_kill "$FORGE" "$launched"
	fi
}

stop() {
	if ours_pid >/dev/null; then
		stop_forge
	else
		log "no $FORGE of ours is running (pidfile $PIDFILE)"
	fi
	if [ -f "$CONFIG" ]; then
		rm -rf "$STATE"
	elif [ -e "$STATE" ]; then
		log "not deleting $STATE: it has no app.ini of ours"
	fi
}

forge_main() {
	case "${1:-}" in
	start) start ;;
	stop) stop ;;
	build) cached || build ;;
	env)
		if ! ours_pid >/dev/null || [ ! -f "$ENVFILE" ]; then
			die "no $FORGE of ours is running; run: $0 start"
		fi
		print_env
		;;
	*)
		echo "usage: $0 start|env|stop|build" >&2
		exit 2
		;;
	esac
}
