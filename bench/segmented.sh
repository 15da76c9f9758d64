#!/usr/bin/env bash
# Segmented (multi-connection) download benchmark against a private nginx on 127.0.0.1:
#   throttled:   haul --segments 8 vs aria2c -x8 -s8 vs curl, nginx limit_rate per connection
#   unthrottled: haul --segments 8 vs haul --segments 1 vs curl
# See bench/README.md.
#
# Env:
#   HAUL                haul binary (default: <repo>/.build/release/haul); must support --segments
#   BENCH_SCENARIO      throttled | unthrottled | both (default both)
#   BENCH_THROTTLED_MB  throttled test file size in MiB (default 64)
#   BENCH_LIMIT         nginx limit_rate per connection, nginx size syntax (default 8m = 8 MiB/s)
#   BENCH_SIZE_MB       unthrottled test file size in MiB (default 1024; shared with single-connection.sh)
#   BENCH_RUNS          timed rounds per scenario (default 3); each round runs every tool once
#   BENCH_WARMUP        untimed warm-up rounds per scenario (default 0)
#   BENCH_SHA_ALL       1 = sha256-check every run (default); 0 = only each tool's first per scenario
#   BENCH_TIMEOUT       per-download timeout in seconds
#                       (default 600, or more if a throttled single connection needs it)
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
OUT_DIR="$SCRIPT_DIR/out"

SCENARIO=${BENCH_SCENARIO:-both}
THR_MB=${BENCH_THROTTLED_MB:-64}
LIMIT=${BENCH_LIMIT:-8m}
SIZE_MB=${BENCH_SIZE_MB:-1024}
RUNS=${BENCH_RUNS:-3}
WARMUP=${BENCH_WARMUP:-0}
SHA_ALL=${BENCH_SHA_ALL:-1}
HAUL=${HAUL:-$REPO_ROOT/.build/release/haul}
SEGMENTS=8

# shellcheck source=bench/lib.sh
. "$SCRIPT_DIR/lib.sh"

case $SCENARIO in
    throttled) SCENARIOS=(throttled) ;;
    unthrottled) SCENARIOS=(unthrottled) ;;
    both) SCENARIOS=(throttled unthrottled) ;;
    *) die "BENCH_SCENARIO must be throttled, unthrottled or both (got '$SCENARIO')" ;;
esac
is_posint "$THR_MB"  || die "BENCH_THROTTLED_MB must be a positive integer (got '$THR_MB')"
is_posint "$SIZE_MB" || die "BENCH_SIZE_MB must be a positive integer (got '$SIZE_MB')"
is_posint "$RUNS"    || die "BENCH_RUNS must be a positive integer (got '$RUNS')"
[[ $WARMUP =~ ^[0-9]+$ ]] || die "BENCH_WARMUP must be a non-negative integer (got '$WARMUP')"
[[ $SHA_ALL == 0 || $SHA_ALL == 1 ]] || die "BENCH_SHA_ALL must be 0 or 1 (got '$SHA_ALL')"
LIMIT_BPS=$(nginx_size_bytes "$LIMIT" BENCH_LIMIT) || exit 1

THR_BYTES=$((THR_MB * 1024 * 1024))
SIZE_BYTES=$((SIZE_MB * 1024 * 1024))
has_scenario() { [[ " ${SCENARIOS[*]} " == *" $1 "* ]]; }

if [[ -n ${BENCH_TIMEOUT:-} ]]; then
    DL_TIMEOUT=$BENCH_TIMEOUT
    is_posint "$DL_TIMEOUT" || die "BENCH_TIMEOUT must be a positive integer (got '$DL_TIMEOUT')"
else
    DL_TIMEOUT=600
    if has_scenario throttled; then   # curl gets one throttled connection: allow 3x that + 60 s
        t=$((3 * THR_BYTES / LIMIT_BPS + 60))
        ((t > DL_TIMEOUT)) && DL_TIMEOUT=$t
    fi
fi

# ---------------------------------------------------------------- dependencies
bench_require nginx:nginx-light curl:curl aria2c:aria2 /usr/bin/time:time python3:python3 \
    timeout,sha256sum,stat,head:coreutils flock:util-linux
bench_require_haul

bench_require_haul_options get --segments

bench_no_proxy
bench_lock

