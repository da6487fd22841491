"""``chimbuko-prov FILE [--worst N] [--top N]``: a short summary of a
provenance file (also ``python -m chimbuko_mpi``)."""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional

import pandas as pd

from .provenance import Provenance


def _print_tau(p: Provenance, top: int, worst: int, by: str) -> None:
    s = p.summary()
    print(f"anomalies: {s['anomalies_final']} (in situ {s['anomalies_in_situ']}, "
          f"{s['anomaly_records']} records); normal samples: {s.get('normal_records', 0)}")
    if top > 0:
        stats = p.function_stats()
        stats = stats[stats["anomalies"].fillna(0) > 0].sort_values("anomalies", ascending=False)
        print(f"\nfunctions with the most anomalies (top {top})")
        if stats.empty:
            print("  none")
        else:
            cols = ["program", "function", "calls", "anomalies", "anomaly_rate",
                    "exclusive_mean_us", "exclusive_std_us", "worst_score"]
            print(stats.head(top)[cols].to_string())
    if worst > 0:
        rows = p.worst(worst, by=by)
        print(f"\nworst {worst} anomalies by {by}")
        if rows.empty:
            print("  none")
        for rec, r in rows.iterrows():
            print(f"  [{rec}] {r['event_id']} {r['program']}:{r['rid']} thread {r['tid']}: "
                  f"{r['function']}, {by} {r[by]:.6g}, exclusive {r['runtime_exclusive']} us, "
                  f"step {r['io_step']}")
            print(f"      {' > '.join(r['call_stack'])}")


def _print_ross(p: Provenance, top: int) -> None:
    if p.has("ross/anomalies"):
        a = p.table("ross/anomalies")
        print(f"ROSS anomalies: {len(a)}")
        cols = [c for c in ("kind", "pe", "kp", "lp", "signal", "series", "gvt_from", "gvt_to", "score")
                if c in a]
        if len(a):
            print(a.sort_values("score", ascending=False).head(max(top, 1))[cols].to_string())
    if p.has("ross/run_wide"):
        print(f"run-wide slowdowns: {len(p.table('ross/run_wide'))}")
    if p.has("ross/entities") and top > 0:
        e = p.table("ross/entities")
        if len(e):
            print("\ncostliest PEs")
            print(e.head(top).to_string(index=False))


def main(argv: Optional[List[str]] = None) -> int:
    """Prints the summary of the file named on the command line; returns
    the exit status (0; 1 when the file cannot be read)."""
    ap = argparse.ArgumentParser(prog="chimbuko-prov",
                                 description="Summarise a chimbuko-mpi provenance file.")
    ap.add_argument("file", help="the provenance file (HDF5)")
    ap.add_argument("--worst", type=int, default=5, metavar="N",
                    help="list the N worst anomalies with their call stacks (default 5)")
    ap.add_argument("--top", type=int, default=10, metavar="N",
                    help="functions (PEs for ROSS runs) in the tables (default 10)")
    ap.add_argument("--by", default="outlier_score",
                    help="column ranking the worst anomalies (default outlier_score)")
    args = ap.parse_args(argv)
    try:
        p = Provenance(args.file)
    except OSError as e:
        print(f"chimbuko-prov: {args.file}: {e}", file=sys.stderr)
        return 1
    with p, pd.option_context("display.width", 200, "display.max_columns", 20):
        s = p.summary()
        print(f"{p.path}: {s['program']}, schema {s['schema_version']}, {s['source']} run, "
              f"algorithm {s['algorithm']}, {s['ad_ranks']} AD ranks, "
              f"{'completed' if s['completed'] else 'NOT completed'}"
              + (f", {s['steps_written']} steps written" if s['steps_written'] is not None else ""))
        if s["programs"]:
            print("programs: " + ", ".join(f"{pid} {name}" for pid, name in s["programs"].items()))
        if p.anomalies is not None:
            _print_tau(p, args.top, args.worst, args.by)
        else:
            _print_ross(p, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
