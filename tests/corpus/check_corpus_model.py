#!/usr/bin/python3
"""The corpus test of one model: for every opset the corpus holds it at,
`tensortune check-model` says it runs, the model compiled at opt levels 0 and 3 (and the opt
level 3 artifact, written and read back) equals ONNX Runtime on the corpus input (max |ours - ort| <= 1e-4 max |ort|), and `tensortune tasks`
extracts its tunable tasks (a model with a dynamic sequence axis: compiled for a range of lengths
and checked at lengths across it); a model with depthwise layers also compiled for CUDA and run in the
emulation of its CUDA source; at opset 13, the model quantized by `tensortune quantize` equals
ONNX Runtime on the same QDQ model within a few quantization steps.

    check_corpus_model.py TENSORTUNE CORPUS_DIR ORT_RUN_JS NAME

Exits 77 (ctest's skip) with the reason when the corpus or ONNX Runtime is missing.
"""
import json
import os
import subprocess
import sys

import numpy as np

SKIP = 77
TOLERANCE = 1e-4
# The models quantized by `tensortune quantize` and checked against ONNX Runtime (issue 40's
# list: a ResNet, mobilenet_v2, the transformers); every corpus model passes it, these keep the
# suite's time down.
QUANTIZE_CHECKED = {"resnet50", "mobilenet_v2", "transformer_tiny", "vit_tiny"}
# Models exported with a dynamic sequence axis: compiled for a range of lengths, checked at
# lengths across it (name -> (its sequence inputs, the range's top, the vocabulary)).
RANGED = {"bert_dynamic": (("input_ids", "attention_mask"), 64, 1000)}


def run(cmd, what):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAIL {what}: exit {p.returncode}\n$ {' '.join(cmd)}\n{p.stdout[-3000:]}{p.stderr[-3000:]}")
    return p.stdout


def check_cuda_depthwise(tensortune, model, feed, want, scale, work, tag):
    """A model with depthwise layers, compiled for CUDA (the depthwise and direct CUDA templates'
    default configs, NCHW) and run in the CPU emulation of its CUDA source, equals ONNX Runtime:
    the GPU path on a real exported model, without a GPU. One opset, the slow emulation once."""
    cuda_tasks = json.loads(run([tensortune, "tasks", "--model", model, "--target", "cuda",
                                 "--json"], f"{tag}: CUDA tasks"))["tasks"]
    if not any(t["template"].startswith("depthwise_conv2d") for t in cuda_tasks):
        return
    artifact = os.path.join(work, os.path.basename(model) + ".cuda.tt")
    got_path = artifact + ".npy"
    run([tensortune, "compile", "--model", model, "--target", "cuda-sm80", "-o", artifact],
        f"{tag}: compile for CUDA")
    run([tensortune, "run", artifact, "--emulate", "--input", feed, "-o", got_path],
        f"{tag}: CUDA emulated")
    got = np.load(got_path).astype(np.float64)
    os.remove(artifact)
    if got.shape != want.shape:
        sys.exit(f"FAIL {tag} CUDA emulated: shape {got.shape}, ONNX Runtime's {want.shape}")
    err = float(np.abs(got - want).max()) / scale
    print(f"{tag} CUDA emulated (sm_80): max error {err:.2e} of max |output| {scale:.3g}")
    if not err <= TOLERANCE:
        sys.exit(f"FAIL {tag} CUDA emulated: error {err:.2e} > {TOLERANCE}")


