# Shared helpers for the bench/*.sh benchmarks. Source it; don't run it.
#
# Callers set these globals before using the helpers:
#   OUT_DIR        bench/out (git-ignored); holds the lock, time.out and tool.stderr
#   WWW            directory nginx serves (cached test files)
#   NGX_PREFIX     nginx prefix (config, pid, logs, temp dirs); recreated by bench_start_nginx
#   DL_DIR         download directory, wiped before every run and on exit
#   HAUL_HOME_DIR  haul's state directory (HAUL_HOME), wiped before every run and on exit
#   DL_TIMEOUT     per-download timeout in seconds
# Optional:
#   NGX_EXTRA      extra nginx `server` directives (lines indented 8 spaces, ending in a newline)

log() { printf '[bench] %s\n' "$*" >&2; }
die() { printf '[bench] ERROR: %s\n' "$*" >&2; exit 1; }

is_posint() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }

# Bytes in an nginx size such as 64k, 8m or 65536 (K and M are 1024-based); dies naming `what` otherwise.
nginx_size_bytes() { # size what
    [[ $1 =~ ^([1-9][0-9]*)([kKmM]?)$ ]] || die "$2 must be an nginx size like 64k, 8m or 65536 (got '$1')"
    case ${BASH_REMATCH[2]} in
        k | K) echo $((BASH_REMATCH[1] * 1024)) ;;
        m | M) echo $((BASH_REMATCH[1] * 1024 * 1024)) ;;
        *) echo "${BASH_REMATCH[1]}" ;;
    esac
}