WWW="$OUT_DIR/www"
NGX_PREFIX="$OUT_DIR/nginx-segmented"
DL_DIR="$OUT_DIR/dl"
HAUL_HOME_DIR="$OUT_DIR/haul-home"
THR_NAME="testfile-${THR_MB}M.bin"      # same cache naming as single-connection.sh
BIG_NAME="testfile-${SIZE_MB}M.bin"

bench_traps

# ---------------------------------------------------------------- disk space
# Downloads are deleted after each run, so: the largest download + any file still to create.
need_mb=256 max_dl=0
declare -A to_create=()
if has_scenario throttled; then
    max_dl=$THR_MB
    bench_file_cached "$WWW/$THR_NAME" "$THR_BYTES" || to_create[$THR_NAME]=$THR_MB
fi
if has_scenario unthrottled; then
    ((SIZE_MB > max_dl)) && max_dl=$SIZE_MB
    bench_file_cached "$WWW/$BIG_NAME" "$SIZE_BYTES" || to_create[$BIG_NAME]=$SIZE_MB
fi
need_mb=$((need_mb + max_dl))
for f in "${!to_create[@]}"; do need_mb=$((need_mb + to_create[$f])); done
bench_need_space "$need_mb"

# ---------------------------------------------------------------- test files
declare -A SC_NAME SC_BYTES SC_SHA SC_URL
if has_scenario throttled; then
    bench_test_file "$WWW/$THR_NAME" "$THR_BYTES"
    SC_NAME[throttled]=$THR_NAME SC_BYTES[throttled]=$THR_BYTES SC_SHA[throttled]=$FILE_SHA
fi
if has_scenario unthrottled; then
    bench_test_file "$WWW/$BIG_NAME" "$SIZE_BYTES"
    SC_NAME[unthrottled]=$BIG_NAME SC_BYTES[unthrottled]=$SIZE_BYTES SC_SHA[unthrottled]=$FILE_SHA
fi

# ---------------------------------------------------------------- nginx
# Same files twice: / unthrottled, /throttled/ with limit_rate (per connection).
NGX_EXTRA="        location /throttled/ {
            alias $WWW/;
            limit_rate $LIMIT;
        }
"
sc_path() { # scenario -> URL path
    if [[ $1 == throttled ]]; then echo "throttled/${SC_NAME[$1]}"; else echo "${SC_NAME[$1]}"; fi
}
bench_start_nginx "$(sc_path "${SCENARIOS[0]}")"
for sc in "${SCENARIOS[@]}"; do
    SC_URL[$sc]="http://127.0.0.1:$PORT/$(sc_path "$sc")"
    log "nginx (pid $NGINX_PID) serving $sc: ${SC_URL[$sc]}"
done

# ---------------------------------------------------------------- runner
declare -A SC_TOOLS=(
    [throttled]="haul-s$SEGMENTS aria2c-x$SEGMENTS curl"
    [unthrottled]="haul-s$SEGMENTS haul-s1 curl"
)

tool_cmd() { # tool url out_path -> sets CMD array
    local url=$2 out=$3
    case $1 in
        haul-s*) CMD=(env "HAUL_HOME=$HAUL_HOME_DIR" "$HAUL" get "$url" -o "$out" --quiet
                      --segments "${1#haul-s}") ;;
        aria2c-x*) CMD=(aria2c --no-conf -x"${1#aria2c-x}" -s"${1#aria2c-x}" -k1M
                        --allow-overwrite=true --auto-file-renaming=false
                        -q -d "$(dirname "$out")" -o "$(basename "$out")" "$url") ;;
        curl)   CMD=(curl -q -sS -o "$out" "$url") ;;              # -q: ignore ~/.curlrc
        *) die "unknown tool $1" ;;
    esac
}

RESULTS="$OUT_DIR/segmented-raw.tsv"
printf 'scenario\tround\ttool\twall_s\ttime_e_s\tuser_s\tsys_s\tmaxrss_kib\n' >"$RESULTS"
declare -A SHA_DONE=()

