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

log() { printf '[bench] %s\n' "$*" >&2; }
die() { printf '[bench] ERROR: %s\n' "$*" >&2; exit 1; }

is_posint() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
is_posint "$SIZE_MB"    || die "BENCH_SIZE_MB must be a positive integer (got '$SIZE_MB')"
is_posint "$RUNS"       || die "BENCH_RUNS must be a positive integer (got '$RUNS')"
is_posint "$DL_TIMEOUT" || die "BENCH_TIMEOUT must be a positive integer (got '$DL_TIMEOUT')"
[[ $WARMUP =~ ^[0-9]+$ ]] || die "BENCH_WARMUP must be a non-negative integer (got '$WARMUP')"

# ---------------------------------------------------------------- dependencies
NGINX=$(command -v nginx || true)
[[ -z $NGINX && -x /usr/sbin/nginx ]] && NGINX=/usr/sbin/nginx
missing_pkgs=()
[[ -n $NGINX ]]                  || missing_pkgs+=(nginx-light)
command -v curl    >/dev/null    || missing_pkgs+=(curl)
command -v wget    >/dev/null    || missing_pkgs+=(wget)
command -v aria2c  >/dev/null    || missing_pkgs+=(aria2)
[[ -x /usr/bin/time ]]           || missing_pkgs+=(time)
command -v python3 >/dev/null    || missing_pkgs+=(python3)
for c in timeout sha256sum stat head; do
    command -v "$c" >/dev/null || { missing_pkgs+=(coreutils); break; }
