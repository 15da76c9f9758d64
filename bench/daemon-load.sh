#!/usr/bin/env bash
# `haul daemon` load benchmark (see bench/README.md): BENCH_ADDS `tasks.add` calls (one task
# each) from BENCH_CLIENTS concurrent clients, each on its own connection, while BENCH_DOWNLOADS
# throttled downloads run in the daemon; reports p50/p99/max RPC latency, wall time and the
# daemon's RSS. The load client is bench/daemon_load.py (python3, standard library only).
#
# Env:
#   HAUL               haul binary (default: <repo>/.build/release/haul); must have `haul daemon`
#   BENCH_DOWNLOADS    downloads running during the load (default 50)
#   BENCH_CLIENTS      concurrent clients (default 10)
#   BENCH_ADDS         tasks.add calls in all, split evenly over the clients (default 1000)
#   BENCH_DL_SESSIONS  sessions the downloads are spread over, each with maxConcurrentDownloads and
#                      maxDownloadsPerHost = its share (default 1: all in one session). The report
#                      shows how many downloads were really transferring (their files grew).
#   BENCH_ADD_SESSION  same:     the added tasks queue (waiting) behind the downloads of the first
#                                download session, whose slots they fill (default)
#                      separate: they go to another session with maxConcurrentDownloads 0
#   BENCH_FILE_MB      size of the file each download fetches, MiB (default 8)
#   BENCH_LIMIT        nginx limit_rate per connection, nginx size syntax (default 64k): with the
#                      defaults a download needs ~2 minutes, far longer than the load phase
#   BENCH_START_TIMEOUT seconds for the daemon to answer and for the downloads to run (default 60)
#   BENCH_TIMEOUT      seconds for each load phase (default 300): first the same traffic as
#                      `daemon.status` (a baseline without session work), then the adds
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
OUT_DIR="$SCRIPT_DIR/out"

NDL=${BENCH_DOWNLOADS:-50}
NCLIENTS=${BENCH_CLIENTS:-10}
NADDS=${BENCH_ADDS:-1000}
ADD_SESSION=${BENCH_ADD_SESSION:-same}
DL_SESSIONS=${BENCH_DL_SESSIONS:-}
FILE_MB=${BENCH_FILE_MB:-8}
LIMIT=${BENCH_LIMIT:-64k}
START_TIMEOUT=${BENCH_START_TIMEOUT:-60}
LOAD_TIMEOUT=${BENCH_TIMEOUT:-300}
HAUL=${HAUL:-$REPO_ROOT/.build/release/haul}
CLIENT="$SCRIPT_DIR/daemon_load.py"

# shellcheck source=bench/lib.sh
. "$SCRIPT_DIR/lib.sh"

for pair in NDL:BENCH_DOWNLOADS NCLIENTS:BENCH_CLIENTS NADDS:BENCH_ADDS FILE_MB:BENCH_FILE_MB \
    START_TIMEOUT:BENCH_START_TIMEOUT LOAD_TIMEOUT:BENCH_TIMEOUT; do
    var=${pair%%:*}
    is_posint "${!var}" || die "${pair#*:} must be a positive integer (got '${!var}')"
done
if [[ -z $DL_SESSIONS ]]; then DL_SESSIONS=1; fi
is_posint "$DL_SESSIONS" || die "BENCH_DL_SESSIONS must be a positive integer (got '$DL_SESSIONS')"
((DL_SESSIONS <= NDL)) || die "BENCH_DL_SESSIONS ($DL_SESSIONS) must be at most BENCH_DOWNLOADS ($NDL)"
((NADDS % NCLIENTS == 0)) || die "BENCH_ADDS ($NADDS) must be a multiple of BENCH_CLIENTS ($NCLIENTS)"
# nginx from lib.sh has worker_connections 64 (listening socket and probes included).
((NDL <= 60)) || die "BENCH_DOWNLOADS must be at most 60 (nginx worker_connections is 64)"
case $ADD_SESSION in
    same | separate) ;;
    *) die "BENCH_ADD_SESSION must be same or separate (got '$ADD_SESSION')" ;;
