#!/bin/sh
# gitea.sh - a real Gitea for Alfred's forge tests.
#
# Usage:
#   scripts/gitea.sh start   build Gitea from the Go module proxy (once: the binary is
#                            cached), start it on 127.0.0.1 with a fresh state, create
#                            the test accounts and repository, and print the
#                            variables the tests read
#   scripts/gitea.sh env     print those variables again (Gitea must be running)
#   scripts/gitea.sh stop    stop the Gitea this script started (by its pidfile PID)
#                            and delete the state folder (never the cache)
#
# From a shell (a failed start must stop the chain: `eval "$(...)"` alone would
# hide it, since eval of nothing succeeds):
#   env=$(scripts/gitea.sh start) && eval "$env" && go test ./forges/...
# or read the env file it writes: $ALFRED_GITEA_STATE/env (KEY=VALUE lines).
#
# Only the printed `export` lines go to stdout; progress goes to stderr.
#
# The build: `go mod download` of code.gitea.io/gitea@v$VERSION, a writable copy of
# the module, `go build` with the sqlite tags (cgo: gcc is needed). It is cached
# with the options/ and templates/ folders of the module, which Gitea reads from
# disk (STATIC_ROOT_PATH) since it is built without bindata. The web UI's
# JavaScript and CSS are not built (that needs npm): the API, git over HTTP and
# the server-rendered pages work, the pages look bare.
#
# What start creates: an admin `gitea-admin`, the bot `alfred-bot` and a person
# `alice`, each with an access token of scope all, and the public repository
# alice/demo (an initial commit on main) where alfred-bot is an admin
# collaborator: Gitea lets only site admins and repository admins read another
# user's permission (GET .../collaborators/{user}/permission), which the bot
# needs to know who may steer it.
#
# Gitea refuses to run as root. As root this script runs it (and its admin
# commands) as the unprivileged system user alfred-gitea, created when missing;
# it does not use Gitea's undocumented I_AM_BEING_UNSAFE_RUNNING_AS_ROOT escape
# hatch. As another user, Gitea runs as that user.
#
# Environment:
#   ALFRED_GITEA_VERSION  Gitea version (default 1.26.0)
#   ALFRED_GITEA_CACHE    cache root; the build goes to $ALFRED_GITEA_CACHE/$VERSION
#                         (default /var/cache/alfred/gitea)
#   ALFRED_GITEA_STATE    state folder: config, database, repositories, logs
#                         (default /tmp/alfred-test-gitea)
#   ALFRED_GITEA_PORT     HTTP port on 127.0.0.1 (default: a free one)
#   ALFRED_GITEA_WAIT     seconds to wait for Gitea to answer (default 120)
set -eu
# shellcheck source-path=SCRIPTDIR source=lib/pidfile.sh
. "$(dirname "$0")/lib/pidfile.sh"
PATH=$PATH:/usr/local/go/bin:/usr/sbin:/sbin:/usr/bin:/bin
export PATH

