"""What the tests' browser scripts share (operator-browser.py, operator-day.py): Debian's
Chromium under Selenium, headless, downloads into a folder; a bounded wait; and the report of a
step that failed (the tests' peer, not part of vault)."""
import json
import os
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

WAIT = float(os.environ.get("BROWSER_WAIT", "120"))


def chromium(downloads, width, height, phone=False):
    """A headless Chromium whose downloads go to DOWNLOADS, WIDTH x HEIGHT (a phone's viewport
    when PHONE: headless windows are at least 500 pixels wide otherwise)."""
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=%d,%d" % (width, height),
              "--no-first-run", "--disable-extensions", "--disable-background-networking",
              "--disable-sync", "--disable-component-update", "--user-data-dir=" + downloads + ".profile"):
        options.add_argument(a)
    if phone:
        options.add_experimental_option(
            "mobileEmulation", {"deviceMetrics": {"width": width, "height": height, "pixelRatio": 1}})
    options.add_experimental_option("prefs", {
        "download.default_directory": downloads, "download.prompt_for_download": False,
        "safebrowsing.enabled": False})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(WAIT)
    return driver


def wait(what, check):
    """CHECK's first true answer, asked every quarter second for two minutes at most."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        r = check()
        if r:
            return r
        time.sleep(0.25)
    raise TimeoutError("waited two minutes for " + what)


def fail(driver, seen, step, error, screenshot=None):
    """Prints what was seen with the step that failed, where and why; quits; exits 1."""
    seen["failed"] = step
    seen["error"] = "%s: %s" % (type(error).__name__, error)
    try:
        seen["at"] = driver.current_url
        seen["page"] = driver.find_element(By.TAG_NAME, "body").text[:500]
        if screenshot:
            driver.save_screenshot(screenshot)
    except Exception:  # noqa: BLE001 - the page may be gone
        pass
    print(json.dumps(seen))
    driver.quit()
    sys.exit(1)