done
command -v flock   >/dev/null    || missing_pkgs+=(util-linux)
if ((${#missing_pkgs[@]})); then
    die "missing tools; install them with: sudo apt-get install -y ${missing_pkgs[*]}"
fi

if [[ ! -f $HAUL || ! -x $HAUL ]]; then
    echo "haul binary not found at $HAUL" >&2
    echo "build it first: swift build -c release" >&2
    exit 1
fi
HAUL=$(cd "$(dirname "$HAUL")" && pwd)/$(basename "$HAUL")

# Loopback only: make sure no proxy setting can reroute the downloads.
unset http_proxy HTTP_PROXY https_proxy HTTPS_PROXY ftp_proxy FTP_PROXY all_proxy ALL_PROXY
export no_proxy=127.0.0.1,localhost NO_PROXY=127.0.0.1,localhost

mkdir -p "$OUT_DIR"
exec 9>"$OUT_DIR/.lock"
flock -n 9 || die "another benchmark is already using $OUT_DIR"

WWW="$OUT_DIR/www"
NGX_PREFIX="$OUT_DIR/nginx"
DL_DIR="$OUT_DIR/dl"
HAUL_HOME_DIR="$OUT_DIR/haul-home"
FILE_NAME="testfile-${SIZE_MB}M.bin"
SRC="$WWW/$FILE_NAME"
SIZE_BYTES=$((SIZE_MB * 1024 * 1024))

# ---------------------------------------------------------------- cleanup
NGINX_PID=""
CHILD_PID=""
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -n $CHILD_PID ]] && kill -0 "$CHILD_PID" 2>/dev/null; then
        kill -TERM "$CHILD_PID" 2>/dev/null || true   # timeout forwards it to the tool
        wait "$CHILD_PID" 2>/dev/null || true
    fi
    if [[ -n $NGINX_PID ]] && kill -0 "$NGINX_PID" 2>/dev/null; then
        kill -TERM "$NGINX_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$NGINX_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
    fi
    rm -rf "$DL_DIR" "$HAUL_HOME_DIR"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- disk space
need_mb=$((SIZE_MB + 256))
[[ -f $SRC && $(stat -c %s "$SRC") -eq $SIZE_BYTES ]] || need_mb=$((need_mb + SIZE_MB))
avail_mb=$(df -Pm "$OUT_DIR" | awk 'NR==2 {print $4}')
((avail_mb >= need_mb)) || die "need ~${need_mb} MiB free in $OUT_DIR, have ${avail_mb} MiB"

# ---------------------------------------------------------------- test file
mkdir -p "$WWW"
if [[ ! -f $SRC || $(stat -c %s "$SRC") -ne $SIZE_BYTES || ! -s $SRC.sha256 ]]; then
    log "creating ${SIZE_MB} MiB test file $SRC"
    rm -f "$SRC" "$SRC.sha256"
    head -c "$SIZE_BYTES" /dev/urandom >"$SRC.tmp"
    sha256sum "$SRC.tmp" | awk '{print $1}' >"$SRC.sha256.tmp"
    mv "$SRC.tmp" "$SRC"
    mv "$SRC.sha256.tmp" "$SRC.sha256"
fi
chmod 644 "$SRC"
SRC_SHA=$(<"$SRC.sha256")

# ---------------------------------------------------------------- nginx
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

write_nginx_conf() { # port
    local user_line="" extra_temp="" m
    # Workers would otherwise drop to "nobody", who may not be able to read $WWW.
    [[ $EUID -eq 0 ]] && user_line="user root root;"
    # Every compiled-in temp path must be writable, so point them all into the prefix.
    for m in fastcgi uwsgi scgi; do
        "$NGINX" -V 2>&1 | grep -q -- "--without-http_${m}_module" && continue
        extra_temp+="    ${m}_temp_path $NGX_PREFIX/tmp/$m;"$'\n'
    done
    cat >"$NGX_PREFIX/nginx.conf" <<EOF
# generated by bench/single-connection.sh
$user_line
worker_processes 1;
pid $NGX_PREFIX/nginx.pid;
error_log $NGX_PREFIX/logs/error.log warn;
events { worker_connections 64; }
http {
    types {}
    default_type application/octet-stream;
    sendfile on;
    access_log off;
    client_body_temp_path $NGX_PREFIX/tmp/body;
    proxy_temp_path $NGX_PREFIX/tmp/proxy;
$extra_temp    server {
        listen 127.0.0.1:$1;
        server_name localhost;
        root $WWW;
        location / { }
    }
}
EOF
}

start_nginx() {
    local attempt port code
    rm -rf "$NGX_PREFIX"
    mkdir -p "$NGX_PREFIX/logs" "$NGX_PREFIX/tmp"
    for attempt in 1 2 3 4 5; do
        port=$(free_port)
        write_nginx_conf "$port"
        "$NGINX" -p "$NGX_PREFIX/" -c "$NGX_PREFIX/nginx.conf" -e "$NGX_PREFIX/logs/error.log" \
            -g 'daemon off;' </dev/null >>"$NGX_PREFIX/logs/stdout.log" 2>&1 &
        NGINX_PID=$!
        for _ in $(seq 50); do
            kill -0 "$NGINX_PID" 2>/dev/null || break
            code=$(curl -q -s -o /dev/null -w '%{http_code}' --max-time 2 -r 0-0 \
                "http://127.0.0.1:$port/$FILE_NAME" || true)
            if [[ $code == 206 ]]; then
                PORT=$port
                return 0
            fi
            sleep 0.1
        done
        kill -TERM "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
        NGINX_PID=""
        log "nginx did not come up on port $port (attempt $attempt); retrying"
    done
    tail -n 20 "$NGX_PREFIX/logs/error.log" >&2 2>/dev/null || true
    die "could not start nginx (see $NGX_PREFIX/logs/error.log)"
}

start_nginx
URL="http://127.0.0.1:$PORT/$FILE_NAME"
log "nginx (pid $NGINX_PID) serving $URL"

# ---------------------------------------------------------------- runner
tool_cmd() { # tool out_path -> sets CMD array
    local out=$2
    case $1 in
        haul)   CMD=(env "HAUL_HOME=$HAUL_HOME_DIR" "$HAUL" get "$URL" -o "$out" --quiet) ;;
        curl)   CMD=(curl -q -sS -o "$out" "$URL") ;;                 # -q: ignore ~/.curlrc
        curl+fsync) CMD=(sh -c 'curl -q -sS -o "$1" "$2" && sync "$1"' sh "$out" "$URL") ;;
        wget)   CMD=(wget --no-config -q -O "$out" "$URL") ;;
        aria2c) CMD=(aria2c --no-conf -x1 -s1 --allow-overwrite=true --auto-file-renaming=false
                     -q -d "$(dirname "$out")" -o "$(basename "$out")" "$URL") ;;
        *) die "unknown tool $1" ;;
    esac
}

