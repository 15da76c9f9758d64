#!/usr/bin/env bash
# The web dashboard at scale (see bench/README.md): a daemon with BENCH_TASKS tasks, BENCH_RUNNING of them
# running (throttled by nginx so they keep running), and the dashboard in headless Chromium. Measures
#   (a) the time until the page is interactive (its first rows drawn and clickable; the page's own
#       performance mark, from the start of the navigation to the login address) — goal < 1 s;
#   (b) the daemon's CPU (utime+stime from /proc/PID/stat) over BENCH_CPU_SECONDS with the page open and
#       receiving progress, against the same without any page — goal: the difference < 5% of one core.
# The measuring client is bench/web/measure.py (python3 with selenium; Debian's chromium and chromium-driver).
#
# Env:
#   HAUL               haul binary (default: <repo>/.build/release/haul)
#   BENCH_TASKS        tasks in the session (default 10000)
#   BENCH_RUNNING      of them running at once (default 50; at most 60: nginx worker_connections is 64)
#   BENCH_LIMIT        nginx limit_rate per connection (default 16k): the downloads outlast the run
#   BENCH_CPU_SECONDS  length of each CPU reading (default 30)
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
OUT_DIR="$SCRIPT_DIR/out"
NTASKS=${BENCH_TASKS:-10000}
NRUN=${BENCH_RUNNING:-50}
LIMIT=${BENCH_LIMIT:-16k}
CPU_SECONDS=${BENCH_CPU_SECONDS:-30}
HAUL=${HAUL:-$REPO_ROOT/.build/release/haul}
CLIENT="$SCRIPT_DIR/web/measure.py"

# shellcheck source=bench/lib.sh
. "$SCRIPT_DIR/lib.sh"

for pair in NTASKS:BENCH_TASKS NRUN:BENCH_RUNNING CPU_SECONDS:BENCH_CPU_SECONDS; do
    var=${pair%%:*}
    is_posint "${!var}" || die "${pair#*:} must be a positive integer (got '${!var}')"
done
((NRUN <= 60)) || die "BENCH_RUNNING must be at most 60 (nginx worker_connections is 64)"
((NRUN <= NTASKS)) || die "BENCH_RUNNING ($NRUN) must be at most BENCH_TASKS ($NTASKS)"
nginx_size_bytes "$LIMIT" BENCH_LIMIT >/dev/null || exit 1

bench_require nginx:nginx-light curl:curl python3:python3 /usr/bin/chromium:chromium \
    /usr/bin/chromedriver:chromium-driver flock:util-linux
python3 -c 'import selenium' 2>/dev/null || die "selenium is missing: python3 -m pip install selenium"
bench_require_haul
bench_require_haul_options daemon --web
bench_no_proxy
bench_lock

WWW="$OUT_DIR/www"
NGX_PREFIX="$OUT_DIR/nginx-web-dashboard"
DL_DIR="$OUT_DIR/web-dashboard-dl"
HAUL_HOME_DIR="$OUT_DIR/web-dashboard-home"
DAEMON_LOG="$OUT_DIR/web-dashboard-daemon.log"
RESULT_JSON="$OUT_DIR/web-dashboard.json"
FILE_NAME="testfile-64M.bin"
SOCK_DIR=""
DAEMON_PID=""

stop_daemon() {
    local i
    [[ -n $DAEMON_PID ]] || return 0
    kill -TERM "$DAEMON_PID" 2>/dev/null || true
    for ((i = 0; i < 300; i++)); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$DAEMON_PID" 2>/dev/null || true
    wait "$DAEMON_PID" 2>/dev/null || true
    DAEMON_PID=""
}
web_cleanup() {
    local rc=$?
    set +e
    trap - EXIT INT TERM
    stop_daemon
    [[ -n $SOCK_DIR ]] && rm -rf "$SOCK_DIR"
    (exit "$rc")
    bench_cleanup
}
trap web_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bench_need_space 200
bench_test_file "$WWW/$FILE_NAME" $((64 * 1024 * 1024))
bench_start_throttled_nginx "$FILE_NAME" "$LIMIT"
URL="http://127.0.0.1:$PORT/slow/$FILE_NAME"
log "nginx (pid $NGINX_PID) serves $URL at $LIMIT per connection"

bench_reset_dirs
SOCK_DIR=$(mktemp -d /tmp/haul-bench-web.XXXXXX)
chmod 700 "$SOCK_DIR"
export HAUL_HOME=$HAUL_HOME_DIR HAUL_SOCKET=$SOCK_DIR/daemon.sock
unset XDG_RUNTIME_DIR
WEB_PORT=$(bench_free_port)
: >"$DAEMON_LOG"
"$HAUL" daemon --web "127.0.0.1:$WEB_PORT" </dev/null >>"$DAEMON_LOG" 2>&1 &
DAEMON_PID=$!
for _ in $(seq 600); do
    [[ -S $HAUL_SOCKET ]] && curl -q -s -o /dev/null "http://127.0.0.1:$WEB_PORT/" && break
    kill -0 "$DAEMON_PID" 2>/dev/null || { tail -n 20 "$DAEMON_LOG" >&2; die "haul daemon exited"; }
    sleep 0.1
done
[[ -S $HAUL_SOCKET ]] || die "haul daemon did not open $HAUL_SOCKET within 60 s (log: $DAEMON_LOG)"
log "haul daemon (pid $DAEMON_PID), dashboard on 127.0.0.1:$WEB_PORT"

timeout $((CPU_SECONDS * 2 + 900)) python3 "$CLIENT" --socket "$HAUL_SOCKET" --haul "$HAUL" --url "$URL" \
    --dl-dir "$DL_DIR" --tasks "$NTASKS" --running "$NRUN" --cpu-seconds "$CPU_SECONDS" \
    --json "$RESULT_JSON" </dev/null &
CHILD_PID=$!
if wait "$CHILD_PID"; then rc=0; else rc=$?; fi
CHILD_PID=""
((rc == 0)) || { tail -n 20 "$DAEMON_LOG" >&2; die "the measurement failed (exit $rc)"; }
log "numbers in $RESULT_JSON; haul: $HAUL ($(HAUL_HOME=$HAUL_HOME_DIR "$HAUL" --version 2>/dev/null || echo '?'))"
