"""The provenance file of a chimbuko-mpi run as pandas DataFrames.

The layout is described in ``docs/provenance-schema.md`` of the
chimbuko-mpi repository; this module discovers the tables from the file
itself, so that tables added by later versions are readable too.
"""
from __future__ import annotations

import os
import warnings
from typing import Any, Dict, List, Optional, Union

import h5py
import numpy as np
import pandas as pd

from ._tables import attr_value, frame, numeric_columns, program_name, unique_labels

PathLike = Union[str, "os.PathLike[str]"]

#: Chimbuko's label codes (``label``, ``final_label``).
LABEL_NORMAL = 1
LABEL_ANOMALY = -1
LABEL_UNLABELED = 0

#: The selections of anomaly records the analyses accept (``which=``).
WHICH = ("final", "in_situ", "all")

#: The columns :meth:`Provenance.worst` returns unless asked for all.
WORST_COLUMNS = [
    "event_id", "program", "pid", "rid", "tid", "fid", "function", "io_step",
    "runtime_total", "runtime_exclusive", "outlier_score", "final_score",
    "label", "final_label",
]

# Above this many records, worst() loads the whole call-stack table
# instead of reading each record's rows on their own.
_SLICE_READS = 64


class IncompleteProvenanceWarning(UserWarning):
    """The file's root attribute ``completed`` is 0: the run was stopped (or
    is still running) and the file holds only the steps flushed so far; the
    global tables describe the run up to the last flush."""


def _aliases(path: str) -> List[str]:
    """The attribute names under which a dataset is offered."""
    parts = path.split("/")
    if len(parts) == 1:
        return [path]
    group, name = "/".join(parts[:-1]), parts[-1]
    if path == "anomalies/records":
        return ["anomalies"]
    if path == "normal_execs/records":
        return ["normals", "normal_execs"]
    if group == "anomalies":
        return [name]
    if group == "normal_execs":
        return ["normal_" + name]
    return [path.replace("/", "_")]


