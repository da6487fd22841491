"""The provenance file of a ROSS analysis read by independent tools: h5py
and pandas read every table with the documented columns, the records agree
with the --summary-out JSON, and the HDF5 command-line tools read it."""
import json
import shutil
import subprocess

import h5py
import pandas as pd
import pytest

from conftest import ROOT, mpirun

FIXTURE = ROOT / "tests" / "fixtures" / "ross" / "phold-np4-opt-gvt-kplp-rbtrace"
STALLED = ROOT / "tests" / "fixtures" / "ross" / "phold-np2-cons-all"

COLUMNS = {
    "ross/anomalies": ["id", "kind", "pe", "kp", "lp", "signal", "series", "gvt_from", "gvt_to",
                       "real_from", "real_to", "first_interval", "last_interval", "score",
                       "value", "peer_median", "caused_by_pe", "caused_by_lp", "evidence_start", "evidence_len",
                       "senders_start", "senders_len"],
    "ross/evidence": ["anomaly", "interval", "value"],
    "ross/senders": ["anomaly", "lp", "events"],
    "ross/entities": ["rank", "kind", "pe", "kp", "lp", "cost_s", "incidents", "anomalies"],
    "ross/series_stats": ["series", "kind", "pe", "kp", "lp", "signal", "count", "sum", "mean",
                          "std", "min", "max"],
    "ross/intervals": ["series", "pe", "interval", "gvt_from", "gvt_to", "real_from", "real_to"],
    "ross/peer_model": ["series", "kind", "signal", "interval", "entities", "median", "mad"],
    "ross/run_wide": ["id", "signal", "gvt_from", "gvt_to", "real_from", "real_to",
                      "first_interval", "last_interval", "score", "value", "usual", "excess",
                      "share_of_run", "caused_by_pe", "caused_by_lp", "evidence_start",
                      "evidence_len"],
    "ross/run_wide_evidence": ["anomaly", "interval", "value"],
    "ross/run_model": ["signal", "interval", "value", "usual", "score", "anomalous"],
}



@pytest.fixture(scope="module")
def run(binary, tmp_path_factory):
    d = tmp_path_factory.mktemp("ross")
    out, summary = d / "ross.h5", d / "summary.json"
    subprocess.run(mpirun(2) + [binary, "ross", str(FIXTURE), "--ross-stdout",
                                str(FIXTURE / "ross-stdout.txt"), "--out", str(out),
                                "--summary-out", str(summary)],
                   check=True, capture_output=True)
    return out, json.loads(summary.read_text())


def text(col):
    return col.str.decode("utf-8")


def test_h5py_and_pandas_read_every_table(run):
    out, summary = run
    with h5py.File(out, "r") as f:
        assert f.attrs["source"] == "ross"
        assert f.attrs["completed"] == 1
        assert f.attrs["ad_ranks"] == 2
        assert f.attrs["algorithm"] == "peer"
        assert json.loads(f.attrs["algorithm_params"])["threshold"] == 6.0
        assert json.loads(f.attrs["ross_run"])["pes"] == 4
        for name, cols in COLUMNS.items():
            df = pd.DataFrame(f[name][:])
            assert list(df.columns) == cols, name
        per = f["ross/trace_events_per_interval"][:]
        assert per.sum() == summary["run"]["trace"]["records"]


def test_records_agree_with_the_summary(run):
    out, summary = run
    with h5py.File(out, "r") as f:
        a = pd.DataFrame(f["ross/anomalies"][:])
        ev = pd.DataFrame(f["ross/evidence"][:])
        ent = pd.DataFrame(f["ross/entities"][:])
    assert len(a) == len(summary["anomalies"]) == 3
    for (_, row), js in zip(a.iterrows(), summary["anomalies"]):
        assert row["kind"].decode() == js["kind"]
        assert row["signal"].decode() == js["signal"]
        assert row["pe"] == js["pe"]
        assert (row["lp"] if row["lp"] >= 0 else None) == js["lp"]
        assert row["gvt_from"] == js["gvt_from"] and row["gvt_to"] == js["gvt_to"]
        assert row["score"] == js["score"]
        rows = ev.iloc[row["evidence_start"]:row["evidence_start"] + row["evidence_len"]]
        assert (rows["anomaly"] == row["id"]).all()
        assert list(rows["value"]) == js["evidence"]["values"]
    assert list(ent["pe"]) == [e["pe"] for e in summary["entities"]]
    assert ent["pe"].iloc[0] == 3