reset_dirs() {
    rm -rf "$DL_DIR" "$HAUL_HOME_DIR"    # output, *.haul-part, *.aria2, haul state
    mkdir -p "$DL_DIR" "$HAUL_HOME_DIR"
}

RESULTS="$OUT_DIR/single-connection-raw.tsv"
printf 'round\ttool\twall_s\ttime_e_s\tuser_s\tsys_s\tmaxrss_kib\n' >"$RESULTS"
declare -A SHA_DONE=()

run_one() { # round tool timed(0/1)
    local round=$1 tool=$2 timed=$3
    local out="$DL_DIR/$tool.bin" tfile="$OUT_DIR/time.out" errf="$OUT_DIR/tool.stderr"
    local rc t0 t1 size line e u s m wall sha
    reset_dirs
    tool_cmd "$tool" "$out"
    sync
    rm -f "$tfile"
    t0=$(date +%s%N)
    # Background + wait so Ctrl-C is handled promptly; timeout kills the whole tool.
    timeout "$DL_TIMEOUT" /usr/bin/time -f '%e %U %S %M' -o "$tfile" "${CMD[@]}" </dev/null 2>"$errf" &
    CHILD_PID=$!
    if wait "$CHILD_PID"; then rc=0; else rc=$?; fi
    t1=$(date +%s%N)
    CHILD_PID=""
    if ((rc != 0)); then
        ((rc == 124)) && log "$tool timed out after ${DL_TIMEOUT}s"
        log "$tool failed (exit $rc): ${CMD[*]}"
        tail -n 20 "$errf" >&2 || true
        exit 1
    fi
    [[ -f $out ]] || die "$tool exited 0 but produced no file at $out"
    size=$(stat -c %s "$out")
    ((size == SIZE_BYTES)) || die "$tool produced $size bytes, expected $SIZE_BYTES"
    if [[ $SHA_ALL == 1 || -z ${SHA_DONE[$tool]:-} ]]; then
        sha=$(sha256sum "$out" | awk '{print $1}')
        [[ $sha == "$SRC_SHA" ]] || die "$tool output sha256 $sha != source $SRC_SHA"
        SHA_DONE[$tool]=1
    fi
    line=$(tail -n 1 "$tfile")
    read -r e u s m <<<"$line"
    [[ $m =~ ^[0-9]+$ ]] || die "could not parse /usr/bin/time output for $tool: $line"
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", (b - a) / 1e9}')
    if ((timed)); then
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$tool" "$wall" "$e" "$u" "$s" "$m" >>"$RESULTS"
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
ver() { "$@" 2>&1 | head -n 1 || true; }
haul_ver=$(timeout 5 "$HAUL" --version 2>/dev/null </dev/null | head -n 1 || true)
REPORT="$OUT_DIR/single-connection-$(date -u +%Y%m%dT%H%M%SZ).md"

BENCH_RESULTS="$RESULTS" BENCH_SIZE_BYTES="$SIZE_BYTES" BENCH_SIZE_MB="$SIZE_MB" BENCH_RUNS="$RUNS" \
BENCH_DATE="$(date -u '+%Y-%m-%d %H:%M:%S UTC')" BENCH_ARCH="$(uname -m)" \
BENCH_CPU="$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true) ($(nproc) cores)" \
BENCH_HAUL="$HAUL${haul_ver:+ ($haul_ver)}" \
BENCH_V_CURL="$(ver curl --version | cut -d' ' -f1-2)" \
BENCH_V_WGET="$(ver wget --version | cut -d' ' -f1-3)" \
BENCH_V_ARIA="$(ver aria2c --version)" \
BENCH_V_NGINX="$(ver "$NGINX" -v | sed 's|^nginx version: nginx/||')" \
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
