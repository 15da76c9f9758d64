#!/usr/bin/env bash
# Single-connection download benchmark: haul vs curl vs wget vs aria2c (-x1)
# against a private nginx on 127.0.0.1. See bench/README.md.
#
# Env:
#   HAUL           haul binary (default: <repo>/.build/release/haul)
#   BENCH_SIZE_MB  test file size in MiB (default 1024)
#   BENCH_RUNS     timed rounds (default 5); each round runs every tool once
#   BENCH_WARMUP   untimed warm-up rounds (default 1)
#   BENCH_SHA_ALL  1 = sha256-check every run, not just each tool's first (default 0)
#   BENCH_TIMEOUT  per-download timeout in seconds (default 600)
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
OUT_DIR="$SCRIPT_DIR/out"

SIZE_MB=${BENCH_SIZE_MB:-1024}
RUNS=${BENCH_RUNS:-5}
WARMUP=${BENCH_WARMUP:-1}
SHA_ALL=${BENCH_SHA_ALL:-0}
DL_TIMEOUT=${BENCH_TIMEOUT:-600}
HAUL=${HAUL:-$REPO_ROOT/.build/release/haul}
# curl+fsync: curl, then fsync of the file (`sync FILE`): the durability haul gives before its
# rename (a finished file survives a crash or power loss), which plain curl/wget/aria2c do not.
TOOLS=(haul curl curl+fsync wget aria2c)

# shellcheck source=bench/lib.sh
. "$SCRIPT_DIR/lib.sh"
is_posint "$SIZE_MB"    || die "BENCH_SIZE_MB must be a positive integer (got '$SIZE_MB')"
is_posint "$RUNS"       || die "BENCH_RUNS must be a positive integer (got '$RUNS')"
is_posint "$DL_TIMEOUT" || die "BENCH_TIMEOUT must be a positive integer (got '$DL_TIMEOUT')"
[[ $WARMUP =~ ^[0-9]+$ ]] || die "BENCH_WARMUP must be a non-negative integer (got '$WARMUP')"

# ---------------------------------------------------------------- dependencies
bench_require nginx:nginx-light curl:curl wget:wget aria2c:aria2 /usr/bin/time:time python3:python3 \
    timeout,sha256sum,stat,head:coreutils flock:util-linux
bench_require_haul
bench_no_proxy
bench_lock

WWW="$OUT_DIR/www"
NGX_PREFIX="$OUT_DIR/nginx"
DL_DIR="$OUT_DIR/dl"
HAUL_HOME_DIR="$OUT_DIR/haul-home"
FILE_NAME="testfile-${SIZE_MB}M.bin"
SRC="$WWW/$FILE_NAME"
SIZE_BYTES=$((SIZE_MB * 1024 * 1024))

bench_traps

# ---------------------------------------------------------------- disk space
need_mb=$((SIZE_MB + 256))
bench_file_cached "$SRC" "$SIZE_BYTES" || need_mb=$((need_mb + SIZE_MB))
bench_need_space "$need_mb"

# ---------------------------------------------------------------- test file
bench_test_file "$SRC" "$SIZE_BYTES"
SRC_SHA=$FILE_SHA

# ---------------------------------------------------------------- nginx
bench_start_nginx "$FILE_NAME"
URL="http://127.0.0.1:$PORT/$FILE_NAME"
log "nginx (pid $NGINX_PID) serving $URL"

# ---------------------------------------------------------------- runner
tool_cmd() { # tool out_path -> sets CMD array
    local out=$2
    case $1 in
        haul)   CMD=(env "HAUL_HOME=$HAUL_HOME_DIR" "$HAUL" get "$URL" -o "$out" --quiet --segments 1) ;;
        curl)   CMD=(curl -q -sS -o "$out" "$URL") ;;                 # -q: ignore ~/.curlrc
        curl+fsync) CMD=(sh -c 'curl -q -sS -o "$1" "$2" && sync "$1"' sh "$out" "$URL") ;;
        wget)   CMD=(wget --no-config -q -O "$out" "$URL") ;;
        aria2c) CMD=(aria2c --no-conf -x1 -s1 --allow-overwrite=true --auto-file-renaming=false
                     -q -d "$(dirname "$out")" -o "$(basename "$out")" "$URL") ;;
        *) die "unknown tool $1" ;;
    esac
}

RESULTS="$OUT_DIR/single-connection-raw.tsv"
printf 'round\ttool\twall_s\ttime_e_s\tuser_s\tsys_s\tmaxrss_kib\n' >"$RESULTS"
declare -A SHA_DONE=()

run_one() { # round tool timed(0/1)
    local round=$1 tool=$2 timed=$3
    local out="$DL_DIR/$tool.bin" check_sha=0 u s m wall
    tool_cmd "$tool" "$out"
    if [[ $SHA_ALL == 1 || -z ${SHA_DONE[$tool]:-} ]]; then check_sha=1; fi
    bench_run "$tool" "$out" "$SIZE_BYTES" "$SRC_SHA" "$check_sha" -- "${CMD[@]}"
    ((check_sha)) && SHA_DONE[$tool]=1
    u=$RUN_U s=$RUN_S m=$RUN_M wall=$RUN_WALL
    if ((timed)); then
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$tool" "$wall" "$RUN_E" "$u" "$s" "$m" >>"$RESULTS"
        log "round $round/$RUNS $(printf '%-6s' "$tool") wall ${wall}s cpu $(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.2f", u+s}')s rss $((m / 1024)) MiB"
    else
        log "warm-up  $(printf '%-6s' "$tool") wall ${wall}s (not recorded)"
    fi
    rm -f "$out"
}

