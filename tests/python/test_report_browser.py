"""`chimbuko-mpi report prov.h5 -o report.html` opened in a real browser
(headless Chromium, tests/python/browser.py): one self-contained file, no
network, no console errors, numbers equal to `inspect --json`, sortable
function table, anomaly details with the call stack of the provenance file,
`#anomaly=<event id>` links. Screenshots of every view go to the artefact
directory (browser.artifact_dir()); nothing is asserted on pixels.

DOM contract:
  [data-stat="anomalies|functions|labelled_in_situ|normal_samples|ad_ranks|steps_written"]
      with data-value;
  #overview, #ranking, #over-time, #functions (views), #incomplete-warning;
  table#function-table: tbody tr[data-fid], td[data-key=K][data-value],
      th[data-key=K] sorts on click (aria-sort descending, then ascending);
  table#anomaly-table: tbody tr[data-event-id], a click opens #anomaly-detail
      with [data-role="event-id"], ol#anomaly-call-stack (root first, the
      anomalous function last) and svg#anomaly-timeline holding an element
      with the anomaly's data-event-id.
"""
import dataclasses
import json
import pathlib
import shutil
import subprocess

import h5py
import numpy as np
import pytest
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from browser import (artifact_dir, browser, console_errors, foreign_requests,  # noqa: F401
                     network_requests, open_page, screenshot)
from conftest import ROOT, mpirun

MAX_BYTES = 20 * 1024 * 1024
STATS = {  # data-stat key -> where inspect --json has it
    "anomalies": ("anomalies",),
    "functions": ("functions",),
    "labelled_in_situ": ("labelled_in_situ",),
    "normal_samples": ("normal_samples",),
    "ad_ranks": ("attributes", "ad_ranks"),
    "steps_written": ("attributes", "steps_written"),
}
VIEWS = ("overview", "ranking", "over-time", "functions")
WAIT = 10


def tau_fixture(fixture_dir):
    for d in (fixture_dir, ROOT.parent / "shared" / "fixtures" / "tau" / "simple_workflow"):
        if (d / "tau-metrics-main1-0.bp").is_dir():
            return d
    pytest.fail(f"real TAU fixture not found under {fixture_dir}")


@pytest.fixture(scope="module")
def provenance(binary, fixture_dir, tmp_path_factory):
    """Provenance files: a demo-like synthetic run, the real TAU workflow,
    and a copy of the first marked incomplete (root attribute completed = 0)."""
    d = tmp_path_factory.mktemp("report")
    subprocess.run([binary, "synth", "--out", d / "data", "--steps", "6",
                    "--events-per-step", "3000"], check=True, capture_output=True)
    demo = d / "demo.h5"
    subprocess.run(mpirun(2) + [binary, "run", "--quiet", "--input",
                                str(d / "data" / "tau-metrics-demo-{rank}.bp"),
                                "--out", str(demo), "--flush-steps", "2"],
                   check=True, capture_output=True)
    tau = d / "tau.h5"
    fix = tau_fixture(fixture_dir)
    subprocess.run(mpirun(2) + [binary, "run", "--quiet", "--engine", "BP4",
                                "--input", str(fix / "tau-metrics-main1-{rank}.bp"),
                                "--input", str(fix / "tau-metrics-main2-{rank}.bp"),
                                "--out", str(tau)],
                   check=True, capture_output=True)
    incomplete = d / "incomplete.h5"
    shutil.copyfile(demo, incomplete)
    with h5py.File(incomplete, "r+") as f:
        f.attrs.modify("completed", np.uint64(0))
    return {"demo": demo, "tau": tau, "incomplete": incomplete}


@dataclasses.dataclass
class Report:
    case: str
    prov: pathlib.Path
    html: pathlib.Path
    result: subprocess.CompletedProcess
    inspect: dict = dataclasses.field(repr=False)

    @property
    def url(self):
        """The report's file:// URL; fails with the command's output when it was not written."""
        assert self.result.returncode == 0, \
            f"report {self.prov} failed ({self.result.returncode}):\n{self.result.stderr}"
        assert self.html.is_file(), f"{self.html} not written"
        return self.html.as_uri()


@pytest.fixture(scope="module", params=["demo", "tau", "incomplete"])
def report(request, binary, provenance):
    """`chimbuko-mpi report FILE -o OUT.html` for each provenance file, with
    `inspect --json FILE` to compare with. A copy of each report goes to the
    artefact directory beside the screenshots."""
    case = request.param
    prov = provenance[case]
    html = prov.with_name(f"report-{case}.html")
    res = subprocess.run([binary, "report", str(prov), "-o", str(html)],
                         capture_output=True, text=True, timeout=300)
    inspected = json.loads(subprocess.run([binary, "inspect", "--json", str(prov)], check=True,
                                          capture_output=True, text=True).stdout)
    if res.returncode == 0 and html.is_file():
        shutil.copyfile(html, artifact_dir() / html.name)
    return Report(case, prov, html, res, inspected)


