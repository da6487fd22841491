"""Headless Chromium for the browser tests, through Selenium and Debian's
`chromium` + `chromium-driver` (installed by scripts/setup.sh).

Nothing is downloaded: the driver and the browser are given by path
(`CHIMBUKO_CHROMEDRIVER`, `CHIMBUKO_CHROMIUM` override /usr/bin/chromedriver and
/usr/bin/chromium), and Selenium Manager is kept offline.

Use from a test module:

    from browser import browser, screenshot, console_errors, network_requests, open_page

    def test_page(browser, screenshot):
        open_page(browser, "file:///tmp/x.html")
        assert console_errors(browser) == []
        screenshot("overview", "#overview")

`browser` is one Chromium per test module; `console_errors` and
`network_requests` return what was logged since they were last called (or
since `open_page`, which clears both logs before it navigates).
"""
import json
import os
import pathlib
import re
import urllib.parse

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHIMBUKO_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHIMBUKO_CHROMEDRIVER", "/usr/bin/chromedriver")
WINDOW = (1400, 1000)
# URL schemes a self-contained page may request besides its own file.
LOCAL_SCHEMES = ("data:", "blob:", "about:")

# Selenium Manager must never fetch a driver or a browser.
os.environ.setdefault("SE_OFFLINE", "1")


def artifact_dir():
    """Where screenshots go: $CHIMBUKO_TEST_ARTIFACTS, else target/test-artifacts/report/."""
    d = pathlib.Path(os.environ.get("CHIMBUKO_TEST_ARTIFACTS") or ROOT / "target" / "test-artifacts" / "report")
    d.mkdir(parents=True, exist_ok=True)
    return d


def start_browser():
    """A new headless Chromium with browser and performance (network) logging."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("selenium missing: scripts/setup.sh installs it into the venv")
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not os.access(path, os.X_OK):
            pytest.fail(f"{path} missing: scripts/setup.sh installs the Debian package {package}")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={WINDOW[0]},{WINDOW[1]}", "--no-first-run",
                "--disable-background-networking", "--disable-component-update",
                "--disable-extensions", "--disable-sync", "--hide-scrollbars"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    service = Service(executable_path=CHROMEDRIVER)
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(60)
    return driver


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the whole test module."""
    driver = start_browser()
    yield driver
    driver.quit()


def clear_logs(driver):
    """Drops what the browser and performance logs hold so far."""
    driver.get_log("browser")
    driver.get_log("performance")


def open_page(driver, url, timeout=20):
    """Clears the logs, loads `url` in a fresh document (about:blank first, so
    that a URL differing only in its fragment is a new load, not a jump) and
    waits until the document is complete."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get("about:blank")
    clear_logs(driver)
    driver.get(url)
    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script("return document.readyState") == "complete")


def console_errors(driver):
    """Browser log entries of level SEVERE (console.error, uncaught exceptions,
    failed loads) logged since the last call; each a dict with `message`."""
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def network_requests(driver):
    """URLs of every Network.requestWillBeSent since the last call."""
    urls = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg.get("method") == "Network.requestWillBeSent":
            urls.append(msg["params"]["request"]["url"])
    return urls


def foreign_requests(urls, page_url):
    """The requests that are neither the page itself (fragment ignored) nor
    data:/blob:/about: URLs."""
    own = urllib.parse.urldefrag(page_url)[0]
    return [u for u in urls
            if urllib.parse.urldefrag(u)[0] != own and not u.startswith(LOCAL_SCHEMES)]


def _safe(text):
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")


def save_screenshot(driver, test_name, view, css=None):
    """Saves a PNG `<test>-<view>.png` to artifact_dir(): the element `css`
    (scrolled into view first) when given and not empty, else the viewport.
    Returns the path."""
    path = artifact_dir() / f"{_safe(test_name)}-{_safe(view)}.png"
    if css is not None:
        from selenium.webdriver.common.by import By

        el = driver.find_element(By.CSS_SELECTOR, css)
        driver.execute_script("arguments[0].scrollIntoView({block: 'start'});", el)
        if el.size["width"] > 0 and el.size["height"] > 0 and el.screenshot(str(path)):
            return path
    assert driver.save_screenshot(str(path)), path
    return path


@pytest.fixture
def screenshot(browser, request):
    """`screenshot(view, css=None)`: save_screenshot named after the running test."""
    def shoot(view, css=None):
        return save_screenshot(browser, request.node.name, view, css)
    return shoot
