"""The dashboard in a real headless browser against a real daemon and a real nginx.

Run: `python3 -m pytest -v Tests/browser` (after `swift build`; HAUL_BIN=PATH picks another haul binary).
Waits are bounded (60-120 s) and assert on states and bytes, never on timing.
"""
import json
import os
import time
import urllib.error
import urllib.request

import pytest
from conftest import SCREENSHOTS, sha256_of, wait_until

try:
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # the fixtures skip (or fail under CI) with the reason
    By = EC = WebDriverWait = None
    TimeoutException = AssertionError

WAIT = 120

# A row of the task list, found by the name it shows (the virtual list draws only visible rows; the tests'
# lists are short enough to be all visible).
ROW_BY_NAME = """
const rows = Array.from(document.querySelectorAll('#task-list-inner .row[data-task-id]'));
const row = rows.find((r) => !r.hidden && r.querySelector('.name').textContent === arguments[0]);
if (!row) return null;
const progress = row.querySelector('.progress');
return {id: row.dataset.taskId, state: row.dataset.state, bytes: Number(row.dataset.bytes),
        progress: progress.hasAttribute('value') ? progress.value : null, max: progress.max,
        text: row.textContent};
"""

SEGMENT_MAP = """
const c = document.getElementById('segment-map');
const d = document.getElementById('detail');
return {task: d.dataset.taskId, total: c.dataset.total, done: Number(c.dataset.doneBytes),
        active: Number(c.dataset.activeBytes), doneRanges: Number(c.dataset.doneRanges),
        activeRanges: Number(c.dataset.activeRanges), width: c.width};
"""


def log_in(driver, dashboard):
    login = dashboard.login_url()
    driver.get(login)
    WebDriverWait(driver, WAIT).until(EC.visibility_of_element_located((By.ID, "app")))
    WebDriverWait(driver, WAIT).until(
        lambda d: d.find_element(By.ID, "task-list").get_attribute("data-loaded") == "true"
    )
    return login


def row(driver, name):
    return driver.execute_script(ROW_BY_NAME, name)


def wait_row(driver, name, predicate, what, timeout=WAIT):
    last = [None]

    def check():
        r = last[0] = row(driver, name)
        return r if r and predicate(r) else None

    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.2).until(lambda d: check())
    except TimeoutException:
        raise AssertionError("%s: %s; its row last read %r" % (name, what, last[0])) from None


def click_row(driver, name):
    task = wait_row(driver, name, lambda r: True, "its row")
    driver.find_element(By.CSS_SELECTOR, '.row[data-task-id="%s"] .name' % task["id"]).click()
    WebDriverWait(driver, WAIT).until(
        lambda d: d.find_element(By.ID, "detail").get_attribute("data-task-id") == task["id"]
    )
    return task


def fill_add_dialog(driver, urls, directory, segments=None, checksum=None, rate=None):
    driver.find_element(By.ID, "add-button").click()
    WebDriverWait(driver, WAIT).until(EC.visibility_of_element_located((By.ID, "add-urls")))
    driver.find_element(By.ID, "add-urls").send_keys("\n".join(urls))
    driver.find_element(By.ID, "add-directory").send_keys(directory)
    if segments is not None:
        driver.find_element(By.ID, "add-segments").send_keys(str(segments))
    if checksum is not None:
        driver.find_element(By.ID, "add-checksum").send_keys(checksum)
    if rate is not None:
        driver.find_element(By.ID, "add-rate").send_keys(rate)


def submit_add_dialog(driver):
    driver.find_element(By.ID, "add-submit").click()
    WebDriverWait(driver, WAIT).until(EC.invisibility_of_element_located((By.ID, "add-dialog")))
    assert driver.find_element(By.ID, "add-error").text == ""


def add(driver, urls, directory, **options):
    fill_add_dialog(driver, urls, directory, **options)
    submit_add_dialog(driver)


def screenshot(driver, name):
    os.makedirs(SCREENSHOTS, exist_ok=True)
    driver.execute_script("document.getElementById('toast').hidden = true")
    driver.save_screenshot(os.path.join(SCREENSHOTS, name))


def csp_violations(driver):
    return [e["message"] for e in driver.get_log("browser") if "Content Security Policy" in e.get("message", "")]


def fetch_in_page(driver, method, path, body=None, headers=None):
    """The status of a fetch the page itself makes (same origin, its own cookies if it has any)."""
    return driver.execute_async_script(
        """
        const [method, path, body, headers, done] = arguments;
        fetch(path, {method: method, body: body, headers: headers || {}, credentials: 'same-origin'})
          .then((r) => done(r.status), (e) => done('error ' + e));
        """,
        method, path, body, headers,
    )


