"""The browser harness itself (tests/python/browser.py): Chromium starts
offline, and console errors and network requests are seen."""
import urllib.parse

from selenium.webdriver.common.by import By

from browser import (browser, console_errors, foreign_requests, network_requests,  # noqa: F401
                     open_page, screenshot)


def data_url(html):
    return "data:text/html;charset=utf-8," + urllib.parse.quote(html)


def test_console_error_is_detected(browser):  # noqa: F811
    open_page(browser, data_url("<p>x</p><script>console.error('harness-boom')</script>"))
    errors = console_errors(browser)
    assert any("harness-boom" in e["message"] for e in errors), errors
    # Read once: the next call sees only what came after.
    assert console_errors(browser) == []


def test_uncaught_exception_is_detected(browser):  # noqa: F811
    open_page(browser, data_url("<script>null.nothing()</script>"))
    errors = console_errors(browser)
    assert any("TypeError" in e["message"] for e in errors), errors


def test_external_image_shows_in_network_requests(browser):  # noqa: F811
    url = data_url('<img src="http://example.invalid/x.png">')
    open_page(browser, url)
    requests = network_requests(browser)
    assert "http://example.invalid/x.png" in requests, requests
    assert foreign_requests(requests, url) == ["http://example.invalid/x.png"]


def test_self_contained_file_is_clean(browser, tmp_path, screenshot):  # noqa: F811
    page = tmp_path / "page.html"
    page.write_text("""<!doctype html><html><head><meta charset="utf-8"><title>t</title>
<style>#box { width: 200px; height: 100px; background: #48c; }</style></head>
<body><div id="box"></div><p id="out"></p>
<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" alt="">
<script>
document.getElementById('out').textContent = 'hash=' + location.hash;
URL.createObjectURL(new Blob(['x']));
</script></body></html>""")
    url = page.as_uri() + "#anomaly=0:1:2:3"
    open_page(browser, url)
    assert browser.find_element(By.ID, "out").text == "hash=#anomaly=0:1:2:3"
    assert console_errors(browser) == []
    requests = network_requests(browser)
    assert page.as_uri() in requests, requests
    assert foreign_requests(requests, url) == []
    png = screenshot("box", "#box")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
