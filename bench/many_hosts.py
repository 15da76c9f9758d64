#!/usr/bin/env python3
"""A list over many hosts under a login shell's descriptor limit: haul, aria2c and wget2 side by side, in one run.

A private nginx on loopback listens on HOSTS addresses (127.0.1.1, 127.0.1.2, …, all on one port) and answers every
path with the same 2,000 bytes; the list has URLS lines, host after host (URL i goes to host i mod HOSTS). Each tool
fetches it 16 at once into a folder of its own, started by bash after `ulimit -Sn SOFT` (the soft limit of a login
shell is 1,024; the hard one stays). Prints per tool: exit status, wall time, peak RSS, files complete, and the
first error line.

What it shows: a download of a host that has nothing else waiting asks for `Connection: close`, and `haul` raises
its soft descriptor limit to the hard one, so keep-alive connections to hosts already passed never exhaust the
descriptors (they did: 1,200 hosts × 3 failed about 150 downloads after 190 s of retries). It also shows what
remains: AsyncHTTPClient keeps a connection pool per origin for the client's life, a few KB each.

With `--netns` (root; `unshare -n`) the whole run moves into a network namespace of its own, whose only interface
is loopback: nginx then listens on the port of every 127.x.y.z address at once, and HOSTS may be up to 1,000,000
(one URL per host at `--urls` equal to `--hosts`). That is the list of a dataset builder: every URL another host.

Usage: bench/many_hosts.py [--hosts 1200] [--urls 3600] [--soft 1024] [--haul .build/release/haul]
                           [--tools haul,aria2c,wget2] [--netns] [--tls]
Without --netns, HOSTS is at most 4,000 (nginx listens on each address; worker_connections here is 4,096).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import free_port, start_nginx, stop_nginx  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def command(tool, haul, listfile, dest, tls):
    if tool == "haul":
        return [haul, "get", "-i", listfile, "-j", "16", "--dir", dest, "--quiet"] + (["-k"] if tls else [])
    if tool == "aria2c":
        return ["aria2c", "-q", "-j", "16", "-x", "1", "-i", listfile, "-d", dest, "--allow-overwrite=true",
                "--auto-file-renaming=false", "--file-allocation=none"] + (["--check-certificate=false"] if tls else [])
    if tool == "wget2":
        return ["wget2", "-q", "--max-threads", "16", "-P", dest, "-i", listfile] + (["--no-check-certificate"] if tls else [])
    raise ValueError(tool)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=1200)
    parser.add_argument("--urls", type=int, default=3600)
    parser.add_argument("--soft", type=int, default=1024)
    parser.add_argument("--haul", default=os.path.join(ROOT, ".build/release/haul"))
    parser.add_argument("--tools", default="haul,aria2c,wget2")
    parser.add_argument("--netns", action="store_true", help="run in a network namespace of loopback only")
    parser.add_argument("--tls", action="store_true",
                        help="HTTPS (HTTP/2 offered by ALPN) with a self-signed certificate made by openssl; every tool skips verification")
    args = parser.parse_args()
    if args.netns and os.environ.get("HAUL_BENCH_NETNS") != "1":
        # Again, inside a namespace of its own (loopback only, brought up first).
        os.execvpe("unshare", ["unshare", "-n", sys.executable, os.path.abspath(__file__)] + sys.argv[1:],
                   dict(os.environ, HAUL_BENCH_NETNS="1"))
    if args.netns:
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    if not 1 <= args.hosts <= (1_000_000 if args.netns else 4000):
        sys.exit("--hosts must be between 1 and 4000 (1,000,000 with --netns)")
    work = tempfile.mkdtemp(prefix="haul-many-hosts-")
    port = free_port()
    os.makedirs(f"{work}/www")
    body = os.urandom(2000)
    with open(f"{work}/www/f.bin", "wb") as f:
        f.write(body)
    hosts = [f"127.{x // 62_500}.{1 + x // 250 % 250}.{1 + x % 250}" for x in range(args.hosts)]
    # In the namespace, the wildcard address is loopback alone.
    listens = f"    listen {port};" if args.netns else "\n".join(f"    listen {host}:{port};" for host in hosts)
    if args.tls:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{work}/key.pem",
                        "-out", f"{work}/cert.pem", "-days", "2", "-subj", "/CN=localhost"], check=True, capture_output=True)
        listens = listens.replace(";", " ssl http2;") + f"""
    ssl_certificate {work}/cert.pem;
    ssl_certificate_key {work}/key.pem;"""
    start_nginx(work, f"""  server {{
{listens}
    root {work}/www;
    location / {{ try_files /f.bin =404; }}
  }}""")
    try:
        listfile = f"{work}/list.txt"
        with open(listfile, "w") as f:
            for index in range(args.urls):
                f.write(f"{'https' if args.tls else 'http'}://{hosts[index % args.hosts]}:{port}/f{index}.bin\n")
        print(f"# {args.urls} {'HTTPS ' if args.tls else ''}URLs over {args.hosts} hosts, 16 at once, soft descriptor limit {args.soft}, "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
        print("| tool | exit | wall (s) | CPU per URL (ms) | peak RSS (MiB) | files complete | first error |")
        print("|---|---|---|---|---|---|---|")
        for tool in args.tools.split(","):
            if tool != "haul" and not shutil.which(tool):
                print(f"| {tool} | not installed | | | | |")
                continue
            dest = f"{work}/{tool}"
            os.makedirs(dest)
            env = dict(os.environ, HAUL_HOME=f"{work}/home-{tool}")
            script = (f"ulimit -Sn {args.soft}; exec /usr/bin/time -f 'peak-rss-kb %M %U %S' "
                      + " ".join(f"'{part}'" for part in command(tool, args.haul, listfile, dest, args.tls)))
            started = time.monotonic()
            run = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=1800)
            wall = time.monotonic() - started
            usage = next((line.split()[1:] for line in run.stderr.splitlines() if line.startswith("peak-rss-kb")), ["0", "0", "0"])
            rss = int(usage[0])
            cpu = (float(usage[1]) + float(usage[2])) * 1000 / args.urls
            complete = 0
            for name in os.listdir(dest):
                with open(f"{dest}/{name}", "rb") as f:
                    complete += f.read() == body
            errors = [line for line in run.stderr.splitlines() if line and not line.startswith("peak-rss-kb")
                      and "exited with non-zero status" not in line and "TLS certificates are not verified" not in line]
            first = errors[0][:120].replace("|", "/") if errors else ""
            print(f"| {tool} | {run.returncode} | {wall:.1f} | {cpu:.2f} | {rss / 1024:.0f} | {complete} of {args.urls} | {first} |")
    finally:
        stop_nginx(work)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
