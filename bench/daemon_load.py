#!/usr/bin/env python3
"""Load client for bench/daemon-load.sh: JSON-RPC 2.0 over the `haul daemon` Unix socket.

Python 3 standard library only. See docs/protocol.md for the wire protocol.

    daemon_load.py hello --socket S
        One `daemon.hello`; prints its result as JSON. Exit 0 if the daemon answered,
        2 if nothing accepts connections on S yet, 1 on any other error.

    daemon_load.py run --socket S --url-base URL --dl-dir DIR [options]
        1. spreads N downloads of URL?n=i (one connection each, to DIR/running/) over --dl-sessions
           sessions, each opened with maxConcurrentDownloads = maxDownloadsPerHost = its share;
        2. waits (bounded) until all N are `running` and (bounded, then a warning) until every
           download has written data;
        3. baseline: CLIENTS threads, each on its own connection, each sends ADDS/CLIENTS
           `daemon.status` requests one after another (no session work);
        4. reads the daemon's VmRSS/VmHWM (/proc/<pid>/status, pid from <socket>.pid), CPU time and
           the downloads' file sizes;
        5. load: the same CLIENTS threads pattern with `tasks.add` (one task each, distinct URL and
           path in DIR/queued/), to the first download session (--add-session same) or to one with
           maxConcurrentDownloads 0 (separate); every request is timed from just before sending to
           the read of its response line;
        6. reads RSS/CPU again, checks the downloads are still running and their files still grow,
           and lists the added tasks.
        Writes one JSON object (--json FILE, else stdout) and the per-request latencies
        (--latencies FILE, TSV). Progress goes to stderr. Exit 0 on success, 1 on any failure.
"""

import argparse
import json
import math
import os
import socket
import sys
import threading
import time

PROTOCOL = 1
CLIENT_NAME = "haul-bench-daemon-load"


class BenchError(Exception):
    pass


