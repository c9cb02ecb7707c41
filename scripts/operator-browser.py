#!/usr/bin/env python3
"""An operator using `vault receive`'s browser view, in Debian's Chromium driven by Selenium
(the tests' peer, not part of vault).

    operator-browser.py URL NAME DOCUMENT DOWNLOADS SCREENSHOT

Reads the operator's password from the environment (OPERATOR_PASSWORD, never argv); runs the
command in UPLOAD_COMMAND (a station's `vault upload`) once signed in. Headless, with a phone's
viewport (390 x 844). Steps: open /ui/ (sent to the sign-in page), sign in, see the stations,
let the station upload, reload the batches until the batch is listed, open DOCUMENT (a link's
text), download it into DOWNLOADS, take SCREENSHOT of the batches page, sign out, open /ui/
again. Prints one JSON object of what it saw; a step that fails prints {"failed": step, ...}
and exits 1. Every wait is bounded (two minutes).
"""
import json
import os
import subprocess
import sys

from selenium.webdriver.common.by import By

from browser import WAIT, chromium, fail, wait


def main():
    url, name, document, downloads, screenshot = sys.argv[1:6]
    seen = {}
    driver = chromium(downloads, 390, 844, phone=True)
    step = "start"

    def fits():
        return driver.execute_script(
            "return [window.innerWidth, document.documentElement.scrollWidth]")

    try:
        step = "open"
        driver.get(url + "/ui/")
        seen["firstPage"] = driver.current_url[len(url):]
        step = "sign in"
        driver.find_element(By.ID, "name").send_keys(name)
        driver.find_element(By.ID, "password").send_keys(os.environ["OPERATOR_PASSWORD"])
        driver.find_element(By.ID, "signin").click()
        wait("the stations page", lambda: driver.current_url.endswith("/ui/"))
        seen["stations"] = [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".station h2")]
        seen["batchesBefore"] = [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".station .batches")]
        seen["fits"] = {"stations": fits()}
        cookie = driver.get_cookie("vault_session") or {}
        seen["cookie"] = {k: cookie.get(k) for k in ("httpOnly", "sameSite", "secure", "path")}
        seen["session"] = cookie.get("value")
        step = "upload"
        up = subprocess.run(os.environ["UPLOAD_COMMAND"], shell=True, capture_output=True, text=True, timeout=WAIT)
        seen["upload"] = up.returncode
        if up.returncode != 0:
            raise RuntimeError("the upload failed: " + up.stderr)
        step = "batch appears"

        def batch_listed():
            driver.get(url + "/ui/batches")
            return driver.find_elements(By.CSS_SELECTOR, ".batch")
        wait("the batch", batch_listed)
        seen["documents"] = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "a.document")]
        seen["fits"]["batches"] = fits()
        driver.save_screenshot(screenshot)
        step = "document"
        driver.find_element(By.LINK_TEXT, document).click()
        wait("the document page", lambda: "/ui/documents/" in driver.current_url)
        seen["title"] = driver.find_element(By.TAG_NAME, "h1").text
        seen["fits"]["document"] = fits()
        step = "download"
        driver.find_element(By.ID, "download").click()

        def downloaded():
            names = [n for n in os.listdir(downloads) if not n.endswith(".crdownload") and not n.startswith(".")]
            busy = [n for n in os.listdir(downloads) if n.endswith(".crdownload")]
            return names if names and not busy else None
        seen["downloaded"] = wait("the download", downloaded)
        step = "sign out"
        driver.find_element(By.ID, "logout").click()
        wait("the sign-in page", lambda: driver.current_url.endswith("/ui/login"))
        driver.get(url + "/ui/batches")
        seen["afterSignOut"] = driver.current_url[len(url):]
        seen["signInFormAfterSignOut"] = len(driver.find_elements(By.ID, "signin")) == 1
    except Exception as e:  # noqa: BLE001 - reported to the test, which fails on it
        fail(driver, seen, step, e)
    driver.quit()
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