run_one() { # scenario round tool timed(0/1)
    local sc=$1 round=$2 tool=$3 timed=$4
    local out="$DL_DIR/$tool.bin" check_sha=0 cpu
    tool_cmd "$tool" "${SC_URL[$sc]}" "$out"
    if [[ $SHA_ALL == 1 || -z ${SHA_DONE[$sc/$tool]:-} ]]; then check_sha=1; fi
    bench_run "$sc $tool" "$out" "${SC_BYTES[$sc]}" "${SC_SHA[$sc]}" "$check_sha" -- "${CMD[@]}"
    ((check_sha)) && SHA_DONE[$sc/$tool]=1
    cpu=$(awk -v u="$RUN_U" -v s="$RUN_S" 'BEGIN{printf "%.2f", u+s}')
    if ((timed)); then
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$sc" "$round" "$tool" "$RUN_WALL" "$RUN_E" \
            "$RUN_U" "$RUN_S" "$RUN_M" >>"$RESULTS"
        log "$sc round $round/$RUNS $(printf '%-9s' "$tool") wall ${RUN_WALL}s cpu ${cpu}s rss $((RUN_M / 1024)) MiB"
    else
        log "$sc warm-up  $(printf '%-9s' "$tool") wall ${RUN_WALL}s (not recorded)"
    fi
    rm -f "$out"
}

