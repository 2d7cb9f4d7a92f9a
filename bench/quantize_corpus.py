#!/usr/bin/env python3
# Every model of the ONNX corpus (build/corpus, opset 13) quantized by `tensortune quantize` four
# ways: full-range weights without and with bias correction, --reduce-range=auto and
# --reduce-range (random calibration, 4 samples). Each QDQ model runs in tensortune (int8
# kernels) and in ONNX Runtime (unfused, its arithmetic is the model's) on the corpus's input;
# printed per model and way: the cosine of ours and of ONNX Runtime's output to the float model's
# (ONNX Runtime float32), and ours against ONNX Runtime as a share of the largest |output|.
#
#   /usr/bin/python3 bench/quantize_corpus.py [--tensortune build/cli/tensortune] [MODEL ...]
#
# Needs numpy, node and ONNX Runtime in bench/ort (npm install --prefix bench/ort).
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "build", "corpus")
ORT_RUN = os.path.join(ROOT, "bench", "ort", "ort_run.js")
WAYS = [("8-bit, no bias correction", ["--no-bias-correction"]), ("8-bit", []),
        ("auto", ["--reduce-range=auto"]), ("7-bit", ["--reduce-range"])]


def sh(cmd):
    env = dict(os.environ, NODE_PATH=os.path.join(ROOT, "bench", "ort", "node_modules"))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode:
        raise RuntimeError(f"$ {' '.join(cmd)}\n{p.stdout[-800:]}{p.stderr[-800:]}")
    return p.stdout


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-30))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tensortune", default=os.path.join(ROOT, "build", "cli", "tensortune"))
    ap.add_argument("models", nargs="*", help="corpus names (default: all)")
    args = ap.parse_args()
    manifest = os.path.join(CORPUS, "manifest.txt")
    if not os.path.exists(manifest) or not os.path.exists(ORT_RUN):
        sys.exit(f"error: needs {manifest} (scripts/build.sh makes the corpus) and {ORT_RUN}")
    tt = [args.tensortune, "--log-level", "error"]
    print("| model | weights | ours: cosine to float | ONNX Runtime: cosine to float | "
          "ours vs ONNX Runtime (of max abs output) |")
    print("|---|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as work:
        for line in open(manifest):
            name, opset, onnx, x = line.split()
            if opset != "13" or (args.models and name not in args.models):
                continue
            model = os.path.join(CORPUS, onnx)
            inputs = [l.split()[1] for l in sh(tt + ["check-model", model]).splitlines()
                      if l.split()[:1] == ["input"]]
            feed = f"{inputs[0]}={os.path.join(CORPUS, x)}"
            ref_path = os.path.join(work, "float.npy")
            sh(["node", ORT_RUN, model, ref_path, feed])
            ref = np.load(ref_path)
            for way, flags in WAYS:
                qdq, ours, ort = (os.path.join(work, f) for f in ("q.onnx", "o.npy", "r.npy"))
                try:
                    sh(tt + ["quantize", model, "-o", qdq, "--samples", "4"] + flags)
                    sh(tt + ["run", "--model", qdq, "--input", feed, "-o", ours])
                    sh(["node", ORT_RUN, "--optimization", "disabled", qdq, ort, feed])
                except RuntimeError as e:
                    print(f"| {name} | {way} | error: {str(e).splitlines()[-1][:200]} | | |")
                    continue
                o, r = np.load(ours), np.load(ort)
                diff = float(np.abs(o - r).max()) / max(float(np.abs(r).max()), 1e-30)
                print(f"| {name} | {way} | {cosine(o, ref):.4f} | {cosine(r, ref):.4f} | "
                      f"{diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
