"""The Python package in python/ (`chimbuko_mpi`), installed with pip into a
temporary target and checked against the provenance file read directly
with h5py: tables, strings, the worst anomalies with their call stacks,
anomalies per rank and step, per-function statistics, incomplete files,
layout variants (event ids of any form, call stacks with or without a
`func` column, variable-length strings) and ROSS files."""
import importlib
import json
import os
import shutil
import subprocess
import sys
import warnings

import h5py
import numpy as np
import pytest

from conftest import ROOT, mpirun

ROSS_FIXTURE = ROOT / "tests" / "fixtures" / "ross" / "phold-np4-opt-gvt-kplp-rbtrace"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """`pip install --no-deps --target` of a copy of python/, imported from
    there (not from the source tree or the venv's copy)."""
    d = tmp_path_factory.mktemp("pkg")
    src, site = d / "src", d / "site"
    shutil.copytree(ROOT / "python", src,
                    ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"))
    base = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site)]
    res = subprocess.run(base + [str(src)], capture_output=True, text=True)
    if res.returncode != 0:
        # Offline: build with the venv's own setuptools instead of a fresh one.
        res = subprocess.run(base + ["--no-build-isolation", str(src)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    saved = {k: v for k, v in sys.modules.items() if k == "chimbuko_mpi" or k.startswith("chimbuko_mpi.")}
    for k in saved:
        del sys.modules[k]
    sys.path.insert(0, str(site))
    try:
        mod = importlib.import_module("chimbuko_mpi")
        assert os.path.realpath(mod.__file__).startswith(os.path.realpath(site))
        yield mod, site
    finally:
        sys.path.remove(str(site))
        for k in [k for k in sys.modules if k == "chimbuko_mpi" or k.startswith("chimbuko_mpi.")]:
            del sys.modules[k]
        sys.modules.update(saved)


@pytest.fixture(scope="module")
def run(binary, tmp_path_factory):
    """A workflow of two programs (alpha: 2 ranks, beta: 3 ranks) analysed
    by 2 AD ranks."""
    d = tmp_path_factory.mktemp("pkgrun")
    for name, ranks, seed in (("alpha", 2, 1), ("beta", 3, 7)):
        subprocess.run([binary, "synth", "--out", d / name, "--binary", name, "--ranks", str(ranks),
                        "--steps", "5", "--events-per-step", "2000", "--seed", str(seed)],
                       check=True, capture_output=True)
    out = d / "prov.h5"
    subprocess.run(mpirun(2) + [binary, "run", "--quiet",
                                "--input", str(d / "alpha" / "tau-metrics-alpha-{rank}.bp"),
                                "--input", str(d / "beta" / "tau-metrics-beta-{rank}.bp"),
                                "--out", str(out), "--flush-steps", "2"],
                   check=True, capture_output=True)
    return out


def text(v):
    return v.decode("utf-8").rstrip("\x00") if isinstance(v, bytes) else v.rstrip("\x00")


def h5_function_names(f):
    fn = f["functions"][:]
    return {int(i): text(n) for i, n in zip(fn["fid"], fn["name"])}


def h5_stack(f, record, names):
    """A record's own frames from the `record` column (innermost first)."""
    cs = f["anomalies/call_stack"][:]
    rows = cs[(cs["record"] == record) & (cs["of_gpu_parent"] == 0)]
    rows = rows[np.argsort(rows["level"], kind="stable")]
    return [names[int(x)] for x in rows["fid"]]


def h5_worst(f, n, by):
    rec = f["anomalies/records"][:]
    idx = np.flatnonzero(rec["final_label"] == -1)
    order = idx[np.argsort(-rec[by][idx], kind="stable")]
    return rec, order[:n]


def test_the_package_is_installed_with_its_metadata_and_script(installed, run):
    mod, site = installed
    dist = next(site.glob("chimbuko_mpi-*.dist-info"))
    meta = (dist / "METADATA").read_text()
    assert "Name: chimbuko-mpi" in meta
    for dep in ("h5py", "numpy", "pandas"):
        assert f"Requires-Dist: {dep}" in meta
    assert "chimbuko-prov = chimbuko_mpi.cli:main" in (dist / "entry_points.txt").read_text()
    for name in ("open", "worst", "anomalies_per_rank_step", "function_stats", "table"):
        obj = getattr(mod, name, None) or getattr(mod.Provenance, name)
        assert obj.__doc__, name
    env = dict(os.environ, PYTHONPATH=str(site))
    res = subprocess.run([str(site / "bin" / "chimbuko-prov"), str(run), "--worst", "3"],
                         capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert "worst 3 anomalies by outlier_score" in res.stdout
    assert "main > timestep > compute" in res.stdout
    assert "programs: 0 alpha, 1 beta" in res.stdout


def test_every_table_with_str_strings_and_parsed_attributes(installed, run):
    mod, _ = installed
    with h5py.File(run, "r") as f, mod.open(run) as p:
        paths = []
        f.visititems(lambda name, obj: paths.append(name) if isinstance(obj, h5py.Dataset) else None)
        assert sorted(p.tables) == sorted(paths)
        for path in paths:
            data = f[path][:]
            df = p.table(path)
            assert len(df) == len(data), path
            for col in data.dtype.names or ():
                if data.dtype[col].kind == "S":
                    assert [text(v) for v in data[col]] == list(df[col]), (path, col)
                    assert all(isinstance(v, str) for v in df[col]), (path, col)
                else:
                    assert np.array_equal(np.asarray(df[col]), data[col], equal_nan=True), (path, col)
        assert p.anomalies is p.table("anomalies/records")
        assert p.normals is p.table("normal_execs/records")
        assert p.call_stack is p.table("anomalies/call_stack")
        assert p.exec_window is p.table("anomalies/exec_window")
        assert p.normal_call_stack is p.table("normal_execs/call_stack")
        assert p.model_params_hist.columns.tolist() == ["value"]
        for name in ("functions", "counters", "streams", "steps", "func_stats", "ad_perf"):
            assert getattr(p, name) is p.table(name)
        with pytest.raises(AttributeError):
            p.no_such_table
        with pytest.raises(KeyError):
            p.table("no/such")
        assert p.attrs["algorithm_params"] == json.loads(f.attrs["algorithm_params"])
        assert isinstance(p.attrs["configuration"], list)
        assert len(p.attrs["input_streams"]) == 5
        assert p.attrs["ad_ranks"] == 2 and isinstance(p.attrs["ad_ranks"], int)
        assert p.schema_version == int(f.attrs["schema_version"])
        assert p.completed is True
        assert p.source == "tau"
        assert p.programs == {0: "alpha", 1: "beta"}
        functions = p.functions
        for path in paths:
            d = p.describe(path)
            ds = f[path]
            assert list(d.index) == list(ds.dtype.names or ["value"])
            assert d.attrs["description"] == ds.attrs.get("description", "")
            for col in d.index:
                assert d.loc[col, "unit"] == ds.attrs.get(f"{col}.unit", "")
    # Loaded tables outlive the file; others cannot be loaded any more.
    assert len(functions) == len(p.functions)
    q = mod.open(run)
    q.close()
    with pytest.raises(ValueError):
        q.table("ad_model")


@pytest.mark.parametrize("by", ["outlier_score", "runtime_total"])
def test_worst_are_the_largest_with_their_call_stacks(installed, run, by):
    mod, _ = installed
    n = 7
    with h5py.File(run, "r") as f, mod.open(run) as p:
        rec, order = h5_worst(f, n, by)
        names = h5_function_names(f)
        w = p.worst(n, by=by)
        assert len(w) == n
        assert list(w.index) == [int(i) for i in order]
        assert np.array_equal(w[by].to_numpy(), rec[by][order])
        assert (w["final_label"] == -1).all()
        for record, row in w.iterrows():
            own = h5_stack(f, record, names)  # innermost first
            assert row["call_stack"] == own[::-1]
            assert row["call_stack"][-1] == names[int(rec["fid"][record])] == row["function"]
            assert row["call_stack"][0] == "main"
            assert row["event_id"] == text(rec["event_id"][record])
            assert row["program"] == ("alpha" if rec["pid"][record] == 0 else "beta")
        inner = p.worst(n, by=by, root_first=False)
        assert [s[0] for s in inner["call_stack"]] == list(w["function"])
        assert [s[::-1] for s in inner["call_stack"]] == list(w["call_stack"])
        assert set(p.worst(3, full=True).columns) >= set(p.anomalies.columns) | {"call_stack"}
        assert len(p.worst(-1)) == int((rec["final_label"] == -1).sum())
        with pytest.raises(ValueError):
            p.worst(3, by="event_id")


def test_anomalies_per_rank_step_equals_a_direct_groupby(installed, run):
    mod, _ = installed
    with h5py.File(run, "r") as f, mod.open(run) as p:
        rec = f["anomalies/records"][:]
        rec = rec[rec["final_label"] == -1]
        streams = f["streams"][:]
        table = p.anomalies_per_rank_step()
    assert int(table.to_numpy().sum()) == len(rec)
    assert table.index.names == ["program", "rank"]
    assert sorted(table.index) == sorted(
        (("alpha" if pid == 0 else "beta"), int(rid)) for pid, rid in zip(streams["pid"], streams["rid"]))
    direct = {}
    for pid, rid, step in zip(rec["pid"], rec["rid"], rec["io_step"]):
        key = ("alpha" if pid == 0 else "beta", int(rid), int(step))
        direct[key] = direct.get(key, 0) + 1
    for (program, rank), row in table.iterrows():
        for step, count in row.items():
            assert count == direct.get((program, rank, int(step)), 0)


def test_function_stats_one_row_per_function_with_the_records_counts(installed, run):
    mod, _ = installed
    with h5py.File(run, "r") as f, mod.open(run) as p:
        names = h5_function_names(f)
        rec = f["anomalies/records"][:]
        rec = rec[rec["final_label"] == -1]
        fs = f["func_stats"][:]
        stats = p.function_stats()
    assert sorted(stats.index) == sorted(names)
    assert dict(zip(stats.index, stats["function"])) == names
    fids, counts = np.unique(rec["fid"], return_counts=True)
    by_records = dict(zip(fids.tolist(), counts.tolist()))
    assert stats["anomaly_records"].to_dict() == {fid: by_records.get(fid, 0) for fid in names}
    # No cap on stored records here: the run's counts equal the records'.
    assert (stats["anomalies"] == stats["anomaly_records"]).all()
    assert stats.attrs["sources"]["calls"] == "func_stats.inclusive_count"
    calls = dict(zip(fs["fid"].tolist(), fs["inclusive_count"].tolist()))
    assert stats["calls"].to_dict() == calls
    rate = stats["anomalies"].astype(float) / stats["calls"].astype(float)
    # Message-size classes are functions without calls of their own: NaN.
    assert np.allclose(stats["anomaly_rate"], rate, equal_nan=True)
    for fid in by_records:
        best = rec["final_score"][rec["fid"] == fid].max()
        assert abs(stats.loc[fid, "worst_score"] - best) <= 1e-3
    assert stats.loc[[fid for fid in names if fid not in by_records], "worst_score"].isna().all()
    assert set(stats["program"]) == {"alpha", "beta"}


def test_function_stats_without_func_stats_come_from_the_records(installed, run, tmp_path):
    mod, _ = installed
    bare = tmp_path / "no-func-stats.h5"
    shutil.copy(run, bare)
    with h5py.File(bare, "r+") as f:
        del f["func_stats"]
        rec = f["anomalies/records"][:]
        rec = rec[rec["final_label"] == -1]
        model = f["ad_model"][:]
    with mod.open(bare) as p:
        stats = p.function_stats()
    src = stats.attrs["sources"]
    assert src["anomalies"] == "anomalies/records (final)"
    assert src["worst_score"] == "anomalies/records.final_score (final)"
    assert src["calls"] == "ad_model.count"
    assert (stats["anomalies"] == stats["anomaly_records"]).all()
    assert int(stats["anomalies"].sum()) == len(rec)
    for fid in np.unique(rec["fid"]):
        assert stats.loc[int(fid), "worst_score"] == rec["final_score"][rec["fid"] == fid].max()
    assert stats["calls"].to_dict() == dict(zip(model["fid"].tolist(), model["count"].tolist()))
    assert stats["exclusive_mean_us"].isna().all()


def test_an_incomplete_file_warns(installed, run, tmp_path):
    mod, _ = installed
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mod.open(run).close()
    bad = tmp_path / "incomplete.h5"
    shutil.copy(run, bad)
    with h5py.File(bad, "r+") as f:
        f.attrs["completed"] = np.uint64(0)
    with pytest.warns(mod.IncompleteProvenanceWarning, match="did not complete"):
        p = mod.open(bad)
    assert p.completed is False
    assert len(p.worst(3)) == 3
    p.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mod.open(bad, warn_incomplete=False).close()


def rewrite(f, path, fields):
    """Rewrites dataset `path` with the compound type `fields` (name, dtype,
    values) in place."""
    data = np.empty(len(fields[0][2]), dtype=[(n, t) for n, t, _ in fields])
    for n, _, v in fields:
        data[n] = v
    del f[path]
    f.create_dataset(path, data=data)


def replace_column(f, path, column, dtype=None, values=None):
    """Rewrites dataset `path` with `column` replaced by (dtype, values),
    added when missing, or dropped when `dtype` is None."""
    data = f[path][:]
    fields = [(n, data.dtype[n], data[n]) for n in data.dtype.names if n != column]
    if dtype is not None:
        at = data.dtype.names.index(column) if column in data.dtype.names else len(fields)
        fields.insert(at, (column, dtype, values))
    rewrite(f, path, fields)


def test_layout_variants_read_the_same(installed, run, tmp_path):
    """Whatever the event ids look like, with or without a `func` column in
    the call stacks, fixed- or variable-length strings: the same worst
    anomalies with the same call stacks."""
    mod, _ = installed
    with mod.open(run) as p:
        before = p.worst(10)
        stats = p.function_stats()
    vlen = h5py.string_dtype()

    # Call-stack rows with their own (marked) names, variable-length strings
    # and event ids of another form.
    own = tmp_path / "own-names.h5"
    shutil.copy(run, own)
    with h5py.File(own, "r+") as f:
        names = h5_function_names(f)
        n = len(f["anomalies/records"])
        replace_column(f, "anomalies/records", "event_id", vlen, [f"ev{i}" for i in range(n)])
        cs = f["anomalies/call_stack"][:]
        replace_column(f, "anomalies/call_stack", "func", vlen, [f"F:{names[int(x)]}" for x in cs["fid"]])
        replace_column(f, "functions", "name", vlen, [text(x) for x in f["functions"][:]["name"]])
    with mod.open(own) as p:
        after = p.worst(10)
        assert all(isinstance(v, str) for v in p.anomalies["event_id"])
        assert all(isinstance(v, str) for v in p.functions["name"])
        assert list(after["event_id"]) == [f"ev{i}" for i in before.index]
        assert list(after.index) == list(before.index)
        assert all(x.startswith("F:") for s in after["call_stack"] for x in s)
        assert [[x[len("F:"):] for x in s] for s in after["call_stack"]] == list(before["call_stack"])
        assert list(after["function"]) == list(before["function"])
        assert p.function_stats()["function"].equals(stats["function"])

    # No `func` column (schema 3): names through `fid` and `functions`.
    bare = tmp_path / "no-func.h5"
    shutil.copy(run, bare)
    with h5py.File(bare, "r+") as f:
        replace_column(f, "anomalies/call_stack", "func")
        assert "func" not in f["anomalies/call_stack"].dtype.names
    with mod.open(bare) as p:
        after = p.worst(10)
        assert list(after.index) == list(before.index)
        assert list(after["call_stack"]) == list(before["call_stack"])


def test_a_ross_file(installed, binary, tmp_path):
    mod, site = installed
    out = tmp_path / "ross.h5"
    subprocess.run(mpirun(1) + [binary, "ross", str(ROSS_FIXTURE), "--out", str(out)],
                   check=True, capture_output=True)
    with h5py.File(out, "r") as f, mod.open(out) as p:
        assert p.source == "ross"
        assert p.anomalies is None and p.functions is None
        a = p.ross_anomalies
        assert a is p.table("ross/anomalies")
        assert list(a["kind"]) == [text(x) for x in f["ross/anomalies"]["kind"]]
        assert all(isinstance(x, str) for x in a["signal"])
        per = p.table("ross/trace_events_per_interval")
        assert int(per["value"].sum()) == int(f["ross/trace_events_per_interval"][:].sum())
        assert p.attrs["ross_run"]["pes"] == 4
        with pytest.raises(ValueError):
            p.worst(3)
    res = subprocess.run([sys.executable, "-m", "chimbuko_mpi", str(out)], capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=str(site)))
    assert res.returncode == 0, res.stderr
    assert "ROSS anomalies: 3" in res.stdout


def test_incidents_read_as_h5py_reads_them(installed, binary, tmp_path):
    """A coupled run with one injected delay: the package's incident tables
    equal h5py's, `incident(1)` holds its evidence and members, and the
    floor's attributes are there."""
    mod, _ = installed
    sc = tmp_path / "c.toml"
    sc.write_text("""
kind = "coupled"
seed = 3
binary = "pkgring"
ranks = 4
iterations = 200
exchange = "sendrecv"
message_bytes = 1048576
allreduce_every = 5

[[phase]]
name = "compute"
runtime = { dist = "normal", mean = 1500, std = 30 }

[[inject]]
kind = "delay"
rank = 2
function = "compute"
iterations = [50, 150]
add_us = 20000
""")
    subprocess.run([binary, "synth", str(sc), "--out", str(tmp_path / "d"), "--engine", "BP4"],
                   check=True, capture_output=True)
    out = tmp_path / "p.h5"
    subprocess.run(mpirun(2) + [binary, "run", "--quiet", "--input",
                                str(tmp_path / "d" / "tau-metrics-pkgring-{rank}.bp"),
                                "--out", str(out)], check=True, capture_output=True)
    with mod.open(out) as p, h5py.File(out) as f:
        inc = p.incidents
        assert len(inc) == len(f["incidents"]) >= 1
        assert list(inc["id"]) == list(f["incidents"]["id"])
        assert inc.iloc[0]["cause"] == "slow_execution"
        assert inc.iloc[0]["rank"] == 2 and inc.iloc[0]["func"] == "compute"
        assert inc.iloc[0]["occurrences"] == 2
        one = p.incident(1)
        assert list(one["evidence"]["what"]) == [text(w) for w in
                                                 f["incident_evidence"]["what"][:len(one["evidence"])]]
        assert set(one["members"]["role"]) >= {"root", "propagated_wait"}
        assert (one["members"]["incident"] == 1).all()
        floor = p.incident_floor
        assert floor["floor"] == pytest.approx(f.attrs["incident_floor"])
        assert floor["total_rank_s"] > 0
        assert "cost" in p.describe("incidents").index
