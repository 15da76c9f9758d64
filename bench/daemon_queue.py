#!/usr/bin/env python3
"""A daemon holding a long queue (issue 25: "the daemon likewise with 1,000,000 queued tasks: `haul ls` pages, the
dashboard stays interactive, and RSS is bounded"). Starts `haul daemon` in a private HAUL_HOME, holds its queue with
`haul session set --max-concurrent 0`, adds COUNT tasks with `haul add -i LIST` (URLs that are never fetched), then:

  - the daemon's resident memory (VmRSS, VmHWM from /proc) after the adds and after the listing;
  - `haul ls --json` of every task: its wall time and its own peak memory (GNU time);
  - `haul ls` as a table (every value whole) to a file and to a pipe, and fitted to a terminal of 120 columns (a
    pty; a session of more than one block is listed twice there, for the ids' unique prefixes): wall time, peak
    memory, lines, and the widest line on the terminal;
  - the dashboard's first call, `tasks.list` of 200 tasks, and a page from the middle of the queue (its cursor),
    timed over the socket (median of 5), and `daemon.status`;
  - with --page, the dashboard in headless Chromium (Selenium): its `haul-interactive` mark (first rows drawn and
    clickable), how many tasks it has listed after --page-seconds, its JS heap, and a click on the first row to its
    detail panel, timed inside the page.

Usage: bench/daemon_queue.py [--count 1000000] [--haul .build/release/haul] [--page] [--page-seconds 60]
"""
import argparse
import fcntl
import json
import os
import pty
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time

from benchlib import CLICK_TO_DETAIL_SCRIPT, headless_chromium

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def memory(pid):
    values = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                values[name] = int(rest.split()[0]) / 1024
    return values


