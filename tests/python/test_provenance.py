"""The provenance file read by independent tools: h5py, pandas, the HDF5
command-line tools, the documented example script, and Chimbuko's JSON
schema for the exported documents."""
import json
import pathlib
import shutil
import subprocess
import sys

import h5py
import jsonschema
import numpy as np
import pandas as pd
import pytest

from conftest import ROOT, mpirun


@pytest.fixture(scope="module")
def run(binary, tmp_path_factory):
    """A 2-rank analysis of a synthetic trace, with labels and provenance."""
    d = tmp_path_factory.mktemp("prov")
    subprocess.run([binary, "synth", "--out", d / "data", "--steps", "6",
                    "--events-per-step", "3000"], check=True, capture_output=True)
    out = d / "prov.h5"
    subprocess.run(mpirun(2) + [binary, "run", "--quiet", "--input",
                                str(d / "data" / "tau-metrics-demo-{rank}.bp"),
                                "--out", str(out), "--labels-out", str(d / "labels"),
                                "--truth", str(d / "data" / "truth-demo.csv"), "--flush-steps", "2"],
                   check=True, capture_output=True)
    return d, out


def decoded(df):
    for col in df.columns:
        if df[col].dtype == object:
            df[col] = df[col].str.decode("utf-8")
    return df


def test_h5py_and_pandas_read_every_table(run):
    _, out = run
    with h5py.File(out, "r") as f:
        assert f.attrs["completed"] == 1
        assert f.attrs["ad_ranks"] == 2
        assert isinstance(f.attrs["algorithm"], str)
        json.loads(f.attrs["algorithm_params"])
        tables = []
        f.visititems(lambda name, obj: tables.append(name) if isinstance(obj, h5py.Dataset) else None)
        for name in tables:
            data = f[name][:]
            if data.dtype.names:
                df = pd.DataFrame(data)  # one call per table, flat columns
                assert list(df.columns) == list(data.dtype.names)
                assert all(df[c].dtype != object or isinstance(df[c].iloc[0], bytes)
                           for c in df.columns if len(df))
        anomalies = decoded(pd.DataFrame(f["anomalies/records"][:]))
        functions = decoded(pd.DataFrame(f["functions"][:]))
        assert set(anomalies.func) <= set(functions.name)
        assert (anomalies.event_id == anomalies.pid.astype(str) + ":" +
                anomalies.event_rank.astype(str) + ":" +
                anomalies.event_step.astype(str) + ":" + anomalies.event_idx.astype(str)).all()
        # The call stack of every record starts with the record itself.
        stack = decoded(pd.DataFrame(f["anomalies/call_stack"][:]))
        first = stack[stack.level == 0].set_index("record").event_id
        assert (first.loc[anomalies.index] == anomalies.event_id.values).all()


def test_records_equal_the_label_files(run):
    d, out = run
    labels = pd.concat([pd.read_csv(p) for p in (d / "labels").glob("labels-*.csv")])
    flagged = labels[labels.in_situ_label == "anomaly"]
    with h5py.File(out, "r") as f:
        anomalies = decoded(pd.DataFrame(f["anomalies/records"][:]))
    assert (anomalies.event_id.str.split(":").str[0] == anomalies.pid.astype(str)).all()
    chimbuko_ids = anomalies.event_id.str.split(":", n=1).str[1]
    assert sorted(zip(anomalies.rid, chimbuko_ids)) == sorted(zip(flagged["rank"], flagged.event_id))


def test_hdf5_command_line_tools_read_it(run):
    _, out = run
    h5dump = shutil.which("h5dump")
    if h5dump is None:
        pytest.fail("h5dump missing: scripts/setup.sh installs hdf5-tools")
    header = subprocess.run([h5dump, "-H", str(out)], check=True, capture_output=True, text=True).stdout
    for name in ("anomalies", "records", "func_stats", "ad_model", "steps"):
        assert name in header
    attr = subprocess.run([h5dump, "-a", "/completed", str(out)], check=True,
                          capture_output=True, text=True).stdout
    assert "(0): 1" in attr


def test_h5dump_shows_text_without_padding(run):
    _, out = run
    dump = subprocess.run(["h5dump", "-d", "/anomalies/call_stack", "-c", "3", str(out)],
                          check=True, capture_output=True, text=True).stdout
    assert "\\000" not in dump, dump[:2000]
    assert "STRPAD H5T_STR_NULLTERM" in dump
    with h5py.File(out, "r") as f:
        func = f["anomalies/call_stack"][:3]["func"]
    for name in func:
        assert f'"{name.decode()}"' in dump
    whole = subprocess.run(["h5dump", str(out)], check=True, capture_output=True, text=True).stdout
    assert "\\000" not in whole


