#!/usr/bin/env bash
# HTTPS benchmark on 127.0.0.1, with a private CA made by openssl for this run:
#   throttled:   lighttpd over HTTPS, `connection.kbytes-per-second` per TCP connection:
#                haul --segments 8 vs haul --segments 1 vs aria2c -x8 -s8 vs curl
#   one-connection: nginx over HTTPS (+ HTTP/2), no throttle, a 1 GiB file:
#                haul --segments 1 vs curl vs curl followed by `sync FILE`, and haul on a port
#                of the same nginx without HTTP/2 (the cost of HTTP/2 apart from TLS's)
# See bench/README.md.
#
# Env:
#   HAUL                haul binary (default: <repo>/.build/release/haul)
#   BENCH_SECTION       throttled | one-connection | both (default both)
#   BENCH_THROTTLED_MB  throttled test file size in MiB (default 64)
#   BENCH_KBPS          lighttpd connection.kbytes-per-second (default 2048 = 2 MiB/s per connection)
#   BENCH_SIZE_MB       one-connection file size in MiB (default 1024; the same cached file as segmented.sh)
#   BENCH_RUNS          timed rounds per section (default 1); each round runs every tool once
#   BENCH_SHA_ALL       1 = sha256-check every run (default); 0 = only each tool's first per section
#   BENCH_TIMEOUT       per-download timeout in seconds (default 600, or 3× a throttled connection's time)
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
OUT_DIR="$SCRIPT_DIR/out"

SECTION=${BENCH_SECTION:-both}
THR_MB=${BENCH_THROTTLED_MB:-64}
KBPS=${BENCH_KBPS:-2048}
SIZE_MB=${BENCH_SIZE_MB:-1024}
RUNS=${BENCH_RUNS:-1}
SHA_ALL=${BENCH_SHA_ALL:-1}
HAUL=${HAUL:-$REPO_ROOT/.build/release/haul}
SEGMENTS=8

# shellcheck source=bench/lib.sh
. "$SCRIPT_DIR/lib.sh"

case $SECTION in
    throttled) SECTIONS=(throttled) ;;
    one-connection) SECTIONS=(one-connection) ;;
    both) SECTIONS=(throttled one-connection) ;;
    *) die "BENCH_SECTION must be throttled, one-connection or both (got '$SECTION')" ;;
esac
is_posint "$THR_MB"  || die "BENCH_THROTTLED_MB must be a positive integer (got '$THR_MB')"
is_posint "$KBPS"    || die "BENCH_KBPS must be a positive integer (got '$KBPS')"
is_posint "$SIZE_MB" || die "BENCH_SIZE_MB must be a positive integer (got '$SIZE_MB')"
is_posint "$RUNS"    || die "BENCH_RUNS must be a positive integer (got '$RUNS')"
[[ $SHA_ALL == 0 || $SHA_ALL == 1 ]] || die "BENCH_SHA_ALL must be 0 or 1 (got '$SHA_ALL')"
THR_BYTES=$((THR_MB * 1024 * 1024))
SIZE_BYTES=$((SIZE_MB * 1024 * 1024))
has_section() { [[ " ${SECTIONS[*]} " == *" $1 "* ]]; }

if [[ -n ${BENCH_TIMEOUT:-} ]]; then
    DL_TIMEOUT=$BENCH_TIMEOUT
    is_posint "$DL_TIMEOUT" || die "BENCH_TIMEOUT must be a positive integer (got '$DL_TIMEOUT')"
else
    DL_TIMEOUT=600
    if has_section throttled; then   # one throttled connection: allow 3× that + 60 s
        t=$((3 * THR_BYTES / (KBPS * 1024) + 60))
        ((t > DL_TIMEOUT)) && DL_TIMEOUT=$t
    fi
fi

# ---------------------------------------------------------------- dependencies
LIGHTTPD=$(command -v lighttpd || true)
[[ -z $LIGHTTPD && -x /usr/sbin/lighttpd ]] && LIGHTTPD=/usr/sbin/lighttpd
lighttpd_spec=lighttpd:lighttpd
[[ -n $LIGHTTPD ]] && lighttpd_spec=$LIGHTTPD:lighttpd
bench_require nginx:nginx-light "$lighttpd_spec" openssl:openssl curl:curl aria2c:aria2 /usr/bin/time:time \
    python3:python3 timeout,sha256sum,stat,head,sync:coreutils flock:util-linux