def test_login_with_the_token_address_then_add_a_url_that_reaches_100_percent(dashboard, nginx, browsers):
    driver = browsers()
    log_in(driver, dashboard)
    # The token is gone from the address bar, and the page never shows it.
    assert driver.current_url == dashboard.base
    assert "token" not in driver.page_source
    assert driver.get_cookie("haul_session") is not None
    assert driver.get_cookie("haul_session")["httpOnly"] is True
    assert driver.execute_script("return document.cookie") == ""

    small = nginx["files"]["small.bin"]
    add(driver, [nginx["base"] + "/fast/small.bin"], dashboard.downloads, checksum="sha256:" + small["sha256"])
    done = wait_row(driver, "small.bin", lambda r: r["state"] == "finished", "finished")
    assert done["progress"] == done["max"]
    assert "100%" in done["text"]
    path = os.path.join(dashboard.downloads, "small.bin")
    assert os.path.getsize(path) == small["size"]
    assert sha256_of(path) == small["sha256"]
    assert csp_violations(driver) == []


def test_pause_and_resume_a_throttled_download(dashboard, nginx, browsers):
    driver = browsers()
    log_in(driver, dashboard)
    info = nginx["files"]["paused.bin"]
    add(driver, [nginx["base"] + "/slow/paused.bin"], dashboard.downloads)
    wait_row(driver, "paused.bin", lambda r: r["state"] == "running" and r["bytes"] > 0, "running with bytes")
    click_row(driver, "paused.bin")
    driver.find_element(By.ID, "action-pause").click()
    paused = wait_row(driver, "paused.bin", lambda r: r["state"] == "paused", "paused")
    assert paused["bytes"] < info["size"]

    driver.find_element(By.ID, "action-resume").click()
    wait_row(driver, "paused.bin", lambda r: r["state"] in ("running", "waiting", "finished"), "resumed")
    wait_row(driver, "paused.bin", lambda r: r["state"] == "finished", "finished after the resume")
    path = os.path.join(dashboard.downloads, "paused.bin")
    assert sha256_of(path) == info["sha256"]


def test_remove_a_task_with_its_file(dashboard, nginx, browsers):
    driver = browsers()
    log_in(driver, dashboard)
    add(driver, [nginx["base"] + "/fast/remove.bin", nginx["base"] + "/fast/extra-2.bin"], dashboard.downloads)
    wait_row(driver, "remove.bin", lambda r: r["state"] == "finished", "finished")
    wait_row(driver, "extra-2.bin", lambda r: r["state"] == "finished", "finished")
    path = os.path.join(dashboard.downloads, "remove.bin")
    kept = os.path.join(dashboard.downloads, "extra-2.bin")
    assert os.path.exists(path) and os.path.exists(kept)

    click_row(driver, "remove.bin")
    driver.find_element(By.ID, "action-delete").click()
    WebDriverWait(driver, WAIT).until(EC.visibility_of_element_located((By.ID, "confirm-ok")))
    assert "remove.bin" in driver.find_element(By.ID, "confirm-text").text
    driver.find_element(By.ID, "confirm-ok").click()
    WebDriverWait(driver, WAIT).until(lambda d: row(d, "remove.bin") is None, message="the row to go")
    wait_until("the file to be deleted", lambda: not os.path.exists(path), timeout=60)
    # The other task and its file stay.
    assert row(driver, "extra-2.bin") is not None
    assert os.path.exists(kept)
    # After a reload the daemon's list agrees.
    driver.refresh()
    WebDriverWait(driver, WAIT).until(
        lambda d: d.find_element(By.ID, "task-list").get_attribute("data-loaded") == "true"
    )
    wait_row(driver, "extra-2.bin", lambda r: True, "listed after a reload")
    assert row(driver, "remove.bin") is None