def check_quantized(tensortune, ort_run, model, feed, want, work, tag):
    """`tensortune quantize` (random calibration) writes a QDQ model that tensortune and ONNX
    Runtime (unfused: its arithmetic is the model's) run to the same answer within a few
    quantization steps, and whose output stays close to the float model's."""
    qdq = os.path.join(work, os.path.basename(model) + ".int8.onnx")
    out = run([tensortune, "quantize", model, "-o", qdq, "--samples", "4"], f"{tag}: quantize")
    got_path, ort_path = qdq + ".npy", qdq + ".ort.npy"
    run([tensortune, "run", "--model", qdq, "--input", feed, "-o", got_path], f"{tag}: run QDQ")
    run(["node", ort_run, "--optimization", "disabled", qdq, ort_path, feed],
        f"{tag}: ONNX Runtime on the QDQ model")
    got = np.load(got_path).astype(np.float64).ravel()
    ort = np.load(ort_path).astype(np.float64).ravel()
    err = float(np.abs(got - ort).max()) / max(float(np.abs(ort).max()), 1e-30)
    f = want.ravel()
    cos = float(got @ f / max(np.linalg.norm(got) * np.linalg.norm(f), 1e-30))
    print(f"{tag} quantized ({out.strip().splitlines()[0][:40]}...): vs ONNX Runtime {err:.2e} "
          f"of max |output|; cosine to the float model {cos:.5f}")
    os.remove(qdq)
    if not err <= 2e-2:
        sys.exit(f"FAIL {tag} quantized: {err:.2e} from ONNX Runtime on the same QDQ model")
    if not cos >= 0.9:
        sys.exit(f"FAIL {tag} quantized: cosine {cos:.4f} to the float model")


