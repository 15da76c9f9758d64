#!/usr/bin/env bash
# Session scale benchmark (see bench/README.md):
#   (a) many small files: `haul get -i LIST -j 8` vs `aria2c -j 8 -i LIST`, BENCH_FILES files of
#       BENCH_FILE_KB KiB from a private nginx on 127.0.0.1; goal: haul wall <= aria2c
#   (b) haul-session-bench: a DownloadSession holding BENCH_SESSION_COUNT queued tasks;
#       goals: adding all < 2 s, listing < 50 ms, peak RSS < 100 MB
#
# Env:
#   HAUL                  haul binary (default: <repo>/.build/release/haul); must support -i and -j
#   HAUL_SESSION_BENCH    (default: <repo>/.build/release/haul-session-bench)
#   BENCH_PART            many | session | both (default both)
#   BENCH_RUNS            timed rounds for (a) (default 3); each round runs both tools, alternating
#   BENCH_FILES           number of files for (a) (default 300)
#   BENCH_FILE_KB         size of each file in KiB (default 256)
#   BENCH_SAMPLE          files whose sha256 is checked per run (default 10; sizes are checked for all)
#   BENCH_SESSION_COUNT   tasks for (b) (default 10000)
#   BENCH_TIMEOUT         timeout of one (a) run in seconds (default 600)
#   BENCH_SESSION_TIMEOUT timeout of (b) in seconds (default 1800)
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
OUT_DIR="$SCRIPT_DIR/out"

PART=${BENCH_PART:-both}
RUNS=${BENCH_RUNS:-3}
NFILES=${BENCH_FILES:-300}
FILE_KB=${BENCH_FILE_KB:-256}
SAMPLE=${BENCH_SAMPLE:-10}
SB_COUNT=${BENCH_SESSION_COUNT:-10000}
DL_TIMEOUT=${BENCH_TIMEOUT:-600}
SB_TIMEOUT=${BENCH_SESSION_TIMEOUT:-1800}
HAUL=${HAUL:-$REPO_ROOT/.build/release/haul}
SESSION_BENCH=${HAUL_SESSION_BENCH:-$REPO_ROOT/.build/release/haul-session-bench}
JOBS=8

# shellcheck source=bench/lib.sh
. "$SCRIPT_DIR/lib.sh"

case $PART in
    many | session | both) ;;
    *) die "BENCH_PART must be many, session or both (got '$PART')" ;;
esac
do_many() { [[ $PART == many || $PART == both ]]; }
do_session() { [[ $PART == session || $PART == both ]]; }
for pair in RUNS:BENCH_RUNS NFILES:BENCH_FILES FILE_KB:BENCH_FILE_KB SAMPLE:BENCH_SAMPLE \
    SB_COUNT:BENCH_SESSION_COUNT DL_TIMEOUT:BENCH_TIMEOUT SB_TIMEOUT:BENCH_SESSION_TIMEOUT; do
    var=${pair%%:*}
    is_posint "${!var}" || die "${pair#*:} must be a positive integer (got '${!var}')"
done
((NFILES <= 9999)) || die "BENCH_FILES must be at most 9999"
((SAMPLE > NFILES)) && SAMPLE=$NFILES
FILE_BYTES=$((FILE_KB * 1024))

# ---------------------------------------------------------------- dependencies
if do_many; then
    bench_require nginx:nginx-light curl:curl aria2c:aria2 /usr/bin/time:time python3:python3 \
        timeout,sha256sum,stat,head:coreutils flock:util-linux
    bench_require_haul
    bench_require_haul_options get --input-file --jobs
else
    bench_require /usr/bin/time:time python3:python3 timeout:coreutils flock:util-linux
fi
if do_session && [[ ! -f $SESSION_BENCH || ! -x $SESSION_BENCH ]]; then
    echo "haul-session-bench not found at $SESSION_BENCH" >&2
    echo "build it first: swift build -c release --product haul-session-bench" >&2
    exit 1
fi

bench_no_proxy
bench_lock

WWW="$OUT_DIR/www"
SRC_REL="many-${NFILES}x${FILE_KB}k"      # URL path and folder under $WWW
SRC="$WWW/$SRC_REL"
MANIFEST="$SRC/SHA256SUMS"
NGX_PREFIX="$OUT_DIR/nginx-session-scale"
DL_DIR="$OUT_DIR/dl"
HAUL_HOME_DIR="$OUT_DIR/haul-home"       # also the scratch home of haul-session-bench (part b)
LIST="$OUT_DIR/session-scale-urls.txt"
RESULTS="$OUT_DIR/session-scale-raw.tsv"
SB_JSON="$OUT_DIR/session-scale-bench.json"

bench_traps

