#!/usr/bin/env python3
"""A fleet on one machine (see bench/README.md): the store's claim rate, and 1, 2, 3 nodes on latency-bound work.

1. The claim rate of the store alone: haul-fleet-bench adds TASKS tasks to a private PostgreSQL and 1, 2, 3 nodes claim
   and conclude them (each conclusion fenced, with its final record and journal entry); and, for reference, one
   session's SQLite file started and concluded the same way by a single daemon.
2. Nodes on latency-bound work: a private nginx serves COUNT files of SIZE KiB over plain HTTP/1.1 through
   bench/latency_proxy.py (RTT ms of round trip: every chunk is delayed RTT/2 each way; TCP's own handshake round trip
   is not simulated). For N in NODES: N `haul daemon --store` processes (own HAUL_HOME and socket each, one download
   folder), the session set to --max-concurrent JOBS (on each node), all COUNT URLs added through the first node; timed
   from the add until the store shows every task finished. Every file's size is checked, and a sample's SHA-256.

Usage: bench/fleet.py [--nodes 1,2,3] [--count 10000] [--size-kb 16] [--rtt 50] [--jobs 8] [--tasks 10000]
                      [--haul .build/release/haul] [--claim-bench .build/release/haul-fleet-bench] [--skip-claims]
Needs PostgreSQL (Debian's postgresql), nginx and python3; as root, the server runs as the postgres account.
Prints markdown tables.
"""
import argparse
import glob
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log(message):
    print(f"[fleet] {message}", file=sys.stderr, flush=True)


class Postgres:
    """A private server: initdb into WORK/pg as an unprivileged user, loopback only, trust authentication."""

    def __init__(self, work):
        versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not versions:
            sys.exit("fleet.py: PostgreSQL is not installed (apt-get install postgresql)")
        self.bin = os.path.dirname(versions[-1])
        self.dir = os.path.join(work, "pg")
        os.makedirs(os.path.join(self.dir, "data"), mode=0o700)
        os.makedirs(os.path.join(self.dir, "run"), mode=0o700)
        self.as_server = []
        if os.getuid() == 0:
            import pwd
            account = pwd.getpwnam("postgres")
            for sub in ("data", "run"):
                os.chown(os.path.join(self.dir, sub), account.pw_uid, account.pw_gid)
            self.as_server = ["setpriv", "--reuid=postgres", "--regid=postgres", "--clear-groups", "--"]
        subprocess.run(self.as_server + [f"{self.bin}/initdb", "-D", f"{self.dir}/data", "-A", "trust", "-U", "haul",
                                         "-E", "UTF8", "--locale=C", "--no-sync"], check=True, stdout=subprocess.DEVNULL)
        self.port = free_port()
        self.log = open(os.path.join(work, "postgres.log"), "w")
        self.process = subprocess.Popen(
            self.as_server + [f"{self.bin}/postgres", "-D", f"{self.dir}/data", "-p", str(self.port),
                              "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.dir}/run",
                              "-c", "max_connections=200"], stdout=self.log, stderr=self.log)
        for _ in range(120):
            if subprocess.run([f"{self.bin}/pg_isready", "-q", "-h", "127.0.0.1", "-p", str(self.port)]).returncode == 0:
                return
            time.sleep(0.25)
        sys.exit("fleet.py: PostgreSQL did not start (see postgres.log)")

    def psql(self, sql, database="postgres"):
        out = subprocess.run([f"{self.bin}/psql", "-X", "-q", "-A", "-t", "-h", "127.0.0.1", "-p", str(self.port), "-U", "haul",
                              "-d", database, "-c", sql], check=True, capture_output=True, text=True)
        return out.stdout.strip()

    def database(self, name):
        self.psql(f"DROP DATABASE IF EXISTS {name}")
        self.psql(f"CREATE DATABASE {name}")
        return f"postgres://haul@127.0.0.1:{self.port}/{name}"

    def stop(self):
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