# Debian packages lighttpd's TLS separately (lighttpd-mod-openssl).
if has_section throttled && [[ ! -e /usr/lib/lighttpd/mod_openssl.so ]] && ! ls /usr/lib*/lighttpd/mod_openssl.so >/dev/null 2>&1; then
    die "lighttpd has no TLS module; install it with: sudo apt-get install -y lighttpd-mod-openssl"
fi
bench_require_haul
bench_require_haul_options get --segments
# A haul from before the TLS trust options has no --cacert: it then trusts the CA through a private mount
# namespace in which the CA is bind-mounted over the system bundle that swift-nio-ssl reads on Linux
# (nothing changes outside that one process; needs root and unshare).
SYSTEM_BUNDLE=/etc/ssl/certs/ca-certificates.crt
help_home=$(mktemp -d)
if HAUL_HOME=$help_home timeout 10 "$HAUL" get --help 2>&1 </dev/null | grep -q -- --cacert; then
    HAUL_TRUST=cacert
else
    HAUL_TRUST=namespace
    [[ $EUID -eq 0 && -f $SYSTEM_BUNDLE ]] && unshare -m sh -c "mount --bind /dev/null $SYSTEM_BUNDLE" 2>/dev/null ||
        die "haul at $HAUL has no --cacert, and a private mount namespace (unshare -m, as root) is not available to trust the CA otherwise"
    log "haul has no --cacert: trusting the CA in a private mount namespace (CA bind-mounted over $SYSTEM_BUNDLE)"
fi
rm -rf "$help_home"

bench_no_proxy
bench_lock

WWW="$OUT_DIR/www"
NGX_PREFIX="$OUT_DIR/nginx-https"
LTY_PREFIX="$OUT_DIR/lighttpd-https"
CERTS="$OUT_DIR/https-certs"
DL_DIR="$OUT_DIR/dl"
HAUL_HOME_DIR="$OUT_DIR/haul-home"
THR_NAME="testfile-${THR_MB}M.bin"      # same cache naming as the other benchmarks
BIG_NAME="testfile-${SIZE_MB}M.bin"

LIGHTTPD_PID=""
https_cleanup() {
    local rc=$?
    set +e   # else `(exit "$rc")` below would end the script before bench_cleanup
    if [[ -n $LIGHTTPD_PID ]] && kill -0 "$LIGHTTPD_PID" 2>/dev/null; then
        kill -KILL "$LIGHTTPD_PID" 2>/dev/null || true
        wait "$LIGHTTPD_PID" 2>/dev/null || true
    fi
    (exit "$rc")
    bench_cleanup
}
bench_traps
trap https_cleanup EXIT

# ---------------------------------------------------------------- disk space
need_mb=256 max_dl=0
declare -A to_create=()
if has_section throttled; then
    max_dl=$THR_MB
    bench_file_cached "$WWW/$THR_NAME" "$THR_BYTES" || to_create[$THR_NAME]=$THR_MB
fi
if has_section one-connection; then
    ((SIZE_MB > max_dl)) && max_dl=$SIZE_MB
    bench_file_cached "$WWW/$BIG_NAME" "$SIZE_BYTES" || to_create[$BIG_NAME]=$SIZE_MB
fi
need_mb=$((need_mb + max_dl))
for f in "${!to_create[@]}"; do need_mb=$((need_mb + to_create[$f])); done
bench_need_space "$need_mb"

# ---------------------------------------------------------------- certificates
# A CA and a server certificate for localhost + 127.0.0.1, new for every run.
make_certificates() {
    rm -rf "$CERTS"
    mkdir -p "$CERTS"
    (
        cd "$CERTS"
        openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out ca.key 2>/dev/null
        openssl req -x509 -new -key ca.key -out ca.pem -days 30 -subj "/CN=Haul Bench CA" \
            -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
        openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out server.key 2>/dev/null
        openssl req -new -key server.key -out server.csr -subj "/CN=localhost"
        printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
            "extendedKeyUsage=serverAuth" "subjectAltName=DNS:localhost,IP:127.0.0.1" >server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 \
            -extfile server.ext -out server.pem 2>/dev/null
        openssl verify -CAfile ca.pem server.pem >/dev/null
    ) || die "could not make the certificates with openssl (in $CERTS)"
    CA="$CERTS/ca.pem"
}
make_certificates