def wait(driver, what, message="", timeout=WAIT):
    """Waits until `what(driver)` is true; on time-out fails with `message`
    (a callable giving the text, so that it shows the state at that time)."""
    try:
        return WebDriverWait(driver, timeout).until(lambda d: what(d))
    except TimeoutException:
        pytest.fail(f"after {timeout} s: {message() if callable(message) else message}")


def assert_clean(driver, report):
    """No console errors and no request leaving the file since the last look."""
    errors = console_errors(driver)
    requests = network_requests(driver)
    assert (errors, foreign_requests(requests, report.html.as_uri())) == ([], []), (errors, requests)


def record_stack(prov, event_id):
    """(function, call-stack functions from level 0 = the execution itself
    to the root) of the anomaly record `event_id`, read with h5py."""
    with h5py.File(prov, "r") as f:
        rec = f["anomalies/records"][:]
        hits = np.nonzero(rec["event_id"] == event_id.encode())[0]
        assert len(hits) >= 1, f"{event_id} not in anomalies/records"
        r = rec[hits[0]]
        start, n = int(r["call_stack_start"]), int(r["call_stack_len"])
        frames = f["anomalies/call_stack"][start:start + n]
    frames = frames[frames["of_gpu_parent"] == 0]
    frames = frames[np.argsort(frames["level"], kind="stable")]
    assert len(frames) >= 1 and frames["level"][0] == 0
    return r["func"].decode(), [x.decode() for x in frames["func"]]


def record_ids(prov):
    with h5py.File(prov, "r") as f:
        return {x.decode() for x in f["anomalies/records"]["event_id"]}


def anomaly_rows(driver):
    rows = driver.find_elements(By.CSS_SELECTOR, "table#anomaly-table tbody tr[data-event-id]")
    assert rows, "no anomaly rows in table#anomaly-table"
    return rows


def check_detail(driver, report, event_id):
    """#anomaly-detail shows `event_id`: its id, its call stack root first
    (equal to the file's frames), and a timeline marking it."""
    wait(driver, lambda d: any(e.is_displayed() for e in d.find_elements(By.ID, "anomaly-detail")),
         "#anomaly-detail not visible")

    def shown(d):
        return [e.text.strip() for e in d.find_elements(
            By.CSS_SELECTOR, '#anomaly-detail [data-role="event-id"]')]
    wait(driver, lambda d: shown(d)[:1] == [event_id],
         lambda: f'#anomaly-detail [data-role="event-id"] shows {shown(driver)}, not {event_id}')
    items = [li.text.strip() for li in
             driver.find_elements(By.CSS_SELECTOR, "#anomaly-detail ol#anomaly-call-stack li")]
    assert len(items) >= 1 and all(items), items
    func, frames = record_stack(report.prov, event_id)
    root_first = frames[::-1]
    assert items == root_first, \
        f"ol#anomaly-call-stack {items} != the file's call stack, root first, {root_first}"
    assert items[-1] == func
    assert driver.find_elements(By.CSS_SELECTOR, "#anomaly-detail svg#anomaly-timeline"), \
        "no svg#anomaly-timeline in #anomaly-detail"
    marks = driver.find_elements(
        By.CSS_SELECTOR, f'#anomaly-detail svg#anomaly-timeline [data-event-id="{event_id}"]')
    assert marks, f"svg#anomaly-timeline has no element for {event_id}"
    # Zoomed on the anomaly and its window: the anomaly is drawn whole and
    # wide, an ancestor running beyond the view is clipped and says so.
    rects = driver.find_elements(By.CSS_SELECTOR, "#anomaly-detail svg#anomaly-timeline rect[data-event-id]")
    mine = [r for r in rects if r.get_attribute("data-event-id") == event_id]
    assert mine and mine[0].get_attribute("data-clipped") is None
    width = float(mine[0].get_attribute("width"))
    assert width >= 40, f"the anomaly is {width} px wide in a 730 px view"
    if len(frames) > 1 and frames[-1] in ("main", ".TAU application"):
        assert rects[0].get_attribute("data-clipped") is not None, \
            f"the root frame {frames[-1]} spans the run but is not marked clipped"


def test_report_command_writes_one_small_file(report):
    res = report.result
    assert "panicked" not in res.stderr
    assert res.returncode == 0, res.stderr
    assert str(report.html) in res.stdout, res.stdout
    size = report.html.stat().st_size
    print(f"report {report.case}: {report.html} {size} bytes")
    assert 0 < size < MAX_BYTES


def test_page_is_self_contained_and_error_free(browser, report):  # noqa: F811
    open_page(browser, report.url)
    errors = console_errors(browser)
    requests = network_requests(browser)
    assert (errors, foreign_requests(requests, report.url)) == ([], []), (errors, requests)
    assert report.html.as_uri() in requests, requests