class Provenance:
    """A provenance file opened for reading.

    Every table of the file is a pandas DataFrame, loaded on first use and
    kept: the common ones are properties (:attr:`anomalies`,
    :attr:`normals`, :attr:`functions`, :attr:`call_stack`,
    :attr:`counters`, :attr:`streams`, :attr:`steps`, :attr:`func_stats`),
    every other one is an attribute named after its path (see
    :attr:`aliases`: ``exec_window`` is ``anomalies/exec_window``,
    ``normal_call_stack`` is ``normal_execs/call_stack``, ``ross_anomalies``
    is ``ross/anomalies``, a top-level table keeps its name), and
    :meth:`table` takes any path. String columns hold ``str``. A records
    table's index is the row number, which is the ``record`` column of its
    companion tables (named ``record``). The DataFrames are shared between
    calls: copy one before changing it.

    Use it as a context manager, or call :meth:`close`::

        with chimbuko_mpi.open("prov.h5") as p:
            print(p.worst(5))

    Opening a file whose run did not complete (root attribute
    ``completed`` = 0) warns with :class:`IncompleteProvenanceWarning`
    unless ``warn_incomplete`` is false.

    Parameters
    ----------
    path:
        The file's path, or an open ``h5py.File`` (left open by
        :meth:`close`).
    warn_incomplete:
        Warn when the file is incomplete (default true).
    **h5py_kwargs:
        Passed to ``h5py.File`` (for example ``locking=False`` to read a
        file a run is still writing on a file system without locks).
    """

    def __init__(self, path: Union[PathLike, h5py.File], *, warn_incomplete: bool = True,
                 _stacklevel: int = 2, **h5py_kwargs: Any) -> None:
        if isinstance(path, h5py.File):
            self._file: Optional[h5py.File] = path
            self._owns_file = False
            self.path = path.filename
        else:
            self.path = os.fspath(path)
            self._file = h5py.File(self.path, "r", **h5py_kwargs)
            self._owns_file = True
        self._cache: Dict[str, pd.DataFrame] = {}
        self._attrs: Optional[Dict[str, Any]] = None
        self._datasets: List[str] = []
        self._file.visititems(
            lambda name, obj: self._datasets.append(name) if isinstance(obj, h5py.Dataset) else None)
        # Top-level tables first, so that they keep their own names.
        self._alias_map: Dict[str, str] = {}
        for path_ in sorted(self._datasets, key=lambda p: (p.count("/"), self._datasets.index(p))):
            for alias in _aliases(path_):
                self._alias_map.setdefault(alias, path_)
        if warn_incomplete and not self.completed:
            warnings.warn(
                f"{self.path}: the run did not complete (completed = 0): the file holds "
                f"{self.attrs.get('steps_written', 'the flushed')} steps and the statistics "
                "of the last flush", IncompleteProvenanceWarning, stacklevel=_stacklevel + 1)

    # --- the file ---------------------------------------------------------

    def close(self) -> None:
        """Closes the file (unless it was passed in open). Tables already
        loaded stay readable."""
        if self._file is not None and self._owns_file:
            self._file.close()
        self._file = None

    def __enter__(self) -> "Provenance":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: h5py may be gone
            pass

    def __repr__(self) -> str:
        state = "closed" if self._file is None else "open"
        return (f"<Provenance {self.path!r} ({state}): {self.source} run, schema "
                f"{self.schema_version}, {'completed' if self.completed else 'INCOMPLETE'}, "
                f"{len(self._datasets)} tables>")

    @property
    def attrs(self) -> Dict[str, Any]:
        """The root attributes as a dict: text as ``str``, JSON-valued ones
        (``algorithm_params``, ``configuration``, ``input_streams``,
        ``ross_run``, ``warnings``) parsed, numbers as Python numbers."""
        if self._attrs is None:
            self._attrs = {k: attr_value(v) for k, v in self._open().attrs.items()}
        return dict(self._attrs)

    @property
    def schema_version(self) -> Optional[int]:
        """The layout version (root attribute ``schema_version``), or None."""
        v = self.attrs.get("schema_version")
        return None if v is None else int(v)

    @property
    def completed(self) -> bool:
        """Whether the run ended normally and wrote everything (root
        attribute ``completed`` = 1). A file without the attribute counts as
        completed, as ``chimbuko-mpi inspect`` counts it."""
        v = self.attrs.get("completed")
        return v is None or str(v) != "0"

    @property
    def source(self) -> str:
        """``tau`` for a ``chimbuko-mpi run`` file, ``ross`` for a
        ``chimbuko-mpi ross`` one (root attribute ``source``)."""
        return str(self.attrs.get("source", "tau"))

    @property
    def tables(self) -> List[str]:
        """The paths of every dataset in the file, in file order."""
        return list(self._datasets)

    @property
    def aliases(self) -> Dict[str, str]:
        """The attribute name of each table: ``{name: path}``."""
        return dict(self._alias_map)

    def has(self, name: str) -> bool:
        """Whether the file has the table ``name`` (a path or an alias)."""
        return self._resolve(name) is not None

    def table(self, name: str) -> pd.DataFrame:
        """The table ``name`` as a DataFrame (loaded once, then shared).

        ``name`` is a dataset path (``"anomalies/records"``,
        ``"ross/evidence"``, ``"functions"``) or an alias from
        :attr:`aliases`. Compound datasets give one column per member;
        plain ones (``model_params_hist``) one column, ``value``. String
        columns hold ``str``. Raises ``KeyError`` for a table the file does
        not have.
        """
        path = self._resolve(name)
        if path is None:
            raise KeyError(f"{self.path}: no table {name!r}; tables: {', '.join(self._datasets)}")
        if path not in self._cache:
            self._cache[path] = frame(self._open()[path][()])
            if path.endswith("/records"):
                self._cache[path].index.name = "record"
        return self._cache[path]

    def describe(self, name: str) -> pd.DataFrame:
        """The columns of table ``name``: one row per column (index
        ``column``) with ``dtype``, ``unit`` and ``description``.

        Units and descriptions come from the dataset's ``<column>.unit`` and
        ``<column>.description`` attributes, which files of schema version
        4 and later carry (empty strings in older files); the table's own
        ``description`` attribute is in ``.attrs["description"]`` of the
        result. Reads only the dataset's header, not its rows.
        """
        path = self._resolve(name)
        if path is None:
            raise KeyError(f"{self.path}: no table {name!r}; tables: {', '.join(self._datasets)}")
        ds = self._open()[path]
        attrs = {k: attr_value(v) for k, v in ds.attrs.items()}
        dtype = ds.dtype
        columns = list(dtype.names) if dtype.names else ["value"]
        rows = []
        for col in columns:
            kind = dtype[col] if dtype.names else dtype
            if h5py.check_string_dtype(kind) is not None or kind.kind in "SU":
                kind_name = "str"
            else:
                kind_name = str(kind)
            rows.append({"column": col, "dtype": kind_name,
                         "unit": str(attrs.get(f"{col}.unit", "")),
                         "description": str(attrs.get(f"{col}.description", ""))})
        out = pd.DataFrame(rows, columns=["column", "dtype", "unit", "description"]).set_index("column")
        out.attrs["description"] = str(attrs.get("description", ""))
        return out

    def _resolve(self, name: str) -> Optional[str]:
        name = name.strip("/")
        if name in self._datasets:
            return name
        return self._alias_map.get(name)

    def _open(self) -> h5py.File:
        if self._file is None:
            raise ValueError(f"{self.path}: the file is closed")
        return self._file

    def _maybe(self, name: str) -> Optional[pd.DataFrame]:
        return self.table(name) if self.has(name) else None

    def _rows(self, path: str, start: int, length: int) -> pd.DataFrame:
        """Rows ``start .. start+length`` of a table, from the loaded table
        when it is loaded, else read on their own."""
        if path in self._cache:
            return self._cache[path].iloc[start:start + length]
        return frame(self._open()[path][start:start + length], start=start)

    def __getattr__(self, name: str) -> pd.DataFrame:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            alias_map = object.__getattribute__(self, "_alias_map")
        except AttributeError:
            raise AttributeError(name) from None
        if name in alias_map:
            return self.table(alias_map[name])
        raise AttributeError(f"{type(self).__name__} has no attribute or table {name!r} "
                             f"(tables: {', '.join(sorted(alias_map))})")

    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | set(self._alias_map))

    # --- the common tables --------------------------------------------------

    @property
    def anomalies(self) -> Optional[pd.DataFrame]:
        """``anomalies/records``: every execution labelled anomalous in situ,
        and those found anomalous at the end; index ``record`` (the row).
        Today's anomalies are ``final_label == -1``. None in a file without
        it (a ROSS run)."""
        return self._maybe("anomalies/records")

    @property
    def normals(self) -> Optional[pd.DataFrame]:
        """``normal_execs/records``: the sampled normal executions; None when
        absent."""
        return self._maybe("normal_execs/records")

    @property
    def call_stack(self) -> Optional[pd.DataFrame]:
        """``anomalies/call_stack``: the anomalies' call-stack frames (the
        execution at ``level`` 0, then its callers); None when absent."""
        return self._maybe("anomalies/call_stack")

    @property
    def functions(self) -> Optional[pd.DataFrame]:
        """``functions``: ``fid``, ``pid``, full ``name``; None when absent."""
        return self._maybe("functions")

    @property
    def counters(self) -> Optional[pd.DataFrame]:
        """``counters``: ``counter_idx``, ``name``; None when absent."""
        return self._maybe("counters")

    @property
    def streams(self) -> Optional[pd.DataFrame]:
        """``streams``: one row per application stream (how far it was read
        and how it ended); None when absent."""
        return self._maybe("streams")

    @property
    def steps(self) -> Optional[pd.DataFrame]:
        """``steps``: executions and anomalies per stream and I/O step;
        None when absent."""
        return self._maybe("steps")

    @property
    def func_stats(self) -> Optional[pd.DataFrame]:
        """``func_stats``: the run's per-function statistics (RunStats
        columns); None when absent. :meth:`function_stats` is the short
        form."""
        return self._maybe("func_stats")

    # --- incidents ----------------------------------------------------------

    @property
    def incidents(self) -> Optional[pd.DataFrame]:
        """``incidents``: the problems that cost the run time, costliest
        first (``id`` 1 first): ``cause``, the root (``program``, ``rank``,
        ``thread``, ``func``, ``event_id`` for a run; ``pe``, ``kp``, ``lp``
        for a ROSS analysis; -1 where it does not apply), the window, the
        ``occurrences``, the ``cost`` (rank- or PE-seconds) and its
        ``share`` of the run's total rank time, members per role. None in a
        file written before incidents (schema < 5)."""
        return self._maybe("incidents")

    @property
    def incident_members(self) -> Optional[pd.DataFrame]:
        """``incident_members``: each incident's members (``incident``,
        ``occurrence``, ``role``, ``link``, who and when, ``cost``, what it is
        ``linked_to``); None when absent."""
        return self._maybe("incident_members")

    @property
    def incident_evidence(self) -> Optional[pd.DataFrame]:
        """``incident_evidence``: what makes each root the root (``what``,
        ``value`` against the ``usual`` one, ``unit``); None when absent."""
        return self._maybe("incident_evidence")

    @property
    def incident_floor(self) -> Dict[str, float]:
        """What the floor left out: ``floor`` (a share of the run's total
        rank time), ``below_floor`` occurrences and their ``cost``, the
        run's ``total_rank_s``."""
        a = self.attrs
        return {
            "floor": float(a.get("incident_floor", float("nan"))),
            "below_floor": float(a.get("incidents_below_floor", 0)),
            "below_floor_cost_s": float(a.get("incidents_below_floor_cost_s", 0.0)),
            "total_rank_s": float(a.get("total_rank_s", float("nan"))),
        }

    def incident(self, incident_id: int) -> Dict[str, Any]:
        """One incident as a dict: its row, its ``evidence`` and its
        ``members`` (DataFrames)."""
        inc = self.incidents
        if inc is None or not (inc["id"] == incident_id).any():
            raise KeyError(f"no incident {incident_id} in {self.path}")
        row = inc[inc["id"] == incident_id].iloc[0]
        ev = self.incident_evidence
        mem = self.incident_members
        return {
            **row.to_dict(),
            "evidence": ev[ev["incident"] == incident_id].reset_index(drop=True),
            "members": mem[mem["incident"] == incident_id].reset_index(drop=True),
        }

    # --- programs and names -------------------------------------------------

    @property
    def programs(self) -> Dict[int, str]:
        """Program labels by program index (``pid``): the program's name
        from its streams' paths (``tau-metrics-NAME-RANK.bp`` gives
        ``NAME``), the index as text when unknown, ``NAME#pid`` when two
        programs share a name."""
        names: Dict[int, str] = {}
        streams = self.streams
        if streams is not None and "path" in streams and "pid" in streams:
            for pid, path in zip(streams["pid"], streams["path"]):
                names.setdefault(int(pid), program_name(path))
        fn = self.functions
        for df in ((fn,) if fn is not None else (self.func_stats, self.anomalies)):
            if df is not None and "pid" in df:
                for pid in pd.unique(df["pid"]):
                    names.setdefault(int(pid), "")
        return unique_labels(dict(sorted(names.items())))

    def _program_label(self, pids: Any) -> List[str]:
        labels = self.programs
        return [labels.get(int(p), str(int(p))) for p in pids]

    def function_names(self) -> Dict[int, str]:
        """Full function names by global function index (``fid``), from
        ``functions``, completed with the (possibly cut) names of the
        records and ``func_stats``."""
        names: Dict[int, str] = {}
        fn = self.functions
        if fn is not None and "fid" in fn and "name" in fn:
            names.update(zip(fn["fid"].astype(int), fn["name"]))
        for df, col in ((self.func_stats, "fname"), (self.anomalies, "func")):
            if df is not None and "fid" in df and col in df:
                for fid, name in zip(df["fid"].astype(int), df[col]):
                    names.setdefault(fid, name)
        return names

    # --- anomalies ------------------------------------------------------------

    def anomaly_records(self, which: str = "final") -> pd.DataFrame:
        """The anomaly records selected by ``which``:

        - ``"final"`` (default): ``final_label == -1``, the anomalies after
          the end-of-run re-evaluation (the file's anomalies, as counted by
          ``func_stats`` and ``chimbuko-mpi export``);
        - ``"in_situ"``: ``label == -1``, as labelled during the run;
        - ``"all"``: every row of ``anomalies/records``.

        Index: ``record``. Raises ``ValueError`` for a file without
        ``anomalies/records`` (a ROSS run: see :attr:`ross_anomalies`).
        """
        if which not in WHICH:
            raise ValueError(f"which must be one of {WHICH}, not {which!r}")
        recs = self.anomalies
        if recs is None:
            raise ValueError(f"{self.path}: no anomalies/records table ({self.source} run)")
        if which == "all":
            return recs
        col = "final_label" if which == "final" and "final_label" in recs else "label"
        return recs[recs[col] == LABEL_ANOMALY]

    def call_stack_of(self, record: int, *, collection: str = "anomalies",
                      root_first: bool = True) -> pd.DataFrame:
        """The call stack of one record as frames with a ``function`` column.

        ``record`` is the record's row (the index of :attr:`anomalies` or
        :attr:`normals`); ``collection`` is ``"anomalies"`` or
        ``"normal_execs"``. Only the record's own stack (``of_gpu_parent ==
        0``): the root call first when ``root_first`` (default), else the
        execution itself first (``level`` 0, the file's order).
        """
        group = {"normals": "normal_execs"}.get(collection, collection)
        recs = self.table(f"{group}/records")
        return self._frames(group, recs.loc[[record]], root_first)[0]

    def _frames(self, group: str, recs: pd.DataFrame, root_first: bool) -> List[pd.DataFrame]:
        """The call-stack frames of each record of ``recs`` (records of
        ``group``), found through the records' ``call_stack_start`` /
        ``call_stack_len`` row ranges (the ``record`` column when the
        records have no range)."""
        path = f"{group}/call_stack"
        if not self.has(path):
            return [pd.DataFrame() for _ in range(len(recs))]
        ranged = "call_stack_start" in recs and "call_stack_len" in recs
        if not ranged or len(recs) > _SLICE_READS:
            self.table(path)
        whole = self._cache.get(path)
        by_record = None
        if not ranged:
            by_record = whole.groupby("record").indices if "record" in whole else {}
        names = self.function_names()
        out = []
        starts = recs["call_stack_start"] if ranged else [0] * len(recs)
        lengths = recs["call_stack_len"] if ranged else [0] * len(recs)
        for idx, start, length in zip(recs.index, starts, lengths):
            if ranged:
                frames = self._rows(path, int(start), int(length))
            else:
                frames = whole.iloc[by_record.get(idx, [])]
            if "record" in frames:
                frames = frames[frames["record"] == idx]
            if "of_gpu_parent" in frames:
                frames = frames[frames["of_gpu_parent"] == 0]
            if "level" in frames:
                frames = frames.sort_values("level", kind="mergesort")
            frames = frames.copy()
            frames["function"] = self._frame_names(frames, names)
            out.append(frames.iloc[::-1] if root_first else frames)
        return out

    @staticmethod
    def _frame_names(frames: pd.DataFrame, names: Dict[int, str]) -> List[str]:
        """Function names of call-stack frames: their own ``func`` column
        when they have one (and it is not empty; the full name from
        ``functions`` when ``func`` is a cut prefix of it), else ``fid``
        through ``functions``."""
        own = frames["func"] if "func" in frames else [None] * len(frames)
        fids = frames["fid"] if "fid" in frames else [None] * len(frames)
        out = []
        for name, fid in zip(own, fids):
            if isinstance(name, str) and name:
                full = names.get(int(fid)) if fid is not None else None
                cut = isinstance(full, str) and len(full) > len(name) and full.startswith(name)
                out.append(full if cut else name)
            elif fid is not None:
                out.append(names.get(int(fid), f"<fid {int(fid)}>"))
            else:
                out.append("?")
        return out

    def worst(self, n: int = 10, by: str = "outlier_score", *, which: str = "final",
              root_first: bool = True, full: bool = False) -> pd.DataFrame:
        """The ``n`` worst anomalies, highest ``by`` first, with their call
        stacks.

        Parameters
        ----------
        n:
            How many (all of them for ``n`` < 0).
        by:
            A numeric column of ``anomalies/records`` to rank by:
            ``outlier_score`` (default, the in-situ score), ``final_score``,
            ``runtime_total``, ``runtime_exclusive``, ``outlier_severity``,
            ``model_ratio``... Ties keep file order; NaN comes last.
        which:
            The records ranked (see :meth:`anomaly_records`): ``"final"``
            (default), ``"in_situ"`` or ``"all"``.
        root_first:
            Order of ``call_stack``: the root call first and the anomalous
            function last (default), or the anomalous function first
            (``False``, the file's ``level`` order).
        full:
            Every column of the records, instead of the short selection
            :data:`WORST_COLUMNS`.

        Returns
        -------
        DataFrame indexed by ``record`` (the row in ``anomalies/records``)
        with ``function`` (full name), ``program`` (label, see
        :attr:`programs`), the ``by`` column, and ``call_stack``: the list
        of function names of the record's own stack (``of_gpu_parent ==
        0``), read through the record's ``call_stack_start`` /
        ``call_stack_len`` rows; a frame's name is its ``func`` column when
        the call-stack table has one, else its ``fid`` in ``functions``.
        """
        recs = self.anomaly_records(which)
        if by not in recs.columns or by not in numeric_columns(recs):
            raise ValueError(f"cannot rank by {by!r}; numeric columns: {', '.join(numeric_columns(recs))}")
        top = recs.sort_values(by, ascending=False, kind="mergesort", na_position="last")
        if n >= 0:
            top = top.head(n)
        out = top.copy()
        names = self.function_names()
        out["function"] = [names.get(int(f), s) for f, s in zip(out["fid"], out.get("func", out["fid"]))]
        out["program"] = self._program_label(out["pid"]) if "pid" in out else ""
        stacks = self._frames("anomalies", top, root_first)
        out["call_stack"] = [list(fr["function"]) for fr in stacks]
        if not full:
            cols = [c for c in WORST_COLUMNS if c in out.columns]
            if by not in cols:
                cols.append(by)
            out = out[cols + ["call_stack"]]
        return out

    def anomalies_per_rank_step(self, which: str = "final", step: str = "io_step") -> pd.DataFrame:
        """Anomaly counts per application rank (rows) and step (columns).

        Rows are indexed by (``program``, ``rank``): the program's label
        (see :attr:`programs`) and the application rank (``rid``); columns
        are the steps (named ``step``). Counts are of the records selected
        by ``which`` (see :meth:`anomaly_records`), by their ``step``
        column: ``io_step`` (default: the step holding the execution's
        exit, the step of the ``steps`` table), ``labelled_step`` or
        ``event_step``. Every rank and step of the ``steps`` and ``streams``
        tables appears, with 0 where it had no anomaly; the total is the
        number of selected records.
        """
        recs = self.anomaly_records(which)
        if step not in recs:
            raise ValueError(f"no step column {step!r} in anomalies/records")
        counts = recs.groupby(["pid", "rid", step]).size()
        table = counts.unstack(step, fill_value=0) if len(counts) else pd.DataFrame()
        keys = set(map(tuple, table.index)) if len(table) else set()
        steps = set(table.columns)
        for extra, col in ((self.steps, "io_step"), (self.streams, None)):
            if extra is not None and {"pid", "rid"} <= set(extra.columns):
                keys |= set(zip(extra["pid"].astype(int), extra["rid"].astype(int)))
                if col is not None and col in extra:
                    steps |= set(extra[col].astype(int))
        keys_sorted = sorted((int(p), int(r)) for p, r in keys)
        index = pd.MultiIndex.from_tuples(keys_sorted, names=["pid", "rid"]) if keys_sorted else \
            pd.MultiIndex.from_arrays([[], []], names=["pid", "rid"])
        table = table.reindex(index=index, columns=sorted(int(s) for s in steps), fill_value=0)
        table = table.astype("int64")
        table.index = pd.MultiIndex.from_arrays(
            [self._program_label(index.get_level_values(0)), index.get_level_values(1)],
            names=["program", "rank"])
        table.columns.name = "step"
        return table

    def function_stats(self, which: str = "final") -> pd.DataFrame:
        """One row per function (index ``fid``): calls, runtime mean and
        standard deviation, anomalies, anomaly rate, worst score.

        Columns and where they come from (``df.attrs["sources"]`` says which
        source each column had in this file):

        - ``pid``, ``program``, ``function``: ``functions`` (``fid``,
          ``pid``, full ``name``); ``program`` as in :attr:`programs`.
        - ``calls``: executions of the function, ``func_stats.inclusive_count``
          (every completed execution, counted once); without ``func_stats``,
          the final model's count ``ad_model.count``; else missing.
        - ``inclusive_mean_us``, ``inclusive_std_us``, ``exclusive_mean_us``,
          ``exclusive_std_us``: ``func_stats`` RunStats (µs, std with ddof
          1); NaN without ``func_stats``.
        - ``anomalies``: ``func_stats.total_anomalies`` (the run's final
          anomalies, stored or not); without ``func_stats``, the records
          counted as ``anomaly_records``.
        - ``anomaly_records``: the rows of ``anomalies/records`` selected by
          ``which`` (see :meth:`anomaly_records`), per function.
        - ``anomaly_rate``: ``anomalies / calls``.
        - ``worst_score``: ``func_stats.score_maximum`` (the highest final
          score, rounded to 1/1000; NaN without anomalies); without
          ``func_stats``, the highest ``final_score`` (``outlier_score`` for
          ``which`` ``"in_situ"``/``"all"``) of the selected records.
        - ``model_count``, ``model_mean``, ``model_stddev``,
          ``model_threshold``: the final model, ``ad_model`` (on the
          detector's scale: runtimes in µs, or ratios in ppm for the model
          detector); NaN without it.
        """
        fn, fs, model = self.functions, self.func_stats, self._maybe("ad_model")
        recs = self.anomaly_records(which) if self.anomalies is not None else None
        fids: set = set()
        for df in (fn, fs, recs):
            if df is not None and "fid" in df:
                fids |= set(df["fid"].astype(int))
        index = pd.Index(sorted(fids), name="fid", dtype="int64")
        out = pd.DataFrame(index=index)
        sources: Dict[str, str] = {}

        def by_fid(df: Optional[pd.DataFrame]) -> Optional[pd.DataFrame]:
            if df is None or "fid" not in df:
                return None
            d = df.drop_duplicates("fid", keep="last").copy()
            d.index = pd.Index(d["fid"].astype("int64"), name="fid")
            return d.reindex(index)

        f, s, m = by_fid(fn), by_fid(fs), by_fid(model)
        pid = pd.Series(np.nan, index=index, dtype="float64")
        for d in (f, s):
            if d is not None and "pid" in d:
                pid = pid.fillna(d["pid"].astype("float64"))
        if recs is not None and len(recs):
            pid = pid.fillna(recs.drop_duplicates("fid").set_index("fid")["pid"].astype("float64"))
        out["pid"] = pid.astype("Int64")
        out["program"] = [None if pd.isna(p) else self._program_label([p])[0] for p in out["pid"]]
        names = self.function_names()
        out["function"] = [names.get(int(i)) for i in index]
        sources.update(pid="functions.pid", program="streams.path", function="functions.name")

        if s is not None and "inclusive_count" in s:
            out["calls"] = s["inclusive_count"].astype("Int64")
            sources["calls"] = "func_stats.inclusive_count"
        elif m is not None and "count" in m:
            out["calls"] = m["count"].astype("Int64")
            sources["calls"] = "ad_model.count"
        else:
            out["calls"] = pd.array([pd.NA] * len(index), dtype="Int64")
            sources["calls"] = "none"
        for q in ("inclusive", "exclusive"):
            for stat, col in (("mean", f"{q}_mean"), ("std", f"{q}_stddev")):
                name = f"{q}_{stat}_us"
                if s is not None and col in s:
                    out[name] = s[col].astype("float64")
                    sources[name] = f"func_stats.{col}"
                else:
                    out[name] = np.nan
                    sources[name] = "none"

        score_col = "final_score" if which == "final" else "outlier_score"
        if recs is not None:
            grouped = recs.groupby(recs["fid"].astype("int64"))
            counted = grouped.size().reindex(index, fill_value=0).astype("int64")
            worst = grouped[score_col].max().reindex(index) if score_col in recs else \
                pd.Series(np.nan, index=index)
        else:
            counted = pd.Series(0, index=index, dtype="int64")
            worst = pd.Series(np.nan, index=index)
        if s is not None and "total_anomalies" in s:
            out["anomalies"] = s["total_anomalies"].astype("Int64")
            sources["anomalies"] = "func_stats.total_anomalies"
        else:
            out["anomalies"] = counted.astype("Int64")
            sources["anomalies"] = f"anomalies/records ({which})"
        out["anomaly_records"] = counted
        sources["anomaly_records"] = f"anomalies/records ({which})"
        out["anomaly_rate"] = out["anomalies"].astype("Float64") / out["calls"].astype("Float64")
        out["anomaly_rate"] = out["anomaly_rate"].astype("float64")
        sources["anomaly_rate"] = "anomalies / calls"
        if s is not None and "score_maximum" in s:
            has = s["score_count"] > 0 if "score_count" in s else s["total_anomalies"] > 0
            out["worst_score"] = s["score_maximum"].astype("float64").where(has.fillna(False).astype(bool))
            sources["worst_score"] = "func_stats.score_maximum"
        else:
            out["worst_score"] = worst.astype("float64")
            sources["worst_score"] = f"anomalies/records.{score_col} ({which})"
        for col in ("count", "mean", "stddev", "threshold"):
            name = f"model_{col}"
            if m is not None and col in m:
                out[name] = m[col].astype("Int64" if col == "count" else "float64")
                sources[name] = f"ad_model.{col}"
            else:
                out[name] = np.nan
                sources[name] = "none"
        out.attrs["sources"] = sources
        return out

    def summary(self) -> Dict[str, Any]:
        """A few facts about the run as a dict: program, source, schema,
        algorithm, AD ranks, steps written, completed, programs, record
        counts and the tables present."""
        a = self.attrs
        out: Dict[str, Any] = {
            "path": self.path,
            "program": a.get("program"),
            "source": self.source,
            "schema_version": self.schema_version,
            "algorithm": a.get("algorithm"),
            "ad_ranks": a.get("ad_ranks"),
            "steps_written": a.get("steps_written"),
            "completed": self.completed,
            "programs": self.programs,
            "tables": self.tables,
        }
        recs = self.anomalies
        if recs is not None:
            final = int((recs["final_label"] == LABEL_ANOMALY).sum()) if "final_label" in recs else len(recs)
            in_situ = int((recs["label"] == LABEL_ANOMALY).sum()) if "label" in recs else len(recs)
            out["anomaly_records"] = len(recs)
            out["anomalies_final"] = final
            out["anomalies_in_situ"] = in_situ
        if self.normals is not None:
            out["normal_records"] = len(self.normals)
        if self.has("ross/anomalies"):
            out["ross_anomalies"] = len(self.table("ross/anomalies"))
        return out


def open(path: Union[PathLike, h5py.File], *, warn_incomplete: bool = True,
         **h5py_kwargs: Any) -> Provenance:  # noqa: A001 - mirrors the builtin on purpose
    """Opens a provenance file: ``chimbuko_mpi.open("prov.h5")``.

    Returns a :class:`Provenance` (also a context manager). Warns with
    :class:`IncompleteProvenanceWarning` when the run did not complete,
    unless ``warn_incomplete`` is false; ``h5py_kwargs`` go to
    ``h5py.File``.
    """
    return Provenance(path, warn_incomplete=warn_incomplete, _stacklevel=3, **h5py_kwargs)