def test_the_segment_map_of_a_throttled_segmented_download_changes_while_it_runs(dashboard, nginx, browsers):
    driver = browsers()
    log_in(driver, dashboard)
    # Some finished tasks around it, as a real list has.
    add(driver, [nginx["base"] + "/fast/extra-1.bin", nginx["base"] + "/fast/extra-2.bin"], dashboard.downloads)
    wait_row(driver, "extra-1.bin", lambda r: r["state"] == "finished", "finished")

    info = nginx["files"]["segmented.bin"]
    fill_add_dialog(driver, [nginx["base"] + "/seg/segmented.bin"], dashboard.downloads, segments=4)
    screenshot(driver, "add-dialog.png")
    submit_add_dialog(driver)

    wait_row(driver, "segmented.bin", lambda r: r["state"] == "running" and r["bytes"] > 0, "running")
    task = click_row(driver, "segmented.bin")
    most_active = [0]

    def reading(what, predicate):
        def check():
            m = driver.execute_script(SEGMENT_MAP)
            if m["task"] != task["id"]:
                return None
            most_active[0] = max(most_active[0], m["activeRanges"])
            return m if predicate(m) else None

        return WebDriverWait(driver, WAIT, poll_frequency=0.2).until(lambda d: check(), message=what)

    first = reading("a first segment map", lambda m: m["total"] == str(info["size"]) and m["done"] > 0)
    second = reading("the map to change", lambda m: m["done"] > first["done"])
    state = row(driver, "segmented.bin")["state"]
    assert state == "running", "the map should change while the download runs, not only at its end (%s)" % state
    assert second["done"] <= info["size"]
    # Several connections at once: the map shows more than one range being fetched.
    reading("two ranges fetched at once", lambda m: m["activeRanges"] >= 2 or most_active[0] >= 2)
    # The picture for docs/: the map part-way, while it still runs (a slow machine may have finished it first).
    try:
        reading("the map part-way", lambda m: m["done"] >= info["size"] * 0.4 or m["activeRanges"] == 0)
    finally:
        screenshot(driver, "dashboard.png")

    wait_row(driver, "segmented.bin", lambda r: r["state"] == "finished", "finished", timeout=180)
    final = reading("the whole file done", lambda m: m["done"] == info["size"])
    assert final["activeRanges"] == 0
    assert sha256_of(os.path.join(dashboard.downloads, "segmented.bin")) == info["sha256"]


def test_a_second_browser_without_the_token_gets_nothing(dashboard, nginx, browsers):
    first = browsers()
    login = log_in(first, dashboard)
    add(first, [nginx["base"] + "/fast/remove.bin"], dashboard.downloads)
    wait_row(first, "remove.bin", lambda r: r["state"] == "finished", "finished")

    second = browsers()
    second.get(dashboard.base)
    WebDriverWait(second, WAIT).until(EC.visibility_of_element_located((By.ID, "login-required")))
    assert "Not logged in" in second.find_element(By.ID, "login-required").text
    assert "haul web" in second.find_element(By.ID, "login-required").text
    # Nothing of the dashboard is built: no list, no task name, no controls.
    assert second.find_elements(By.ID, "app") == []
    assert second.find_elements(By.ID, "add-button") == []
    assert "remove.bin" not in second.page_source
    assert fetch_in_page(second, "GET", "/api/me") == 401
    status = fetch_in_page(
        second, "POST", "/api/rpc",
        json.dumps({"method": "tasks.list", "params": {"session": "default"}}),
        {"Content-Type": "application/json", "X-CSRF-Token": "guess"},
    )
    assert status in (401, 403)

    # The spent token: 403 with the page that says what to do.
    second.get(login)
    body = WebDriverWait(second, WAIT).until(lambda d: d.find_element(By.TAG_NAME, "body").text)
    assert "already used or has expired" in body
    assert second.get_cookie("haul_session") is None
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(login, timeout=30)
    assert refused.value.code == 403

    # The first browser still works (its page sends the key it holds in sessionStorage).
    key = first.execute_script("return sessionStorage.getItem('haul.key')")
    assert fetch_in_page(first, "GET", "/api/me", headers={"X-Haul-Key": key}) == 200


def test_session_settings_and_switching_sessions(dashboard, nginx, browsers):
    from selenium.webdriver.common.keys import Keys

    driver = browsers()
    log_in(driver, dashboard)
    add(driver, [nginx["base"] + "/fast/extra-2.bin"], dashboard.downloads)
    wait_row(driver, "extra-2.bin", lambda r: r["state"] == "finished", "finished")

    concurrency = driver.find_element(By.ID, "session-concurrency")
    concurrency.clear()
    concurrency.send_keys("2", Keys.ENTER)
    WebDriverWait(driver, WAIT).until(lambda d: "At most 2" in d.find_element(By.ID, "toast").text)
    rate = driver.find_element(By.ID, "session-rate")
    rate.clear()
    rate.send_keys("300K", Keys.ENTER)
    WebDriverWait(driver, WAIT).until(lambda d: "Speed limit" in d.find_element(By.ID, "toast").text)

    # The daemon kept them: a reload reads them back with session.configuration.
    driver.refresh()
    WebDriverWait(driver, WAIT).until(
        lambda d: d.find_element(By.ID, "session-concurrency").get_attribute("value") == "2"
    )
    WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.ID, "session-rate").get_attribute("value") == "300K")

    # Another session: opened from the page, empty, and the first one's task is back when switching to it.
    driver.find_element(By.ID, "session-new").click()
    WebDriverWait(driver, WAIT).until(EC.visibility_of_element_located((By.ID, "session-name")))
    driver.find_element(By.ID, "session-name").send_keys("second", Keys.ENTER)
    WebDriverWait(driver, WAIT).until(
        lambda d: d.execute_script("return document.getElementById('session-select').value") == "second"
    )
    WebDriverWait(driver, WAIT).until(
        lambda d: d.find_element(By.ID, "task-list").get_attribute("data-loaded") == "true"
    )
    assert row(driver, "extra-2.bin") is None
    driver.execute_script(
        "const s = document.getElementById('session-select'); s.value = 'default';"
        "s.dispatchEvent(new Event('change'));"
    )
    wait_row(driver, "extra-2.bin", lambda r: r["state"] == "finished", "listed again in its session")


