#!/usr/bin/env bash
# Many small files benchmark (see bench/README.md), in one run, from a private nginx on 127.0.0.1:
#   (a) BENCH_A_FILES (300) files of BENCH_A_KB (256) KiB, 8 at once:
#       haul get -i LIST -j 8 vs aria2c -j 8 -i LIST (and aria2c followed by a sync of its files)
#   (b) BENCH_B_FILES (3000) files of BENCH_B_KB (16) KiB, 16 at once:
#       haul get -i LIST -j 16 vs aria2c -j 16 -i LIST vs wget -i LIST (each peer also followed by a
#       sync of its files: haul fsyncs every file and its folder before it reports it finished, they don't)
#   (c) haul's cost per file for BENCH_SCALE_COUNTS (100 1000 10000) files of BENCH_B_KB KiB, -j 16:
#       flat if the batch's size does not matter
# Goals: haul wall <= aria2c in (a) and (b); haul's cost per file flat in (c) (largest ÷ smallest <= 1.25).
#
# Env:
#   HAUL                haul binary (default: <repo>/.build/release/haul); must support -i and -j
#   BENCH_RUNS          timed rounds of (a) and (b) (default 3); each round runs every tool once, rotating
#   BENCH_SCALE_RUNS    timed runs of each (c) size (default BENCH_RUNS)
#   BENCH_PART          a | b | c, or several separated by commas (default a,b,c)
#   BENCH_A_FILES, BENCH_A_KB, BENCH_A_JOBS   (a): 300, 256, 8
#   BENCH_B_FILES, BENCH_B_KB, BENCH_B_JOBS   (b) and (c): 3000, 16, 16
#   BENCH_SCALE_COUNTS  sizes of (c), ascending (default "100 1000 10000")
#   BENCH_SAMPLE        files whose sha256 is checked per run (default 20; every file's size is checked)
#   BENCH_TIMEOUT       timeout of one run in seconds (default 900)
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
OUT_DIR="$SCRIPT_DIR/out"

RUNS=${BENCH_RUNS:-3}
SCALE_RUNS=${BENCH_SCALE_RUNS:-$RUNS}
PARTS=${BENCH_PART:-a,b,c}
A_FILES=${BENCH_A_FILES:-300}
A_KB=${BENCH_A_KB:-256}
A_JOBS=${BENCH_A_JOBS:-8}
B_FILES=${BENCH_B_FILES:-3000}
B_KB=${BENCH_B_KB:-16}
B_JOBS=${BENCH_B_JOBS:-16}
SCALE_COUNTS=${BENCH_SCALE_COUNTS:-100 1000 10000}
SAMPLE=${BENCH_SAMPLE:-20}
DL_TIMEOUT=${BENCH_TIMEOUT:-900}
HAUL=${HAUL:-$REPO_ROOT/.build/release/haul}

# shellcheck source=bench/lib.sh
. "$SCRIPT_DIR/lib.sh"

for pair in RUNS:BENCH_RUNS SCALE_RUNS:BENCH_SCALE_RUNS A_FILES:BENCH_A_FILES A_KB:BENCH_A_KB \
    A_JOBS:BENCH_A_JOBS B_FILES:BENCH_B_FILES B_KB:BENCH_B_KB B_JOBS:BENCH_B_JOBS SAMPLE:BENCH_SAMPLE \
    DL_TIMEOUT:BENCH_TIMEOUT; do
    var=${pair%%:*}
    is_posint "${!var}" || die "${pair#*:} must be a positive integer (got '${!var}')"