# Warm the page cache so the first timed run isn't reading from disk.
cat "$SRC" >/dev/null

n=${#TOOLS[@]}
for ((w = 1; w <= WARMUP; w++)); do
    for tool in "${TOOLS[@]}"; do run_one 0 "$tool" 0; done
done
for ((r = 1; r <= RUNS; r++)); do
    # Round-robin with a rotating start so no tool always goes first.
    for ((i = 0; i < n; i++)); do
        run_one "$r" "${TOOLS[$(((i + r - 1) % n))]}" 1
    done
done

# ---------------------------------------------------------------- report
haul_ver=$(timeout 5 "$HAUL" --version 2>/dev/null </dev/null | head -n 1 || true)
REPORT="$OUT_DIR/single-connection-$(date -u +%Y%m%dT%H%M%SZ).md"

BENCH_RESULTS="$RESULTS" BENCH_SIZE_BYTES="$SIZE_BYTES" BENCH_SIZE_MB="$SIZE_MB" BENCH_RUNS="$RUNS" \
BENCH_DATE="$(date -u '+%Y-%m-%d %H:%M:%S UTC')" BENCH_ARCH="$(uname -m)" \
BENCH_CPU="$(bench_cpu)" \
BENCH_HAUL="$HAUL${haul_ver:+ ($haul_ver)}" \
BENCH_V_CURL="$(bench_ver curl --version | cut -d' ' -f1-2)" \
BENCH_V_WGET="$(bench_ver wget --version | cut -d' ' -f1-3)" \
BENCH_V_ARIA="$(bench_ver aria2c --version)" \
BENCH_V_NGINX="$(bench_ver "$NGINX" -v | sed 's|^nginx version: nginx/||')" \
python3 - <<'PY' | tee "$REPORT"
import csv, os, statistics as st

env = os.environ
rows = list(csv.DictReader(open(env["BENCH_RESULTS"]), delimiter="\t"))
size_bytes = int(env["BENCH_SIZE_BYTES"])
MiB = 1024 * 1024
tools = ["haul", "curl", "curl+fsync", "wget", "aria2c"]
med = {}
for t in tools:
    rs = [r for r in rows if r["tool"] == t]
    med[t] = dict(
        wall=st.median(float(r["wall_s"]) for r in rs),
        cpu=st.median(float(r["user_s"]) + float(r["sys_s"]) for r in rs),
        rss=st.median(int(r["maxrss_kib"]) / 1024 for r in rs),
        n=len(rs),
    )

def ratio(a, b):
    return f"{a / b:.2f}×" if b > 0 else "n/a"

c = med["curl"]
print("## Haul single-connection benchmark\n")
print(f"- file: {env['BENCH_SIZE_MB']} MiB ({size_bytes} bytes), served by nginx on 127.0.0.1 (sendfile on)")
print(f"- runs: {env['BENCH_RUNS']} per tool, round-robin (medians shown)")
print(f"- date: {env['BENCH_DATE']}")
print(f"- machine: `{env['BENCH_ARCH']}`, {env['BENCH_CPU']}")
print(f"- haul: {env['BENCH_HAUL']}")
print(f"- {env['BENCH_V_CURL']}; {env['BENCH_V_WGET']}; {env['BENCH_V_ARIA']}; nginx {env['BENCH_V_NGINX']}")
print()
print("| tool | median wall s | median CPU s | median peak RSS MB | MB/s | wall ÷ curl | CPU ÷ curl |")
print("|---|---:|---:|---:|---:|---:|---:|")
for t in tools:
    m = med[t]
    mbps = size_bytes / MiB / m["wall"] if m["wall"] > 0 else float("inf")
    print(f"| {t} | {m['wall']:.3f} | {m['cpu']:.2f} | {m['rss']:.1f} | {mbps:.0f} | "
          f"{ratio(m['wall'], c['wall'])} | {ratio(m['cpu'], c['cpu'])} |")
print()
print("MB = MiB (2^20 bytes). Wall = nanosecond clock around each download; CPU = user+sys and")
print("peak RSS from GNU `/usr/bin/time` (%U %S %M; CPU has 10 ms resolution).")
print()
h = med["haul"]
def verdict(ok):
    return "PASS" if ok else "FAIL"
print("Goals for haul:\n")
print(f"- wall ≤ curl: {h['wall']:.3f} s vs {c['wall']:.3f} s ({ratio(h['wall'], c['wall'])}) — {verdict(h['wall'] <= c['wall'])}")
cf = med["curl+fsync"]
print(f"- wall ≤ curl+fsync (the same durability): {h['wall']:.3f} s vs {cf['wall']:.3f} s ({ratio(h['wall'], cf['wall'])}) — {verdict(h['wall'] <= cf['wall'])}")
print(f"- CPU ≤ 1.5× curl: {h['cpu']:.2f} s vs {c['cpu']:.2f} s ({ratio(h['cpu'], c['cpu'])}) — {verdict(h['cpu'] <= 1.5 * c['cpu'])}")
print(f"- peak RSS ≤ 50 MB: {h['rss']:.1f} MB — {verdict(h['rss'] <= 50)}")
PY

log "report: $REPORT"
log "raw data: $RESULTS"