def rpc(path, method, params):
    """One request on a fresh connection; (result, seconds)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(120)
        sock.connect(path)
        start = time.monotonic()
        sock.sendall((json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}) + "\n").encode())
        buffer = b""
        while True:
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError(f"{method}: connection closed")
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                message = json.loads(line)
                if message.get("id") == 1:
                    if "error" in message:
                        raise RuntimeError(f"{method}: {message['error']}")
                    return message["result"], time.monotonic() - start


def peak_mib(out):
    """The peak RSS GNU time wrote to `out` (`-f %M`, KiB), in MiB; `out` is removed."""
    with open(out) as f:
        kib = int(f.read().split()[-1])
    os.unlink(out)
    return kib / 1024


def timed(cmd, env, **kwargs):
    """Runs cmd under GNU time; (wall s, peak RSS MiB, completed process)."""
    out = tempfile.mktemp(prefix="haul-time-")
    start = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-o", out, "-f", "%M"] + cmd, env=env, timeout=7200, **kwargs)
    wall = time.monotonic() - start
    return wall, peak_mib(out), p


def timed_reading(cmd, env, columns=None):
    """Runs cmd under GNU time, its stdout a pipe (or, with columns, a pty that wide) read here as it comes;
    (wall s, peak RSS MiB, exit code, lines, widest line in characters)."""
    out = tempfile.mktemp(prefix="haul-time-")
    if columns:
        reader, writer = pty.openpty()
        fcntl.ioctl(writer, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    else:
        reader, writer = os.pipe()
    start = time.monotonic()
    p = subprocess.Popen(["/usr/bin/time", "-o", out, "-f", "%M"] + cmd, env=env, stdout=writer, stderr=subprocess.DEVNULL)
    os.close(writer)
    lines, widest, rest = 0, 0, b""
    while True:
        try:
            chunk = os.read(reader, 1 << 16)
        except OSError:    # a pty whose other end is closed
            break
        if not chunk:
            break
        parts = (rest + chunk).split(b"\n")
        rest = parts.pop()
        lines += len(parts)
        widest = max([widest] + [len(part.rstrip(b"\r").decode("utf-8", "replace")) for part in parts])
    os.close(reader)
    code = p.wait(timeout=7200)
    wall = time.monotonic() - start
    return wall, peak_mib(out), code, lines, widest


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--haul", default=os.path.join(ROOT, ".build", "release", "haul"), type=os.path.abspath)
    parser.add_argument("--page", action="store_true")
    parser.add_argument("--page-seconds", type=int, default=60)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="haul-queue-")
    sock = f"{work}/d.sock"
    env = dict(os.environ, HAUL_HOME=f"{work}/home")
    for name in ("HAUL_SOCKET", "XDG_RUNTIME_DIR"):
        env.pop(name, None)
    client = ["--socket", sock, "--no-autostart"]
    web = ["--web", "127.0.0.1:0"] if args.page else []
    daemon = subprocess.Popen([args.haul, "daemon", "--socket", sock] + web, env=env, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if os.path.exists(sock + ".pid") and subprocess.run([args.haul, "session", "show"] + client, env=env,
                                                                 capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        subprocess.run([args.haul, "session", "set", "--max-concurrent", "0"] + client, env=env, check=True,
                       capture_output=True)
        listfile = f"{work}/list.txt"
        with open(listfile, "w") as f:
            for i in range(args.count):
                f.write(f"http://127.0.0.1:9/queued/{i}.bin\n")
        print(f"# a daemon holding {args.count:,} queued tasks, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
        add_wall, add_rss, p = timed([args.haul, "add", "-i", listfile, "--dir", f"{work}/dl"] + client, env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if p.returncode != 0:
            sys.exit(f"haul add: exit {p.returncode}: {p.stderr[-300:]!r}")
        after_add = memory(daemon.pid)
        first = [rpc(sock, "tasks.list", {"session": "default", "limit": 200})[1] for _ in range(5)]
        page, _ = rpc(sock, "tasks.list", {"session": "default", "limit": 10_000})
        cursor = page["next"]
        for _ in range(args.count // 20_000):    # to about the middle of the queue
            page, _ = rpc(sock, "tasks.list", {"session": "default", "limit": 10_000, "cursor": cursor})
            cursor = page["next"] or cursor
        middle = [rpc(sock, "tasks.list", {"session": "default", "limit": 200, "cursor": cursor})[1] for _ in range(5)]
        status = [rpc(sock, "daemon.status", {})[1] for _ in range(5)]
        with open(f"{work}/ls.jsonl", "w") as out:
            ls_wall, ls_rss, p = timed([args.haul, "ls", "--json"] + client, env, stdout=out, stderr=subprocess.PIPE)
        listed = sum(1 for _ in open(f"{work}/ls.jsonl"))
        after_ls = memory(daemon.pid)
        with open(f"{work}/ls.txt", "w") as out:
            file_wall, file_rss, file_p = timed([args.haul, "ls"] + client, env, stdout=out, stderr=subprocess.PIPE)
        file_lines = sum(1 for _ in open(f"{work}/ls.txt"))
        pipe = timed_reading([args.haul, "ls"] + client, env)
        terminal = timed_reading([args.haul, "ls"] + client, env, columns=120)
        print("| what | value |\n|---|---|")
        print(f"| `haul add -i` of {args.count:,} URLs | {add_wall:.1f} s, client peak {add_rss:.0f} MiB |")
        print(f"| daemon after the adds | RSS {after_add['VmRSS']:.0f} MiB, peak {after_add['VmHWM']:.0f} MiB |")
        print(f"| `tasks.list` first 200 (the dashboard's first call) | {1000 * statistics.median(first):.1f} ms |")
        print(f"| `tasks.list` 200 from the middle (by cursor) | {1000 * statistics.median(middle):.1f} ms |")
        print(f"| `daemon.status` | {1000 * statistics.median(status):.1f} ms |")
        print(f"| `haul ls --json` of every task | {ls_wall:.1f} s, {listed:,} lines, client peak {ls_rss:.0f} MiB, exit {p.returncode} |")
        print(f"| daemon after the listing | RSS {after_ls['VmRSS']:.0f} MiB, peak {after_ls['VmHWM']:.0f} MiB |")
        print(f"| `haul ls` to a file (every value whole) | {file_wall:.1f} s, {file_lines:,} lines, client peak {file_rss:.0f} MiB, exit {file_p.returncode} |")
        print(f"| `haul ls` to a pipe | {pipe[0]:.1f} s, {pipe[3]:,} lines, client peak {pipe[1]:.0f} MiB, exit {pipe[2]} |")
        print(f"| `haul ls` on a terminal of 120 columns (listed twice) | {terminal[0]:.1f} s, {terminal[3]:,} lines "
              f"(widest {terminal[4]}), client peak {terminal[1]:.0f} MiB, exit {terminal[2]} |")
        if args.page:
            measure_page(args, env, client, daemon.pid)
    finally:
        subprocess.run([args.haul, "daemon", "stop"] + client, env=env, capture_output=True)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
        shutil.rmtree(work, ignore_errors=True)


def measure_page(args, env, client, pid):
    login = subprocess.run([args.haul, "web"] + client, env=env, capture_output=True, text=True, timeout=60)
    if login.returncode != 0:
        sys.exit("haul web: " + login.stderr.strip())
    from selenium.webdriver.support.ui import WebDriverWait
    driver = headless_chromium()
    try:
        driver.set_page_load_timeout(120)
        driver.get(login.stdout.strip())
        WebDriverWait(driver, 120, poll_frequency=0.05).until(
            lambda d: d.execute_script("return document.body.dataset.interactive === 'true'"))
        interactive = driver.execute_script("return (performance.getEntriesByName('haul-interactive')[0] || {}).startTime ?? null")
        time.sleep(args.page_seconds)
        listed = driver.execute_script("return window.haulDashboard.taskCount()")
        loaded = driver.execute_script("return window.haulDashboard.loaded()")
        heap = driver.execute_script("return performance.memory ? performance.memory.usedJSHeapSize : null")
        click = driver.execute_async_script(CLICK_TO_DETAIL_SCRIPT)
    finally:
        driver.quit()
    daemon = memory(pid)
    print(f"| page interactive (first rows drawn, clickable) | {interactive:.0f} ms |")
    print(f"| tasks listed by the page after {args.page_seconds} s | {listed:,} ({'all' if loaded else 'still loading'}) |")
    print(f"| page's JS heap then | {heap / 2**20:.0f} MiB |" if heap else "| page's JS heap | unknown |")
    print(f"| click on the first row to its detail | {click:.0f} ms |" if click is not None else "| click to detail | over 30 s |")
    print(f"| daemon with the page | RSS {daemon['VmRSS']:.0f} MiB, peak {daemon['VmHWM']:.0f} MiB |")


if __name__ == "__main__":
    main()