done
for n in $SCALE_COUNTS; do is_posint "$n" || die "BENCH_SCALE_COUNTS must be positive integers (got '$n')"; done
for p in ${PARTS//,/ }; do
    [[ $p == a || $p == b || $p == c ]] || die "BENCH_PART must be a, b, c or a list of them (got '$PARTS')"
done
has_part() { [[ ",$PARTS," == *",$1,"* ]]; }
((A_JOBS <= 64 && B_JOBS <= 64)) || die "haul's -j is at most 64"

# ---------------------------------------------------------------- dependencies
deps=(nginx:nginx-light curl:curl /usr/bin/time:time python3:python3
      timeout,sha256sum,stat,sync,xargs:coreutils flock:util-linux)
{ has_part a || has_part b; } && deps+=(aria2c:aria2)
has_part b && deps+=(wget:wget)
bench_require "${deps[@]}"
bench_require_haul
bench_require_haul_options get --input-file --jobs

bench_no_proxy
bench_lock

WWW="$OUT_DIR/www"
NGX_PREFIX="$OUT_DIR/nginx-small-files"
DL_DIR="$OUT_DIR/dl"
HAUL_HOME_DIR="$OUT_DIR/haul-home"
LIST="$OUT_DIR/small-files-urls.txt"
RESULTS="$OUT_DIR/small-files-raw.tsv"

bench_traps

# The 16 KiB files of (b) and (c) are one folder: each run uses its first N files.
B_MAX=0
has_part b && B_MAX=$B_FILES
if has_part c; then for n in $SCALE_COUNTS; do ((n > B_MAX)) && B_MAX=$n; done; fi
((B_MAX <= 999999)) || die "at most 999999 files"
A_REL="small-${A_KB}k"                    # URL path and folder under $WWW
B_REL="small-${B_KB}k"

need_mb=64
has_part a && need_mb=$((need_mb + 2 * A_FILES * (A_KB + 4) / 1024))
((B_MAX > 0)) && need_mb=$((need_mb + 2 * B_MAX * (B_KB + 4) / 1024))
bench_need_space "$need_mb"

name_of() { printf 'file-%06d.bin' "$1"; }

# ---------------------------------------------------------------- test files
# ensure_files REL KB COUNT: files 1..COUNT of KB KiB in $WWW/REL with a sha256sum manifest (cached;
# only missing or wrong-sized files are made). Random bytes, so nothing can be served compressed.
ensure_files() {
    local rel=$1 kb=$2 count=$3
    log "checking $count test files of $kb KiB in $WWW/$rel"
    python3 - "$WWW/$rel" "$((kb * 1024))" "$count" <<'PY'
import hashlib, os, sys
folder, size, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(folder, exist_ok=True)
manifest = os.path.join(folder, "SHA256SUMS")
known = {}
if os.path.exists(manifest):
    for line in open(manifest):
        sha, name = line.split()
        known[name] = sha
made = 0
for i in range(1, count + 1):
    name = f"file-{i:06d}.bin"
    path = os.path.join(folder, name)
    if name in known and os.path.isfile(path) and os.path.getsize(path) == size:
        continue
    data = os.urandom(size)
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.chmod(path + ".tmp", 0o644)
    os.replace(path + ".tmp", path)
    known[name] = hashlib.sha256(data).hexdigest()
    made += 1
if made:
    with open(manifest + ".tmp", "w") as f:
        for name in sorted(known):
            f.write(f"{known[name]}  {name}\n")
    os.replace(manifest + ".tmp", manifest)
    print(f"[bench] made {made} files in {folder}", file=sys.stderr)
PY
    cat "$WWW/$rel"/file-*.bin >/dev/null    # warm the page cache
}
has_part a && ensure_files "$A_REL" "$A_KB" "$A_FILES"
((B_MAX > 0)) && ensure_files "$B_REL" "$B_KB" "$B_MAX"

declare -A WANT_SHA=()
load_manifest() { # rel
    local sha name
    while read -r sha name; do WANT_SHA[$1/$name]=$sha; done <"$WWW/$1/SHA256SUMS"
}
has_part a && load_manifest "$A_REL"
((B_MAX > 0)) && load_manifest "$B_REL"

# ---------------------------------------------------------------- runner
RUN_SEQ=0
# verify REL COUNT KB TOOL: exactly files 1..COUNT in DL_DIR, each KB KiB, and the sha256 of SAMPLE
# of them (evenly spread, shifted every run so different files get checked).
verify() {
    local rel=$1 count=$2 bytes=$(($3 * 1024)) tool=$4 n bad k i name sha sample=$SAMPLE
    ((sample > count)) && sample=$count
    n=$(find "$DL_DIR" -mindepth 1 | wc -l)
    ((n == count)) || die "$tool left $n entries in $DL_DIR, expected $count files: $(ls "$DL_DIR" | grep -v '^file-[0-9]*\.bin$' | head -n 5 | tr '\n' ' ')"
    bad=$(cd "$DL_DIR" && for ((i = 1; i <= count; i++)); do name_of "$i"; echo; done |
        xargs stat -c '%s %n' 2>&1 | awk -v b="$bytes" '$1 != b' | head -n 5 || true)
    [[ -z $bad ]] || die "$tool: wrong or missing files (size name): $bad"
    for ((k = 0; k < sample; k++)); do
        i=$(((k * count / sample + RUN_SEQ) % count + 1))
        name=$(name_of "$i")
        sha=$(sha256sum "$DL_DIR/$name" | awk '{print $1}')
        [[ $sha == "${WANT_SHA[$rel/$name]}" ]] || die "$tool: $name sha256 $sha != source ${WANT_SHA[$rel/$name]}"
    done
}

# The peers then sync what they wrote, as haul does before it reports a file finished: every file, then
# the folder (coreutils `sync FILE...` fsyncs each one).
SYNC_FILES="find \"\$0\" -type f -print0 | xargs -0 -r sync -- && sync -- \"\$0\""

tool_cmd() { # tool jobs -> CMD
    local jobs=$2
    case $1 in
        haul) CMD=(env "HAUL_HOME=$HAUL_HOME_DIR" "$HAUL" get -i "$LIST" -j "$jobs" --dir "$DL_DIR" --quiet) ;;
        aria2c) CMD=(aria2c --no-conf -j "$jobs" -i "$LIST" -d "$DL_DIR" --allow-overwrite=true
                     --auto-file-renaming=false -q) ;;
        aria2c+sync) tool_cmd aria2c "$jobs"
                     CMD=(sh -c "\"\$@\" && $SYNC_FILES" "$DL_DIR" "${CMD[@]}") ;;
        wget) CMD=(wget -q -i "$LIST" -P "$DL_DIR") ;;
        wget+sync) tool_cmd wget "$jobs"
                   CMD=(sh -c "\"\$@\" && $SYNC_FILES" "$DL_DIR" "${CMD[@]}") ;;
        *) die "unknown tool $1" ;;
    esac
}

