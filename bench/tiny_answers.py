#!/usr/bin/env python3
"""The cost of a file when the file costs nothing (see bench/README.md): COUNT tiny answers from a local nginx, J at
once, for haul, aria2c and wget side by side in one run, as wall time and CPU time per URL (user + system, from
wait4). Two kinds of answer:

  static   a 16 KiB file on disk (ETag, Last-Modified, ranges)
  tiny     `return 200 "hello world\\n"` (12 bytes, no validators, no ranges)

Haul fsyncs every file and its folder before it reports it; the others don't: each is also timed with a `sync` of its
files after it ends. Goals (issue 25): CPU per URL at most 0.6 ms for haul, wall at most aria2c's and wget's.

Usage: bench/tiny_answers.py [--count 20000] [--jobs 16] [--runs 3] [--kinds static,tiny] [--haul .build/release/haul]
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import free_port, start_nginx, stop_nginx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(cmd, env, cwd):
    """Runs cmd; returns (wall seconds, CPU seconds of it and its children, exit status, stderr tail)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    p = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=3600)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, p.returncode, p.stderr[-300:]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--jobs", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kinds", default="static,tiny")
    parser.add_argument("--tools", default="haul,aria2c,wget")
    parser.add_argument("--haul", default=os.path.join(ROOT, ".build", "release", "haul"), type=os.path.abspath)
    args = parser.parse_args()
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        os.environ.pop(name, None)
    work = tempfile.mkdtemp(prefix="haul-tiny-")
    port = free_port()
    os.makedirs(f"{work}/www/static")
    payload = os.urandom(16384)
    for i in range(args.count):
        with open(f"{work}/www/static/{i}.bin", "wb") as f:
            f.write(payload)
    start_nginx(work, f"""  server {{
    listen 127.0.0.1:{port};
    root {work}/www;
    location /tiny/ {{ return 200 "hello world\\n"; }}
  }}""")
    tools = args.tools.split(",")
    print(f"# {args.count} tiny answers from a local nginx, {args.jobs} at once, median of {args.runs}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    try:
        for kind in args.kinds.split(","):
            listfile = f"{work}/list-{kind}.txt"
            with open(listfile, "w") as f:
                for i in range(args.count):
                    f.write(f"http://127.0.0.1:{port}/{kind}/{i}.bin\n")
            walls, cpus, syncs = {t: [] for t in tools}, {t: [] for t in tools}, {t: [] for t in tools}
            for r in range(args.runs):
                for t in tools[r % len(tools):] + tools[:r % len(tools)]:
                    # A fresh folder each run, the old ones removed only at the end: this machine's ext4 has no
                    # journal, and there every file created skips the inodes deleted in the last minute or so
                    # (ext4's recently_deleted), which made whichever tool ran after a removal pay for it.
                    dest = f"{work}/dl-{kind}-{r}-{t}"
                    os.makedirs(dest)
                    env = dict(os.environ, HAUL_HOME=f"{work}/home-{kind}-{r}")
                    if t == "haul":
                        cmd = [args.haul, "get", "-i", listfile, "-j", str(args.jobs), "--dir", dest, "--quiet"]
                    elif t == "aria2c":
                        cmd = ["aria2c", "-q", "-j", str(args.jobs), "-x", "1", "-d", dest, "-i", listfile,
                               "--allow-overwrite=true", "--auto-file-renaming=false", "--file-allocation=none"]
                    else:
                        cmd = ["wget", "-q", "-P", dest, "-i", listfile]
                    wall, cpu, status, err = timed(cmd, env, dest)
                    start = time.monotonic()
                    subprocess.run(["sync", "-f", dest])
                    synced = wall + time.monotonic() - start
                    count = len(os.listdir(dest))
                    if status != 0 or count != args.count:
                        print(f"  {t} {kind}: exit {status}, {count} files: {err!r}", file=sys.stderr)
                        continue
                    walls[t].append(wall)
                    cpus[t].append(cpu)
                    syncs[t].append(synced)
            print(f"\n## {kind}\n")
            print("| tool | wall (s) | + sync (s) | CPU per URL (ms) | haul wall ÷ tool + sync |")
            print("|---|---|---|---|---|")
            haul = statistics.median(walls["haul"]) if walls.get("haul") else None
            for t in tools:
                if not walls[t]:
                    continue
                w, c, s = statistics.median(walls[t]), statistics.median(cpus[t]), statistics.median(syncs[t])
                ratio = f"{haul / s:.2f}×" if haul and t != "haul" else "—"
                print(f"| {t} | {w:.2f} | {s:.2f} | {1000 * c / args.count:.2f} | {ratio} |", flush=True)
    finally:
        stop_nginx(work)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