def test_every_table_describes_its_columns(run):
    _, out = run
    with h5py.File(out, "r") as f:
        tables = []
        f.visititems(lambda name, obj: tables.append(obj) if isinstance(obj, h5py.Dataset) else None)
        assert len(tables) > 10
        for ds in tables:
            assert ds.attrs["description"], ds.name
            for col in ds.dtype.names or ():
                assert ds.attrs[f"{col}.description"], (ds.name, col)
                assert f"{col}.unit" in ds.attrs, (ds.name, col)
        rec = f["anomalies/records"]
        assert rec.attrs["entry.unit"] == "µs"
        assert rec.attrs["event_id.unit"] == ""
        assert rec.attrs["entry.description"].startswith("Entry timestamp")
        assert f["ad_perf"].attrs["read.unit"] == "s"
        # Call-stack and window rows name their function.
        functions = f["functions"][:]
        names = {int(i): x.decode() for i, x in zip(functions["fid"], functions["name"])}
        for table in ("anomalies/call_stack", "anomalies/exec_window"):
            rows = f[table][:]
            assert len(rows) > 0
            assert [x.decode() for x in rows["func"]] == [names[i] for i in rows["fid"]]


def test_documented_example_runs(run):
    _, out = run
    script = ROOT / "docs" / "examples" / "read_provenance.py"
    res = subprocess.run([sys.executable, script, str(out), "--top", "3"], check=True,
                         capture_output=True, text=True)
    assert "functions with the most anomalies" in res.stdout
    assert "call stack" in res.stdout
    assert "window on its thread" in res.stdout


def test_json_export_validates_against_chimbukos_schema(run, binary, tmp_path):
    _, out = run
    subprocess.run([binary, "export", "--json", str(out), str(tmp_path)], check=True, capture_output=True)
    schema = json.loads((ROOT / "docs" / "schema" / "chimbuko-provdb.schema.json").read_text())
    docs = {}
    for name in ("anomalies", "normalexecs", "metadata", "func_stats", "counter_stats", "ad_model"):
        docs[name] = json.loads((tmp_path / f"{name}.json").read_text())
    jsonschema.validate(docs, schema)
    assert len(docs["anomalies"]) > 0 and len(docs["normalexecs"]) > 0
    # Values survive the export.
    with h5py.File(out, "r") as f:
        rec = f["anomalies/records"][:]
        kept = rec[rec["final_label"] == -1]
        assert len(kept) == len(docs["anomalies"])
        # The file's ids carry the program; Chimbuko's JSON form does not.
        ids = sorted(x.decode().split(":", 1)[1] for x in kept["event_id"])
        assert ids == sorted(a["event_id"] for a in docs["anomalies"])
        # Both carry the file's id to join on: every JSON document finds its
        # row, with the same values.
        by_key = {x["event_id"].decode(): x for x in kept}
        for a in docs["anomalies"]:
            row = by_key[a["exec_key"]]
            assert (a["pid"], a["rid"], a["entry"], a["exit"]) == (
                row["pid"], row["rid"], row["entry"], row["exit"])
            for frame in a["call_stack"]:
                assert frame["exec_key"].endswith(frame["event_id"])
        stats = f["func_stats"][:]
        total = int(np.sum(stats["total_anomalies"]))
    assert total == sum(0 if s["anomaly_metrics"] is None else s["anomaly_metrics"]["severity"]["count"]
                        for s in docs["func_stats"])


def test_inspect_summarises_the_run(run, binary):
    _, out = run
    res = subprocess.run([binary, "inspect", str(out)], check=True, capture_output=True, text=True)
    assert "anomalies per function" in res.stdout
    assert "worst anomalies" in res.stdout
    assert "compute" in res.stdout


def test_export_csv_equals_the_tables(run, binary, tmp_path):
    _, out = run
    res = subprocess.run([binary, "export", "--csv", str(out), str(tmp_path)],
                         check=True, capture_output=True, text=True)
    assert "anomalies.records.csv" in res.stdout
    with h5py.File(out, "r") as f:
        for name in ("anomalies/records", "anomalies/call_stack", "functions", "func_stats", "ad_perf"):
            want = decoded(pd.DataFrame(f[name][:]))
            got = pd.read_csv(tmp_path / (name.replace("/", ".") + ".csv"), keep_default_na=False,
                              na_values=["NaN"])
            assert list(got.columns) == list(want.columns), name
            assert len(got) == len(want), name
            for col in want.columns:
                if not pd.api.types.is_numeric_dtype(want[col]):
                    assert got[col].astype(str).tolist() == want[col].astype(str).tolist(), (name, col)
                else:
                    np.testing.assert_array_equal(got[col].to_numpy(dtype=want[col].dtype),
                                                  want[col].to_numpy(), err_msg=f"{name}.{col}")
