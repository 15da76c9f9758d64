#!/usr/bin/env python3
"""Many small files over a WAN-like link (see bench/README.md): haul, wget2, curl -Z and aria2c side by side, in one run.

A private nginx on 127.0.0.1 serves COUNT files of SIZE KiB twice: over HTTPS with HTTP/2 offered by ALPN (its CA
made here with openssl), and over plain HTTP/1.1. Each tool reaches nginx through bench/latency_proxy.py, which delays
every chunk by RTT/2 in each direction (netem is not available here; TCP's own handshake round trip is not simulated).

  haul get -i LIST -j J --dir D       (HTTPS: HTTP/2 streams; HTTP: HTTP/1.1 connections)
  wget2 --max-threads J -i LIST       (HTTP/2 by ALPN)
  curl -Z --parallel-max J            (HTTP/2 by ALPN)
  aria2c -j J -x 1 -i LIST            (HTTP/1.1 only: it has no HTTP/2)

Haul fsyncs every file and its folder before it reports it; the peers don't, so each peer is also timed with a
`sync` of its files after it ends ("+sync"). Prints one table per (RTT, COUNT, protocol) with medians and ratios.

Usage: bench/wan_many_files.py [--rtts 0,20,50,100] [--counts 100,1000] [--size-kb 16] [--jobs 16] [--runs 3]
                                [--haul .build/release/haul] [--tools haul,wget2,curl,aria2c] [--protocols https,http]
A tool `haul-N` (say `haul-64`) is haul with -j N: more HTTP/2 streams in flight, as wget2 keeps (its
--max-threads J with a request window of 30 streams each); `wget2-w1` is wget2 with a window of one request, so
that it keeps J in flight like haul -j J.
"""
import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import free_port, start_nginx, stop_nginx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)