esac
LIMIT_BPS=$(nginx_size_bytes "$LIMIT" BENCH_LIMIT) || exit 1
FILE_BYTES=$((FILE_MB * 1024 * 1024))
# nginx sends the first second's worth at once, so one download lasts about FILE/LIMIT - 1 s.
DL_SECONDS=$((FILE_BYTES / LIMIT_BPS - 1))
((DL_SECONDS >= 30)) ||
    die "a download would last only ~${DL_SECONDS}s (BENCH_FILE_MB / BENCH_LIMIT); make it at least 30 s"

# ---------------------------------------------------------------- dependencies
bench_require nginx:nginx-light curl:curl python3:python3 timeout,head,stat,sha256sum:coreutils \
    flock:util-linux
bench_require_haul
[[ -f $CLIENT ]] || die "load client not found at $CLIENT"

bench_require_haul_options daemon --socket

bench_no_proxy
bench_lock

WWW="$OUT_DIR/www"
NGX_PREFIX="$OUT_DIR/nginx-daemon-load"
DL_DIR="$OUT_DIR/daemon-load-dl"
HAUL_HOME_DIR="$OUT_DIR/daemon-load-home"
FILE_NAME="testfile-${FILE_MB}M.bin"      # same cache naming as the other benchmarks
RESULT_JSON="$OUT_DIR/daemon-load.json"
LATENCIES="$OUT_DIR/daemon-load-latencies.tsv"
DAEMON_LOG="$OUT_DIR/daemon-load-daemon.log"
CLIENT_LOG="$OUT_DIR/daemon-load-client.log"
SOCK_DIR=""       # short path under /tmp: a Unix socket path is limited to 107 bytes
DAEMON_PID=""

# Stops the daemon (SIGTERM, up to 30 s, then SIGKILL); sets STOP_RC, STOP_SECONDS, STOP_KILLED.
STOP_RC="" STOP_SECONDS="" STOP_KILLED=0
stop_daemon() {
    local t0 t1 i
    [[ -n $DAEMON_PID ]] || return 0
    t0=$(date +%s%N)
    kill -TERM "$DAEMON_PID" 2>/dev/null || true
    for ((i = 0; i < 300; i++)); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$DAEMON_PID" 2>/dev/null; then
        log "the daemon (pid $DAEMON_PID) did not exit within 30 s of SIGTERM; sending SIGKILL"
        kill -KILL "$DAEMON_PID" 2>/dev/null || true
        STOP_KILLED=1
    fi
    if wait "$DAEMON_PID" 2>/dev/null; then STOP_RC=0; else STOP_RC=$?; fi
    t1=$(date +%s%N)
    STOP_SECONDS=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", (b - a) / 1e9}')
    DAEMON_PID=""
}
load_cleanup() {
    local rc=$?
    set +e
    trap - EXIT INT TERM
    stop_daemon
    [[ -n $SOCK_DIR ]] && rm -rf "$SOCK_DIR"
    (exit "$rc")
    bench_cleanup     # the client (CHILD_PID), nginx, DL_DIR, HAUL_HOME_DIR; exits with rc
}
trap load_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- disk space
# The downloads are stopped long before they complete, but allow for them anyway.
need_mb=$((64 + NDL * FILE_MB))
bench_file_cached "$WWW/$FILE_NAME" "$FILE_BYTES" || need_mb=$((need_mb + FILE_MB))
bench_need_space "$need_mb"

# ---------------------------------------------------------------- test file + nginx
bench_test_file "$WWW/$FILE_NAME" "$FILE_BYTES"
bench_start_throttled_nginx "$FILE_NAME" "$LIMIT"
URL_BASE="http://127.0.0.1:$PORT"
log "nginx (pid $NGINX_PID) serving $URL_BASE/slow/$FILE_NAME at $LIMIT per connection (~${DL_SECONDS}s per download)"