class Web:
    """nginx serving COUNT files of SIZE KiB, and the latency proxy in front of it."""

    def __init__(self, work, count, size_kb, rtt):
        self.www = os.path.join(work, "www")
        os.makedirs(os.path.join(self.www, "f"))
        self.count, self.size = count, size_kb * 1024
        self.digests = {}
        for i in range(count):
            data = os.urandom(self.size)
            with open(os.path.join(self.www, "f", f"{i}.bin"), "wb") as f:
                f.write(data)
            if i % max(1, count // 50) == 0:
                self.digests[f"{i}.bin"] = hashlib.sha256(data).hexdigest()
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        prefix = os.path.join(work, "nginx")
        os.makedirs(os.path.join(prefix, "logs"))
        os.makedirs(os.path.join(prefix, "tmp"))
        self.port = free_port()
        user = "user root root;" if os.getuid() == 0 else ""
        with open(os.path.join(prefix, "nginx.conf"), "w") as f:
            f.write(f"""{user}
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 1024; }}
http {{
    types {{}}
    default_type application/octet-stream;
    access_log off;
    keepalive_requests 100000;
    client_body_temp_path {prefix}/tmp/body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    server {{
        listen 127.0.0.1:{self.port};
        root {self.www};
    }}
}}
""")
        self.nginx = subprocess.Popen([nginx, "-p", prefix + "/", "-c", f"{prefix}/nginx.conf", "-g", "daemon off;"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.proxy_port = free_port()
        self.proxy = subprocess.Popen([sys.executable, os.path.join(ROOT, "bench", "latency_proxy.py"),
                                       str(self.proxy_port), str(self.port), str(rtt)], stdout=subprocess.PIPE, text=True)
        if self.proxy.stdout.readline().strip() != "ready":
            sys.exit("fleet.py: the latency proxy did not start")
        time.sleep(0.5)

    def urls(self):
        return [f"http://127.0.0.1:{self.proxy_port}/f/{i}.bin" for i in range(self.count)]

    def stop(self):
        for process in (self.proxy, self.nginx):
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


def claim_rates(bench, postgres, tasks, nodes):
    rows = []
    for n in nodes:
        url = postgres.database(f"claims_{n}")
        out = subprocess.run([bench, "--store", url, "--tasks", str(tasks), "--nodes", str(n), "--batch", "16"],
                             check=True, capture_output=True, text=True)
        rows.append(json.loads(out.stdout))
        log(f"claims, {n} node(s): {out.stdout.strip()}")
    with tempfile.TemporaryDirectory() as folder:
        out = subprocess.run([bench, "--sqlite", folder, "--tasks", str(tasks), "--batch", "16"], check=True,
                             capture_output=True, text=True)
        rows.append(json.loads(out.stdout))
        log(f"claims, sqlite: {out.stdout.strip()}")
    return rows


def cpu_times():
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def process_cpu_seconds(pid):
    """User and system CPU seconds of a running process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_nodes(haul, postgres, web, work, n, jobs):
    url = postgres.database(f"fleet_{n}")
    database = url.rsplit("/", 1)[1]
    downloads = os.path.join(work, f"dl-{n}")
    os.makedirs(downloads)
    daemons, homes = [], []
    for k in range(n):
        home = os.path.join(work, f"home-{n}-{k}")
        os.makedirs(home, mode=0o700)
        homes.append(home)
        env = dict(os.environ, HAUL_HOME=home)
        daemons.append(subprocess.Popen(
            [haul, "daemon", "--socket", f"{home}/d.sock", "--store", url, "--node", f"n{k}"], env=env,
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, f"daemon-{n}-{k}.log"), "w")))
    for home in homes:
        for _ in range(200):
            if os.path.exists(f"{home}/d.sock"):
                break
            time.sleep(0.1)

    def haul_cli(*arguments, stdin=None):
        return subprocess.run([haul, *arguments, "--socket", f"{homes[0]}/d.sock", "--no-autostart"], input=stdin,
                              env=dict(os.environ, HAUL_HOME=homes[0]), check=True, capture_output=True, text=True)

    haul_cli("session", "set", "--max-concurrent", str(jobs))
    # Transactions that wrote take a transaction id each (reads take none): ids used per file.
    xid_before = int(postgres.psql("SELECT pg_current_xact_id()::text::bigint", database))
    busy_before, total_before = cpu_times()
    haul_before = sum(process_cpu_seconds(d.pid) for d in daemons)
    start = time.monotonic()
    haul_cli("add", "--segments", "1", "--dir", downloads, "-i", "-", stdin="\n".join(web.urls()) + "\n")
    finished = 0
    while finished < web.count:
        time.sleep(0.25)
        # One psql a look (a process and a server backend each): the bench's own CPU is taken from the nodes'.
        counts = postgres.psql("SELECT count(*) FILTER (WHERE state = 'finished') || ' ' || "
                               "count(*) FILTER (WHERE state = 'failed') FROM haul.task", database)
        finished, failed = (int(n) for n in counts.split())
        if failed:
            sys.exit(f"fleet.py: {failed} tasks failed with {n} node(s) (see {work}/daemon-{n}-*.log)")
        if time.monotonic() - start > 3600:
            sys.exit("fleet.py: not finished within an hour")
    took = time.monotonic() - start
    busy_after, total_after = cpu_times()
    haul_cpu = sum(process_cpu_seconds(d.pid) for d in daemons) - haul_before
    writes = int(postgres.psql("SELECT pg_current_xact_id()::text::bigint", database)) - xid_before - 1
    per_node = postgres.psql("SELECT node || ':' || count(*) FROM haul.task GROUP BY node ORDER BY node", database).split()
    for daemon in daemons:
        daemon.send_signal(signal.SIGTERM)
    for daemon in daemons:
        daemon.wait(timeout=60)
    sizes = [os.path.getsize(os.path.join(downloads, f"{i}.bin")) for i in range(web.count)]
    if any(size != web.size for size in sizes):
        sys.exit(f"fleet.py: a file has the wrong size with {n} node(s)")
    for name, digest in web.digests.items():
        with open(os.path.join(downloads, name), "rb") as f:
            if hashlib.sha256(f.read()).hexdigest() != digest:
                sys.exit(f"fleet.py: {name} differs with {n} node(s)")
    shutil.rmtree(downloads)
    return {"nodes": n, "seconds": took, "files_per_second": web.count / took, "writes_per_file": writes / web.count,
            "machine_busy": (busy_after - busy_before) / max(1, total_after - total_before),
            "haul_cpu_ms_per_file": 1000 * haul_cpu / web.count,
            "per_node": per_node}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", default="1,2,3")
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--size-kb", type=int, default=16)
    parser.add_argument("--rtt", type=float, default=50)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=10000, help="tasks of the claim-rate part")
    parser.add_argument("--haul", default=os.path.join(ROOT, ".build", "release", "haul"))
    parser.add_argument("--claim-bench", default=os.path.join(ROOT, ".build", "release", "haul-fleet-bench"))
    parser.add_argument("--skip-claims", action="store_true")
    parser.add_argument("--skip-nodes", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs) for a look")
    args = parser.parse_args()
    nodes = [int(n) for n in args.nodes.split(",")]
    work = tempfile.mkdtemp(prefix="haul-fleet-bench-", dir=os.path.join(ROOT, "bench", "out") if os.path.isdir(
        os.path.join(ROOT, "bench", "out")) else None)
    os.chmod(work, 0o755)
    postgres = Postgres(work)
    web = None
    try:
        if not args.skip_claims:
            rows = claim_rates(args.claim_bench, postgres, args.tasks, nodes)
            print(f"\n### Claim rate of the store alone ({args.tasks} tasks, claims of 16, each concluded)\n")
            print("| store | nodes | tasks/s claimed and concluded | write transactions per task |")
            print("|---|---|---|---|")
            for row in rows:
                commits = f"{row['writes_per_task']:.2f}" if "writes_per_task" in row else "-"
                print(f"| {row['store']} | {row['nodes']} | {row['tasks_per_second']:.0f} | {commits} |")
        if not args.skip_nodes:
            web = Web(work, args.count, args.size_kb, args.rtt)
            results = []
            for n in nodes:
                log(f"{n} node(s), {args.count} files of {args.size_kb} KiB, {args.rtt:g} ms RTT, --max-concurrent {args.jobs} each")
                results.append(run_nodes(args.haul, postgres, web, work, n, args.jobs))
                log(f"  {results[-1]}")
            base = results[0]["files_per_second"]
            print(f"\n### Nodes on latency-bound work ({args.count} files of {args.size_kb} KiB, {args.rtt:g} ms RTT, "
                  f"--max-concurrent {args.jobs} per node)\n")
            print(f"| nodes | seconds | files/s | × one node | write transactions per file | CPU busy ({os.cpu_count()} cores) "
                  "| haul CPU ms per file | tasks per node |")
            print("|---|---|---|---|---|---|---|---|")
            for r in results:
                print(f"| {r['nodes']} | {r['seconds']:.1f} | {r['files_per_second']:.0f} | {r['files_per_second'] / base:.2f} | "
                      f"{r['writes_per_file']:.2f} | {100 * r['machine_busy']:.0f}% | {r['haul_cpu_ms_per_file']:.2f} | "
                      f"{' '.join(r['per_node'])} |")
    finally:
        if web:
            web.stop()
        postgres.stop()
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