def test_dropping_a_text_file_of_urls_or_a_link_opens_the_add_dialog_with_them(dashboard, nginx, browsers):
    driver = browsers()
    log_in(driver, dashboard)
    urls = [nginx["base"] + "/fast/extra-1.bin", nginx["base"] + "/fast/extra-2.bin"]
    # What the browser hands the page for a dropped file (the drag itself is the OS's, out of a test's reach).
    driver.execute_script(
        """
        const data = new DataTransfer();
        data.items.add(new File([arguments[0]], 'urls.txt', {type: 'text/plain'}));
        document.getElementById('task-list').dispatchEvent(
          new DragEvent('drop', {dataTransfer: data, bubbles: true, cancelable: true}));
        """,
        "# two files\n" + "\n".join(urls) + "\nnot a url\n",
    )
    WebDriverWait(driver, WAIT).until(EC.visibility_of_element_located((By.ID, "add-urls")))
    assert driver.find_element(By.ID, "add-urls").get_attribute("value").split("\n") == urls
    driver.find_element(By.ID, "add-directory").send_keys(dashboard.downloads)
    submit_add_dialog(driver)
    for name in ("extra-1.bin", "extra-2.bin"):
        wait_row(driver, name, lambda r: r["state"] == "finished", "finished")
        assert sha256_of(os.path.join(dashboard.downloads, name)) == nginx["files"][name]["sha256"]

    # A dragged link.
    driver.execute_script(
        """
        const data = new DataTransfer();
        data.setData('text/uri-list', arguments[0]);
        document.body.dispatchEvent(new DragEvent('drop', {dataTransfer: data, bubbles: true, cancelable: true}));
        """,
        nginx["base"] + "/fast/small.bin",
    )
    WebDriverWait(driver, WAIT).until(EC.visibility_of_element_located((By.ID, "add-urls")))
    assert driver.find_element(By.ID, "add-urls").get_attribute("value") == nginx["base"] + "/fast/small.bin"


def test_a_failure_shows_its_reason_and_shift_click_selects_a_range(dashboard, nginx, browsers):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.select import Select

    driver = browsers()
    log_in(driver, dashboard)
    names = ["missing-1.bin", "missing-2.bin", "missing-3.bin"]
    add(driver, [nginx["base"] + "/fast/" + name for name in names], dashboard.downloads)
    for name in names:
        failed = wait_row(driver, name, lambda r: r["state"] == "failed", "failed")
        assert "404" in failed["text"], failed["text"]

    # The filter shows only failed tasks; the search narrows by name.
    Select(driver.find_element(By.ID, "filter-state")).select_by_value("failed")
    WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.ID, "task-list").get_attribute("data-count") == "3")
    Select(driver.find_element(By.ID, "filter-state")).select_by_value("finished")
    WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.ID, "task-list").get_attribute("data-count") == "0")
    Select(driver.find_element(By.ID, "filter-state")).select_by_value("")
    driver.find_element(By.ID, "search").send_keys("missing-2")
    WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.ID, "task-list").get_attribute("data-count") == "1")
    driver.find_element(By.ID, "search").send_keys(Keys.CONTROL, "a")
    driver.find_element(By.ID, "search").send_keys(Keys.BACKSPACE)
    WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.ID, "task-list").get_attribute("data-count") == "3")

    first = click_row(driver, names[0])
    third = row(driver, names[2])
    target = driver.find_element(By.CSS_SELECTOR, '.row[data-task-id="%s"] .name' % third["id"])
    ActionChains(driver).key_down(Keys.SHIFT).click(target).key_up(Keys.SHIFT).perform()
    WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.ID, "selection-count").text == "3 selected")
    assert first["id"] != third["id"]

    driver.find_element(By.ID, "action-remove").click()
    for name in names:
        WebDriverWait(driver, WAIT).until(lambda d: row(d, name) is None, message=name + " to go")
    assert driver.find_element(By.ID, "selection-count").text == ""