# ---------------------------------------------------------------- daemon
bench_reset_dirs
SOCK_DIR=$(mktemp -d /tmp/haul-bench-sock.XXXXXX)
chmod 700 "$SOCK_DIR"
SOCK="$SOCK_DIR/daemon.sock"
: >"$DAEMON_LOG"
: >"$CLIENT_LOG"
HAUL_HOME=$HAUL_HOME_DIR "$HAUL" daemon --socket "$SOCK" </dev/null >>"$DAEMON_LOG" 2>&1 &
DAEMON_PID=$!
log "started haul daemon (pid $DAEMON_PID) on $SOCK, log $DAEMON_LOG"

deadline=$((SECONDS + START_TIMEOUT))
while :; do
    if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
        if wait "$DAEMON_PID"; then rc=0; else rc=$?; fi
        DAEMON_PID=""
        tail -n 20 "$DAEMON_LOG" >&2 || true
        die "haul daemon exited (status $rc) before answering on $SOCK"
    fi
    if hello=$(timeout 10 python3 "$CLIENT" hello --socket "$SOCK" 2>>"$CLIENT_LOG"); then
        break
    else
        hello_rc=$?
    fi
    ((hello_rc == 2)) || { tail -n 5 "$CLIENT_LOG" >&2; die "daemon.hello on $SOCK failed (see $CLIENT_LOG)"; }
    ((SECONDS < deadline)) || die "haul daemon did not answer on $SOCK within ${START_TIMEOUT}s (log: $DAEMON_LOG)"
    sleep 0.1
done
log "daemon.hello: $hello"

# Protocol checks that cost nothing: pid file, socket and directory modes.
NOTES=()
if [[ ! -s $SOCK.pid ]]; then
    die "the daemon answers but wrote no pid file at $SOCK.pid (docs/protocol.md: '<socket>.pid')"
fi
pidfile=$(tr -d '[:space:]' <"$SOCK.pid")
[[ $pidfile == "$DAEMON_PID" ]] || NOTES+=("$SOCK.pid holds '$pidfile', the daemon's pid is $DAEMON_PID")
[[ -e $SOCK.lock ]] || NOTES+=("no lock file at <socket>.lock")
sock_mode=$(stat -c %a "$SOCK")
[[ $sock_mode == 600 ]] || NOTES+=("the socket's mode is $sock_mode, not 600")

# ---------------------------------------------------------------- load
rm -f "$RESULT_JSON" "$LATENCIES"
log "load: $NDL downloads in $DL_SESSIONS session(s), then $NADDS tasks.add from $NCLIENTS clients (added tasks: $ADD_SESSION session)"
# Bounded even if the daemon stops answering: running + data (20 s) waits, baseline and add phases.
timeout $((START_TIMEOUT + 20 + 2 * LOAD_TIMEOUT + 60)) python3 "$CLIENT" run --socket "$SOCK" \
    --url-base "$URL_BASE" --path "slow/$FILE_NAME" --dl-dir "$DL_DIR" \
    --downloads "$NDL" --dl-sessions "$DL_SESSIONS" --clients "$NCLIENTS" --adds "$NADDS" --add-session "$ADD_SESSION" \
    --start-timeout "$START_TIMEOUT" --load-timeout "$LOAD_TIMEOUT" \
    --json "$RESULT_JSON" --latencies "$LATENCIES" </dev/null 2> >(tee -a "$CLIENT_LOG" >&2) &
CHILD_PID=$!
if wait "$CHILD_PID"; then rc=0; else rc=$?; fi
CHILD_PID=""
if ((rc != 0)); then
    ((rc == 124)) && log "the load client timed out"
    log "daemon log (last lines of $DAEMON_LOG):"
    tail -n 20 "$DAEMON_LOG" >&2 || true
    die "load client failed (exit $rc)"
fi
kill -0 "$DAEMON_PID" 2>/dev/null || die "the daemon died during the load (log: $DAEMON_LOG)"