VERSION=${ALFRED_GITEA_VERSION:-1.26.0}
VERSION=${VERSION#v}
MODULE=code.gitea.io/gitea@v$VERSION
CACHE_ROOT=${ALFRED_GITEA_CACHE:-/var/cache/alfred/gitea}
CACHE=$CACHE_ROOT/$VERSION
BUILD_LOG=$CACHE_ROOT/build-$VERSION.log
STATE=${ALFRED_GITEA_STATE:-/tmp/alfred-test-gitea}
WAIT=${ALFRED_GITEA_WAIT:-120}
PIDFILE=$STATE/gitea.pid
CONFIG=$STATE/app.ini
LOG_DIR=$STATE/log
LOG=$LOG_DIR/gitea.log
STDLOG=$STATE/gitea.out
ENVFILE=$STATE/env
RUN_AS=alfred-gitea

ADMIN=gitea-admin
BOT=alfred-bot
PERSON=alice
REPO=demo

log() { printf 'gitea.sh: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

now_ms() { date +%s%3N; }

# ours_pid prints the PID of the Gitea this script started, if it is alive. A
# PID is ours only when the process is a `gitea web` started with our pidfile,
# so a recycled PID or another Gitea is never touched.
ours_pid() { pid_of "$PIDFILE" "web --pid $PIDFILE "; }

# AS_GITEA prefixes a command to run it as the user Gitea runs as; setpriv and
# env exec, so the command keeps their PID. (Split on spaces on purpose: it
# holds none but between words.)
if [ "$(id -u)" = 0 ]; then
	AS_GITEA="setpriv --reuid=$RUN_AS --regid=$RUN_AS --init-groups env USER=$RUN_AS"
else
	AS_GITEA="env"
fi

# gitea runs the cached binary on our configuration, as Gitea's user.
# shellcheck disable=SC2086
gitea() { $AS_GITEA HOME="$STATE/home" "$CACHE/gitea" --work-path "$STATE" --config "$CONFIG" "$@"; }

# launch_web starts `gitea web` in the background (setsid: it outlives this
# script and a Ctrl-C of the caller); $launched is its PID.
launch_web() {
	# shellcheck disable=SC2086
	setsid $AS_GITEA HOME="$STATE/home" "$CACHE/gitea" --work-path "$STATE" --config "$CONFIG" web --pid "$PIDFILE" \
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

# ensure_user creates the unprivileged system user Gitea runs as under root.
ensure_user() {
	[ "$(id -u)" = 0 ] || return 0
	id -u "$RUN_AS" >/dev/null 2>&1 && return 0
	log "creating the system user $RUN_AS (Gitea refuses to run as root)"
	useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$RUN_AS" ||
		die "creation of the system user $RUN_AS failed"
}

# cached tells whether the cache holds a complete build.
cached() { [ -x "$CACHE/gitea" ] && [ -d "$CACHE/options" ] && [ -d "$CACHE/templates" ]; }

# build builds Gitea into a temporary folder next to the cache and renames it
# into place, so that a killed build never leaves a half cache.
build() {
	command -v go >/dev/null 2>&1 || die "build of $MODULE failed: the go command is missing"
	install_packages gcc:gcc gcc:libc6-dev # cgo, for SQLite
	mkdir -p "$CACHE_ROOT" || die "cannot create the cache folder $CACHE_ROOT"
	tmp=$(mktemp -d "$CACHE_ROOT/.build-$VERSION.XXXXXX") || die "cannot create a build folder in $CACHE_ROOT"
	# The temporary folder goes whatever happens; a signal ends the script too.
	trap 'rm -rf "$tmp"' EXIT
	trap 'exit 1' INT TERM HUP
	t0=$(date +%s)
	log "building $MODULE from the Go module proxy (several minutes; log: $BUILD_LOG)"
	: >"$BUILD_LOG"
	go mod download -json "$MODULE" >"$tmp/module.json" 2>>"$BUILD_LOG" ||
		{ cat "$tmp/module.json" >>"$BUILD_LOG"; die "build of $MODULE failed: download; see $BUILD_LOG"; }
	dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p' "$tmp/module.json")
	[ -d "$dir" ] || die "build of $MODULE failed: no module folder in the answer of go mod download: $(cat "$tmp/module.json")"
	# The module cache is read-only: build in a writable copy.
	cp -R "$dir" "$tmp/src" || die "build of $MODULE failed: copy of $dir"
	chmod -R u+w "$tmp/src" || die "build of $MODULE failed: chmod of its copy"
	mkdir "$tmp/out"
	(cd "$tmp/src" && CGO_ENABLED=1 go build -trimpath -tags "sqlite sqlite_unlock_notify" \
		-ldflags "-s -w -X main.Version=$VERSION -X 'main.Tags=sqlite sqlite_unlock_notify'" -o "$tmp/out/gitea" .) \
		>>"$BUILD_LOG" 2>&1 || die "build of $MODULE failed: see $BUILD_LOG"
	cp -R "$tmp/src/options" "$tmp/src/templates" "$tmp/out/" || die "build of $MODULE failed: copy of options/ and templates/"
	chmod -R a+rX "$tmp/out"
	# mv -T refuses to move into an existing folder: another start may have
	# finished the same build first, and its cache is as good as ours.
	if ! mv -T "$tmp/out" "$CACHE" 2>/dev/null; then
		cached || die "cannot rename the build into $CACHE"
		log "another start cached $MODULE meanwhile; using it"
	fi
	rm -rf "$tmp"
	trap - EXIT INT TERM HUP
	log "built $MODULE in $(($(date +%s) - t0)) s into $CACHE"
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

secret() { "$CACHE/gitea" generate secret "$1"; }

random_password() { od -An -N18 -tx1 /dev/urandom | tr -d ' \n'; }

write_config() {
	secret_key=$(secret SECRET_KEY) || die "start failed: gitea generate secret SECRET_KEY"
	internal_token=$(secret INTERNAL_TOKEN) || die "start failed: gitea generate secret INTERNAL_TOKEN"
	jwt_secret=$(secret JWT_SECRET) || die "start failed: gitea generate secret JWT_SECRET"
	lfs_jwt_secret=$(secret JWT_SECRET) || die "start failed: gitea generate secret JWT_SECRET"
	run_user=$(id -un)
	[ "$(id -u)" = 0 ] && run_user=$RUN_AS
	cat >"$CONFIG" <<-EOF
		; Written by scripts/gitea.sh for Alfred's tests; deleted by its stop.
		APP_NAME = Alfred test Gitea
		RUN_MODE = prod
		RUN_USER = $run_user
		WORK_PATH = $STATE

		[server]
		PROTOCOL = http
		HTTP_ADDR = 127.0.0.1
		HTTP_PORT = $PORT
		DOMAIN = 127.0.0.1
		ROOT_URL = http://127.0.0.1:$PORT/
		DISABLE_SSH = true
		START_SSH_SERVER = false
		OFFLINE_MODE = true
		LFS_START_SERVER = false
		LFS_JWT_SECRET = $lfs_jwt_secret
		STATIC_ROOT_PATH = $CACHE
		APP_DATA_PATH = $STATE/data

		[database]
		DB_TYPE = sqlite3
		PATH = $STATE/data/gitea.db
		SQLITE_JOURNAL_MODE = WAL

		[security]
		INSTALL_LOCK = true
		SECRET_KEY = $secret_key
		INTERNAL_TOKEN = $internal_token

		[oauth2]
		JWT_SECRET = $jwt_secret

		[api]
		; Gitea's default is 50: lower, the tests' lists take several pages.
		MAX_RESPONSE_ITEMS = 20
		DEFAULT_PAGING_NUM = 20

		[repository]
		ROOT = $STATE/repos
		DEFAULT_BRANCH = main

		[mailer]
		ENABLED = false

		[service]
		DISABLE_REGISTRATION = true
		REQUIRE_SIGNIN_VIEW = false
		ENABLE_NOTIFY_MAIL = false

		[webhook]
		ALLOWED_HOST_LIST = loopback
		SKIP_TLS_VERIFY = true

		[log]
		MODE = file
		LEVEL = info
		ROOT_PATH = $LOG_DIR

		[indexer]
		ISSUE_INDEXER_TYPE = db
		REPO_INDEXER_ENABLED = false

		[queue]
		TYPE = channel

		[cron.update_checker]
		ENABLED = false

		[actions]
		ENABLED = false
	EOF
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
	gitea admin user create --username "$name" --email "$name@alfred.invalid" \
		--password "$(random_password)" --must-change-password=false "$@" >>"$STDLOG" 2>&1 ||
		fail_start "gitea admin user create $name"
	gitea admin user generate-access-token --username "$name" --token-name alfred-test \
		--scopes all --raw 2>>"$STDLOG" || fail_start "gitea admin user generate-access-token $name"
}

# fail_start reports a failed start step with the tail of Gitea's logs, stops
# what was started and exits.
fail_start() {
	log "start failed: $1; last lines of $LOG and $STDLOG:"
	tail -n 20 "$LOG" >&2 2>/dev/null || true
	tail -n 20 "$STDLOG" >&2 2>/dev/null || true
	stop_gitea
	die "start failed: $1 (state kept in $STATE)"
}

# wait_ready waits until Gitea answers /api/v1/version, or it exited, or WAIT passed.
wait_ready() {
	deadline=$(($(date +%s) + WAIT))
	while :; do
		curl -fsS -o /dev/null "$URL/api/v1/version" 2>/dev/null && return 0
		kill -0 "$launched" 2>/dev/null || fail_start "gitea web exited"
		[ "$(date +%s)" -lt "$deadline" ] || fail_start "gitea web did not answer within ${WAIT}s"
		sleep 0.2
	done
}

print_env() { sed 's/^/export /' "$ENVFILE"; }

# reset_state empties the state folder of a Gitea that is not running; it
# refuses to touch a folder that does not look like ours.
reset_state() {
	if [ -e "$STATE" ]; then
		if [ -n "$(ls -A "$STATE")" ] && [ ! -f "$CONFIG" ]; then
			die "state folder $STATE exists and was not made by this script; remove it or set ALFRED_GITEA_STATE"
		fi
		rm -rf "$STATE"
	fi
	mkdir -p "$STATE/home" "$STATE/data" "$LOG_DIR" || die "cannot create the state folder $STATE"
	chmod 0700 "$STATE"
	[ "$(id -u)" = 0 ] && chown -R "$RUN_AS:$RUN_AS" "$STATE"
	return 0
}

start() {
	if pid=$(ours_pid) && [ -f "$ENVFILE" ]; then
		log "gitea already running (pid $pid)"
		print_env
		return 0
	fi
	install_packages git:git curl:curl # Gitea runs git; this script talks to the API with curl
	ensure_user
	if cached; then
		log "using the cached build in $CACHE"
	else
		build
	fi
	t0=$(now_ms)
	stop_gitea
	PORT=${ALFRED_GITEA_PORT:-$(free_port)} || die "start failed: no free port found"
	! port_in_use "$PORT" || die "start failed: port $PORT is in use (ALFRED_GITEA_PORT)"
	reset_state
	URL=http://127.0.0.1:$PORT
	write_config
	[ "$(id -u)" = 0 ] && chown "$RUN_AS:$RUN_AS" "$CONFIG"
	gitea migrate >>"$STDLOG" 2>&1 || fail_start "gitea migrate"
	log "starting gitea $VERSION on $URL (state in $STATE)"
	launch_web
	wait_ready
	log "gitea answered in $(($(now_ms) - t0)) ms (pid $(cat "$PIDFILE"))"

	admin_token=$(create_account "$ADMIN" --admin)
	bot_token=$(create_account "$BOT")
	person_token=$(create_account "$PERSON")
	api "$person_token" POST /user/repos \
		"{\"name\":\"$REPO\",\"auto_init\":true,\"default_branch\":\"main\",\"readme\":\"Default\",\"private\":false}" \
		>/dev/null || fail_start "creation of $PERSON/$REPO"
	api "$person_token" PUT "/repos/$PERSON/$REPO/collaborators/$BOT" '{"permission":"admin"}' >/dev/null ||
		fail_start "adding $BOT as a collaborator of $PERSON/$REPO"

	umask 077
	cat >"$ENVFILE" <<-EOF
		ALFRED_TEST_GITEA_URL=$URL
		ALFRED_TEST_GITEA_VERSION=$VERSION
		ALFRED_TEST_GITEA_ADMIN=$ADMIN
		ALFRED_TEST_GITEA_ADMIN_TOKEN=$admin_token
		ALFRED_TEST_GITEA_BOT=$BOT
		ALFRED_TEST_GITEA_BOT_TOKEN=$bot_token
		ALFRED_TEST_GITEA_USER=$PERSON
		ALFRED_TEST_GITEA_USER_TOKEN=$person_token
	EOF
	log "ready in $(($(now_ms) - t0)) ms: $URL, accounts $ADMIN, $BOT and $PERSON, repository $PERSON/$REPO"
	print_env
}

# stop_gitea stops the Gitea of our pidfile, if it runs.
stop_gitea() {
	pid=$(ours_pid) || return 0
	log "stopping gitea pid $pid"
	kill -TERM "$pid"
	i=0
	while [ -d "/proc/$pid" ] && [ $i -lt 150 ]; do
		sleep 0.2
		i=$((i + 1))
	done
	if [ -d "/proc/$pid" ]; then
		log "gitea pid $pid ignored SIGTERM for 30s; killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
}

stop() {
	if ours_pid >/dev/null; then
		stop_gitea
	else
		log "no gitea of ours is running (pidfile $PIDFILE)"
	fi
	if [ -f "$CONFIG" ]; then
		rm -rf "$STATE"
	elif [ -e "$STATE" ]; then
		log "not deleting $STATE: it has no app.ini of ours"
	fi
}

case "${1:-}" in
start) start ;;
stop) stop ;;
env)
	if ! ours_pid >/dev/null || [ ! -f "$ENVFILE" ]; then
		die "no gitea of ours is running; run: $0 start"
	fi
	print_env
	;;
*)
	echo "usage: $0 start|env|stop" >&2
	exit 2
	;;
esac
