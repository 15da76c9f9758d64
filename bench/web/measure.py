#!/usr/bin/env python3
"""Measurements of bench/web-dashboard.sh: a daemon with many tasks, a few of them running, and the dashboard.

    measure.py --socket S --haul HAUL --url URL --dl-dir DIR [--tasks 10000] [--running 50] [--cpu-seconds 30]
               [--json FILE]

1. Opens session `default` with maxConcurrentDownloads = maxDownloadsPerHost = RUNNING and adds TASKS tasks
   (URL?n=i to DIR/file-i.bin; RUNNING of them run, the others wait), over the Unix socket (JSON-RPC).
2. Waits (bounded) until RUNNING tasks are running.
3. The daemon's CPU (utime+stime of /proc/PID/stat) over CPU_SECONDS with no page open.
4. `haul web` for a login address; headless Chromium opens it and the test reads the page's own marks:
   `haul-interactive` (the first rows drawn and clickable) and `haul-loaded` (every task listed), both from
   the start of the navigation; then the time from a click on the first row to its detail panel.
5. The daemon's CPU over CPU_SECONDS again, with the page open and receiving progress (events counted).
Prints a table; writes the numbers as JSON. Exit 0 when measured (goals are reported, not enforced), 1 on failure.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchlib import CLICK_TO_DETAIL_SCRIPT, headless_chromium  # noqa: E402


def log(message):
    print("[web-dashboard] " + message, file=sys.stderr, flush=True)


class Conn:
    """JSON-RPC 2.0 over the daemon's Unix socket, one request at a time."""

    def __init__(self, path, timeout=120):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buffer = b""
        self.next_id = 0

    def call(self, method, params=None):
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.sock.sendall(json.dumps(message).encode() + b"\n")
        while True:
            while b"\n" not in self.buffer:
                chunk = self.sock.recv(1 << 20)
                if not chunk:
                    raise RuntimeError("the daemon closed the connection during " + method)
                self.buffer += chunk
            line, self.buffer = self.buffer.split(b"\n", 1)
            answer = json.loads(line)
            if answer.get("id") != self.next_id:
                continue  # a notification
            if "error" in answer:
                raise RuntimeError("%s: %s" % (method, answer["error"].get("message")))
            return answer["result"]


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of the whole line)


def cpu_share(pid, seconds):
    """The share of one core the process used over `seconds` of wall time."""
    hz = os.sysconf("SC_CLK_TCK")
    t0, c0 = time.monotonic(), cpu_ticks(pid)
    time.sleep(seconds)
    t1, c1 = time.monotonic(), cpu_ticks(pid)
    return (c1 - c0) / hz / (t1 - t0)


