"""Read chimbuko-mpi provenance files (HDF5) as pandas DataFrames.

::

    import chimbuko_mpi

    with chimbuko_mpi.open("prov.h5") as p:
        p.anomalies                    # anomalies/records, strings as str
        p.worst(5)                     # the 5 highest outlier scores, with call stacks
        p.anomalies_per_rank_step()    # (program, rank) x step counts
        p.function_stats()             # calls, mean, std, anomalies, rate, worst score
        p.incidents                    # the problems that cost the run time, costliest first
        p.incident(1)                  # one incident with its evidence and members
        p.table("ross/anomalies")      # any table by path

The file's layout: ``docs/provenance-schema.md`` in the chimbuko-mpi
repository.
"""
from ._tables import decode_text, frame, program_name
from .provenance import (
    LABEL_ANOMALY,
    LABEL_NORMAL,
    LABEL_UNLABELED,
    WHICH,
    WORST_COLUMNS,
    IncompleteProvenanceWarning,
    Provenance,
    open,
)

__version__ = "0.1.0"

__all__ = [
    "open",
    "Provenance",
    "IncompleteProvenanceWarning",
    "decode_text",
    "frame",
    "program_name",
    "LABEL_ANOMALY",
    "LABEL_NORMAL",
    "LABEL_UNLABELED",
    "WHICH",
    "WORST_COLUMNS",
    "__version__",
]
