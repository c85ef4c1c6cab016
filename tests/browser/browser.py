"""Headless Chromium for the report tests and the load-time benchmark: Debian's chromium and
chromium-driver driven by python3-selenium. `start()` returns a WebDriver, or raises Skip when
no browser can be found (the caller exits with SKIP_CODE then, which ctest shows as skipped)."""

import os
import shutil
import tempfile

SKIP_CODE = 77


class Skip(Exception):
    pass


def start(width=1400, height=1000):
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as e:
        raise Skip("python3-selenium is not installed (apt-get install python3-selenium): %s" % e)
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        raise Skip("no chromium/chromedriver on PATH (apt-get install chromium chromium-driver)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    profile = tempfile.mkdtemp(prefix="ppsched-chromium-")
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--hide-scrollbars", "--force-device-scale-factor=1",
                 "--window-size=%d,%d" % (width, height), "--user-data-dir=" + profile):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(driver), options=opts)
    d._ppsched_profile = profile
    return d


def stop(d):
    profile = getattr(d, "_ppsched_profile", None)
    try:
        d.quit()
    finally:
        if profile:
            shutil.rmtree(profile, ignore_errors=True)


def file_url(path):
    return "file://" + os.path.abspath(path)