# ---------------------------------------------------------------- test files
declare -A SC_NAME SC_BYTES SC_SHA SC_URL
if has_section throttled; then
    bench_test_file "$WWW/$THR_NAME" "$THR_BYTES"
    SC_NAME[throttled]=$THR_NAME SC_BYTES[throttled]=$THR_BYTES SC_SHA[throttled]=$FILE_SHA
fi
if has_section one-connection; then
    bench_test_file "$WWW/$BIG_NAME" "$SIZE_BYTES"
    SC_NAME[one-connection]=$BIG_NAME SC_BYTES[one-connection]=$SIZE_BYTES SC_SHA[one-connection]=$FILE_SHA
fi

# ---------------------------------------------------------------- servers
# wait_https PID URL: until `GET URL` with `Range: bytes=0-0` gives 206 over TLS with the CA (5 s),
# or the server exits.
wait_https() {
    local pid=$1 url=$2 code
    for _ in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || return 1
        code=$(curl -q -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$CA" -r 0-0 "$url" || true)
        [[ $code == 206 ]] && return 0
        sleep 0.1
    done
    return 1
}

# lighttpd over HTTPS, every connection limited to KBPS KiB/s. Sets LTY_PORT and LIGHTTPD_PID.
start_lighttpd() {
    local attempt port
    rm -rf "$LTY_PREFIX"
    mkdir -p "$LTY_PREFIX"
    for attempt in 1 2 3 4 5; do
        port=$(bench_free_port)
        cat >"$LTY_PREFIX/lighttpd.conf" <<EOF
# generated by bench/$(basename "$0")
server.modules = ( "mod_openssl" )
server.bind = "127.0.0.1"
server.port = $port
server.document-root = "$WWW"
server.errorlog = "$LTY_PREFIX/error.log"
mimetype.assign = ( "" => "application/octet-stream" )
ssl.engine = "enable"
ssl.pemfile = "$CERTS/server.pem"
ssl.privkey = "$CERTS/server.key"
connection.kbytes-per-second = $KBPS
EOF
        "$LIGHTTPD" -D -f "$LTY_PREFIX/lighttpd.conf" </dev/null >>"$LTY_PREFIX/stdout.log" 2>&1 &
        LIGHTTPD_PID=$!
        if wait_https "$LIGHTTPD_PID" "https://127.0.0.1:$port/$THR_NAME"; then
            LTY_PORT=$port
            return 0
        fi
        kill -KILL "$LIGHTTPD_PID" 2>/dev/null || true
        wait "$LIGHTTPD_PID" 2>/dev/null || true
        LIGHTTPD_PID=""
        log "lighttpd did not come up on port $port (attempt $attempt); retrying"
    done
    tail -n 20 "$LTY_PREFIX/error.log" "$LTY_PREFIX/stdout.log" >&2 2>/dev/null || true
    die "could not start lighttpd over HTTPS (see $LTY_PREFIX/error.log)"
}

stop_lighttpd() {
    [[ -n $LIGHTTPD_PID ]] || return 0
    kill -KILL "$LIGHTTPD_PID" 2>/dev/null || true
    wait "$LIGHTTPD_PID" 2>/dev/null || true
    LIGHTTPD_PID=""
}

# nginx over HTTPS and HTTP/2 (`listen … ssl http2`: nginx 1.22), no throttle, and on a second port over
# HTTPS with HTTP/1.1 only. Sets NGX_PORT, NGX_H1_PORT and NGINX_PID.
start_nginx_https() {
    local attempt port port_h1
    rm -rf "$NGX_PREFIX"
    mkdir -p "$NGX_PREFIX/logs" "$NGX_PREFIX/tmp"
    for attempt in 1 2 3 4 5; do
        port=$(bench_free_port)
        port_h1=$(bench_free_port)
        [[ $port_h1 == "$port" ]] && continue
        NGX_LISTEN="        listen 127.0.0.1:$port ssl http2;
        listen 127.0.0.1:$port_h1 ssl;
        ssl_certificate $CERTS/server.pem;
        ssl_certificate_key $CERTS/server.key;
" bench_write_nginx_conf "$port"
        "$NGINX" -p "$NGX_PREFIX/" -c "$NGX_PREFIX/nginx.conf" -e "$NGX_PREFIX/logs/error.log" \
            -g 'daemon off;' </dev/null >>"$NGX_PREFIX/logs/stdout.log" 2>&1 &
        NGINX_PID=$!
        if wait_https "$NGINX_PID" "https://127.0.0.1:$port/$BIG_NAME" &&
            wait_https "$NGINX_PID" "https://127.0.0.1:$port_h1/$BIG_NAME"; then
            NGX_PORT=$port NGX_H1_PORT=$port_h1
            return 0
        fi
        kill -TERM "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
        NGINX_PID=""
        log "nginx did not come up on port $port (attempt $attempt); retrying"
    done
    tail -n 20 "$NGX_PREFIX/logs/error.log" >&2 2>/dev/null || true
    die "could not start nginx over HTTPS (see $NGX_PREFIX/logs/error.log)"
}

# ---------------------------------------------------------------- runner
declare -A SC_TOOLS=(
    [throttled]="haul-s$SEGMENTS haul-s1 aria2c-x$SEGMENTS curl"
    [one-connection]="haul-s1 haul-s1-h1 curl curl-sync"
)

tool_cmd() { # tool url out_path -> sets CMD array
    local url=$2 out=$3
    case $1 in
        haul-s1-h1) tool_cmd haul-s1 "$URL_H1" "$out" ;;
        haul-s*)
            if [[ $HAUL_TRUST == cacert ]]; then
                CMD=(env "HAUL_HOME=$HAUL_HOME_DIR" "$HAUL" get "$url" -o "$out" --quiet --segments "${1#haul-s}" --cacert "$CA")
            else
                CMD=(unshare -m sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' sh "$CA" "$SYSTEM_BUNDLE"
                     env "HAUL_HOME=$HAUL_HOME_DIR" "$HAUL" get "$url" -o "$out" --quiet --segments "${1#haul-s}")
            fi ;;
        aria2c-x*) CMD=(aria2c --no-conf -x"${1#aria2c-x}" -s"${1#aria2c-x}" -k1M --ca-certificate="$CA"
                        --allow-overwrite=true --auto-file-renaming=false
                        -q -d "$(dirname "$out")" -o "$(basename "$out")" "$url") ;;
        curl)   CMD=(curl -q -sS --cacert "$CA" -o "$out" "$url") ;;              # -q: ignore ~/.curlrc
        # Haul fsyncs the file before it renames it into place; curl does not: this is curl made as durable.
        curl-sync) CMD=(sh -c 'curl -q -sS --cacert "$1" -o "$2" "$3" && sync "$2"' sh "$CA" "$out" "$url") ;;
        *) die "unknown tool $1" ;;
    esac
}

