"""Turning HDF5 datasets and attributes into pandas and Python values.

Every table of a provenance file is a 1-D dataset of a compound type. h5py
reads it as a NumPy structured array whose fixed-length string members come
back as ``bytes``; the functions here make ``str`` of them (UTF-8, trailing
NULs stripped), and also accept ``str`` values, as h5py gives for
variable-length strings in some versions, so that a change of the file's
string type does not change what users see.
"""
from __future__ import annotations

import json
from typing import Any, List

import numpy as np
import pandas as pd


def decode_text(value: Any) -> Any:
    """One value of the file as Python text.

    ``bytes`` (fixed-length strings, and variable-length ones in most h5py
    versions) are decoded as UTF-8 (invalid bytes replaced); ``str`` values
    are kept. Trailing NUL characters are stripped from both. Any other
    value is returned unchanged.
    """
    if isinstance(value, (bytes, bytearray, np.bytes_)):
        value = bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, str):
        return str(value).rstrip("\x00")
    return value


def _column(values: np.ndarray) -> Any:
    """One member of a structured array as a column for pandas."""
    if values.dtype.names or values.ndim > 1:
        # Nested compounds and array members: one Python value per row.
        return list(values.tolist()) if values.dtype.names else list(values)
    if values.dtype.kind in "SUO":
        return [decode_text(v) for v in values.tolist()]
    return values


def frame(data: np.ndarray, column: str = "value", start: int = 0) -> pd.DataFrame:
    """A NumPy array read from a dataset as a DataFrame.

    A structured (compound) array gives one column per member; a plain 1-D
    array gives one column named ``column``. String columns hold ``str``
    (see :func:`decode_text`). The index is the row number in the dataset,
    starting at ``start`` (for a slice read from the middle of a table).
    """
    data = np.asarray(data)
    if data.ndim == 0:
        data = data.reshape(1)
    index = pd.RangeIndex(start, start + len(data))
    if data.dtype.names:
        cols = {name: _column(data[name]) for name in data.dtype.names}
        return pd.DataFrame(cols, index=index)
    if data.ndim == 1:
        return pd.DataFrame({column: _column(data)}, index=index)
    return pd.DataFrame(data, index=index)


def attr_value(value: Any) -> Any:
    """One HDF5 attribute as a Python value.

    Text is decoded (see :func:`decode_text`); text holding a JSON object or
    list (``algorithm_params``, ``configuration``, ``input_streams``,
    ``ross_run``, ``warnings``) is parsed, and kept as text when it does not
    parse. NumPy scalars become Python numbers, arrays become lists.
    """
    value = decode_text(value)
    if isinstance(value, str):
        head = value.lstrip()[:1]
        if head in ("{", "["):
            try:
                return json.loads(value)
            except ValueError:
                return value
        return value
    if isinstance(value, np.ndarray):
        return [attr_value(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    return value


def program_name(path: str) -> str:
    """A program's short name from the path of one of its streams.

    ``.../tau-metrics-main1-0.bp`` gives ``main1``: the directory, the
    ``.bp``/``.sst`` suffix, the rank and TAU's ``tau-metrics-`` prefix
    removed (the rule ``chimbuko-mpi inspect`` uses). A name without a rank
    keeps its file name, less ``.bp``.
    """
    name = str(path).replace("\\", "/").rsplit("/", 1)[-1]
    stem = name[: -len(".sst")] if name.endswith(".sst") else name
    stem = stem[: -len(".bp")] if stem.endswith(".bp") else stem
    head, sep, rank = stem.rpartition("-")
    if not (sep and rank.isascii() and rank.isdigit()):
        head = name[: -len(".bp")] if name.endswith(".bp") else name
    prefix = "tau-metrics-"
    return head[len(prefix):] if head.startswith(prefix) else head


def unique_labels(names: dict) -> dict:
    """Program labels by program index: the name, or the index when the name
    is empty; ``name#pid`` when two programs share a name."""
    out = {}
    seen: dict = {}
    for pid, name in names.items():
        seen.setdefault(name, []).append(pid)
    for pid, name in names.items():
        if not name:
            out[pid] = str(pid)
        elif len(seen[name]) > 1:
            out[pid] = f"{name}#{pid}"
        else:
            out[pid] = name
    return out


def numeric_columns(df: pd.DataFrame) -> List[str]:
    """The columns of ``df`` holding numbers (those a ranking can use)."""
    return [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c])
            and not pd.api.types.is_bool_dtype(df[c])]
