"""The session's key, in a real browser: a cookie reaches every port of 127.0.0.1, the key does not.

The login redirect hands the page a key in the address's fragment; the page keeps it in sessionStorage (scoped to
scheme, host and port) and sends it with every request. A reload keeps the login; a page of another port receives
the cookie (browsers send cookies to every port of a host) but cannot read the key, and the cookie alone opens
nothing (docs/web.md, "Other ports of the same host").

Run: `python3 -m pytest -v Tests/browser/test_session_key.py`. Waits are bounded and assert on states.
"""
import http.server
import json
import threading
import urllib.error
import urllib.request

from conftest import free_port
from test_dashboard import WAIT, fetch_in_page, log_in

try:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # the fixtures skip (or fail under CI) with the reason
    By = EC = WebDriverWait = None

KEY = "return sessionStorage.getItem('haul.key')"


def status_of(url, headers, body=None):
    """The status of a request made outside any browser (as another user's curl would)."""
    request = urllib.request.Request(url, data=body, headers=headers, method="POST" if body is not None else "GET")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code


def test_a_reload_keeps_the_login_and_the_key_leaves_the_address(dashboard, browsers):
    driver = browsers()
    log_in(driver, dashboard)
    assert driver.current_url == dashboard.base, "the fragment is gone from the address: " + driver.current_url
    key = driver.execute_script(KEY)
    assert isinstance(key, str) and len(key) == 64
    WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.ID, "live").get_attribute("data-live") == "live")

    driver.refresh()
    WebDriverWait(driver, WAIT).until(EC.visibility_of_element_located((By.ID, "app")))
    WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.ID, "task-list").get_attribute("data-loaded") == "true")
    assert not driver.find_element(By.ID, "login-required").is_displayed()
    # The event stream (read with fetch(), the key in a header) is live again.
    WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.ID, "live").get_attribute("data-live") == "live")
    assert driver.execute_script(KEY) == key
    # The page's cookie without the key is refused; with it, accepted.
    assert fetch_in_page(driver, "GET", "/api/me") == 401
    assert fetch_in_page(driver, "GET", "/api/me", headers={"X-Haul-Key": key}) == 200
    assert fetch_in_page(driver, "GET", "/api/me", headers={"X-Haul-Key": "0" * 64}) == 401


class Catcher(http.server.BaseHTTPRequestHandler):
    """Another user's server on another port of 127.0.0.1: it keeps every Cookie header it receives."""
    cookies = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        Catcher.cookies.append(self.headers.get("Cookie") or "")
        body = b"<!doctype html><title>elsewhere</title><p>another port"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_page_of_another_port_gets_the_cookie_but_cannot_use_it(dashboard, browsers):
    Catcher.cookies = []
    port = free_port()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Catcher)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        driver = browsers()
        log_in(driver, dashboard)
        key = driver.execute_script(KEY)
        assert key

        # The same tab opens the other port's page: the browser sends it the dashboard's cookie.
        driver.get("http://127.0.0.1:%d/" % port)
        WebDriverWait(driver, WAIT).until(lambda d: d.title == "elsewhere")
        stolen = [part.strip() for c in Catcher.cookies for part in c.split(";") if part.strip().startswith("haul_session=")]
        assert stolen, "the browser sent the cookie to another port (what this defends against): %r" % Catcher.cookies
        cookie = stolen[-1]
        # That page cannot read the key: sessionStorage belongs to the dashboard's origin (its port) only.
        assert driver.execute_script(KEY) is None

        # With the cookie alone, every route of the dashboard refuses, before anything is read or changed.
        base = dashboard.base.rstrip("/")
        assert status_of(base + "/api/me", {"Cookie": cookie}) == 401
        assert status_of(base + "/api/events?session=default", {"Cookie": cookie}) == 401
        add = json.dumps({"method": "tasks.add", "params": {"session": "default", "tasks": [
            {"url": "http://127.0.0.1:%d/x" % port, "path": dashboard.downloads + "/stolen", "options": {"overwrite": True}}]}})
        assert status_of(base + "/api/rpc", {"Cookie": cookie, "Origin": base, "Content-Type": "application/json",
                                             "X-CSRF-Token": "0" * 64}, add.encode()) == 401
        assert status_of(base + "/api/me", {"Cookie": cookie, "X-Haul-Key": "0" * 64}) == 401

        # Back on the dashboard, the owner's tab is still logged in (its key is where it was).
        driver.get(dashboard.base)
        WebDriverWait(driver, WAIT).until(EC.visibility_of_element_located((By.ID, "app")))
        WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.ID, "task-list").get_attribute("data-loaded") == "true")
        assert driver.execute_script("return window.haulDashboard.taskCount()") == 0, "nothing was added"
    finally:
        server.shutdown()
        server.server_close()
