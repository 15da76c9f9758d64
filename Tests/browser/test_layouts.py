"""The dashboard at a phone's size and at a desktop's, in headless Chromium with device emulation (DevTools
`Emulation.setDeviceMetricsOverride`; `--window-size` cannot go below 500 px), against a real daemon and nginx.

At 390x844 (touch, mobile viewport) tasks are cards with their actions reachable, the header and toolbar fold
their controls behind a button each, the details open over the list, and nothing makes the page scroll sideways
(also at 360 and 430 px). At 1400x900 the table and the side pane stay as they were. The segment map's legend
names only what the map shows. A screenshot of each size is kept under .build/browser-tests (printed).
"""
import os

from conftest import SCREENSHOTS
from test_dashboard import WAIT, add, log_in, row, screenshot, wait_row

try:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # the fixtures skip (or fail under CI) with the reason
    By = WebDriverWait = None

# What sticks out: the page's widths, and every shown element whose box passes the viewport's right edge.
OVERFLOW = """
const width = window.innerWidth;
const out = [];
for (const el of document.querySelectorAll('body *')) {
  const r = el.getBoundingClientRect();
  if (r.width === 0 || r.height === 0) continue;
  if (r.right > width + 0.5 || r.left < -0.5) out.push((el.id || el.className || el.tagName) + ' ' + Math.round(r.left) + '..' + Math.round(r.right));
}
return {inner: width, doc: document.documentElement.scrollWidth, body: document.body.scrollWidth, out: out.slice(0, 10)};
"""

# The box of an element (by CSS selector) and whether it is shown.
BOX = """
const el = document.querySelector(arguments[0]);
if (!el) return null;
const r = el.getBoundingClientRect();
const style = getComputedStyle(el);
return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height,
        shown: r.width > 0 && r.height > 0 && style.display !== 'none' && style.visibility !== 'hidden',
        position: style.position};
"""

LEGEND = """
const shown = (id) => !document.getElementById(id).hidden;
const c = document.getElementById('segment-map');
return {done: shown('legend-done'), active: shown('legend-active'), todo: shown('legend-todo'),
        activeRanges: Number(c.dataset.activeRanges), todoBytes: Number(c.dataset.todoBytes || 0),
        summary: document.getElementById('segment-summary').textContent,
        task: document.getElementById('detail').dataset.taskId};
"""