RESULTS="$OUT_DIR/https-segments-raw.tsv"
printf 'section\tround\ttool\twall_s\ttime_e_s\tuser_s\tsys_s\tmaxrss_kib\n' >"$RESULTS"
declare -A SHA_DONE=()

run_one() { # section round tool
    local sc=$1 round=$2 tool=$3
    local out="$DL_DIR/$tool.bin" check_sha=0 cpu
    tool_cmd "$tool" "${SC_URL[$sc]}" "$out"
    if [[ $SHA_ALL == 1 || -z ${SHA_DONE[$sc/$tool]:-} ]]; then check_sha=1; fi
    bench_run "$sc $tool" "$out" "${SC_BYTES[$sc]}" "${SC_SHA[$sc]}" "$check_sha" -- "${CMD[@]}"
    ((check_sha)) && SHA_DONE[$sc/$tool]=1
    cpu=$(awk -v u="$RUN_U" -v s="$RUN_S" 'BEGIN{printf "%.2f", u+s}')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$sc" "$round" "$tool" "$RUN_WALL" "$RUN_E" \
        "$RUN_U" "$RUN_S" "$RUN_M" >>"$RESULTS"
    log "$sc round $round/$RUNS $(printf '%-9s' "$tool") wall ${RUN_WALL}s cpu ${cpu}s rss $((RUN_M / 1024)) MiB"
    rm -f "$out"
}