# ---------------------------------------------------------------- shutdown
log "SIGTERM to the daemon"
stop_daemon
((STOP_KILLED == 0)) || NOTES+=("the daemon did not exit within 30 s of SIGTERM (killed)")
[[ $STOP_RC == 0 ]] || NOTES+=("the daemon exited with status $STOP_RC after SIGTERM, not 0")
[[ ! -e $SOCK ]] || NOTES+=("the socket $SOCK is still there after the daemon exited")
ngx_warn=$(grep -c -E '\[(alert|crit|error|emerg)\]' "$NGX_PREFIX/logs/error.log" 2>/dev/null || true)
((${ngx_warn:-0} == 0)) || NOTES+=("nginx logged $ngx_warn errors (see $NGX_PREFIX/logs/error.log)")

# ---------------------------------------------------------------- report
haul_ver=$(HAUL_HOME=$HAUL_HOME_DIR timeout 5 "$HAUL" --version 2>/dev/null </dev/null | head -n 1 || true)
REPORT="$OUT_DIR/daemon-load-$(date -u +%Y%m%dT%H%M%SZ).md"

BENCH_JSON="$RESULT_JSON" BENCH_LIMIT="$LIMIT" BENCH_LIMIT_BPS="$LIMIT_BPS" BENCH_FILE_MB="$FILE_MB" \
BENCH_STOP_RC="$STOP_RC" BENCH_STOP_S="$STOP_SECONDS" \
BENCH_NOTES="$(printf '%s\n' "${NOTES[@]+"${NOTES[@]}"}")" \
BENCH_DATE="$(date -u '+%Y-%m-%d %H:%M:%S UTC')" BENCH_ARCH="$(uname -m)" BENCH_CPU="$(bench_cpu)" \
BENCH_HAUL="$HAUL${haul_ver:+ ($haul_ver)}" \
BENCH_V_NGINX="$(bench_ver "$NGINX" -v | sed 's|^nginx version: nginx/||')" \
BENCH_V_PY="$(python3 -c 'import platform; print(platform.python_version())')" \
python3 - <<'PY' | tee "$REPORT"
import json, os

env = os.environ
r = json.load(open(env["BENCH_JSON"]))
lat = r["latency_ms"]
MiB = 1024.0

def mib(kib):
    return f"{kib / MiB:.1f} MiB"

def states(d):
    return ", ".join(f"{n} {s}" for s, n in sorted(d.items())) or "none"

nd, nc, na = r["downloads"], r["clients"], r["adds"]
dls = r["download_sessions"]
ndls = len(dls)
print("## Haul daemon load benchmark\n")
print(f"- date: {env['BENCH_DATE']}")
print(f"- machine: `{env['BENCH_ARCH']}`, {env['BENCH_CPU']}")
print(f"- haul: {env['BENCH_HAUL']}, `haul daemon` pid {r['pid']}")
print(f"- load client: bench/daemon_load.py, Python {env['BENCH_V_PY']}, on the same machine")
print(f"- nginx {env['BENCH_V_NGINX']} on 127.0.0.1, `limit_rate {env['BENCH_LIMIT']}` per connection, "
      f"{env['BENCH_FILE_MB']} MiB file")
print()
if ndls == 1:
    sess = f"session `{next(iter(dls))}` (maxConcurrentDownloads {nd})"
else:
    shares = sorted(set(dls.values()), reverse=True)
    sess = (f"{ndls} sessions `{next(iter(dls))}`… of {' or '.join(map(str, shares))} downloads each "
            f"(maxConcurrentDownloads = maxDownloadsPerHost = its share)")
where = (f"queued as `waiting` behind the downloads of session `{r['add_session']}`" if r["add_session_mode"] == "same"
         else f"went to session `{r['add_session']}` with maxConcurrentDownloads 0")
print(f"{nd} downloads (one connection each) ran in {sess}. Then {na:,} `tasks.add` calls (one task each, "
      f"distinct URL and path) came from {nc} concurrent clients, each on its own connection sending "
      f"{r['per_client']} requests one after another; the added tasks {where}.\n")