def count_states(conn):
    counts, cursor = {}, None
    while True:
        params = {"session": "default", "limit": 2000}
        if cursor:
            params["cursor"] = cursor
        page = conn.call("tasks.list", params)
        for task in page["tasks"]:
            counts[task["state"]] = counts.get(task["state"], 0) + 1
        cursor = page.get("next")
        if not cursor:
            return counts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--socket", required=True)
    parser.add_argument("--haul", required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--dl-dir", required=True)
    parser.add_argument("--tasks", type=int, default=10000)
    parser.add_argument("--running", type=int, default=50)
    parser.add_argument("--cpu-seconds", type=float, default=30)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--json")
    args = parser.parse_args()

    conn = Conn(args.socket)
    pid = conn.call("daemon.status")["pid"]
    conn.call("session.open", {"session": "default", "configuration": {
        "maxConcurrentDownloads": args.running, "maxDownloadsPerHost": args.running}})
    log("adding %d tasks (%d run at once)" % (args.tasks, args.running))
    t0 = time.monotonic()
    for start in range(0, args.tasks, 1000):
        chunk = [{"url": "%s?n=%d" % (args.url, i), "path": os.path.join(args.dl_dir, "file-%05d.bin" % i),
                  "options": {"retries": 0}}
                 for i in range(start, min(args.tasks, start + 1000))]
        conn.call("tasks.add", {"session": "default", "tasks": chunk, "reply": "ids"})
    log("added in %.1f s" % (time.monotonic() - t0))

    deadline = time.monotonic() + args.timeout
    while True:
        counts = count_states(conn)
        if counts.get("running", 0) >= args.running:
            break
        if time.monotonic() > deadline:
            raise RuntimeError("only %s after %d s" % (counts, args.timeout))
        time.sleep(1)
    log("states: %s" % counts)
    time.sleep(5)  # past the start of the transfers

    log("daemon CPU without a page, %d s" % args.cpu_seconds)
    idle = cpu_share(pid, args.cpu_seconds)

    login = subprocess.run([args.haul, "web"], capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL)
    if login.returncode != 0 or len(login.stdout.splitlines()) != 1:
        raise RuntimeError("haul web failed: " + login.stderr.strip())
    login_url = login.stdout.strip()

    from selenium.webdriver.support.ui import WebDriverWait

    driver = headless_chromium()
    try:
        driver.set_page_load_timeout(120)
        driver.get(login_url)
        WebDriverWait(driver, 120, poll_frequency=0.05).until(
            lambda d: d.execute_script("return document.body.dataset.interactive === 'true'"))
        WebDriverWait(driver, 300, poll_frequency=0.2).until(
            lambda d: d.execute_script("return window.haulDashboard.loaded()"))
        mark = "return (performance.getEntriesByName(arguments[0])[0] || {}).startTime ?? null"
        interactive_ms = driver.execute_script(mark, "haul-interactive")
        loaded_ms = driver.execute_script(mark, "haul-loaded")
        listed = driver.execute_script("return window.haulDashboard.taskCount()")
        rows = driver.execute_script("return window.haulDashboard.renderedRows()")
        # From a click on the first row to its detail panel drawn, timed inside the page (not Selenium's round trips).
        click_ms = driver.execute_async_script(CLICK_TO_DETAIL_SCRIPT)
        if click_ms is None:
            raise RuntimeError("a click on the first row did not show its detail within 30 s")
        events_before = driver.execute_script("return window.haulDashboard.eventCount()")
        log("daemon CPU with the page open, %d s" % args.cpu_seconds)
        watched = cpu_share(pid, args.cpu_seconds)
        events = driver.execute_script("return window.haulDashboard.eventCount()") - events_before
    finally:
        driver.quit()

    result = {
        "tasks": args.tasks, "running": args.running, "listed_by_page": listed, "rows_drawn": rows,
        "interactive_ms": round(interactive_ms, 1), "all_listed_ms": round(loaded_ms, 1),
        "click_to_detail_ms": round(click_ms, 1),
        "daemon_cpu_without_page": round(idle, 4), "daemon_cpu_with_page": round(watched, 4),
        "page_cost_share_of_core": round(watched - idle, 4),
        "events_per_second_to_page": round(events / args.cpu_seconds, 1),
    }
    rows_out = [
        ("page interactive (first rows drawn, clickable)", "%.0f ms" % interactive_ms, "< 1000 ms",
         "met" if interactive_ms < 1000 else "NOT met"),
        ("all %d tasks listed in the page" % listed, "%.0f ms" % loaded_ms, "", ""),
        ("click on the first row to its detail", "%.0f ms" % click_ms, "", ""),
        ("rows in the DOM (virtual list)", str(rows), "", ""),
        ("daemon CPU, no page", "%.1f %%" % (idle * 100), "", ""),
        ("daemon CPU, page open", "%.1f %%" % (watched * 100), "", ""),
        ("cost of pushing progress", "%.1f %% of a core" % ((watched - idle) * 100), "< 5 %",
         "met" if watched - idle < 0.05 else "NOT met"),
        ("events the page received", "%.1f /s" % (events / args.cpu_seconds), "", ""),
    ]
    print("| measure | value | goal | |")
    print("|---|---|---|---|")
    for r in rows_out:
        print("| %s | %s | %s | %s |" % r)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as error:  # one line, then exit 1
        log("failed: %s" % error)
        sys.exit(1)
