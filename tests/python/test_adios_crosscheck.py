"""Cross-check our reader against the independent ADIOS2 Python bindings.

`synth` writes streams with our Rust code; the `adios2` package reads them
here, and both must agree with `chimbuko-mpi dump --json --rows` on every
count and every value. The real TAU fixture is checked the same way.
"""
import json
import subprocess

import numpy as np
import pytest
from adios2 import Stream

WIDTHS = {"event_timestamps": 6, "comm_timestamps": 8, "counter_values": 6}
COUNTS = {"event_timestamps": "timer_event_count", "comm_timestamps": "comm_count", "counter_values": "counter_event_count"}


def read_with_python(path):
    """Every step's arrays and the attributes, read by the adios2 package."""
    steps = []
    attributes = {}
    with Stream(str(path), "r") as s:
        for _ in s.steps():
            step = {}
            variables = s.available_variables()
            for var, width in WIDTHS.items():
                count = int(s.read(COUNTS[var])) if COUNTS[var] in variables else 0
                if var in variables and count > 0:
                    data = np.asarray(s.read(var, start=[0, 0], count=[count, width]), dtype=np.uint64)
                    step[var] = data.reshape(count, width)
                else:
                    step[var] = np.zeros((0, width), dtype=np.uint64)
            for name in s.available_attributes():
                if name not in attributes:
                    value = s.read_attribute(name)
                    attributes[name] = value if isinstance(value, str) else str(value)
            steps.append(step)
    return steps, attributes


def dump_json(binary, path, engine="BPFile"):
    out = subprocess.run(
        [str(binary), "dump", "--engine", engine, "--json", "--rows", str(path)],
        check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout)


def assert_agree(py_steps, py_attrs, ours):
    assert len(py_steps) == len(ours["steps"])
    for py, st in zip(py_steps, ours["steps"]):
        rows = st["rows"]
        for var, key in (("event_timestamps", "funcs"), ("comm_timestamps", "comms"), ("counter_values", "counters")):
            mine = np.asarray(rows[key], dtype=np.uint64).reshape(-1, WIDTHS[var])
            theirs = py[var].copy()
            theirs[:, 0] = 0  # the program column is overridden (program index 0)
            assert mine.shape == theirs.shape, (st["step"], var)
            assert np.array_equal(mine, theirs), (st["step"], var)
        assert st["func_events"] == len(py["event_timestamps"])
    names = {f"timer {i}": n for i, n in ours["functions"]}
    names.update({f"counter {i}": n for i, n in ours["counters"]})
    for key, value in names.items():
        assert py_attrs[key].strip('"') == value
    assert len([k for k in py_attrs if k.startswith("timer ")]) == len(ours["functions"])


@pytest.mark.parametrize("engine", ["BP4", "BP5"])
def test_synth_streams_agree_with_adios2_python(binary, tmp_path, engine):
    subprocess.run(
        [str(binary), "synth", "--out", str(tmp_path), "--engine", engine, "--ranks", "2", "--steps", "4",
         "--events-per-step", "1200"],
        check=True, capture_output=True,
    )
    for rank in range(2):
        path = tmp_path / f"tau-metrics-demo-{rank}.bp"
        py_steps, py_attrs = read_with_python(path)
        ours = dump_json(binary, path)
        assert_agree(py_steps, py_attrs, ours)
        assert sum(len(s["event_timestamps"]) for s in py_steps) == ours["total_func_events"] > 4000
        assert sum(len(s["comm_timestamps"]) for s in py_steps) == ours["total_comm_events"] > 0
        assert py_attrs["event_type 0"] == "ENTRY"


def test_ground_truth_csv_names_real_executions(binary, tmp_path):
    subprocess.run([str(binary), "synth", "--out", str(tmp_path), "--steps", "4"], check=True, capture_output=True)
    import csv

    with open(tmp_path / "truth-demo.csv") as f:
        truth = list(csv.DictReader(f))
    assert truth, "the demo injects anomalies"
    by_rank = {}
    for row in truth:
        by_rank.setdefault(int(row["rank"]), []).append(row)
    for rank, rows in by_rank.items():
        py_steps, py_attrs = read_with_python(tmp_path / f"tau-metrics-demo-{rank}.bp")
        ev = np.concatenate([s["event_timestamps"] for s in py_steps])
        names = {int(k.split()[1]): v for k, v in py_attrs.items() if k.startswith("timer ")}
        for row in rows:
            hit = ev[(ev[:, 2] == int(row["thread"])) & (ev[:, 5] == int(row["entry_us"])) & (ev[:, 3] == 0)]
            assert any(names[int(h[4])] == row["function"] for h in hit), row
            assert int(row["inclusive_us"]) == int(row["exit_us"]) - int(row["entry_us"])


def test_real_tau_fixture_agrees_with_adios2_python(binary, fixture_dir):
    for name in ["tau-metrics-main1-0.bp", "tau-metrics-main2-1.bp"]:
        path = fixture_dir / name
        py_steps, py_attrs = read_with_python(path)
        ours = dump_json(binary, path, "BP4")
        assert len(py_steps) == 22
        assert_agree(py_steps, py_attrs, ours)
        assert ours["total_func_events"] == 2010