def check_ranged(tensortune, ort_run, model, work, tag, inputs, top, vocab):
    """`compile --input-shape NAME=1x1..TOP` makes one artifact; `run` on lengths across the
    range (each in its power-of-two bucket, padded and masked) equals ONNX Runtime at that
    length; a length past the range is refused naming the range."""
    shapes = [arg for n in inputs for arg in ("--input-shape", f"{n}=1x1..{top}")]
    report = json.loads(run([tensortune, "check-model", model, "--json"] + shapes,
                            f"{tag}: check-model for lengths 1..{top}"))
    masked = report["sequence_range"]["masked_softmax"]
    print(f"{tag}: check-model: {len(report['sequence_range']['buckets'])} buckets, "
          f"{len(masked)} softmax nodes masked")
    if not masked:
        sys.exit(f"FAIL {tag}: check-model masks no softmax over the tokens")
    artifact = os.path.join(work, os.path.basename(model) + ".ranged.tt")
    out = run([tensortune, "compile", "--model", model] + shapes + ["-o", artifact],
              f"{tag}: compile for lengths 1..{top}")
    print(f"{tag}: {out.strip().splitlines()[-1][:100]}")
    rng = np.random.default_rng(7)
    for length in (1, 7, 33, top):
        ids = rng.integers(0, vocab, size=(1, length)).astype(np.int64)
        mask = np.ones((1, length), dtype=np.int64)
        mask[:, length - length // 4:] = 0  # the model's own padding too
        feeds = []
        for n, value in zip(inputs, (ids, mask)):
            path = os.path.join(work, f"{n}.{length}.npy")
            np.save(path, value)
            feeds.append(f"{n}={path}")
        ref, got_path = artifact + f".{length}.ort.npy", artifact + f".{length}.npy"
        run(["node", ort_run, model, ref] + feeds, f"{tag}: ONNX Runtime at length {length}")
        run([tensortune, "run", artifact, "--input"] + feeds + ["-o", got_path],
            f"{tag}: run at length {length}")
        want, got = np.load(ref).astype(np.float64), np.load(got_path).astype(np.float64)
        if got.shape != want.shape:
            sys.exit(f"FAIL {tag} length {length}: shape {got.shape}, ONNX Runtime's {want.shape}")
        err = float(np.abs(got - want).max()) / max(float(np.abs(want).max()), 1e-30)
        print(f"{tag} ranged, length {length}: max error {err:.2e} of max |output|")
        if not err <= TOLERANCE:
            sys.exit(f"FAIL {tag} ranged, length {length}: error {err:.2e} > {TOLERANCE}")
    past = [f"{n}={os.path.join(work, n + '.past.npy')}" for n in inputs]
    for feed in past:
        np.save(feed.split("=", 1)[1], np.zeros((1, top + 1), dtype=np.int64))
    p = subprocess.run([tensortune, "run", artifact, "--input"] + past, capture_output=True,
                       text=True)
    if p.returncode == 0 or f"outside the range 1..{top}" not in p.stderr:
        sys.exit(f"FAIL {tag}: length {top + 1} was not refused naming the range: {p.stderr}")
    tasks = json.loads(run([tensortune, "tasks", "--model", model, "--json"] + shapes,
                           f"{tag}: tasks of every bucket"))
    print(f"{tag} ranged: {len(tasks['tasks'])} tunable tasks over the buckets")
    os.remove(artifact)


def main():
    tensortune, corpus, ort_run, name = sys.argv[1:5]
    manifest = os.path.join(corpus, "manifest.txt")
    if not os.path.exists(manifest):
        print(f"SKIP: no corpus at {corpus} (corpus_make needs Debian's python3-torch and "
              "python3-torchvision: scripts/deps.sh --test)")
        sys.exit(SKIP)
    ort_module = os.path.join(os.path.dirname(ort_run), "node_modules", "onnxruntime-node")
    if not os.path.isdir(ort_module):
        print(f"SKIP: ONNX Runtime is not installed at {ort_module} (scripts/test.sh installs it "
              "with npm)")
        sys.exit(SKIP)
    entries = [line.split() for line in open(manifest) if line.split() and line.split()[0] == name]
    if not entries:
        sys.exit(f"FAIL: {name} is not in {manifest}")
    work = os.path.join(corpus, "out")
    os.makedirs(work, exist_ok=True)
    for _, opset, model_file, inputs in entries:
        model = os.path.join(corpus, model_file)
        # One input's file, or name=file pairs for a model of several inputs.
        pairs = [p.split("=", 1) if "=" in p else ["input", p] for p in inputs.split(",")]
        feeds = [f"{n}={os.path.join(corpus, f)}" for n, f in pairs]
        tag = f"{name} opset {opset}"
        if name in RANGED:  # its fixed-length behaviour is bert_base's
            check_ranged(tensortune, ort_run, model, work, tag, *RANGED[name])
            continue
        run([tensortune, "check-model", model], f"{tag}: check-model")
        reference = os.path.join(work, f"{name}_opset{opset}.ort.npy")
        # A QDQ model's reference is ONNX Runtime with its graph left as it is: at level
        # "extended" it fuses the QDQ pairs into its own int8 kernels, which on this AVX2
        # machine differ from the model's arithmetic (and from torch's) by up to 53
        # quantization steps; unfused it equals both exactly.
        quantized = b"QuantizeLinear" in open(model, "rb").read()
        ort_level = ["--optimization", "disabled"] if quantized else []
        run(["node", ort_run] + ort_level + [model, reference] + feeds, f"{tag}: ONNX Runtime")
        want = np.load(reference).astype(np.float64)
        scale = max(float(np.abs(want).max()), 1e-30)
        artifact = os.path.join(work, f"{name}_opset{opset}.tt")
        run([tensortune, "compile", "--model", model, "-o", artifact], f"{tag}: compile")
        for level in ("0", "3", "artifact"):
            got_path = os.path.join(work, f"{name}_opset{opset}.o{level}.npy")
            # opt levels 0 and 3 compiled in memory; then the opt level 3 artifact, written and
            # read back, so that every operator's attributes survive the file.
            cmd = [tensortune, "run", "--model", model, "--opt-level", level] if level != "artifact" \
                else [tensortune, "run", artifact]
            run(cmd + ["--input"] + feeds + ["-o", got_path], f"{tag}: run at opt level {level}")
            got = np.load(got_path).astype(np.float64)
            if got.shape != want.shape:
                sys.exit(f"FAIL {tag} opt level {level}: shape {got.shape}, ONNX Runtime's {want.shape}")
            err = float(np.abs(got - want).max()) / scale
            print(f"{tag} {'opt level ' if level != 'artifact' else ''}{level}: max error {err:.2e} of max |output| {scale:.3g}")
            if not err <= TOLERANCE:
                sys.exit(f"FAIL {tag} opt level {level}: error {err:.2e} > {TOLERANCE}")
        os.remove(artifact)
        tasks = json.loads(run([tensortune, "tasks", "--model", model, "--json"], f"{tag}: tasks"))
        print(f"{tag}: {len(tasks['tasks'])} tunable tasks")
        if not tasks["tasks"]:
            sys.exit(f"FAIL {tag}: no tunable task extracted")
        if opset == entries[0][1]:
            check_cuda_depthwise(tensortune, model, feeds[0], want, scale, work, tag)
        if int(opset) == 13 and name in QUANTIZE_CHECKED:
            check_quantized(tensortune, ort_run, model, feeds[0], want, work, tag)
    print(f"PASS {name}")


if __name__ == "__main__":
    main()