for sc in "${SECTIONS[@]}"; do
    if [[ $sc == throttled ]]; then
        start_lighttpd
        SC_URL[$sc]="https://127.0.0.1:$LTY_PORT/${SC_NAME[$sc]}"
        log "lighttpd (pid $LIGHTTPD_PID) over HTTPS, $KBPS KiB/s per connection: ${SC_URL[$sc]}"
    else
        start_nginx_https
        SC_URL[$sc]="https://127.0.0.1:$NGX_PORT/${SC_NAME[$sc]}"
        URL_H1="https://127.0.0.1:$NGX_H1_PORT/${SC_NAME[$sc]}"
        log "nginx (pid $NGINX_PID) over HTTPS + HTTP/2: ${SC_URL[$sc]} (HTTP/1.1 only: $URL_H1)"
    fi
    read -r -a tools <<<"${SC_TOOLS[$sc]}"
    n=${#tools[@]}
    log "section $sc: ${SC_BYTES[$sc]} bytes, tools: ${tools[*]}"
    cat "$WWW/${SC_NAME[$sc]}" >/dev/null   # warm the page cache
    for ((r = 1; r <= RUNS; r++)); do
        for ((i = 0; i < n; i++)); do       # rotating start: no tool always goes first
            run_one "$sc" "$r" "${tools[$(((i + r - 1) % n))]}"
        done
    done
    if [[ $sc == throttled ]]; then stop_lighttpd; fi
done

# ---------------------------------------------------------------- report
haul_ver=$(HAUL_HOME=$HAUL_HOME_DIR timeout 5 "$HAUL" --version 2>/dev/null </dev/null | head -n 1 || true)
haul_commit=""   # the tree's commit says what was built only for the default binary
[[ $HAUL == "$REPO_ROOT/.build/release/haul" ]] && haul_commit=$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || true)
REPORT="$OUT_DIR/https-segments-$(date -u +%Y%m%dT%H%M%SZ).md"

BENCH_RESULTS="$RESULTS" BENCH_SECTIONS="${SECTIONS[*]}" BENCH_RUNS="$RUNS" BENCH_SEGMENTS="$SEGMENTS" \
BENCH_THR_BYTES="$THR_BYTES" BENCH_SIZE_BYTES="$SIZE_BYTES" BENCH_KBPS="$KBPS" BENCH_SHA_ALL="$SHA_ALL" \
BENCH_DATE="$(date -u '+%Y-%m-%d %H:%M:%S UTC')" BENCH_ARCH="$(uname -m)" BENCH_CPU="$(bench_cpu)" \
BENCH_HAUL="$HAUL${haul_ver:+ ($haul_ver)}${haul_commit:+, tree at $haul_commit}" BENCH_HAUL_TRUST="$HAUL_TRUST" \
BENCH_V_CURL="$(bench_ver curl --version | cut -d' ' -f1-2)" \
BENCH_V_ARIA="$(bench_ver aria2c --version)" \
BENCH_V_NGINX="$(bench_ver "$NGINX" -v | sed 's|^nginx version: nginx/||')" \
BENCH_V_LIGHTTPD="$(bench_ver "$LIGHTTPD" -v | cut -d' ' -f1)" \
BENCH_V_OPENSSL="$(bench_ver openssl version | cut -d' ' -f1-2)" \
python3 - <<'PY' | tee "$REPORT"
import csv, os, statistics as st

env = os.environ
rows = list(csv.DictReader(open(env["BENCH_RESULTS"]), delimiter="\t"))
MiB = 1024 * 1024
seg = env["BENCH_SEGMENTS"]
label = {f"haul-s{seg}": f"haul --segments {seg}", "haul-s1": "haul --segments 1",
         "haul-s1-h1": "haul --segments 1, port without HTTP/2",
         f"aria2c-x{seg}": f"aria2c -x{seg} -s{seg}", "curl": "curl", "curl-sync": "curl + sync FILE"}
tools = {"throttled": [f"haul-s{seg}", "haul-s1", f"aria2c-x{seg}", "curl"],
         "one-connection": ["haul-s1", "haul-s1-h1", "curl", "curl-sync"]}
size = {"throttled": int(env["BENCH_THR_BYTES"]), "one-connection": int(env["BENCH_SIZE_BYTES"])}
kbps = int(env["BENCH_KBPS"])

def medians(sc):
    med = {}
    for t in tools[sc]:
        rs = [r for r in rows if r["section"] == sc and r["tool"] == t]
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

def table(sc, med, base):
    print(f"| tool | median wall s | median CPU s | median peak RSS MB | MB/s | wall ÷ {label[base]} |")
    print("|---|---:|---:|---:|---:|---:|")
    for t in tools[sc]:
        m = med[t]
        mbps = size[sc] / MiB / m["wall"] if m["wall"] > 0 else float("inf")
        print(f"| {label[t]} | {m['wall']:.3f} | {m['cpu']:.2f} | {m['rss']:.1f} | {mbps:.1f} | "
              f"{ratio(m['wall'], med[base]['wall'])} |")
    print()

