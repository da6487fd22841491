"""The Incidents view that opens the report, in a real browser (headless
Chromium), for a `run` of a coupled synthetic application and for a `ross`
analysis: it is the first section, it lists what `inspect --json` lists in
the same order with the same costs, a header click sorts it, and an
incident opened shows its evidence, its members and a drawing of its
costliest occurrence with the links between members. Screenshots go to the
artefact directory; nothing is asserted on pixels.

DOM contract:
  section#incidents first in main; p#incident-headline[data-listed][data-below];
  table#incident-table: tbody tr[data-incident], td[data-key=K][data-value]
      (id, cost, share, cause, root, when, occurrences, involved);
  details.incident#incident-N[data-cause] with ul.evidence li, a table of
      members, svg.incident-drawing[data-occurrence] holding rect.member.<role>
      and line.link.<link>.
"""
import json
import subprocess

import pytest
from selenium.webdriver.common.by import By

from browser import (artifact_dir, browser, console_errors, foreign_requests,  # noqa: F401
                     network_requests, open_page, screenshot)
from conftest import ROOT, mpirun

RING = """
kind = "coupled"
seed = 5
binary = "ringview"
ranks = 4
iterations = 300
period_us = 100000
exchange = "sendrecv"
message_bytes = 1048576
allreduce_every = 5

[[phase]]
name = "compute"
runtime = { dist = "normal", mean = 1500, std = 30 }
calls = [{ name = "kernel", runtime = { dist = "normal", mean = 500, std = 10 } }]

[[inject]]
kind = "message"
rank = 1
iterations = [50, 150, 250]
factor = 50

[[inject]]
kind = "delay"
rank = 2
function = "kernel"
iterations = [100]
add_us = 20000
"""


@pytest.fixture(scope="module")
def reports(binary, tmp_path_factory):
    """The reports of a TAU run and of a ROSS analysis, with what `inspect
    --json` (TAU) and `--summary-out` (ROSS) say of their incidents."""
    d = tmp_path_factory.mktemp("incidents")
    sc = d / "ring.toml"
    sc.write_text(RING)
    subprocess.run([binary, "synth", str(sc), "--out", str(d / "data"), "--engine", "BP4"],
                   check=True, capture_output=True)
    tau = d / "tau.h5"
    subprocess.run(mpirun(2) + [binary, "run", "--quiet", "--input",
                                str(d / "data" / "tau-metrics-ringview-{rank}.bp"),
                                "--out", str(tau), "--report", str(d / "tau.html")],
                   check=True, capture_output=True)
    tau_list = json.loads(subprocess.run([binary, "inspect", "--json", str(tau)], check=True,
                                         capture_output=True, text=True).stdout)["incidents"]
    subprocess.run([binary, "synth", "ross", str(ROOT / "scenarios" / "ross-paused.toml"),
                    "--out", str(d / "ross")], check=True, capture_output=True)
    ross = d / "ross.h5"
    summary = d / "ross.json"
    subprocess.run(mpirun(1) + [binary, "ross", str(d / "ross"), "--out", str(ross),
                                "--summary-out", str(summary)],
                   check=True, capture_output=True)
    subprocess.run([binary, "report", str(ross), "-o", str(d / "ross.html")], check=True,
                   capture_output=True)
    ross_list = json.loads(summary.read_text())["incidents"]
    for name in ("tau.html", "ross.html"):
        (artifact_dir() / f"incidents-{name}").write_bytes((d / name).read_bytes())
    return {"tau": (d / "tau.html", tau_list), "ross": (d / "ross.html", ross_list)}


@pytest.mark.parametrize("kind", ["tau", "ross"])
def test_incidents_open_the_report_as_inspect_lists_them(browser, reports, kind, screenshot):  # noqa: F811
    html, listed = reports[kind]
    open_page(browser, html.as_uri())
    sections = browser.find_elements(By.CSS_SELECTOR, "main > section")
    assert sections[0].get_attribute("id") == "incidents"
    head = browser.find_element(By.ID, "incident-headline")
    assert int(head.get_attribute("data-listed")) == len(listed["incidents"])
    assert int(head.get_attribute("data-below")) == listed["below_floor"]
    rows = browser.find_elements(By.CSS_SELECTOR, "#incident-table tbody tr")
    assert len(rows) == len(listed["incidents"]) > 0
    for row, inc in zip(rows, listed["incidents"]):
        cell = lambda k: row.find_element(By.CSS_SELECTOR, f'td[data-key="{k}"]')  # noqa: E731
        assert int(row.get_attribute("data-incident")) == inc["id"]
        assert float(cell("cost").get_attribute("data-value")) == pytest.approx(inc["cost_s"])
        assert cell("cause").get_attribute("data-value") == inc["cause"]
    assert console_errors(browser) == []
    assert foreign_requests(network_requests(browser), html.as_uri()) == []
    screenshot(f"incidents-{kind}", "#incidents")


@pytest.mark.parametrize("kind", ["tau", "ross"])
def test_an_incident_opened_shows_its_members_and_links(browser, reports, kind, screenshot):  # noqa: F811
    html, listed = reports[kind]
    open_page(browser, html.as_uri())
    first = listed["incidents"][0]
    det = browser.find_element(By.ID, "incident-1")
    assert det.get_attribute("data-cause") == first["cause"]
    det.find_element(By.TAG_NAME, "summary").click()
    assert det.get_attribute("open") is not None
    evidence = [li.text for li in det.find_elements(By.CSS_SELECTOR, "ul.evidence li")]
    assert len(evidence) == len(first["evidence"])
    assert evidence[0].startswith(first["evidence"][0]["what"])
    svg = det.find_element(By.CSS_SELECTOR, "svg.incident-drawing")
    assert svg.is_displayed()
    assert det.find_elements(By.CSS_SELECTOR, "svg rect.member.root")
    links = det.find_elements(By.CSS_SELECTOR, "svg line.link")
    assert links, "no link drawn"
    member_rows = det.find_elements(By.CSS_SELECTOR, "table tbody tr")
    assert len(member_rows) == min(50, len(first["members"]))
    screenshot(f"incident-open-{kind}", "#incident-1")


def test_the_oversized_message_is_first_with_its_bytes(reports):
    _, listed = reports["tau"]
    first = listed["incidents"][0]
    assert first["cause"] == "oversized_message"
    assert first["root"]["rank"] == 1 and first["occurrences"] == 3
    bytes_sent = [e for e in first["evidence"] if e["what"] == "bytes_sent"][0]
    assert bytes_sent["value"] == 50 * 1048576


def test_sorting_the_incident_table(browser, reports):  # noqa: F811
    html, _ = reports["tau"]
    open_page(browser, html.as_uri())
    th = browser.find_element(By.CSS_SELECTOR, '#incident-table th[data-key="cost"]')
    th.click()
    th.click()
    values = [float(c.get_attribute("data-value")) for c in
              browser.find_elements(By.CSS_SELECTOR, '#incident-table td[data-key="cost"]')]
    assert values == sorted(values)
