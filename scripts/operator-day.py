#!/usr/bin/env python3
"""An operator's day in `vault receive`'s browser view, in Debian's Chromium driven by Selenium
(the tests' peer, not part of vault).

    operator-day.py URL NAME STATION SEARCH DOWNLOADS SHOTS

Reads the operator's password from OPERATOR_PASSWORD (never argv). Headless, at a laptop's
1280 x 900. Steps, each through the page's own links and forms: sign in; open Documents; search
for SEARCH (part of a name); filter by STATION and today (UTC), then by STATION and up to
yesterday; go to the last page of everything; filter by STATION and SEARCH and take "Download
all as a zip" into DOWNLOADS; acknowledge the first open alert. Screenshots of each page go to
SHOTS. Prints one JSON object of what it saw; a step that fails prints {"failed": step, ...} and
exits 1. Every wait is bounded (two minutes).
"""
import datetime
import json
import os
import sys

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from browser import chromium, fail, wait


def main():
    url, name, station, search, downloads, shots = sys.argv[1:7]
    seen = {}
    driver = chromium(downloads, 1280, 900)
    step = "start"

    def shot(label):
        driver.save_screenshot(os.path.join(shots, "operator-day-%s.png" % label))

    def text(element_id):
        return driver.find_element(By.ID, element_id).text

    def rows():
        return [{"name": e.find_element(By.CSS_SELECTOR, "a.document").text,
                 "meta": e.find_element(By.CSS_SELECTOR, ".meta").text}
                for e in driver.find_elements(By.CSS_SELECTOR, "li.row")]

    def fill(q="", station_name="", date_from="", date_to=""):
        driver.get(url + "/ui/documents")
        for field, value in (("q", q), ("from", date_from), ("to", date_to)):
            box = driver.find_element(By.ID, field)
            box.clear()
            if value:
                if field == "q":
                    box.send_keys(value)
                else:
                    # A date field takes the value through script (its typed form depends on the locale).
                    driver.execute_script("arguments[0].value = arguments[1]", box, value)
        Select(driver.find_element(By.ID, "station")).select_by_value(station_name)
        driver.find_element(By.ID, "filter").click()
        wait("the filtered page", lambda: "/ui/documents?" in driver.current_url)

    today = datetime.datetime.now(datetime.timezone.utc).date()
    yesterday = today - datetime.timedelta(days=1)
    try:
        step = "sign in"
        driver.get(url + "/ui/login")
        driver.find_element(By.ID, "name").send_keys(name)
        driver.find_element(By.ID, "password").send_keys(os.environ["OPERATOR_PASSWORD"])
        driver.find_element(By.ID, "signin").click()
        wait("the stations page", lambda: driver.current_url.endswith("/ui/"))
        step = "documents"
        driver.find_element(By.LINK_TEXT, "Documents").click()
        wait("the documents page", lambda: driver.current_url.endswith("/ui/documents"))
        seen["all"] = {"count": text("count"), "page": text("page"), "rows": len(rows())}
        shot("documents")
        step = "search"
        fill(q=search)
        seen["search"] = {"count": text("count"), "names": [r["name"] for r in rows()], "url": driver.current_url}
        shot("search")
        step = "station and today"
        fill(station_name=station, date_from=today.isoformat())
        found = rows()
        seen["stationToday"] = {"count": text("count"), "page": text("page"),
                                "allFromStation": all((" · %s · " % station) in r["meta"] for r in found),
                                "rows": len(found)}
        step = "station up to yesterday"
        fill(station_name=station, date_to=yesterday.isoformat())
        seen["stationYesterday"] = {"count": text("count"), "rows": len(rows())}
        step = "last page"
        fill()
        driver.find_element(By.ID, "last").click()
        wait("the last page", lambda: "page=" in driver.current_url)
        seen["last"] = {"page": text("page"), "rows": len(rows()), "next": len(driver.find_elements(By.ID, "next"))}
        shot("last-page")
        step = "archive"
        fill(q=search, station_name=station)
        seen["archive"] = {"count": text("count")}
        driver.find_element(By.ID, "archive").click()

        def downloaded():
            names = [n for n in os.listdir(downloads) if n.endswith(".zip")]
            busy = [n for n in os.listdir(downloads) if n.endswith(".crdownload")]
            return names if names and not busy else None
        seen["archive"]["files"] = wait("the archive", downloaded)
        step = "alerts"
        driver.find_element(By.LINK_TEXT, "Alerts").click()
        wait("the alerts page", lambda: driver.current_url.endswith("/ui/alerts"))
        seen["alertsBefore"] = [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".notice h2")]
        shot("alerts")
        driver.find_elements(By.CSS_SELECTOR, "button.acknowledge")[0].click()
        wait("the alerts page again", lambda: driver.find_elements(By.CSS_SELECTOR, ".acknowledged"))
        seen["alertsAfter"] = [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".notice h2")]
        seen["acknowledged"] = [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".acknowledged li")]
        shot("alerts-acknowledged")
    except Exception as e:  # noqa: BLE001 - reported to the test, which fails on it
        fail(driver, seen, step, e, os.path.join(shots, "operator-day-failed.png"))
    driver.quit()
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