def log(msg):
    print(f"[daemon_load] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- JSON-RPC connection
class Conn:
    """One client connection; requests are sent one at a time and matched by id."""

    def __init__(self, path, timeout):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
        except OSError:
            self.sock.close()
            raise
        self.rfile = self.sock.makefile("rb", buffering=1 << 16)
        self.next_id = 1
        self.notifications = 0

    def close(self):
        try:
            self.rfile.close()
        finally:
            self.sock.close()

    def encode(self, method, params=None):
        rid = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        return rid, (json.dumps(msg, separators=(",", ":")) + "\n").encode()

    def exchange(self, rid, line, method):
        """Sends LINE and reads until the response with id RID.
        Returns (response, t_sent_ns, t_received_ns)."""
        t0 = time.perf_counter_ns()
        self.sock.sendall(line)
        while True:
            raw = self.rfile.readline()
            t1 = time.perf_counter_ns()
            if not raw:
                raise BenchError(f"{method}: the daemon closed the connection before answering")
            if not raw.endswith(b"\n"):
                raise BenchError(f"{method}: connection closed in the middle of a line: {raw[:200]!r}")
            try:
                msg = json.loads(raw)
            except ValueError as e:
                raise BenchError(f"{method}: response is not JSON ({e}): {raw[:200]!r}")
            if not isinstance(msg, dict):
                raise BenchError(f"{method}: response is not a JSON object: {raw[:200]!r}")
            if "id" not in msg:  # a notification (we subscribe to nothing, but tolerate them)
                self.notifications += 1
                continue
            if msg.get("jsonrpc") != "2.0":
                raise BenchError(f"{method}: response without \"jsonrpc\":\"2.0\": {raw[:200]!r}")
            if msg["id"] != rid:
                raise BenchError(f"{method}: expected the response to id {rid}, got id {msg['id']!r} "
                                 f"(responses must come in request order)")
            return msg, t0, t1

    def call(self, method, params=None):
        rid, line = self.encode(method, params)
        msg, _, _ = self.exchange(rid, line, method)
        return result_of(msg, method)


def result_of(msg, method):
    if "error" in msg:
        err = msg["error"]
        raise BenchError(f"{method} failed: {json.dumps(err)}")
    if "result" not in msg:
        raise BenchError(f"{method}: response has neither result nor error: {json.dumps(msg)[:300]}")
    return msg["result"]


# ---------------------------------------------------------------- /proc
def read_pid(sock_path):
    pid_file = sock_path + ".pid"
    try:
        text = open(pid_file).read().strip()
    except OSError as e:
        raise BenchError(f"cannot read the daemon's pid file {pid_file}: {e}")
    if not text.isdigit():
        raise BenchError(f"{pid_file} does not hold a process id: {text[:80]!r}")
    return int(text)


def proc_mem(pid):
    """VmRSS and VmHWM in KiB."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    out[key] = int(rest.split()[0])  # "   12345 kB"
    except OSError as e:
        raise BenchError(f"cannot read /proc/{pid}/status (did the daemon exit?): {e}")
    if "VmRSS" not in out or "VmHWM" not in out:
        raise BenchError(f"/proc/{pid}/status has no VmRSS/VmHWM")
    return {"vmrss_kib": out["VmRSS"], "vmhwm_kib": out["VmHWM"]}


def proc_cpu_seconds(pid):
    """user + system CPU time of PID (all threads), seconds."""
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError as e:
        raise BenchError(f"cannot read /proc/{pid}/stat: {e}")
    fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
    ticks = int(fields[11]) + int(fields[12])       # utime, stime (fields 14, 15)
    return ticks / os.sysconf("SC_CLK_TCK")


def proc_threads(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def proc_fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


# ---------------------------------------------------------------- helpers
def percentile(sorted_vals, p):
    """Nearest-rank percentile of a sorted list."""
    if not sorted_vals:
        return None
    k = max(1, math.ceil(p / 100 * len(sorted_vals)))
    return sorted_vals[k - 1]


def states(tasks):
    counts = {}
    for t in tasks:
        counts[t.get("state")] = counts.get(t.get("state"), 0) + 1
    return counts


def fmt_states(counts):
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda kv: str(kv[0]))) or "none"


def check_task(task, where):
    if not isinstance(task, dict):
        raise BenchError(f"{where}: task is not an object: {task!r}")
    for key in ("id", "url", "state", "bytes"):
        if key not in task:
            raise BenchError(f"{where}: task has no {key!r}: {json.dumps(task)[:300]}")


def list_tasks(conn, session, ids=None):
    params = {"session": session}
    if ids is not None:
        params["ids"] = ids
    res = conn.call("tasks.list", params)
    tasks = res.get("tasks") if isinstance(res, dict) else None
    if not isinstance(tasks, list):
        raise BenchError(f"tasks.list: result has no tasks array: {json.dumps(res)[:300]}")
    return tasks


def connect_with_hello(path, timeout):
    conn = Conn(path, timeout)
    try:
        res = conn.call("daemon.hello", {"protocol": PROTOCOL, "client": CLIENT_NAME})
    except BaseException:
        conn.close()
        raise
    if not isinstance(res, dict) or res.get("protocol") != PROTOCOL:
        conn.close()
        raise BenchError(f"daemon.hello: unexpected result {json.dumps(res)[:300]}")
    return conn, res


# ---------------------------------------------------------------- hello
def cmd_hello(args):
    try:
        conn, res = connect_with_hello(args.socket, args.timeout)
    except (FileNotFoundError, ConnectionRefusedError):
        return 2
    except (OSError, BenchError) as e:
        log(f"daemon.hello on {args.socket}: {e}")
        return 1
    conn.close()
    print(json.dumps(res))
    return 0


# ---------------------------------------------------------------- load phase
class Client(threading.Thread):
    def __init__(self, idx, args, session, barrier, url_base, queued_dir, method="tasks.add"):
        super().__init__(name=f"client-{idx}", daemon=True)
        self.idx = idx
        self.method = method
        self.args = args
        self.session = session
        self.barrier = barrier
        self.url_base = url_base
        self.queued_dir = queued_dir
        self.lat_ns = []
        self.ids = []
        self.states = {}
        self.error = None
        self.t_start = None
        self.t_end = None
        self.notifications = 0

    def run(self):
        conn = None
        try:
            conn, _ = connect_with_hello(self.args.socket, self.args.request_timeout)
            # Encode everything up front so the timed loop is send + read only.
            lines = []
            if self.method != "tasks.add":  # the baseline: a method that touches no session
                lines = [conn.encode(self.method) + (None,) for _ in range(self.args.per_client)]
            for j in range(self.args.per_client if self.method == "tasks.add" else 0):
                name = f"c{self.idx:02d}-{j:04d}"
                task = {"url": f"{self.url_base}?q={name}", "path": os.path.join(self.queued_dir, name + ".bin"),
                        "segments": 1}
                lines.append(conn.encode("tasks.add", {"session": self.session, "tasks": [task]}) + (task,))
            self.barrier.wait(timeout=self.args.request_timeout)
            self.t_start = time.perf_counter_ns()
            for rid, line, task in lines:
                msg, t0, t1 = conn.exchange(rid, line, self.method)
                self.lat_ns.append(t1 - t0)
                res = result_of(msg, self.method)
                if task is None:
                    continue
                tasks = res.get("tasks") if isinstance(res, dict) else None
                if not isinstance(tasks, list) or len(tasks) != 1:
                    raise BenchError(f"tasks.add: expected one task in the result, got {json.dumps(res)[:300]}")
                check_task(tasks[0], "tasks.add")
                if tasks[0]["url"] != task["url"]:
                    raise BenchError(f"tasks.add: result url {tasks[0]['url']!r} != requested {task['url']!r}")
                self.ids.append(tasks[0]["id"])
                st = tasks[0]["state"]
                self.states[st] = self.states.get(st, 0) + 1
            self.t_end = time.perf_counter_ns()
        except BaseException as e:  # reported by the main thread
            self.error = e
            try:
                self.barrier.abort()
            except Exception:
                pass
        finally:
            if conn is not None:
                self.notifications = conn.notifications
                conn.close()


def disk_sizes(folder):
    """{download name: bytes on disk} for the files in FOLDER, whatever the daemon calls them
    (dl-007.bin, dl-007.bin.haul-part, ...). The daemon's tasks.list `bytes` only move at checkpoints,
    and a task can be `running` without transferring, so the files are the ground truth."""
    sizes = {}
    try:
        names = os.listdir(folder)
    except OSError:
        return sizes
    for name in names:
        try:
            size = os.stat(os.path.join(folder, name)).st_size
        except OSError:  # renamed meanwhile
            continue
        key = name.split(".", 1)[0]
        sizes[key] = sizes.get(key, 0) + size
    return sizes


def list_sessions(conn, dl):
    """tasks.list of every download session; dl: {session: [ids]}."""
    tasks = []
    for session, ids in dl.items():
        tasks += list_tasks(conn, session, ids)
    return tasks


def wait_running(conn, dl, want, timeout):
    deadline = time.monotonic() + timeout
    last = None
    while True:
        tasks = list_sessions(conn, dl)
        counts = states(tasks)
        if counts != last:
            log(f"downloads: {fmt_states(counts)}")
            last = counts
        bad = [t for t in tasks if t.get("state") in ("failed", "cancelled", "finished")]
        if bad:
            t = bad[0]
            raise BenchError(f"download {t.get('id')} is {t.get('state')} before the load phase "
                             f"(error: {json.dumps(t.get('error'))}); {fmt_states(counts)}")
        if counts.get("running", 0) >= want:
            return tasks
        if time.monotonic() > deadline:
            raise BenchError(f"after {timeout:g} s only {counts.get('running', 0)} of {want} downloads are "
                             f"running ({fmt_states(counts)}); is maxConcurrentDownloads/maxDownloadsPerHost "
                             f"honoured?")
        time.sleep(0.2)


def cmd_run(args):
    if args.adds % args.clients:
        raise BenchError(f"--adds ({args.adds}) must be a multiple of --clients ({args.clients})")
    args.per_client = args.adds // args.clients
    nsess = args.dl_sessions
    if not 1 <= nsess <= args.downloads:
        raise BenchError(f"--dl-sessions must be between 1 and --downloads ({args.downloads})")
    url_base = args.url_base.rstrip("/")
    dl_url = url_base + "/" + args.path.lstrip("/")
    running_dir = os.path.join(args.dl_dir, "running")
    queued_dir = os.path.join(args.dl_dir, "queued")
    os.makedirs(running_dir, exist_ok=True)
    os.makedirs(queued_dir, exist_ok=True)
    # The downloads, spread evenly over the download sessions (the first gets the most).
    sizes = [args.downloads // nsess + (1 if i < args.downloads % nsess else 0) for i in range(nsess)]
    dl_sessions = [args.session if nsess == 1 else f"{args.session}-{i}" for i in range(nsess)]
    add_session = dl_sessions[0] if args.add_session == "same" else args.session + "-adds"
    out = {"clients": args.clients, "adds": args.adds, "per_client": args.per_client,
           "downloads": args.downloads, "download_sessions": dict(zip(dl_sessions, sizes)),
           "add_session": add_session, "add_session_mode": args.add_session, "url": dl_url}

    ctl, hello = connect_with_hello(args.socket, args.request_timeout)
    pid = read_pid(args.socket)
    out["pid"] = pid
    out["hello"] = hello
    if hello.get("pid") != pid:
        log(f"warning: daemon.hello says pid {hello.get('pid')}, {args.socket}.pid says {pid}")
    out["mem_idle"] = proc_mem(pid)

    # ---- 1. the running downloads
    dl = {}     # session -> task ids
    n = 0
    for session, size in zip(dl_sessions, sizes):
        # maxConcurrentDownloads = the session's downloads: tasks added to it later wait.
        cfg = {"maxConcurrentDownloads": size, "maxDownloadsPerHost": size}
        ctl.call("session.open", {"session": session, "configuration": cfg})
        tasks = [{"url": f"{dl_url}?n={i}", "path": os.path.join(running_dir, f"dl-{i:03d}.bin"), "segments": 1}
                 for i in range(n, n + size)]
        n += size
        res = ctl.call("tasks.add", {"session": session, "tasks": tasks})
        added = res.get("tasks") if isinstance(res, dict) else None
        if not isinstance(added, list) or len(added) != size:
            raise BenchError(f"tasks.add of {size} downloads: unexpected result {json.dumps(res)[:300]}")
        for t in added:
            check_task(t, "tasks.add")
        dl[session] = [t["id"] for t in added]
    if add_session not in dl:
        # Nothing of the second session downloads: its tasks stay waiting.
        ctl.call("session.open", {"session": add_session, "configuration": {"maxConcurrentDownloads": 0}})
    log(f"added {args.downloads} downloads of {dl_url} to {nsess} session(s) "
        f"({', '.join(f'{s}: {k}' for s, k in zip(dl_sessions, sizes))}); waiting until they run")
    t_wait = time.monotonic()
    wait_running(ctl, dl, args.downloads, args.start_timeout)
    out["seconds_until_running"] = round(time.monotonic() - t_wait, 3)
    # `running` is only a state: also wait (bounded) until every download has written data.
    deadline = time.monotonic() + args.data_timeout
    while (ndata := sum(1 for v in disk_sizes(running_dir).values() if v > 0)) < args.downloads:
        if time.monotonic() > deadline:
            log(f"WARNING: {args.data_timeout:g} s after all {args.downloads} downloads were running, only "
                f"{ndata} have written any data; measuring anyway")
            break
        time.sleep(0.1)
    else:
        log(f"all {args.downloads} downloads are writing data")
    out["seconds_until_data"] = round(time.monotonic() - t_wait, 3)
    out["downloads_with_data"] = ndata
    time.sleep(args.settle)  # steady state (first progress events, checkpoints)
    before = list_sessions(ctl, dl)
    out["downloads_before"] = states(before)
    if out["downloads_before"].get("running", 0) < args.downloads:
        raise BenchError(f"downloads before the load phase: {fmt_states(out['downloads_before'])}")

    # ---- 2. the load
    def run_phase(method, before_start=lambda: None):
        """CLIENTS threads x PER_CLIENT requests of METHOD; returns (clients, wall seconds)."""
        barrier = threading.Barrier(args.clients + 1)
        clients = [Client(i, args, add_session, barrier, dl_url, queued_dir, method) for i in range(args.clients)]
        for c in clients:
            c.start()
        before_start()  # while the clients connect
        try:
            barrier.wait(timeout=args.request_timeout)
        except threading.BrokenBarrierError:
            errs = [c.error for c in clients if c.error]
            raise BenchError(f"a client could not connect: {errs[0] if errs else 'barrier timed out'}")
        deadline = time.monotonic() + args.load_timeout
        for c in clients:
            c.join(max(0.0, deadline - time.monotonic()))
        if any(c.is_alive() for c in clients):
            done = sum(len(c.lat_ns) for c in clients)
            raise BenchError(f"{method} phase did not finish within {args.load_timeout:g} s "
                             f"({done} of {args.adds} requests answered)")
        errs = [(c.name, c.error) for c in clients if c.error]
        if errs:
            raise BenchError(f"{errs[0][0]}: {errs[0][1]}" + (f" (and {len(errs) - 1} more clients failed)"
                                                              if len(errs) > 1 else ""))
        wall = (max(c.t_end for c in clients) - min(c.t_start for c in clients)) / 1e9
        return clients, wall

    def latency_stats(clients):
        lat = sorted(ns / 1e6 for c in clients for ns in c.lat_ns)
        return {"n": len(lat), "min": round(lat[0], 3), "p50": round(percentile(lat, 50), 3),
                "p90": round(percentile(lat, 90), 3), "p99": round(percentile(lat, 99), 3),
                "max": round(lat[-1], 3), "mean": round(sum(lat) / len(lat), 3)}

    if args.baseline:
        # The same traffic with `daemon.status` (no session, no store): the floor set by the socket,
        # the JSON-RPC layer and this Python client on the same cores.
        log(f"baseline: {args.clients} clients x {args.per_client} daemon.status")
        base, base_wall = run_phase("daemon.status")
        out["baseline_latency_ms"] = latency_stats(base)
        out["baseline_wall_s"] = round(base_wall, 4)

    snap = {}

    def measure_before():
        snap["mem"] = proc_mem(pid)  # the downloads are running, the clients are connecting
        snap["cpu"] = proc_cpu_seconds(pid)
        snap["disk"] = disk_sizes(running_dir)
        snap["t"] = time.monotonic()
        log(f"load: {args.clients} clients x {args.per_client} tasks.add -> session {add_session!r}")

    clients, wall = run_phase("tasks.add", measure_before)
    cpu1 = proc_cpu_seconds(pid)
    out["mem_after"] = proc_mem(pid)
    out["threads_after"] = proc_threads(pid)
    out["fds_after"] = proc_fds(pid)
    out["mem_before"] = snap["mem"]
    cpu0, disk0, t_disk0 = snap["cpu"], snap["disk"], snap["t"]

    # ---- 3. after
    after = list_sessions(ctl, dl)
    out["downloads_after"] = states(after)
    # nginx's limit_rate sends in one-second steps: look at the files over at least 2.5 s.
    time.sleep(max(0.0, t_disk0 + 2.5 - time.monotonic()))
    disk1 = disk_sizes(running_dir)
    out["disk_window_s"] = round(time.monotonic() - t_disk0, 2)
    out["disk_bytes_in_window"] = sum(disk1.values()) - sum(disk0.values())
    out["downloads_progressing"] = sum(1 for k, v in disk1.items() if v > disk0.get(k, 0))
    t_list = time.perf_counter_ns()
    listed = list_tasks(ctl, add_session)
    out["list_ms"] = round((time.perf_counter_ns() - t_list) / 1e6, 2)
    out["add_session_tasks"] = len(listed)
    added_ids = {i for c in clients for i in c.ids}
    listed_ids = {t.get("id") for t in listed}
    missing = added_ids - listed_ids
    if missing:
        raise BenchError(f"{len(missing)} added tasks are missing from tasks.list of {add_session!r}")
    if len(added_ids) != args.adds:
        raise BenchError(f"{args.adds} tasks.add calls returned {len(added_ids)} distinct task ids")
    out["added_states"] = states([t for t in listed if t.get("id") in added_ids])
    out["add_result_states"] = {}
    for c in clients:
        for s, n in c.states.items():
            out["add_result_states"][s] = out["add_result_states"].get(s, 0) + n
    out["notifications"] = sum(c.notifications for c in clients) + ctl.notifications
    ctl.close()

    out["latency_ms"] = latency_stats(clients)
    out["wall_s"] = round(wall, 4)
    out["adds_per_s"] = round(args.adds / wall, 1) if wall > 0 else None
    out["daemon_cpu_s"] = round(cpu1 - cpu0, 2)
    if args.latencies:
        with open(args.latencies, "w") as f:
            f.write("client\tseq\tlatency_ms\n")
            for c in clients:
                for j, ns in enumerate(c.lat_ns):
                    f.write(f"{c.idx}\t{j}\t{ns / 1e6:.4f}\n")
    log(f"p50 {out['latency_ms']['p50']} ms, p99 {out['latency_ms']['p99']} ms, max {out['latency_ms']['max']} ms, "
        f"wall {out['wall_s']} s; downloads after: {fmt_states(out['downloads_after'])}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("hello")
    h.add_argument("--socket", required=True)
    h.add_argument("--timeout", type=float, default=5)
    r = sub.add_parser("run")
    r.add_argument("--socket", required=True)
    r.add_argument("--url-base", required=True, help="e.g. http://127.0.0.1:PORT")
    r.add_argument("--path", required=True, help="URL path of the (throttled) test file")
    r.add_argument("--dl-dir", required=True, help="absolute directory for all destinations")
    r.add_argument("--session", default="bench")
    r.add_argument("--add-session", choices=("same", "separate"), default="same",
                   help="same: the adds queue behind the downloads in their session; separate: a second "
                        "session with maxConcurrentDownloads 0")
    r.add_argument("--downloads", type=int, default=50)
    r.add_argument("--dl-sessions", type=int, default=1, help="sessions the downloads are spread over")
    r.add_argument("--data-timeout", type=float, default=20,
                   help="seconds to wait, once all are running, until every download has written data")
    r.add_argument("--clients", type=int, default=10)
    r.add_argument("--adds", type=int, default=1000, help="total tasks.add requests (split over the clients)")
    r.add_argument("--start-timeout", type=float, default=60, help="seconds to wait for the downloads to run")
    r.add_argument("--settle", type=float, default=1.0, help="seconds between all running and the load")
    r.add_argument("--load-timeout", type=float, default=300)
    r.add_argument("--baseline", action=argparse.BooleanOptionalAction, default=True,
                   help="first run the same traffic with daemon.status (default: yes)")
    r.add_argument("--request-timeout", type=float, default=60, help="socket timeout of every read/write")
    r.add_argument("--json", help="write the result here (default stdout)")
    r.add_argument("--latencies", help="write per-request latencies (TSV) here")
    args = ap.parse_args()

    if args.cmd == "hello":
        return cmd_hello(args)
    for name in ("downloads", "clients", "adds"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be at least 1")
    if not os.path.isabs(args.dl_dir):
        ap.error("--dl-dir must be absolute (the protocol requires absolute paths)")
    try:
        out = cmd_run(args)
    except (BenchError, OSError) as e:
        log(f"ERROR: {e}")
        return 1
    text = json.dumps(out)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