@pytest.fixture(scope="module")
def stalled_run(binary, tmp_path_factory):
    """The conservative fixture: no PE stands out, the whole run stalls."""
    d = tmp_path_factory.mktemp("ross-stall")
    out, summary = d / "ross.h5", d / "summary.json"
    subprocess.run(mpirun(2) + [binary, "ross", str(STALLED), "--out", str(out),
                                "--summary-out", str(summary)],
                   check=True, capture_output=True)
    return out, json.loads(summary.read_text())


def test_run_wide_records_agree_with_the_summary(stalled_run, binary, tmp_path):
    out, summary = stalled_run
    with h5py.File(out, "r") as f:
        params = json.loads(f.attrs["algorithm_params"])
        w = pd.DataFrame(f["ross/run_wide"][:])
        ev = pd.DataFrame(f["ross/run_wide_evidence"][:])
        model = pd.DataFrame(f["ross/run_model"][:])
    assert params["run_wide_algorithm"] == "modal"
    assert params["run_wide_warmup_intervals"] == 8
    # Four run-wide windows, no anomaly of any PE.
    assert len(summary["anomalies"]) == 0
    assert len(w) == len(summary["run_wide"]) == 4
    for (_, row), js in zip(w.iterrows(), summary["run_wide"]):
        assert row["signal"].decode() == js["signal"]
        assert row["gvt_from"] == js["gvt_from"] and row["gvt_to"] == js["gvt_to"]
        assert row["score"] == js["score"]
        assert row["caused_by_pe"] == -1 and js["caused_by_pe"] is None
        rows = ev.iloc[row["evidence_start"]:row["evidence_start"] + row["evidence_len"]]
        assert list(rows["value"]) == js["evidence"]["values"]
        # The model's record says the same intervals were anomalous.
        lo, hi = js["intervals"]
        mine = model[text(model["signal"]) == js["signal"]].set_index("interval")["anomalous"]
        assert (mine.loc[lo:hi] == 1).all() and mine.loc[lo - 1] == 0
    # Every GVT interval of each of the four run-level series.
    assert len(model) == 4 * summary["run"]["gvt_intervals"]
    assert (model[model["interval"] < 8]["anomalous"] == 0).all()
    text_out = subprocess.run([binary, "inspect", str(out)], check=True, capture_output=True,
                              text=True).stdout
    assert "run-wide slowdowns: 4" in text_out and "every PE at once" in text_out
    subprocess.run([binary, "export", "--json", str(out), str(tmp_path / "e")], check=True,
                   capture_output=True)
    wide = json.loads((tmp_path / "e" / "run_wide.json").read_text())
    assert [d["signal"] for d in wide] == [w["signal"] for w in summary["run_wide"]]
    assert wide[0]["evidence"][1]["value"] == summary["run_wide"][0]["evidence"]["values"][1]


def test_hdf5_command_line_tools_read_it(run):
    out, _ = run
    for tool in ["h5ls", "h5dump"]:
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed")
    ls = subprocess.run(["h5ls", "-r", str(out)], check=True, capture_output=True, text=True).stdout
    for name in COLUMNS:
        assert "/" + name in ls
    dump = subprocess.run(["h5dump", "-a", "source", str(out)], check=True, capture_output=True,
                          text=True).stdout
    assert "ross" in dump


def test_inspect_and_export(run, binary, tmp_path):
    out, summary = run
    text_out = subprocess.run([binary, "inspect", str(out)], check=True, capture_output=True,
                              text=True).stdout
    assert "ROSS analysis" in text_out and "PE 3: event_process_s" in text_out
    subprocess.run([binary, "export", "--json", str(out), str(tmp_path / "e")], check=True,
                   capture_output=True)
    docs = json.loads((tmp_path / "e" / "anomalies.json").read_text())
    assert [d["signal"] for d in docs] == [a["signal"] for a in summary["anomalies"]]
    assert docs[1]["lp"] == 35 and docs[1]["kp"] == 0
    assert json.loads((tmp_path / "e" / "run_wide.json").read_text()) == []
    assert "run-wide slowdowns: 0" in text_out