# timed LABEL -- CMD...: runs CMD under timeout + GNU time, exits the script on failure.
# Sets RUN_WALL (s, ns clock), RUN_U, RUN_S (s), RUN_M (peak RSS, KiB).
timed() {
    local label=$1
    shift 2
    local tfile="$OUT_DIR/time.out" errf="$OUT_DIR/tool.stderr" rc t0 t1 line e
    rm -f "$tfile"
    t0=$(date +%s%N)
    timeout "$DL_TIMEOUT" /usr/bin/time -f '%e %U %S %M' -o "$tfile" "$@" </dev/null >/dev/null 2>"$errf" &
    CHILD_PID=$!
    if wait "$CHILD_PID"; then rc=0; else rc=$?; fi
    t1=$(date +%s%N)
    CHILD_PID=""
    if ((rc != 0)); then
        ((rc == 124)) && log "$label timed out after ${DL_TIMEOUT}s"
        log "$label failed (exit $rc): $*"
        tail -n 20 "$errf" >&2 || true
        exit 1
    fi
    line=$(tail -n 1 "$tfile")
    read -r e RUN_U RUN_S RUN_M <<<"$line"
    [[ $RUN_M =~ ^[0-9]+$ ]] || die "could not parse /usr/bin/time output for $label: $line"
    RUN_WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", (b - a) / 1e9}')
}

# Output, leftovers and haul's state are moved out of the way before every run, and deleted only at the end:
# on an ext4 without a journal (as on some VMs) every new inode is found by skipping the inodes deleted in the
# last minutes, so deleting the last run's thousands of files just before a run would slow down the next tool's
# file creations by an amount that depends on who ran before.
TRASH="$OUT_DIR/small-files-trash"
reset_dirs() {
    mkdir -p "$TRASH"
    [[ -e $DL_DIR ]] && mv "$DL_DIR" "$TRASH/dl-$RUN_SEQ"
    [[ -e $HAUL_HOME_DIR ]] && mv "$HAUL_HOME_DIR" "$TRASH/home-$RUN_SEQ"
    mkdir -p "$DL_DIR" "$HAUL_HOME_DIR"
}
rm -rf "$TRASH"
trap 'rc=$?; rm -rf "$TRASH"; (exit $rc); bench_cleanup' EXIT

