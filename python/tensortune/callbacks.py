"""Callbacks for tune_op and tune_model, in AutoTVM's habit (autotvm.callback): each is
called as callback(progress, results) after every measured batch; returning False stops.
"""

import sys
import time


def progress_bar(prefix="", file=None):
    """One line per task that rewrites itself:
    ``[Task 1/12] Current/Best: 180.2/231.5 GFLOPS | Progress: (64/150) | 12.3 s``."""
    out = file or sys.stdout

    def callback(progress, results):
        task = ""
        if "task_index" in progress:
            task = f"[Task {progress['task_index'] + 1:2d}/{progress['task_count']:2d}] "
        line = (f"\r{prefix}{task}Current/Best: {progress['current_gflops']:7.2f}/"
                f"{progress['best_gflops']:7.2f} GFLOPS | Progress: ({progress['done']}/"
                f"{progress['total']}) | {progress['elapsed_s']:.2f} s")
        if progress["done"] >= progress["total"]:
            line += " Done.\n"
        out.write(line)
        out.flush()
        return True

    return callback


def stop_at(gflops=None, seconds=None):
    """Stops a task once its best reaches `gflops`, or once it has run `seconds`."""
    start = time.monotonic()

    def callback(progress, results):
        if gflops is not None and progress["best_gflops"] >= gflops:
            return False
        if seconds is not None and time.monotonic() - start >= seconds:
            return False
        return True

    return callback


def record_history(history):
    """Appends (trial, gflops, config index, error_no) of every result to the list `history`,
    for plotting a tuning curve."""

    def callback(progress, results):
        first = progress["done"] - len(results)
        for k, r in enumerate(results):
            history.append((first + k, r["gflops"], r["config"].index, r["error_no"]))
        return True

    return callback