def emulate(driver, width, height, mobile):
    """The page's viewport as a device of that size (touch and a mobile viewport for a phone)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 3 if mobile else 1, "mobile": mobile,
    })
    driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": mobile, "maxTouchPoints": 5 if mobile else 1})


def box(driver, selector):
    return driver.execute_script(BOX, selector)


def tap(driver, selector):
    """A finger's tap at the middle of the element (touch events, from which the browser makes the click)."""
    b = box(driver, selector)
    assert b and b["shown"], "%s is not shown: %r" % (selector, b)
    assert 0 <= b["left"] and b["right"] <= driver.execute_script("return window.innerWidth") + 0.5, \
        "%s is not within the screen: %r" % (selector, b)
    point = {"x": (b["left"] + b["right"]) / 2, "y": (b["top"] + b["bottom"]) / 2}
    driver.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [point]})
    driver.execute_cdp_cmd("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})


def expect_no_sideways_scrolling(driver, width):
    layout = driver.execute_script(OVERFLOW)
    assert layout["inner"] == width, "the layout viewport grew past the device's %d px: %r" % (width, layout)
    assert layout["doc"] <= width and layout["body"] <= width, "the page scrolls sideways at %d px: %r" % (width, layout)
    assert layout["out"] == [], "elements past the screen's edge at %d px: %r" % (width, layout["out"])


def keep_screenshot(driver, name):
    screenshot(driver, name)
    print("screenshot: " + os.path.join(SCREENSHOTS, name))


def legend(driver, task_id, what, predicate):
    last = [None]

    def check():
        reading = last[0] = driver.execute_script(LEGEND)
        return reading if reading["task"] == task_id and predicate(reading) else None

    try:
        return WebDriverWait(driver, WAIT, poll_frequency=0.2).until(lambda d: check())
    except Exception:
        raise AssertionError("%s; the legend last read %r" % (what, last[0])) from None


def test_a_phone_gets_cards_folded_menus_and_details_over_the_list(dashboard, nginx, browsers):
    driver = browsers()
    emulate(driver, 390, 844, mobile=True)
    log_in(driver, dashboard)
    expect_no_sideways_scrolling(driver, 390)

    add(driver, [nginx["base"] + "/slow/paused.bin", nginx["base"] + "/fast/small.bin",
                 nginx["base"] + "/fast/missing-with-a-rather-long-name-for-a-phone.bin"], dashboard.downloads)
    running = wait_row(driver, "paused.bin", lambda r: r["state"] == "running" and r["bytes"] > 0, "running with bytes")
    wait_row(driver, "small.bin", lambda r: r["state"] == "finished", "finished")
    wait_row(driver, "missing-with-a-rather-long-name-for-a-phone.bin", lambda r: r["state"] == "failed", "failed")
    expect_no_sideways_scrolling(driver, 390)

    # Each task is a card: taller than a table row, as wide as the screen, its name, progress, state and speed shown.
    card = '.row[data-task-id="%s"]' % running["id"]
    card_box = box(driver, card)
    assert card_box["height"] >= 90 and card_box["right"] <= 390, card_box
    for part in (".name", ".progress", ".badge", ".col-speed"):
        b = box(driver, card + " " + part)
        assert b["shown"] and b["right"] <= 390 and card_box["top"] <= b["top"] and b["bottom"] <= card_box["bottom"], (part, b)
    assert box(driver, ".list-head .col-progress")["shown"] is False, "no table header over cards"
    WebDriverWait(driver, WAIT).until(lambda d: "/s" in d.find_element(By.CSS_SELECTOR, card + " .col-speed").text,
                                      message="the card shows the download's speed")
    keep_screenshot(driver, "phone-390x844.png")

    # The header's settings fold behind a button; tapping it shows them within the screen.
    assert box(driver, "#session-controls")["shown"] is False
    tap(driver, "#settings-toggle")
    WebDriverWait(driver, WAIT).until(lambda d: box(d, "#session-concurrency")["shown"])
    assert box(driver, "#session-rate")["right"] <= 390
    expect_no_sideways_scrolling(driver, 390)
    tap(driver, "#settings-toggle")
    WebDriverWait(driver, WAIT).until(lambda d: not box(d, "#session-controls")["shown"])

    # The actions on selected tasks: select a card by its box, unfold Actions, pause it.
    tap(driver, card + " .row-check")
    WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.ID, "selection-count").text == "1 selected")
    assert box(driver, "#action-pause")["shown"] is False, "folded until asked for"
    tap(driver, "#actions-toggle")
    WebDriverWait(driver, WAIT).until(lambda d: box(d, "#action-pause")["shown"])
    expect_no_sideways_scrolling(driver, 390)
    tap(driver, "#action-pause")
    wait_row(driver, "paused.bin", lambda r: r["state"] == "paused", "paused from the Actions menu")

    # Tapping a card opens its details over the list; the map of a paused task fetches nothing.
    tap(driver, card + " .name")
    WebDriverWait(driver, WAIT).until(lambda d: box(d, "#detail")["shown"])
    sheet = box(driver, "#detail")
    assert sheet["position"] == "fixed" and sheet["left"] <= 0.5 and sheet["right"] >= 389.5, sheet
    reading = legend(driver, running["id"], "a paused task's map: done and not yet, nothing being fetched",
                     lambda m: m["done"] and m["todo"] and not m["active"])
    assert "being fetched" not in reading["summary"] and "not yet" in reading["summary"], reading
    # The map is drawn at the sheet's width (in device pixels), not at the width it had while hidden.
    assert driver.execute_script("return document.getElementById('segment-map').width") >= 300
    expect_no_sideways_scrolling(driver, 390)
    keep_screenshot(driver, "phone-390x844-details.png")

    # The task's own buttons: resume it from its details, then close them.
    tap(driver, "#detail-resume")
    wait_row(driver, "paused.bin", lambda r: r["state"] in ("running", "waiting", "finished"), "resumed from its details")
    tap(driver, "#detail-close")
    WebDriverWait(driver, WAIT).until(lambda d: not box(d, "#detail")["shown"])

    # From 360 px to 430 px nothing scrolls sideways, with both menus unfolded.
    tap(driver, "#settings-toggle")
    for width in (360, 375, 414, 430):
        emulate(driver, width, 800, mobile=True)
        WebDriverWait(driver, WAIT).until(lambda d: d.execute_script("return window.innerWidth") == width)
        expect_no_sideways_scrolling(driver, width)
    assert row(driver, "small.bin") is not None


def test_a_desktop_keeps_the_table_and_the_side_pane(dashboard, nginx, browsers):
    driver = browsers()
    emulate(driver, 1400, 900, mobile=False)
    log_in(driver, dashboard)
    add(driver, [nginx["base"] + "/seg/segmented.bin"], dashboard.downloads, segments=4)
    task = wait_row(driver, "segmented.bin", lambda r: r["state"] == "running" and r["bytes"] > 0, "running")
    expect_no_sideways_scrolling(driver, 1400)

    # The table: a header over rows of the old height, every column shown; no fold-out buttons.
    assert box(driver, ".list-head .col-progress")["shown"] and box(driver, ".list-head .col-eta")["shown"]
    assert 50 <= box(driver, '.row[data-task-id="%s"]' % task["id"])["height"] <= 54
    for toggle in ("#settings-toggle", "#actions-toggle", "#detail-close"):
        assert box(driver, toggle)["shown"] is False, toggle
    assert box(driver, "#action-pause")["shown"] and box(driver, "#session-concurrency")["shown"]

    # The details beside the list, not over it.
    driver.find_element(By.CSS_SELECTOR, '.row[data-task-id="%s"] .name' % task["id"]).click()
    WebDriverWait(driver, WAIT).until(lambda d: d.find_element(By.ID, "detail").get_attribute("data-task-id") == task["id"])
    pane, listing = box(driver, "#detail"), box(driver, "#task-list")
    assert pane["position"] != "fixed" and pane["left"] >= listing["right"] - 1, (pane, listing)

    # While it runs the legend shows what is being fetched; paused, none (and what is left is "not yet").
    legend(driver, task["id"], "a running map with ranges being fetched", lambda m: m["active"] and m["activeRanges"] >= 1)
    keep_screenshot(driver, "desktop-1400x900.png")
    driver.find_element(By.ID, "action-pause").click()
    wait_row(driver, "segmented.bin", lambda r: r["state"] == "paused", "paused")
    reading = legend(driver, task["id"], "a paused map: nothing being fetched, the rest not yet",
                     lambda m: not m["active"] and m["activeRanges"] == 0 and m["todo"] and m["todoBytes"] > 0)
    assert "being fetched" not in reading["summary"] and "not yet" in reading["summary"], reading
    expect_no_sideways_scrolling(driver, 1400)