print("## Haul HTTPS benchmark\n")
print(f"- runs: {env['BENCH_RUNS']} per tool per section, round-robin (medians shown); "
      f"sha256 checked on {'every run' if env['BENCH_SHA_ALL'] == '1' else 'each tool’s first run'}")
print(f"- TLS: a private CA made by {env['BENCH_V_OPENSSL']} for the run (ECDSA P-256), passed to haul with "
      + ("`--cacert`" if env["BENCH_HAUL_TRUST"] == "cacert" else
         "(haul has no `--cacert`: the CA bind-mounted over the system bundle in a private mount namespace)")
      + " / `curl --cacert` / `aria2c --ca-certificate`")
print(f"- date: {env['BENCH_DATE']}")
print(f"- machine: `{env['BENCH_ARCH']}`, {env['BENCH_CPU']}")
print(f"- haul: {env['BENCH_HAUL']}")
print(f"- {env['BENCH_V_CURL']}; {env['BENCH_V_ARIA']}; nginx {env['BENCH_V_NGINX']}; {env['BENCH_V_LIGHTTPD']}")
print()

for sc in env["BENCH_SECTIONS"].split():
    med = medians(sc)
    mib = size[sc] // MiB
    if sc == "throttled":
        print(f"### Throttled: {mib} MiB from lighttpd over HTTPS, `connection.kbytes-per-second = {kbps}` "
              f"({kbps / 1024:g} MiB/s per TCP connection)\n")
        table(sc, med, "haul-s1")
        h, s1, a, c = med[f"haul-s{seg}"], med["haul-s1"], med[f"aria2c-x{seg}"], med["curl"]
        speedup = s1["wall"] / h["wall"] if h["wall"] > 0 else float("inf")
        print("Goals:\n")
        print(f"- {label['haul-s' + seg]} ≥ 6× one connection (wall ≤ {label['haul-s1']} ÷ 6 = "
              f"{s1['wall'] / 6:.3f} s): {h['wall']:.3f} s, {speedup:.2f}× — {verdict(h['wall'] * 6 <= s1['wall'])}")
        print(f"- {label['haul-s' + seg]} wall ≤ {label['aria2c-x' + seg]}: {h['wall']:.3f} s vs "
              f"{a['wall']:.3f} s ({ratio(h['wall'], a['wall'])}) — {verdict(h['wall'] <= a['wall'])}")
        print(f"- (reference) curl, one connection: {c['wall']:.3f} s; "
              f"{label['haul-s' + seg]} is {c['wall'] / h['wall']:.2f}× curl")
        one = size[sc] / (kbps * 1024)
        if c["wall"] < 0.8 * one:
            print(f"\n**Warning:** curl took {c['wall']:.3f} s on one connection, less than the "
                  f"{one:.1f} s the limit allows: the throttle is not in effect.")
        print()
    else:
        print(f"### One connection: {mib} MiB from nginx over HTTPS (+ HTTP/2), no throttle\n")
        table(sc, med, "curl")
        h, c, cs = med["haul-s1"], med["curl"], med["curl-sync"]
        print("Goals:\n")
        print(f"- {label['haul-s1']} wall ≤ curl + sync (both durable): {h['wall']:.3f} s vs {cs['wall']:.3f} s "
              f"({ratio(h['wall'], cs['wall'])}) — {verdict(h['wall'] <= cs['wall'])}")
        print(f"- (reference) {label['haul-s1']} ÷ curl (which does not fsync): {ratio(h['wall'], c['wall'])}")
        h1 = med["haul-s1-h1"]
        print(f"- (reference) haul on the port without HTTP/2 (HTTP/1.1 over the same TLS): {h1['wall']:.3f} s, "
              f"{ratio(h1['wall'], cs['wall'])} curl + sync; HTTP/2 ÷ HTTP/1.1 for haul: {ratio(h['wall'], h1['wall'])}")
        print()

print("MB = MiB (2^20 bytes). Wall = nanosecond clock around each download; CPU = user+sys and")
print("peak RSS from GNU `/usr/bin/time` (%U %S %M; CPU has 10 ms resolution). Haul fsyncs the")
print("file before renaming it into place; `curl + sync FILE` is curl with the same durability.")
PY

log "report: $REPORT"
log "raw data: $RESULTS"
