"""The daemon judges what is typed into the dashboard, and the page shows its message: the page sends the values
as typed (any checksum algorithm the daemon knows, up to the daemon's number of segments) instead of holding
rules of its own. Against a real daemon and nginx, in headless Chromium.
"""
import hashlib
import os
import urllib.request

from conftest import sha256_of
from test_dashboard import WAIT, fill_add_dialog, log_in, row, submit_add_dialog, wait_row

try:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # the fixtures skip (or fail under CI) with the reason
    By = Keys = EC = WebDriverWait = None


def add_error(driver, containing):
    """The Add dialog's error line once it says `containing` (the dialog stays open)."""
    WebDriverWait(driver, WAIT).until(lambda d: containing in d.find_element(By.ID, "add-error").text)
    assert driver.find_element(By.ID, "add-dialog").is_displayed()
    return driver.find_element(By.ID, "add-error").text


def retype(driver, element_id, text):
    field = driver.find_element(By.ID, element_id)
    field.clear()
    field.send_keys(text)


def test_what_the_daemon_refuses_shows_its_message_and_what_it_accepts_is_sent_as_typed(dashboard, nginx, browsers):
    driver = browsers()
    log_in(driver, dashboard)
    url = nginx["base"] + "/fast/small.bin"
    with urllib.request.urlopen(url, timeout=60) as answer:
        md5 = hashlib.md5(answer.read()).hexdigest()

    # More segments than the daemon allows: its message, word for word, and nothing is added.
    fill_add_dialog(driver, [url], dashboard.downloads, segments=65)
    driver.find_element(By.ID, "add-submit").click()
    add_error(driver, '"segments" must be between 1 and 64')
    # An algorithm the daemon does not know: its message names the ones it does.
    retype(driver, "add-segments", "4")
    retype(driver, "add-checksum", "crc32:cbf43926")
    driver.find_element(By.ID, "add-submit").click()
    text = add_error(driver, "unknown checksum algorithm")
    assert "md5" in text and "sha512" in text, text
    # Words where a number goes: the daemon says what it expects.
    retype(driver, "add-checksum", "")
    retype(driver, "add-segments", "four")
    driver.find_element(By.ID, "add-submit").click()
    add_error(driver, '"segments" must be a whole number')
    # A URL the daemon cannot download.
    retype(driver, "add-segments", "")
    retype(driver, "add-urls", "ftp://127.0.0.1/small.bin")
    driver.find_element(By.ID, "add-submit").click()
    add_error(driver, "unsupported URL scheme")
    assert driver.execute_script("return window.haulDashboard.taskCount()") == 0
    assert os.listdir(dashboard.downloads) == []

    # What the page used to refuse itself and the daemon accepts: an MD5 checksum, more than 32 segments.
    retype(driver, "add-urls", url)
    retype(driver, "add-checksum", "MD5:" + md5.upper())
    retype(driver, "add-segments", "48")
    submit_add_dialog(driver)
    wait_row(driver, "small.bin", lambda r: r["state"] == "finished", "finished, its MD5 verified")
    assert sha256_of(os.path.join(dashboard.downloads, "small.bin")) == nginx["files"]["small.bin"]["sha256"]
    # The MD5 is the daemon's to check: another file with a wrong one fails with the daemon's reason.
    fill_add_dialog(driver, [nginx["base"] + "/fast/extra-2.bin"], dashboard.downloads, checksum="md5:" + "0" * 32)
    submit_add_dialog(driver)
    failed = wait_row(driver, "extra-2.bin", lambda r: r["state"] == "failed", "failed: its MD5 differs")
    assert "checksum mismatch" in failed["text"] and "md5:" + "0" * 32 in failed["text"], failed["text"]
    assert not os.path.exists(os.path.join(dashboard.downloads, "extra-2.bin"))

    # A session name the daemon refuses, in the New… dialog.
    driver.find_element(By.ID, "session-new").click()
    WebDriverWait(driver, WAIT).until(EC.visibility_of_element_located((By.ID, "session-name")))
    driver.find_element(By.ID, "session-name").send_keys("no spaces allowed", Keys.ENTER)
    WebDriverWait(driver, WAIT).until(
        lambda d: "must be letters, digits" in d.find_element(By.ID, "session-error").text
    )
    assert '"no spaces allowed"' in driver.find_element(By.ID, "session-error").text
    driver.find_element(By.ID, "session-cancel").click()

    # The session's concurrency: the daemon's rule, in the toast.
    concurrency = driver.find_element(By.ID, "session-concurrency")
    concurrency.clear()
    concurrency.send_keys("-1", Keys.ENTER)
    WebDriverWait(driver, WAIT).until(lambda d: '"count" must be 0 or more' in d.find_element(By.ID, "toast").text)
    assert row(driver, "small.bin")["state"] == "finished"
    # Every module loaded and ran without an error or a CSP violation.
    logs = driver.get_log("browser")
    assert [e["message"] for e in logs if e["level"] == "SEVERE" or "Content Security Policy" in e["message"]] == []