# ---------------------------------------------------------------- dependencies
# bench_require SPEC... ; SPEC = "cmd[,cmd...]:package". Sets NGINX. Dies with one apt-get
# line listing every missing package (in SPEC order). Special cmds: `nginx` (also looks in
# /usr/sbin) and absolute paths (must be executable).
bench_require() {
    local spec cmds pkg c missing_pkgs=()
    NGINX=$(command -v nginx || true)
    [[ -z $NGINX && -x /usr/sbin/nginx ]] && NGINX=/usr/sbin/nginx
    for spec in "$@"; do
        cmds=${spec%%:*} pkg=${spec#*:}
        for c in ${cmds//,/ }; do
            if [[ $c == nginx ]]; then
                [[ -n $NGINX ]] && continue
            elif [[ $c == /* ]]; then
                [[ -x $c ]] && continue
            else
                command -v "$c" >/dev/null && continue
            fi
            missing_pkgs+=("$pkg")
            break
        done
    done
    if ((${#missing_pkgs[@]})); then
        die "missing tools; install them with: sudo apt-get install -y ${missing_pkgs[*]}"
    fi
}

# bench_require_haul: checks $HAUL is an executable file and makes the path absolute.
bench_require_haul() {
    if [[ ! -f $HAUL || ! -x $HAUL ]]; then
        echo "haul binary not found at $HAUL" >&2
        echo "build it first: swift build -c release" >&2
        exit 1
    fi
    HAUL=$(cd "$(dirname "$HAUL")" && pwd)/$(basename "$HAUL")
}

# Loopback only: make sure no proxy setting can reroute the downloads.
# Be honest against an old binary: dies unless `haul SUBCOMMAND --help` mentions every OPTION.
bench_require_haul_options() { # subcommand option...
    local sub=$1 help_home haul_help option
    shift
    help_home=$(mktemp -d)
    haul_help=$(HAUL_HOME=$help_home timeout 10 "$HAUL" "$sub" --help 2>&1 </dev/null || true)
    rm -rf "$help_home"
    for option in "$@"; do
        grep -q -- "$option" <<<"$haul_help" ||
            die "haul at $HAUL has no \`haul $sub $option\` (see \`haul $sub --help\`); rebuild it: swift build -c release"
    done
}

bench_no_proxy() {
    unset http_proxy HTTP_PROXY https_proxy HTTPS_PROXY ftp_proxy FTP_PROXY all_proxy ALL_PROXY
    export no_proxy=127.0.0.1,localhost NO_PROXY=127.0.0.1,localhost
}

# One benchmark at a time per bench/out (they would disturb each other's timings).
bench_lock() {
    mkdir -p "$OUT_DIR"
    exec 9>"$OUT_DIR/.lock"
    flock -n 9 || die "another benchmark is already using $OUT_DIR"
}

# ---------------------------------------------------------------- cleanup
NGINX_PID=""
CHILD_PID=""
bench_cleanup() {
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
bench_traps() {
    trap bench_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# ---------------------------------------------------------------- disk space
bench_need_space() { # MiB
    local avail_mb
    avail_mb=$(df -Pm "$OUT_DIR" | awk 'NR==2 {print $4}')
    ((avail_mb >= $1)) || die "need ~$1 MiB free in $OUT_DIR, have ${avail_mb} MiB"
}

# True if PATH is a complete cached test file of BYTES (with its .sha256).
bench_file_cached() { # path bytes
    [[ -f $1 && $(stat -c %s "$1") -eq $2 && -s $1.sha256 ]]
}

# ---------------------------------------------------------------- test file
# bench_test_file PATH BYTES: creates a random file (cached with PATH.sha256) unless
# already there; sets FILE_SHA.
bench_test_file() {
    local src=$1 bytes=$2
    mkdir -p "$(dirname "$src")"
    if ! bench_file_cached "$src" "$bytes"; then
        log "creating $((bytes / 1024 / 1024)) MiB test file $src"
        rm -f "$src" "$src.sha256"
        head -c "$bytes" /dev/urandom >"$src.tmp"
        sha256sum "$src.tmp" | awk '{print $1}' >"$src.sha256.tmp"
        mv "$src.tmp" "$src"
        mv "$src.sha256.tmp" "$src.sha256"
    fi
    chmod 644 "$src"
    FILE_SHA=$(<"$src.sha256")
}

# ---------------------------------------------------------------- nginx
bench_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

bench_write_nginx_conf() { # port; NGX_LISTEN, if set, replaces the `listen 127.0.0.1:PORT;` line (TLS, more ports)
    local user_line="" extra_temp="" m
    # Workers would otherwise drop to "nobody", who may not be able to read $WWW.
    [[ $EUID -eq 0 ]] && user_line="user root root;"
    # Every compiled-in temp path must be writable, so point them all into the prefix.
    for m in fastcgi uwsgi scgi; do
        "$NGINX" -V 2>&1 | grep -q -- "--without-http_${m}_module" && continue
        extra_temp+="    ${m}_temp_path $NGX_PREFIX/tmp/$m;"$'\n'
    done
    cat >"$NGX_PREFIX/nginx.conf" <<EOF
# generated by bench/$(basename "$0")
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
${NGX_LISTEN:-        listen 127.0.0.1:$1;
}        server_name localhost;
        root $WWW;
        location / { }
${NGX_EXTRA:-}    }
}
EOF
}

# bench_start_nginx PROBE_PATH: starts nginx in the foreground (background job) on a free
# port, retrying up to 5 ports, until `GET PROBE_PATH` with `Range: bytes=0-0` gives 206.
# Sets PORT and NGINX_PID.
bench_start_nginx() {
    local probe=$1 attempt port code
    rm -rf "$NGX_PREFIX"
    mkdir -p "$NGX_PREFIX/logs" "$NGX_PREFIX/tmp"
    for attempt in 1 2 3 4 5; do
        port=$(bench_free_port)
        bench_write_nginx_conf "$port"
        "$NGINX" -p "$NGX_PREFIX/" -c "$NGX_PREFIX/nginx.conf" -e "$NGX_PREFIX/logs/error.log" \
            -g 'daemon off;' </dev/null >>"$NGX_PREFIX/logs/stdout.log" 2>&1 &
        NGINX_PID=$!
        for _ in $(seq 50); do
            kill -0 "$NGINX_PID" 2>/dev/null || break
            code=$(curl -q -s -o /dev/null -w '%{http_code}' --max-time 2 -r 0-0 \
                "http://127.0.0.1:$port/${probe#/}" || true)
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

# Starts nginx with a /slow/ location serving $WWW at `limit_rate RATE` per connection, checked with FILE
# (a name in $WWW): the downloads of the daemon benchmarks keep running for as long as they measure.
bench_start_throttled_nginx() { # file rate
    NGX_EXTRA="        location /slow/ {
            alias $WWW/;
            limit_rate $2;
        }
"
    bench_start_nginx "slow/$1"
}

# ---------------------------------------------------------------- runner
bench_reset_dirs() {
    rm -rf "$DL_DIR" "$HAUL_HOME_DIR"    # output, *.haul-part, *.aria2, haul state
    mkdir -p "$DL_DIR" "$HAUL_HOME_DIR"
}

# bench_run LABEL OUT BYTES SHA CHECK_SHA -- CMD...
# Wipes DL_DIR and HAUL_HOME_DIR, syncs, runs CMD under timeout + GNU time, then checks the
# exit status, OUT's size and (if CHECK_SHA=1) its sha256; any failure exits the script.
# Sets RUN_WALL (s, ns clock), RUN_E, RUN_U, RUN_S (s) and RUN_M (peak RSS, KiB).
# OUT is left in place for the caller to remove.
bench_run() {
    local tool=$1 out=$2 bytes=$3 want_sha=$4 check_sha=$5
    shift 6
    local tfile="$OUT_DIR/time.out" errf="$OUT_DIR/tool.stderr"
    local rc t0 t1 size line sha
    bench_reset_dirs
    sync
    rm -f "$tfile"
    t0=$(date +%s%N)
    # Background + wait so Ctrl-C is handled promptly; timeout kills the whole tool.
    timeout "$DL_TIMEOUT" /usr/bin/time -f '%e %U %S %M' -o "$tfile" "$@" </dev/null 2>"$errf" &
    CHILD_PID=$!
    if wait "$CHILD_PID"; then rc=0; else rc=$?; fi
    t1=$(date +%s%N)
    CHILD_PID=""
    if ((rc != 0)); then
        ((rc == 124)) && log "$tool timed out after ${DL_TIMEOUT}s"
        log "$tool failed (exit $rc): $*"
        tail -n 20 "$errf" >&2 || true
        exit 1
    fi
    [[ -f $out ]] || die "$tool exited 0 but produced no file at $out"
    size=$(stat -c %s "$out")
    ((size == bytes)) || die "$tool produced $size bytes, expected $bytes"
    if [[ $check_sha == 1 ]]; then
        sha=$(sha256sum "$out" | awk '{print $1}')
        [[ $sha == "$want_sha" ]] || die "$tool output sha256 $sha != source $want_sha"
    fi
    line=$(tail -n 1 "$tfile")
    read -r RUN_E RUN_U RUN_S RUN_M <<<"$line"
    [[ $RUN_M =~ ^[0-9]+$ ]] || die "could not parse /usr/bin/time output for $tool: $line"
    RUN_WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", (b - a) / 1e9}')
}

# ---------------------------------------------------------------- report helpers
bench_ver() { "$@" 2>&1 | head -n 1 || true; }
bench_cpu() {
    echo "$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true) ($(nproc) cores)"
}