print("| measure | result |")
print("|---|---:|")
print(f"| `tasks.add` latency p50 | {lat['p50']:.2f} ms |")
print(f"| `tasks.add` latency p99 | {lat['p99']:.2f} ms |")
print(f"| `tasks.add` latency max | {lat['max']:.2f} ms |")
print(f"| wall time, {na:,} adds | {r['wall_s']:.3f} s ({r['adds_per_s']:,.0f} adds/s) |")
print(f"| daemon VmRSS before → after the adds | {mib(r['mem_before']['vmrss_kib'])} → "
      f"{mib(r['mem_after']['vmrss_kib'])} |")
print(f"| daemon VmHWM (peak RSS) before → after | {mib(r['mem_before']['vmhwm_kib'])} → "
      f"{mib(r['mem_after']['vmhwm_kib'])} |")
print(f"| downloads `running` (tasks.list) before → after | {r['downloads_before'].get('running', 0)} → "
      f"{r['downloads_after'].get('running', 0)} of {nd} |")
print(f"| downloads transferring (file grew, {r['disk_window_s']:.1f} s window around the adds) | "
      f"{r['downloads_progressing']} of {nd} |")
print()
print("Also measured:\n")
print(f"- `tasks.add` latency min {lat['min']:.2f} ms, mean {lat['mean']:.2f} ms, p90 {lat['p90']:.2f} ms "
      f"({lat['n']:,} requests)")
b = r.get("baseline_latency_ms")
if b:
    print(f"- baseline, the same {na:,} requests as `daemon.status` (no session work) just before: p50 "
          f"{b['p50']:.2f} ms, p99 {b['p99']:.2f} ms, max {b['max']:.2f} ms, wall {r['baseline_wall_s']:.3f} s "
          f"— the floor of socket + JSON-RPC + this Python client on the same cores")
print(f"- daemon CPU (user+sys) during the adds: {r['daemon_cpu_s']:.2f} s")
w = r["disk_bytes_in_window"] / MiB / MiB
print(f"- written by the downloads in that window: {w:.2f} MiB ({w / r['disk_window_s']:.2f} MiB/s; "
      f"the throttle allows {nd * int(env['BENCH_LIMIT_BPS']) / MiB / MiB:.2f} MiB/s for {nd})")
print(f"- daemon VmRSS idle, before any session: {mib(r['mem_idle']['vmrss_kib'])}; after the adds: "
      f"{r['threads_after']} threads, {r['fds_after']} open files")
data = (f"all had written data {r['seconds_until_data']:.2f} s" if r["downloads_with_data"] == nd else
        f"only {r['downloads_with_data']} had written any data {r['seconds_until_data']:.1f} s")
print(f"- the {nd} downloads were all `running` {r['seconds_until_running']:.2f} s and {data} after being added")
print(f"- state of the added tasks as returned by `tasks.add`: {states(r['add_result_states'])}; "
      f"afterwards: {states(r['added_states'])}")
print(f"- `tasks.list` of session `{r['add_session']}` ({r['add_session_tasks']:,} tasks) afterwards: "
      f"{r['list_ms']:.1f} ms")
print(f"- SIGTERM → exit: {env['BENCH_STOP_S']} s, status {env['BENCH_STOP_RC']}")
notes = [n for n in env["BENCH_NOTES"].splitlines() if n]
if r["downloads_progressing"] < nd:
    notes.append(f"only {r['downloads_progressing']} of the {nd} `running` downloads were transferring")
if notes:
    print("\nDeviations from docs/protocol.md / problems seen:\n")
    for n in notes:
        print(f"- {n}")
print()
print("Latency = from just before a request is written to the socket until its response line is read")
print("(nearest-rank percentiles). MiB = 2^20 bytes; VmRSS/VmHWM from /proc/<pid>/status, pid from")
print("`<socket>.pid`. Wall = first request sent → last response read.")
PY

log "report: $REPORT"
log "raw data: $RESULT_JSON, per-request latencies: $LATENCIES"