# run_one SCENARIO ROUND TOOL REL COUNT KB JOBS
run_one() {
    local scenario=$1 round=$2 tool=$3 rel=$4 count=$5 kb=$6 jobs=$7 i
    for ((i = 1; i <= count; i++)); do echo "http://127.0.0.1:$PORT/$rel/$(name_of "$i")"; done >"$LIST"
    tool_cmd "$tool" "$jobs"
    reset_dirs
    sync
    timed "$tool" -- "${CMD[@]}"
    verify "$rel" "$count" "$kb" "$tool"
    RUN_SEQ=$((RUN_SEQ + 1))
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$scenario" "$count" "$kb" "$jobs" "$round" "$tool" \
        "$RUN_WALL" "$RUN_U" "$RUN_S" "$RUN_M" >>"$RESULTS"
    log "$scenario $count×${kb}k -j $jobs round $round $(printf '%-11s' "$tool") wall ${RUN_WALL}s cpu $(awk \
        -v u="$RUN_U" -v s="$RUN_S" 'BEGIN{printf "%.2f", u+s}')s rss $((RUN_M / 1024)) MiB (verified)"
}

# rounds SCENARIO REL COUNT KB JOBS TOOL...: RUNS rounds, rotating which tool goes first.
rounds() {
    local scenario=$1 rel=$2 count=$3 kb=$4 jobs=$5 r i
    shift 5
    local tools=("$@")
    for ((r = 1; r <= RUNS; r++)); do
        for ((i = 0; i < ${#tools[@]}; i++)); do
            run_one "$scenario" "$r" "${tools[$(((i + r - 1) % ${#tools[@]}))]}" "$rel" "$count" "$kb" "$jobs"
        done
    done
}

# ---------------------------------------------------------------- the runs
printf 'scenario\tfiles\tkb\tjobs\tround\ttool\twall_s\tuser_s\tsys_s\tmaxrss_kib\n' >"$RESULTS"
if has_part a; then probe="$A_REL/$(name_of 1)"; else probe="$B_REL/$(name_of 1)"; fi
bench_start_nginx "$probe"
log "nginx (pid $NGINX_PID) on http://127.0.0.1:$PORT/"
has_part a && rounds a "$A_REL" "$A_FILES" "$A_KB" "$A_JOBS" haul aria2c aria2c+sync
has_part b && rounds b "$B_REL" "$B_FILES" "$B_KB" "$B_JOBS" haul aria2c aria2c+sync wget wget+sync
if has_part c; then
    for n in $SCALE_COUNTS; do
        for ((r = 1; r <= SCALE_RUNS; r++)); do run_one c "$r" haul "$B_REL" "$n" "$B_KB" "$B_JOBS"; done
    done
fi
rm -rf "$DL_DIR"
kill -TERM "$NGINX_PID" 2>/dev/null || true
wait "$NGINX_PID" 2>/dev/null || true
NGINX_PID=""

# ---------------------------------------------------------------- report
haul_ver=$(HAUL_HOME=$HAUL_HOME_DIR timeout 5 "$HAUL" --version 2>/dev/null </dev/null | head -n 1 || true)
REPORT="$OUT_DIR/small-files-$(date -u +%Y%m%dT%H%M%SZ).md"

BENCH_RESULTS="$RESULTS" BENCH_RUNS="$RUNS" BENCH_SAMPLE="$SAMPLE" \
BENCH_DATE="$(date -u '+%Y-%m-%d %H:%M:%S UTC')" BENCH_ARCH="$(uname -m)" BENCH_CPU="$(bench_cpu)" \
BENCH_FS="$(df -PT "$OUT_DIR" | awk 'NR==2 {print $2}')" \
BENCH_HAUL="$HAUL${haul_ver:+ ($haul_ver)}" \
BENCH_V_ARIA="$(command -v aria2c >/dev/null && bench_ver aria2c --version || true)" \
BENCH_V_WGET="$(command -v wget >/dev/null && bench_ver wget --version || true)" \
BENCH_V_NGINX="$(bench_ver "$NGINX" -v | sed 's|^nginx version: nginx/||')" \
python3 - <<'PY' | tee "$REPORT"
import csv, os, statistics as st

env = os.environ
rows = list(csv.DictReader(open(env["BENCH_RESULTS"]), delimiter="\t"))

def verdict(ok):
    return "PASS" if ok else "FAIL"

def median(rs):
    return dict(wall=st.median(float(r["wall_s"]) for r in rs),
                cpu=st.median(float(r["user_s"]) + float(r["sys_s"]) for r in rs),
                rss=st.median(int(r["maxrss_kib"]) / 1024 for r in rs))

print("## Haul small-files benchmark\n")
print(f"- date: {env['BENCH_DATE']}")
print(f"- machine: `{env['BENCH_ARCH']}`, {env['BENCH_CPU']}; output on {env['BENCH_FS']}")
print(f"- haul: {env['BENCH_HAUL']}")
peers = "; ".join(v for v in (env["BENCH_V_ARIA"], env["BENCH_V_WGET"]) if v)
print(f"- {peers}; nginx {env['BENCH_V_NGINX']} on 127.0.0.1 (1 worker, sendfile on)")
print()
print("`+ sync`: the peer, then `sync` of every file it wrote and of the folder (haul fsyncs each file and")
print("its folder before it reports the file finished; wget fsyncs nothing, aria2c its control files).")
print(f"Every run checked: all files present with the right size, nothing else left behind, sha256 of "
      f"{env['BENCH_SAMPLE']} of them.")
print(f"Medians of {env['BENCH_RUNS']} rounds, tools rotating which goes first.\n")

goals = []
for scenario in ("a", "b"):
    rs = [r for r in rows if r["scenario"] == scenario]
    if not rs:
        continue
    n, kb, jobs = int(rs[0]["files"]), int(rs[0]["kb"]), rs[0]["jobs"]
    tools = list(dict.fromkeys(r["tool"] for r in rs))
    med = {t: median([r for r in rs if r["tool"] == t]) for t in tools}
    a = med["aria2c"]
    label = {"haul": f"haul get -i LIST -j {jobs}", "aria2c": f"aria2c -j {jobs} -i LIST",
             "aria2c+sync": f"aria2c -j {jobs} -i LIST + sync", "wget": "wget -i LIST",
             "wget+sync": "wget -i LIST + sync"}
    print(f"### ({scenario}) {n:,} files × {kb} KiB, {jobs} at once\n")
    print("| tool | median wall s | median CPU s | peak RSS MB | files/s | ms per file | wall ÷ aria2c | haul ÷ this |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    h = med["haul"]
    for t in tools:
        m = med[t]
        print(f"| {label.get(t, t)} | {m['wall']:.3f} | {m['cpu']:.2f} | {m['rss']:.1f} | {n / m['wall']:.0f} | "
              f"{m['wall'] * 1000 / n:.2f} | {m['wall'] / a['wall']:.2f}× | {h['wall'] / m['wall']:.2f}× |")
    print()
    goals.append((f"({scenario}) haul no slower than aria2c: {h['wall']:.3f} s vs {a['wall']:.3f} s "
                  f"({h['wall'] / a['wall']:.2f}×)", h["wall"] <= a["wall"]))

rs = [r for r in rows if r["scenario"] == "c"]
if rs:
    kb, jobs = int(rs[0]["kb"]), rs[0]["jobs"]
    counts = sorted({int(r["files"]) for r in rs})
    per = {}
    print(f"### (c) haul's cost per file, {kb} KiB files, -j {jobs}\n")
    print("| files | median wall s | median CPU s | peak RSS MB | ms per file (wall) | ms per file (CPU) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for c in counts:
        m = median([r for r in rs if int(r["files"]) == c])
        per[c] = m["wall"] * 1000 / c
        print(f"| {c:,} | {m['wall']:.3f} | {m['cpu']:.2f} | {m['rss']:.1f} | {per[c]:.2f} | {m['cpu'] * 1000 / c:.2f} |")
    print()
    line = ", ".join(f"{c:,} files {per[c]:.2f} ms" for c in counts)
    print(f"Per-file cost (wall): {line}.\n")
    if len(counts) > 1:
        ratio = per[counts[-1]] / per[counts[0]]
        goals.append((f"(c) cost per file flat: {counts[-1]:,} files ÷ {counts[0]:,} files = {ratio:.2f}× "
                      "(goal ≤ 1.25×)", ratio <= 1.25))

if goals:
    print("Goals:\n")
    for text, ok in goals:
        print(f"- {text} — {verdict(ok)}")
    print()
print("MB = MiB (2^20 bytes). Wall = nanosecond clock around each run; CPU = user+sys and peak RSS")
print("from GNU `/usr/bin/time` (%U %S %M; CPU has 10 ms resolution; for `+ sync` rows, of the whole")
print("shell: the peer and the sync).")
PY

log "report: $REPORT"
log "raw data: $RESULTS"
true
