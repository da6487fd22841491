#!/usr/bin/env python3
"""Read a chimbuko-mpi provenance file with h5py and pandas.

    python read_provenance.py prov.h5 [--top 10]

Prints the run's parameters, the functions with the most anomalies, and the
worst anomaly with its call stack, its window of executions and messages.
Every table is a 1-D compound dataset: one `pandas.DataFrame(...)` call
loads it; string columns come back as bytes and `table()` decodes them.
"""
import argparse

import h5py
import pandas as pd


def table(f, name):
    """A table of the file as a DataFrame with `str` string columns."""
    df = pd.DataFrame(f[name][:])
    for col in df.columns:
        if df[col].dtype == object:
            df[col] = df[col].str.decode("utf-8")
    return df


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--top", type=int, default=10)
    args = ap.parse_args()

    with h5py.File(args.file, "r") as f:
        attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        print(f"algorithm {attrs['algorithm']}, {attrs['ad_ranks']} AD ranks, "
              f"{attrs['steps_written']} steps, completed={attrs['completed']}")

        functions = table(f, "functions").set_index("fid")["name"]
        anomalies = table(f, "anomalies/records")
        # Keep what the end-of-run re-evaluation still calls anomalous.
        anomalies = anomalies[anomalies.final_label == -1]
        print(f"{len(anomalies)} anomalies")

        top = (anomalies.groupby("fid").size().sort_values(ascending=False)
               .head(args.top).rename("anomalies").to_frame())
        top["function"] = functions.reindex(top.index).values
        print("\nfunctions with the most anomalies")
        print(top.to_string())

        stats = table(f, "func_stats").set_index("fid")
        print("\nexclusive runtime profile of those functions (us)")
        print(stats.loc[top.index, ["fname", "exclusive_count", "exclusive_mean",
                                    "exclusive_stddev", "total_anomalies"]].to_string())

        if anomalies.empty:
            return
        # The worst anomaly: its record row is also the `record` key of the
        # companion tables.
        worst_row = anomalies.final_score.idxmax()
        worst = anomalies.loc[worst_row]
        print(f"\nworst anomaly {worst.event_id}: {functions[worst.fid]} on rank {worst.rid} "
              f"thread {worst.tid}, exclusive {worst.runtime_exclusive} us, score {worst.final_score:.2f}")

        stack = table(f, "anomalies/call_stack")
        stack = stack[(stack.record == worst_row) & (stack.of_gpu_parent == 0)].sort_values("level")
        print("call stack (the execution first, then its callers)")
        for _, frame in stack.iterrows():
            state = "running" if frame.exit == 0 else f"{frame.exit - frame.entry} us"
            print(f"  {'  ' * frame.level}{functions[frame.fid]} [{frame.event_id}, {state}]")

        window = table(f, "anomalies/exec_window")
        window = window[window.record == worst_row].sort_values("offset")
        window["function"] = functions.reindex(window.fid).values
        print("window on its thread (entry order; offset 0 is the anomaly)")
        print(window[["offset", "event_id", "function", "entry", "exit", "is_anomaly"]].to_string(index=False))

        comms = table(f, "anomalies/comm_window")
        comms = comms[comms.record == worst_row]
        print(f"{len(comms)} messages in the window")
        if not comms.empty:
            print(comms[["kind", "src", "tar", "bytes", "tag", "timestamp", "execdata_key"]].to_string(index=False))


if __name__ == "__main__":
    main()