# ---------------------------------------------------------------- disk space
need_mb=64
do_many && need_mb=$((need_mb + 2 * NFILES * FILE_KB / 1024))   # sources + one run's output
do_session && need_mb=$((need_mb + SB_COUNT / 100))             # session + reference stores
bench_need_space "$need_mb"

name_of() { printf 'file-%04d.bin' "$1"; }

# ---------------------------------------------------------------- test files
# NFILES random files, cached with a sha256sum manifest; all are recreated if any is missing.
many_cached() {
    local i
    [[ -s $MANIFEST ]] && (($(wc -l <"$MANIFEST") == NFILES)) || return 1
    for ((i = 1; i <= NFILES; i++)); do
        [[ -f $SRC/$(name_of "$i") && $(stat -c %s "$SRC/$(name_of "$i")") -eq $FILE_BYTES ]] || return 1
    done
}
if do_many && ! many_cached; then
    log "creating $NFILES test files of $FILE_KB KiB in $SRC"
    rm -rf "$SRC" "$SRC.tmp"
    mkdir -p "$SRC.tmp"
    for ((i = 1; i <= NFILES; i++)); do head -c "$FILE_BYTES" /dev/urandom >"$SRC.tmp/$(name_of "$i")"; done
    (cd "$SRC.tmp" && sha256sum file-*.bin >SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
    chmod 644 "$SRC.tmp"/*
    mv "$SRC.tmp" "$SRC"
fi
declare -A WANT_SHA=()
if do_many; then
    while read -r sha name; do WANT_SHA[$name]=$sha; done <"$MANIFEST"
fi

# ---------------------------------------------------------------- part (a) runner
RUN_SEQ=0
# verify_many TOOL: exactly the NFILES expected files in DL_DIR, each FILE_BYTES, and the sha256
# of SAMPLE of them (evenly spread, shifted every run so different files get checked).
verify_many() {
    local tool=$1 n bad i k name sha
    n=$(find "$DL_DIR" -mindepth 1 | wc -l)
    ((n == NFILES)) || die "$tool left $n entries in $DL_DIR, expected $NFILES files: $(ls "$DL_DIR" | grep -v '^file-[0-9]*\.bin$' | head -n 5 | tr '\n' ' ')"
    bad=$(cd "$DL_DIR" && for ((i = 1; i <= NFILES; i++)); do name_of "$i"; echo; done |
        xargs stat -c '%s %n' 2>&1 | awk -v b="$FILE_BYTES" '$1 != b' | head -n 5 || true)
    [[ -z $bad ]] || die "$tool: wrong or missing files (size name): $bad"
    for ((k = 0; k < SAMPLE; k++)); do
        i=$(((k * NFILES / SAMPLE + RUN_SEQ) % NFILES + 1))
        name=$(name_of "$i")
        sha=$(sha256sum "$DL_DIR/$name" | awk '{print $1}')
        [[ $sha == "${WANT_SHA[$name]}" ]] || die "$tool: $name sha256 $sha != source ${WANT_SHA[$name]}"
    done
}

tool_cmd() { # tool -> CMD
    case $1 in
        haul) CMD=(env "HAUL_HOME=$HAUL_HOME_DIR" "$HAUL" get -i "$LIST" -j "$JOBS" --dir "$DL_DIR" --quiet) ;;
        aria2c) CMD=(aria2c --no-conf -j "$JOBS" -i "$LIST" -d "$DL_DIR" --allow-overwrite=true
                     --auto-file-renaming=false -q) ;;
        *) die "unknown tool $1" ;;
    esac
}

# timed TIMEOUT LABEL -- CMD...: runs CMD under timeout + GNU time, exits the script on failure.
# Sets RUN_WALL (s, ns clock), RUN_U, RUN_S (s), RUN_M (peak RSS, KiB). stdout goes to TIMED_STDOUT.
TIMED_STDOUT=/dev/null
timed() {
    local limit=$1 label=$2
    shift 3
    local tfile="$OUT_DIR/time.out" errf="$OUT_DIR/tool.stderr" rc t0 t1 line e
    rm -f "$tfile"
    t0=$(date +%s%N)
    timeout "$limit" /usr/bin/time -f '%e %U %S %M' -o "$tfile" "$@" </dev/null >"$TIMED_STDOUT" 2>"$errf" &
    CHILD_PID=$!
    if wait "$CHILD_PID"; then rc=0; else rc=$?; fi
    t1=$(date +%s%N)
    CHILD_PID=""
    if ((rc != 0)); then
        ((rc == 124)) && log "$label timed out after ${limit}s"
        log "$label failed (exit $rc): $*"
        tail -n 20 "$errf" >&2 || true
        exit 1
    fi
    line=$(tail -n 1 "$tfile")
    read -r e RUN_U RUN_S RUN_M <<<"$line"
    [[ $RUN_M =~ ^[0-9]+$ ]] || die "could not parse /usr/bin/time output for $label: $line"
    RUN_WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", (b - a) / 1e9}')
}

run_many() { # round tool
    local round=$1 tool=$2
    tool_cmd "$tool"
    bench_reset_dirs                     # output, leftovers and haul's state
    sync
    timed "$DL_TIMEOUT" "$tool" -- "${CMD[@]}"
    verify_many "$tool"
    RUN_SEQ=$((RUN_SEQ + 1))
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$tool" "$RUN_WALL" "$RUN_U" "$RUN_S" "$RUN_M" >>"$RESULTS"
    log "round $round/$RUNS $(printf '%-6s' "$tool") wall ${RUN_WALL}s cpu $(awk -v u="$RUN_U" -v s="$RUN_S" \
        'BEGIN{printf "%.2f", u+s}')s rss $((RUN_M / 1024)) MiB ($NFILES files verified, $SAMPLE sha256)"
}

# ---------------------------------------------------------------- part (a)
printf 'round\ttool\twall_s\tuser_s\tsys_s\tmaxrss_kib\n' >"$RESULTS"
if do_many; then
    bench_start_nginx "$SRC_REL/$(name_of 1)"
    log "nginx (pid $NGINX_PID) serving $NFILES files at http://127.0.0.1:$PORT/$SRC_REL/"
    for ((i = 1; i <= NFILES; i++)); do echo "http://127.0.0.1:$PORT/$SRC_REL/$(name_of "$i")"; done >"$LIST"
    cat "$SRC"/file-*.bin >/dev/null    # warm the page cache
    tools=(haul aria2c)
    for ((r = 1; r <= RUNS; r++)); do
        # Alternate which tool goes first.
        for ((i = 0; i < 2; i++)); do run_many "$r" "${tools[$(((i + r - 1) % 2))]}"; done
    done
    rm -rf "$DL_DIR"
    kill -TERM "$NGINX_PID" 2>/dev/null || true
    wait "$NGINX_PID" 2>/dev/null || true
    NGINX_PID=""
fi

# ---------------------------------------------------------------- part (b)
SB_WALL="" SB_RSS=""
rm -f "$SB_JSON"
if do_session; then
    rm -rf "$HAUL_HOME_DIR"
    mkdir -p "$HAUL_HOME_DIR"
    log "haul-session-bench: $SB_COUNT tasks (adding one by one can take minutes)"
    TIMED_STDOUT=$SB_JSON
    timed "$SB_TIMEOUT" haul-session-bench -- "$SESSION_BENCH" --home "$HAUL_HOME_DIR" --count "$SB_COUNT"
    TIMED_STDOUT=/dev/null
    SB_WALL=$RUN_WALL SB_RSS=$RUN_M
    log "haul-session-bench: $(tail -n 1 "$SB_JSON")"
    rm -rf "$HAUL_HOME_DIR"
fi

# ---------------------------------------------------------------- report
haul_ver=""
if do_many; then
    haul_ver=$(HAUL_HOME=$HAUL_HOME_DIR timeout 5 "$HAUL" --version 2>/dev/null </dev/null | head -n 1 || true)
fi
REPORT="$OUT_DIR/session-scale-$(date -u +%Y%m%dT%H%M%SZ).md"

BENCH_RESULTS="$RESULTS" BENCH_PART="$PART" BENCH_RUNS="$RUNS" BENCH_JOBS="$JOBS" \
BENCH_FILES="$NFILES" BENCH_FILE_BYTES="$FILE_BYTES" BENCH_SAMPLE="$SAMPLE" \
BENCH_SB_JSON="$SB_JSON" BENCH_SB_WALL="$SB_WALL" BENCH_SB_RSS="$SB_RSS" BENCH_SB="$SESSION_BENCH" \
BENCH_DATE="$(date -u '+%Y-%m-%d %H:%M:%S UTC')" BENCH_ARCH="$(uname -m)" BENCH_CPU="$(bench_cpu)" \
BENCH_HAUL="$HAUL${haul_ver:+ ($haul_ver)}" \
BENCH_V_ARIA="$(do_many && bench_ver aria2c --version || true)" \
BENCH_V_NGINX="$(do_many && bench_ver "$NGINX" -v | sed 's|^nginx version: nginx/||' || true)" \
python3 - <<'PY' | tee "$REPORT"
import csv, json, os, statistics as st

env = os.environ
MiB = 1024 * 1024
part = env["BENCH_PART"]

def verdict(ok):
    return "PASS" if ok else "FAIL"

print("## Haul session-scale benchmark\n")
print(f"- date: {env['BENCH_DATE']}")
print(f"- machine: `{env['BENCH_ARCH']}`, {env['BENCH_CPU']}")
if part in ("many", "both"):
    print(f"- haul: {env['BENCH_HAUL']}")
    print(f"- {env['BENCH_V_ARIA']}; nginx {env['BENCH_V_NGINX']} on 127.0.0.1 (1 worker, sendfile on)")
if part in ("session", "both"):
    print(f"- haul-session-bench: {env['BENCH_SB']}")
print()

if part in ("many", "both"):
    rows = list(csv.DictReader(open(env["BENCH_RESULTS"]), delimiter="\t"))
    n, size, jobs = int(env["BENCH_FILES"]), int(env["BENCH_FILE_BYTES"]), env["BENCH_JOBS"]
    label = {"haul": f"haul get -i LIST -j {jobs}", "aria2c": f"aria2c -j {jobs} -i LIST"}
    med = {}
    for t in ("haul", "aria2c"):
        rs = [r for r in rows if r["tool"] == t]
        med[t] = dict(wall=st.median(float(r["wall_s"]) for r in rs),
                      cpu=st.median(float(r["user_s"]) + float(r["sys_s"]) for r in rs),
                      rss=st.median(int(r["maxrss_kib"]) / 1024 for r in rs))
    a = med["aria2c"]
    print(f"### (a) {n} files × {size // 1024} KiB, {jobs} at once\n")
    print(f"{env['BENCH_RUNS']} rounds, tools alternating (medians shown); every run checked: all {n} "
          f"files present with the right size, nothing else left behind, sha256 of {env['BENCH_SAMPLE']}.\n")
    print("| tool | median wall s | median CPU s | median peak RSS MB | files/s | MB/s | wall ÷ aria2c |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for t in ("haul", "aria2c"):
        m = med[t]
        fps = n / m["wall"] if m["wall"] > 0 else float("inf")
        mbps = n * size / MiB / m["wall"] if m["wall"] > 0 else float("inf")
        ratio = f"{m['wall'] / a['wall']:.2f}×" if a["wall"] > 0 else "n/a"
        print(f"| {label[t]} | {m['wall']:.3f} | {m['cpu']:.2f} | {m['rss']:.1f} | {fps:.0f} | {mbps:.1f} | {ratio} |")
    h = med["haul"]
    print("\nGoal:\n")
    print(f"- haul no slower than aria2c (median wall): {h['wall']:.3f} s vs {a['wall']:.3f} s "
          f"({h['wall'] / a['wall']:.2f}×) — {verdict(h['wall'] <= a['wall'])}")
    print()

if part in ("session", "both"):
    r = json.loads(open(env["BENCH_SB_JSON"]).read().strip().splitlines()[-1])
    c = r["count"]
    print(f"### (b) A session holding {c:,} tasks\n")
    print("`maxConcurrentDownloads = 0` (nothing downloads; the URLs `http://127.0.0.1:9/file-N.bin` are "
          "never contacted), a fresh store under a scratch `HaulHome`.\n")
    print("| measure | result | goal | |")
    print("|---|---:|---:|---|")
    print(f"| add {c:,} tasks, `session.add` one by one | {r['add_seconds']:.3f} s | < 2 s | "
          f"{verdict(r['add_seconds'] < 2)} |")
    print(f"| list them, `session.tasks()` (median of 5) | {r['list_ms']:.1f} ms | < 50 ms | "
          f"{verdict(r['list_ms'] < 50)} |")
    rss = r["peak_rss_mb"]
    print(f"| peak RSS (VmHWM after adding and listing) | "
          f"{'n/a' if rss is None else f'{rss:.1f} MB'} | < 100 MB | "
          f"{'n/a' if rss is None else verdict(rss < 100)} |")
    print()
    print("Also measured (no goal):\n")
    print(f"- until the session's own work queued by the adds has run: {r['settle_seconds']:.3f} s "
          f"(add loop {r['add_seconds']:.3f} s)")
    print(f"- reopening the session with {c:,} tasks: {r['reopen_seconds'] * 1000:.0f} ms")
    print(f"- the same {c:,} tasks in one `session.add(_: [DownloadRequest])`: {r['session_batch_add_seconds']:.3f} s")
    print(f"- for reference, the store alone (`TaskStore`, public, bypassing the session: no events, "
          f"no scheduling; a separate file): {c:,} × `add(_:)` {r['store_add_seconds']:.3f} s, one "
          f"`add(_: [NewTask])` {r['store_batch_add_seconds']:.3f} s")
    if env["BENCH_SB_WALL"]:
        print(f"- whole process: {float(env['BENCH_SB_WALL']):.1f} s wall, peak RSS "
              f"{int(env['BENCH_SB_RSS']) / 1024:.1f} MB (including the store references)")
    print()

print("MB = MiB (2^20 bytes). Wall = nanosecond clock around each run; CPU = user+sys and peak RSS")
print("from GNU `/usr/bin/time` (%U %S %M; CPU has 10 ms resolution).")
PY

log "report: $REPORT"
do_many && log "raw data: $RESULTS"
do_session && log "session bench output: $SB_JSON"
true