def test_overview_numbers_equal_inspect(browser, report):  # noqa: F811
    open_page(browser, report.url)
    for stat, keys in STATS.items():
        want = report.inspect
        for k in keys:
            want = want[k]
        els = browser.find_elements(By.CSS_SELECTOR, f'[data-stat="{stat}"]')
        assert els, f'no [data-stat="{stat}"]'
        value = els[0].get_attribute("data-value")
        assert value is not None, f'[data-stat="{stat}"] has no data-value'
        assert float(value) == int(want), (stat, value, want)


def sort_values(driver, key):
    """data-value of td[data-key=key] in each row of the function table, in row order."""
    values = driver.execute_script(
        "return Array.from(document.querySelectorAll('table#function-table tbody tr'))"
        ".map(tr => { const td = tr.querySelector('td[data-key=\"' + arguments[0] + '\"]');"
        " return td ? td.getAttribute('data-value') : null; });", key)
    assert None not in values, f'a row lacks td[data-key="{key}"][data-value]: {values}'
    return [float(v) for v in values]


def monotonic(values, descending):
    v = [x for x in values if not np.isnan(x)]
    assert v, values
    pairs = list(zip(v, v[1:]))
    return all(a >= b for a, b in pairs) if descending else all(a <= b for a, b in pairs)


def test_function_table_has_every_function_and_sorts(browser, report):  # noqa: F811
    open_page(browser, report.url)
    rows = browser.find_elements(By.CSS_SELECTOR, "table#function-table tbody tr")
    assert len(rows) == report.inspect["functions"]
    fids = [r.get_attribute("data-fid") for r in rows]
    assert all(f not in (None, "") for f in fids) and len(set(fids)) == len(fids), fids
    for key in ("mean_us", "anomalies"):
        th = f'table#function-table th[data-key="{key}"]'
        for order in ("descending", "ascending"):
            browser.find_element(By.CSS_SELECTOR, th).click()
            wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, th).get_attribute("aria-sort") == order,
                 lambda: f'{th} aria-sort is '
                 f'{browser.find_element(By.CSS_SELECTOR, th).get_attribute("aria-sort")!r}, not {order!r}')
            values = sort_values(browser, key)
            assert len(values) == report.inspect["functions"]
            assert monotonic(values, order == "descending"), (key, order, values)
    assert_clean(browser, report)


def test_clicking_an_anomaly_opens_its_detail(browser, report):  # noqa: F811
    open_page(browser, report.url)
    rows = anomaly_rows(browser)
    ids = [r.get_attribute("data-event-id") for r in rows]
    assert len(ids) == len(set(ids)) <= report.inspect["anomalies"]
    assert set(ids) <= record_ids(report.prov)
    rows[0].click()
    check_detail(browser, report, ids[0])
    assert_clean(browser, report)


def test_fragment_opens_an_anomaly(browser, report):  # noqa: F811
    open_page(browser, report.url)
    event_id = anomaly_rows(browser)[-1].get_attribute("data-event-id")
    open_page(browser, f"{report.url}#anomaly={event_id}")
    check_detail(browser, report, event_id)
    assert_clean(browser, report)


def test_incomplete_run_is_flagged(browser, report):  # noqa: F811
    open_page(browser, report.url)
    shown = [e for e in browser.find_elements(By.ID, "incomplete-warning") if e.is_displayed()]
    if report.case == "incomplete":
        assert shown, "#incomplete-warning not visible"
        assert "incomplete" in shown[0].text.lower(), shown[0].text
    else:
        assert not shown, shown[0].text


def test_screenshots_of_every_view(browser, report, screenshot):  # noqa: F811
    open_page(browser, report.url)
    saved = [screenshot(view, f"#{view}") for view in VIEWS]
    rows = anomaly_rows(browser)
    rows[0].click()
    check_detail(browser, report, rows[0].get_attribute("data-event-id"))
    saved.append(screenshot("anomaly-detail", "#anomaly-detail"))
    for png in saved:
        assert png.stat().st_size > 0, png
    print("screenshots:", *saved, sep="\n  ")
    assert_clean(browser, report)


@pytest.mark.parametrize("kind", ["hdf5", "text"])
def test_a_file_that_is_no_provenance_file_is_refused(binary, tmp_path, kind):
    if kind == "hdf5":
        path = tmp_path / "other.h5"
        with h5py.File(path, "w") as f:
            f.create_dataset("values", data=np.arange(10))
    else:
        path = tmp_path / "notes.txt"
        path.write_text("not HDF5 at all\n")
    html = tmp_path / "out.html"
    res = subprocess.run([binary, "report", str(path), "-o", str(html)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode != 0, res.stdout
    assert "panicked" not in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert path.name in res.stderr, res.stderr
    assert "not a provenance file" in res.stderr.lower(), res.stderr
    assert not html.exists()
