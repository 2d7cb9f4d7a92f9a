#!/usr/bin/env python3
"""AutoTVM's x86 tutorial (tune_relay_x86) written against tensortune: extract the tasks of
a network, tune each with the XGBoost tuner and a progress bar, tune the graph's layouts,
compile with the best records, check the output against the reference interpreter, and time
the network.

    PYTHONPATH=build/python python3 python/examples/tune_relay_x86.py --trials 150

Rerunning the same command resumes: what is in the DB counts toward --trials.
"""

import argparse
import subprocess
import tempfile

import numpy as np

import tensortune as tt


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--model", default="resnet-18", help="zoo name or ONNX file")
    p.add_argument("--input-shape", default="1,3,224,224")
    p.add_argument("--trials", type=int, default=150, help="per task (AutoTVM's n_trial)")
    p.add_argument("--early-stopping", type=int, default=0)
    p.add_argument("--db", default="tensortune.db")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    shape = tuple(int(d) for d in args.input_shape.split(","))
    shapes = {"data": shape} if args.model in ("resnet-18", "resnet-50", "vgg-16",
                                                 "mobilenet-v1") else None

    # 1. Extract tasks (autotvm.task.extract_from_program).
    tasks = tt.extract_tasks(args.model, input_shapes=shapes)
    print(f"{len(tasks)} tasks:")
    for i, t in enumerate(tasks):
        print(f"  {i + 1:2d}. {t.template_name:28s} {t.workload} ({len(t.config_space)} configs)")

    # 2. Tune every task (tune_kernels), results recorded in the DB.
    for i, t in enumerate(tasks):
        prefix = f"[Task {i + 1:2d}/{len(tasks):2d}] "
        r = tt.tune_op(t, tuner="xgb", trials=args.trials, early_stopping=args.early_stopping,
                       db=args.db, threads=args.threads,
                       callbacks=[tt.callbacks.progress_bar(prefix)])
        if r["trials"] < min(args.trials, r["offered_configs"]):
            print()  # the bar stopped short of its total (early stopping)

    # 2b. Graph tuning (tune_graph): each conv node's record chosen with the layout
    #     transforms between layers in the cost; compile() then uses the choice.
    tt.graph_tune(args.model, db=args.db, input_shapes=shapes, threads=args.threads)

    # 3. Compile with the best records (apply_history_best + relay.build).
    net = tt.compile(args.model, records=args.db, input_shapes=shapes, threads=args.threads)
    tuned = sum(s["tuned"] for s in net.schedules)
    print(f"compiled {net.model}: {tuned}/{len(net.schedules)} workloads tuned, "
          f"{len(net.steps)} steps")

    # 4. Check one output against the reference interpreter (`tensortune run --reference`).
    x = np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32)
    got = net.run(data=x)[net.outputs[0]]
    with tempfile.TemporaryDirectory() as d:
        np.save(f"{d}/x.npy", x)
        cmd = ["tensortune", "run", "--model", args.model, "--reference",
               "--input", f"data={d}/x.npy", "--output", f"{d}/ref.npy"]
        if shapes:
            cmd += ["--input-shape", "data=" + "x".join(map(str, shape))]
        try:
            subprocess.run(cmd, check=True, capture_output=True)
            ref = np.load(f"{d}/ref.npy")
            print(f"max relative error vs the reference: "
                  f"{np.abs(got - ref).max() / np.abs(ref).max():.2e}")
        except (OSError, subprocess.CalledProcessError):
            print("(tensortune is not on PATH: reference check skipped)")

    # 5. Evaluate inference time (module.time_evaluator).
    b = net.bench(repeat=10)
    spread = np.std(b["round_ms"])
    print(f"Mean inference time (std dev): {np.mean(b['round_ms']):.2f} ms ({spread:.2f} ms), "
          f"median {b['median_ms']:.2f} ms, {b['gflops']:.1f} GFLOPS")


if __name__ == "__main__":
    main()