class Lab:
    def __init__(self, work, count, size_kb):
        self.work = work
        self.www = os.path.join(work, "www")
        os.makedirs(os.path.join(self.www, "f"), exist_ok=True)
        self.count, self.size = count, size_kb * 1024
        self.digests = {}
        for i in range(count):
            data = os.urandom(self.size)
            with open(os.path.join(self.www, "f", f"{i}.bin"), "wb") as f:
                f.write(data)
            if i % max(1, count // 20) == 0:
                self.digests[f"{i}.bin"] = hashlib.sha256(data).hexdigest()
        self.make_certificates()
        self.https_port, self.http_port = free_port(), free_port()
        self.start_nginx()
        self.proxies = {}

    def make_certificates(self):
        w = self.work
        run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{w}/ca.key", "-out", f"{w}/ca.pem",
             "-days", "2", "-subj", "/CN=haul bench CA"])
        run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{w}/srv.key", "-out", f"{w}/srv.csr",
             "-subj", "/CN=127.0.0.1"])
        with open(f"{w}/ext.cnf", "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        run(["openssl", "x509", "-req", "-in", f"{w}/srv.csr", "-CA", f"{w}/ca.pem", "-CAkey", f"{w}/ca.key",
             "-CAcreateserial", "-out", f"{w}/srv.pem", "-days", "2", "-extfile", f"{w}/ext.cnf"])

    def start_nginx(self):
        w = self.work
        start_nginx(w, f"""  http2_max_concurrent_streams 128;
  server {{ listen 127.0.0.1:{self.https_port} ssl http2; ssl_certificate {w}/srv.pem; ssl_certificate_key {w}/srv.key; root {self.www}; }}
  server {{ listen 127.0.0.1:{self.http_port}; root {self.www}; }}""")

    def proxy(self, target, rtt):
        key = (target, rtt)
        if key not in self.proxies:
            port = free_port()
            p = subprocess.Popen([sys.executable, os.path.join(ROOT, "bench", "latency_proxy.py"), str(port), str(target), str(rtt)],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            assert p.stdout.readline().strip() == "ready"
            self.proxies[key] = (port, p)
        return self.proxies[key][0]

    def stop(self):
        for _, p in self.proxies.values():
            p.terminate()
        stop_nginx(self.work)


def tool_command(tool, args, lab, listfile, dest, scheme):
    j = str(args.jobs)
    ca = f"{lab.work}/ca.pem"
    if tool.startswith("haul"):
        # "haul-64": haul with -j 64 (HTTP/2 streams in flight, as wget2's request window keeps many).
        jobs = tool.split("-", 1)[1] if "-" in tool else j
        # J at once over HTTP/1.1 means J connections to the one server, as aria2c -j J and curl -Z make: haul's
        # per-host limit (8 by default) is raised to J.
        cmd = [args.haul, "get", "-i", listfile, "-j", jobs, "--max-connections-per-host", str(min(64, int(jobs))), "--dir", dest, "--quiet"]
        return cmd + (["--cacert", ca] if scheme == "https" else [])
    if tool.startswith("wget2"):
        # "wget2-w1": one request at a time on each HTTP/2 connection (--http2-request-window=1; the default is 30),
        # so that J threads keep J requests in flight, as haul -j J does.
        window = ["--http2-request-window=1"] if tool == "wget2-w1" else []
        return ["wget2", "-q", "--max-threads", j, *window, "-P", dest, "-i", listfile] + ([f"--ca-certificate={ca}"] if scheme == "https" else [])
    if tool == "curl":
        with open(listfile) as f:
            urls = [u.strip() for u in f if u.strip()]
        cmd = ["curl", "-s", "-f", "-Z", "--parallel-max", j, "--output-dir", dest, "--remote-name-all"]
        return cmd + (["--cacert", ca] if scheme == "https" else []) + urls
    if tool == "aria2c":
        cmd = ["aria2c", "-q", "-j", j, "-x", "1", "-s", "1", "-d", dest, "-i", listfile, "--allow-overwrite=true",
               "--auto-file-renaming=false", "--file-allocation=none"]
        return cmd + ([f"--ca-certificate={ca}"] if scheme == "https" else [])
    raise ValueError(tool)


def check(dest, lab):
    names = os.listdir(dest)
    if len(names) != lab.count:
        return f"{len(names)} files, expected {lab.count}"
    for name, digest in lab.digests.items():
        with open(os.path.join(dest, name), "rb") as f:
            if hashlib.sha256(f.read()).hexdigest() != digest:
                return f"{name} differs"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rtts", default="0,20,50,100")
    parser.add_argument("--counts", default="100,1000")
    parser.add_argument("--size-kb", type=int, default=16)
    parser.add_argument("--jobs", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--haul", default=os.path.join(ROOT, ".build", "release", "haul"), type=os.path.abspath)
    parser.add_argument("--tools", default="haul,wget2,curl,aria2c")
    parser.add_argument("--protocols", default="https,http")
    args = parser.parse_args()
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        os.environ.pop(name, None)
    tools = args.tools.split(",")
    missing = [t for t in tools if not t.startswith("haul") and not shutil.which(t.split("-")[0])]
    if missing or not os.access(args.haul, os.X_OK):
        sys.exit(f"missing: {' '.join(missing)} {'' if os.access(args.haul, os.X_OK) else args.haul + ' (swift build -c release)'}")
    print(f"# many files over a WAN-like link, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{args.size_kb} KiB each, {args.jobs} at once, median of {args.runs}")
    for count in [int(c) for c in args.counts.split(",")]:
        work = tempfile.mkdtemp(prefix="haul-wan-")
        lab = Lab(work, count, args.size_kb)
        try:
            for rtt in [float(r) for r in args.rtts.split(",")]:
                for scheme in args.protocols.split(","):
                    target = lab.https_port if scheme == "https" else lab.http_port
                    port = lab.proxy(target, rtt) if rtt > 0 else target
                    listfile = os.path.join(work, f"list-{scheme}.txt")
                    with open(listfile, "w") as f:
                        for i in range(count):
                            f.write(f"{scheme}://127.0.0.1:{port}/f/{i}.bin\n")
                    times = {t: [] for t in tools}
                    synced = {t: [] for t in tools}
                    for r in range(args.runs):
                        for t in tools[r % len(tools):] + tools[:r % len(tools)]:
                            if t == "aria2c" and scheme == "https" and "http" in args.protocols.split(","):
                                continue  # aria2c has no HTTP/2: it is measured against the HTTP/1.1 server
                            dest = os.path.join(work, "dl")
                            shutil.rmtree(dest, ignore_errors=True)
                            os.makedirs(dest)
                            env = dict(os.environ, HAUL_HOME=os.path.join(work, "home"))
                            shutil.rmtree(env["HAUL_HOME"], ignore_errors=True)
                            cmd = tool_command(t, args, lab, listfile, dest, scheme)
                            start = time.monotonic()
                            result = subprocess.run(cmd, env=env, cwd=dest, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=1800)
                            wall = time.monotonic() - start
                            # The peers' files made durable, as haul's are before it reports them: the file system's sync.
                            subprocess.run(["sync", "-f", dest])
                            wall_sync = time.monotonic() - start
                            problem = check(dest, lab) if result.returncode == 0 else f"exit {result.returncode}: {result.stderr[-300:]!r}"
                            if problem:
                                print(f"  {t} {scheme} rtt {rtt:g} ms: {problem}", file=sys.stderr)
                                continue
                            times[t].append(wall)
                            synced[t].append(wall_sync)
                    print(f"\n## {count} files, {scheme.upper()}{' (HTTP/2 by ALPN)' if scheme == 'https' else ' (HTTP/1.1)'}, RTT {rtt:g} ms\n")
                    print("| tool | wall (s) | + sync (s) | haul ÷ tool | haul ÷ (tool + sync) |")
                    print("|---|---|---|---|---|")
                    haul = statistics.median(times["haul"]) if times.get("haul") else None
                    for t in tools:
                        if not times[t]:
                            continue
                        w, ws = statistics.median(times[t]), statistics.median(synced[t])
                        ratio = f"{haul / w:.2f}×" if haul and t != "haul" else "—"
                        ratio_sync = f"{haul / ws:.2f}×" if haul and t != "haul" else "—"
                        name = f"haul -j {t.split('-', 1)[1]}" if t.startswith("haul-") else t
                        print(f"| {name} | {w:.3f} | {ws:.3f} | {ratio} | {ratio_sync} |", flush=True)
        finally:
            lab.stop()
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
