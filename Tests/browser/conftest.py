"""Fixtures of the dashboard's browser tests: a real `haul daemon` with its web listener, a real nginx serving
real files, and headless Chromium driven by Selenium through Debian's chromedriver.

Every test gets its own HAUL_HOME, daemon, nginx and browsers; all of them are stopped when the test ends.
A missing tool skips the tests with the reason; with CI set it fails them instead.
"""
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest

# Loopback only: no proxy of the environment may reroute the tests' requests.
for _name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
    os.environ.pop(_name, None)
os.environ["no_proxy"] = os.environ["NO_PROXY"] = "127.0.0.1,localhost"

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHROMIUM = os.environ.get("HAUL_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("HAUL_CHROMEDRIVER", "/usr/bin/chromedriver")
# The browser tests write their screenshots here; HAUL_UPDATE_SCREENSHOTS=1 writes the ones docs/ shows.
SCREENSHOTS = (
    os.path.join(REPO, "docs", "images")
    if os.environ.get("HAUL_UPDATE_SCREENSHOTS") == "1"
    else os.path.join(REPO, ".build", "browser-tests")
)

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    SELENIUM_ERROR = None
except ImportError as error:  # reported by require_tools
    webdriver = None
    Service = None
    SELENIUM_ERROR = str(error)


def missing(reason):
    """Skips with the reason, or fails when CI is set (CI must not pass on tests it did not run)."""
    if os.environ.get("CI"):
        pytest.fail("missing: " + reason)
    pytest.skip(reason)


def nginx_path():
    for candidate in (shutil.which("nginx"), "/usr/sbin/nginx", "/sbin/nginx"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def wait_until(what, check, timeout=120.0, interval=0.2):
    """Polls `check` until it returns something truthy (returned), at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %d s waiting for %s" % (timeout, what))
        time.sleep(interval)


def stop_process(process, grace=10.0):
    if process is None or process.poll() is not None:
        return
    try:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
    except ProcessLookupError:
        pass


@pytest.fixture(scope="session")
def tools():
    if SELENIUM_ERROR:
        missing("selenium is not installed (python3 -m pip install selenium pytest): " + SELENIUM_ERROR)
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not os.access(path, os.X_OK):
            missing("%s not found (apt-get install -y %s)" % (path, package))
    nginx = nginx_path()
    if not nginx:
        missing("nginx not found (apt-get install -y nginx-light)")
    return {"nginx": nginx}


@pytest.fixture(scope="session")
def haul_bin():
    binary = os.environ.get("HAUL_BIN")
    if not binary:
        try:
            out = subprocess.run(
                ["swift", "build", "--show-bin-path"], cwd=REPO, capture_output=True, text=True, timeout=600
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            missing("swift build --show-bin-path failed: %s" % error)
        binary = os.path.join(out.stdout.strip(), "haul")
    if not os.access(binary, os.X_OK):
        missing("no haul binary at %s: build it first (swift build)" % binary)
    return binary


@pytest.fixture(scope="session")
def www():
    """Random files (made once per run) that nginx serves, with their SHA-256."""
    root = tempfile.mkdtemp(prefix="haul-browser-www-")
    sizes = {"small.bin": 3 << 20, "paused.bin": 6 << 20, "remove.bin": 1 << 20, "segmented.bin": 24 << 20,
             "extra-1.bin": 2 << 20, "extra-2.bin": 1 << 20}
    files = {}
    for name, size in sizes.items():
        path = os.path.join(root, name)
        with open(path, "wb") as f:
            f.write(os.urandom(size))
        os.chmod(path, 0o644)
        files[name] = {"size": size, "sha256": sha256_of(path)}
    os.chmod(root, 0o755)
    yield {"root": root, "files": files}
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def nginx(tools, www):
    """nginx on a free loopback port: /fast/ at full speed, /slow/ at 256 KiB/s and /seg/ at 320 KiB/s per connection."""
    prefix = tempfile.mkdtemp(prefix="haul-browser-nginx-")
    process = None
    try:
        for _ in range(5):
            port = free_port()
            user = "user root;\n" if os.geteuid() == 0 else ""
            temp = "".join(
                "    %s_temp_path %s/tmp-%s;\n" % (kind, prefix, kind)
                for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
            )
            config = (
                user + "worker_processes 1;\n"
                "pid %(p)s/nginx.pid;\n"
                "error_log %(p)s/error.log warn;\n"
                "events { worker_connections 256; }\n"
                "http {\n"
                "    types { }\n"
                "    default_type application/octet-stream;\n"
                "    access_log %(p)s/access.log;\n" % {"p": prefix}
            ) + temp + (
                "    server {\n"
                "        listen 127.0.0.1:%(port)d;\n"
                "        location /fast/ { alias %(www)s/; }\n"
                "        location /slow/ { alias %(www)s/; limit_rate 256k; }\n"
                "        location /seg/ { alias %(www)s/; limit_rate 320k; }\n"
                "    }\n"
                "}\n" % {"port": port, "www": www["root"]}
            )
            with open(os.path.join(prefix, "nginx.conf"), "w") as f:
                f.write(config)
            log = open(os.path.join(prefix, "stderr.log"), "ab")
            process = subprocess.Popen(
                [tools["nginx"], "-p", prefix + "/", "-c", prefix + "/nginx.conf", "-e", prefix + "/error.log",
                 "-g", "daemon off;"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
            )
            log.close()
            base = "http://127.0.0.1:%d" % port

            def answers():
                if process.poll() is not None:
                    return "exited"
                try:
                    with urllib.request.urlopen(base + "/fast/remove.bin", timeout=2) as r:
                        return "up" if r.status == 200 else None
                except (urllib.error.URLError, OSError):
                    return None

            state = wait_until("nginx to answer", answers, timeout=30)
            if state == "up":
                yield {"base": base, "files": www["files"]}
                return
            stop_process(process)
        pytest.fail("nginx did not start; see " + prefix)
    finally:
        stop_process(process)
        shutil.rmtree(prefix, ignore_errors=True)


class Dashboard:
    """A `haul daemon --web 127.0.0.1:PORT` of its own HAUL_HOME."""

    def __init__(self, binary, root):
        self.binary = binary
        self.root = root
        self.home = os.path.join(root, "home")
        self.downloads = os.path.join(root, "downloads")
        os.makedirs(self.home, mode=0o700)
        os.makedirs(self.downloads, mode=0o700)
        self.env = dict(os.environ)
        self.env["HAUL_HOME"] = self.home
        for name in ("XDG_RUNTIME_DIR", "HAUL_SOCKET", "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                     "all_proxy", "ALL_PROXY"):
            self.env.pop(name, None)
        self.env["no_proxy"] = self.env["NO_PROXY"] = "127.0.0.1,localhost"
        self.port = None
        self.process = None
        self.log_path = os.path.join(root, "daemon.log")

    @property
    def base(self):
        return "http://127.0.0.1:%d/" % self.port

    def start(self):
        for _ in range(5):
            self.port = free_port()
            log = open(self.log_path, "ab")
            self.process = subprocess.Popen(
                [self.binary, "daemon", "--web", "127.0.0.1:%d" % self.port],
                cwd=self.root, env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True,
            )
            log.close()

            def listening():
                if self.process.poll() is not None:
                    return "exited"
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                        return "up"
                except OSError:
                    return None

            if wait_until("the daemon's web listener", listening, timeout=90) == "up":
                return
            # the port was taken meanwhile: try another one
        raise AssertionError("haul daemon --web did not start; its log:\n" + self.log())

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def login_url(self):
        """`haul web`: the login address with a fresh one-time token, its only line on stdout."""
        run = subprocess.run(
            [self.binary, "web"], cwd=self.root, env=self.env, capture_output=True, text=True, timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert run.returncode == 0, "haul web failed (%d): %s" % (run.returncode, run.stderr)
        lines = run.stdout.splitlines()
        assert len(lines) == 1, "haul web printed %r" % run.stdout
        url = lines[0].strip()
        assert url.startswith("http://127.0.0.1:%d/login?token=" % self.port), url
        return url

    def stop(self):
        stop_process(self.process)


@pytest.fixture
def dashboard(tools, haul_bin):
    root = tempfile.mkdtemp(prefix="haul-browser-")
    os.chmod(root, 0o700)
    board = Dashboard(haul_bin, root)
    try:
        board.start()
        yield board
    finally:
        board.stop()
        # Shown by pytest when the test failed.
        print("haul daemon's log (end):\n" + board.log())
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def browsers(tools):
    """Makes headless Chromium browsers, each with a fresh profile (no cookie of another); quits them all."""
    made = []

    def make():
        profile = tempfile.mkdtemp(prefix="haul-browser-profile-")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                         "--window-size=1440,900", "--user-data-dir=" + profile, "--no-first-run",
                         "--no-default-browser-check", "--force-color-profile=srgb", "--no-proxy-server", "--hide-scrollbars"):
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        driver.set_page_load_timeout(120)
        driver.set_script_timeout(60)
        made.append((driver, profile))
        return driver

    try:
        yield make
    finally:
        for driver, profile in made:
            try:
                driver.quit()
            except Exception:  # the browser may be gone already
                pass
            shutil.rmtree(profile, ignore_errors=True)