for sc in "${SCENARIOS[@]}"; do
    read -r -a tools <<<"${SC_TOOLS[$sc]}"
    n=${#tools[@]}
    log "scenario $sc: ${SC_BYTES[$sc]} bytes, tools: ${tools[*]}"
    # Warm the page cache so no run is reading the source from disk.
    cat "$WWW/${SC_NAME[$sc]}" >/dev/null
    for ((w = 1; w <= WARMUP; w++)); do
        for tool in "${tools[@]}"; do run_one "$sc" 0 "$tool" 0; done
    done
    for ((r = 1; r <= RUNS; r++)); do
        # Round-robin with a rotating start so no tool always goes first.
        for ((i = 0; i < n; i++)); do
            run_one "$sc" "$r" "${tools[$(((i + r - 1) % n))]}" 1
        done
    done
done

# ---------------------------------------------------------------- report
haul_ver=$(HAUL_HOME=$HAUL_HOME_DIR timeout 5 "$HAUL" --version 2>/dev/null </dev/null | head -n 1 || true)
REPORT="$OUT_DIR/segmented-$(date -u +%Y%m%dT%H%M%SZ).md"

BENCH_RESULTS="$RESULTS" BENCH_SCENARIOS="${SCENARIOS[*]}" BENCH_RUNS="$RUNS" BENCH_SEGMENTS="$SEGMENTS" \
BENCH_THR_BYTES="$THR_BYTES" BENCH_SIZE_BYTES="$SIZE_BYTES" BENCH_LIMIT="$LIMIT" BENCH_LIMIT_BPS="$LIMIT_BPS" \
BENCH_SHA_ALL="$SHA_ALL" \
BENCH_DATE="$(date -u '+%Y-%m-%d %H:%M:%S UTC')" BENCH_ARCH="$(uname -m)" BENCH_CPU="$(bench_cpu)" \
BENCH_HAUL="$HAUL${haul_ver:+ ($haul_ver)}" \
BENCH_V_CURL="$(bench_ver curl --version | cut -d' ' -f1-2)" \
BENCH_V_ARIA="$(bench_ver aria2c --version)" \
BENCH_V_NGINX="$(bench_ver "$NGINX" -v | sed 's|^nginx version: nginx/||')" \
python3 - <<'PY' | tee "$REPORT"
import csv, os, statistics as st

env = os.environ
rows = list(csv.DictReader(open(env["BENCH_RESULTS"]), delimiter="\t"))
MiB = 1024 * 1024
seg = env["BENCH_SEGMENTS"]
label = {f"haul-s{seg}": f"haul --segments {seg}", "haul-s1": "haul --segments 1",
         f"aria2c-x{seg}": f"aria2c -x{seg} -s{seg}", "curl": "curl"}
tools = {"throttled": [f"haul-s{seg}", f"aria2c-x{seg}", "curl"],
         "unthrottled": [f"haul-s{seg}", "haul-s1", "curl"]}
size = {"throttled": int(env["BENCH_THR_BYTES"]), "unthrottled": int(env["BENCH_SIZE_BYTES"])}
limit_mib = int(env["BENCH_LIMIT_BPS"]) / MiB

def medians(sc):
    med = {}
    for t in tools[sc]:
        rs = [r for r in rows if r["scenario"] == sc and r["tool"] == t]
        med[t] = dict(
            wall=st.median(float(r["wall_s"]) for r in rs),
            cpu=st.median(float(r["user_s"]) + float(r["sys_s"]) for r in rs),
            rss=st.median(int(r["maxrss_kib"]) / 1024 for r in rs),
        )
    return med

def ratio(a, b):
    return f"{a / b:.2f}×" if b > 0 else "n/a"

def verdict(ok):
    return "PASS" if ok else "FAIL"

def table(sc, med):
    c = med["curl"]
    print("| tool | median wall s | median CPU s | median peak RSS MB | MB/s | wall ÷ curl |")
    print("|---|---:|---:|---:|---:|---:|")
    for t in tools[sc]:
        m = med[t]
        mbps = size[sc] / MiB / m["wall"] if m["wall"] > 0 else float("inf")
        print(f"| {label[t]} | {m['wall']:.3f} | {m['cpu']:.2f} | {m['rss']:.1f} | {mbps:.1f} | "
              f"{ratio(m['wall'], c['wall'])} |")
    print()

print("## Haul segmented-download benchmark\n")
print(f"- runs: {env['BENCH_RUNS']} per tool per scenario, round-robin (medians shown); "
      f"sha256 checked on {'every run' if env['BENCH_SHA_ALL'] == '1' else 'each tool’s first run'}")
print(f"- server: nginx on 127.0.0.1 (1 worker, sendfile on)")
print(f"- date: {env['BENCH_DATE']}")
print(f"- machine: `{env['BENCH_ARCH']}`, {env['BENCH_CPU']}")
print(f"- haul: {env['BENCH_HAUL']}")
print(f"- {env['BENCH_V_CURL']}; {env['BENCH_V_ARIA']}; nginx {env['BENCH_V_NGINX']}")
print()

for sc in env["BENCH_SCENARIOS"].split():
    med = medians(sc)
    h, c = med[f"haul-s{seg}"], med["curl"]
    mib = size[sc] // MiB
    if sc == "throttled":
        print(f"### Throttled: {mib} MiB, nginx `limit_rate {env['BENCH_LIMIT']}` "
              f"({limit_mib:g} MiB/s per connection)\n")
        table(sc, med)
        a = med[f"aria2c-x{seg}"]
        speedup = c["wall"] / h["wall"] if h["wall"] > 0 else float("inf")
        print("Goals:\n")
        print(f"- {label['haul-s' + seg]} ≥ 6× curl's throughput (wall ≤ curl ÷ 6 = {c['wall'] / 6:.3f} s): "
              f"{h['wall']:.3f} s, {speedup:.2f}× curl — {verdict(h['wall'] * 6 <= c['wall'])}")
        print(f"- {label['haul-s' + seg]} wall ≤ {label['aria2c-x' + seg]}: {h['wall']:.3f} s vs "
              f"{a['wall']:.3f} s ({ratio(h['wall'], a['wall'])}) — {verdict(h['wall'] <= a['wall'])}")
        floor = size[sc] / MiB / limit_mib - 1   # one connection can't be faster (see note)
        if c["wall"] < 0.9 * floor:
            print(f"\n**Warning:** curl took {c['wall']:.3f} s on one connection, less than the "
                  f"{floor:.1f} s the limit allows: the throttle is not in effect.")
        print()
    else:
        print(f"### Unthrottled: {mib} MiB\n")
        table(sc, med)
        s1 = med["haul-s1"]
        print("Goals:\n")
        print(f"- {label['haul-s' + seg]} wall ≤ {label['haul-s1']}: {h['wall']:.3f} s vs {s1['wall']:.3f} s "
              f"({ratio(h['wall'], s1['wall'])}) — {verdict(h['wall'] <= s1['wall'])}")
        print(f"- {label['haul-s' + seg]} wall ≤ curl: {h['wall']:.3f} s vs {c['wall']:.3f} s "
              f"({ratio(h['wall'], c['wall'])}) — {verdict(h['wall'] <= c['wall'])}")
        print()

print("MB = MiB (2^20 bytes). Wall = nanosecond clock around each download; CPU = user+sys and")
print("peak RSS from GNU `/usr/bin/time` (%U %S %M; CPU has 10 ms resolution).")
if "throttled" in env["BENCH_SCENARIOS"].split():
    print("nginx's `limit_rate` lets each request send its first second's worth at once, so S MiB at")
    print("L MiB/s take between S/L − 1 and S/L seconds on one connection.")
PY

log "report: $REPORT"
log "raw data: $RESULTS"
