#!/usr/bin/env python3
"""Memory of a long URL list (see bench/README.md): `haul get -i LIST -j 16` of COUNT tiny answers from a local nginx
(12 bytes each, `return 200`), for each COUNT, with its peak RSS (VmHWM, from GNU time's %M), wall and CPU per URL;
aria2c beside it for the counts given to --aria2c-counts. Goal (issue 25): memory that does not grow with the list,
a million URLs within 150 MiB.

Usage: bench/list_memory.py [--counts 10000,100000] [--aria2c-counts 10000] [--haul .build/release/haul]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

from benchlib import free_port, start_nginx, stop_nginx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measured(cmd, env, cwd):
    """Runs cmd under GNU time; (wall s, CPU s, peak RSS MiB, exit status)."""
    out = os.path.join(cwd, ".time")
    start = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-o", out, "-f", "%U %S %M"] + cmd, env=env, cwd=cwd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=7200)
    wall = time.monotonic() - start
    with open(out) as f:
        user, system, kib = f.read().split()[-3:]
    os.unlink(out)
    if p.returncode != 0:
        sys.stderr.write(p.stderr.decode(errors="replace")[-400:])
    return wall, float(user) + float(system), int(kib) / 1024, p.returncode


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--counts", default="10000,100000")
    parser.add_argument("--aria2c-counts", default="10000")
    parser.add_argument("--jobs", type=int, default=16)
    parser.add_argument("--haul", default=os.path.join(ROOT, ".build", "release", "haul"), type=os.path.abspath)
    args = parser.parse_args()
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        os.environ.pop(name, None)
    work = tempfile.mkdtemp(prefix="haul-list-memory-")
    port = free_port()
    start_nginx(work, f"""  server {{
    listen 127.0.0.1:{port};
    location /tiny/ {{ return 200 "hello world\\n"; }}
  }}""")
    print(f"# haul get -i of COUNT tiny answers from a local nginx, {args.jobs} at once, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("\n| tool | URLs | peak RSS MiB | KiB per URL | wall s | CPU ms per URL | exit |")
    print("|---|---|---|---|---|---|---|")
    try:
        runs = [("haul", int(c)) for c in args.counts.split(",") if c]
        runs += [("aria2c", int(c)) for c in args.aria2c_counts.split(",") if c and shutil.which("aria2c")]
        for tool, count in runs:
            listfile = f"{work}/list.txt"
            with open(listfile, "w") as f:
                for i in range(count):
                    f.write(f"http://127.0.0.1:{port}/tiny/{i}.bin\n")
            # A new folder per run, all removed at the end: on an ext4 without a journal (this machine's) each file
            # created skips the inodes deleted in the last minutes, which made a run after a removal pay for it.
            dest = f"{work}/dl-{tool}-{count}"
            os.makedirs(dest)
            env = dict(os.environ, HAUL_HOME=f"{work}/home-{tool}-{count}")
            if tool == "haul":
                cmd = [args.haul, "get", "-i", listfile, "-j", str(args.jobs), "--dir", dest]
            else:
                cmd = ["aria2c", "-q", "-i", listfile, "-j", str(args.jobs), "-d", dest, "--allow-overwrite=true",
                       "--auto-file-renaming=false"]
            wall, cpu, rss, status = measured(cmd, env, dest)
            print(f"| {tool} | {count} | {rss:.0f} | {rss * 1024 / count:.2f} | {wall:.1f} | {cpu * 1000 / count:.2f} | {status} |",
                  flush=True)
    finally:
        stop_nginx(work)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
