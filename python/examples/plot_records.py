#!/usr/bin/env python3
"""Plot the best GFLOPS against the trial number of every task in a record DB, one curve per
tuning run, with matplotlib (python3-matplotlib) when it is installed.

    PYTHONPATH=build/python python3 python/examples/plot_records.py tensortune.db curves.png
"""

import collections
import sys

import tensortune as tt


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    db, out = sys.argv[1], sys.argv[2]
    curves = collections.defaultdict(list)  # (workload, run) -> best so far per trial
    with tt.RecordStore(db) as store:
        for r in store:
            curve = curves[(r["workload_key"], r["run_id"])]
            curve.append(max(r["gflops"], curve[-1] if curve else 0.0))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        for (workload, run), curve in curves.items():
            print(f"{run:16s} {len(curve):5d} trials, best {curve[-1]:7.2f} GFLOPS  {workload[:60]}")
        print("(matplotlib is not installed: printed instead of plotted)")
        return
    fig, ax = plt.subplots(figsize=(9, 5))
    for (workload, run), curve in curves.items():
        ax.plot(range(1, len(curve) + 1), curve, label=f"{run}: {workload[:40]}")
    ax.set_xlabel("trial")
    ax.set_ylabel("best GFLOPS so far")
    if len(curves) <= 12:
        ax.legend(fontsize=6)
    fig.savefig(out, dpi=120)
    print(f"wrote {out} ({len(curves)} curves)")


if __name__ == "__main__":
    main()
