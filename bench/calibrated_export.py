#!/usr/bin/python3
"""Exports a torchvision classifier with random weights whose batch norms are calibrated on the
given inputs, for accuracy benchmarks that have no trained weights (nothing is downloaded).

A random network with default batch-norm statistics maps every photo to nearly the same logits:
in the corpus's mobilenet_v2 the logits differ between photos by less than float16's rounding,
so no comparison of precisions can tell a right answer from a wrong one. Here every BatchNorm's
running mean and variance are its activations' over the inputs (one pass in training mode, the
layers before it already normalised), as training would leave them: each layer's output then
varies with the image on the scale of its values, as in a trained network. The weights are
torchvision's initialisation from a fixed seed.

    /usr/bin/python3 bench/calibrated_export.py MODEL OUT.onnx [--size S]
        [--simulate tf32,fp16 --simulate-out FILE.json] [X.npy ...]

MODEL is a torchvision classifier's name (resnet50, mobilenet_v2, resnet18, ...); each X.npy a
float32 [1, 3, S, S] input (what `tensortune run --save-input` writes for a photo). Without
inputs the statistics stay the initialisation's: a model of the right input shape (S, default
224) to read photos with. The model is exported at opset 13 with one input `input` and one
output `output`, as the corpus's are.

--simulate also writes FILE.json: for each input, the model's logits computed by torch in
float64 ("reference") and, per precision (tf32, fp16, bf16), with the inputs and weights of every
convolution of one group and every linear layer rounded to it first (TF32 to nearest with ties
away, as cvt.rna.tf32.f32; float16 and bfloat16 to nearest even) and the sums in float64: what
the precision itself costs this network, independent of how any kernel computes it, to set
beside a compiled network's error.
"""
import argparse
import json
import sys
import warnings

import numpy as np

try:
    import torch
    import torchvision
except ImportError as e:
    sys.exit(f"error: {e}: needs Debian's python3-torch and python3-torchvision")

warnings.filterwarnings("ignore")


def round_tf32(x):
    bits = x.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


ROUNDINGS = {"tf32": round_tf32, "fp16": lambda x: x.half().float(),
             "bf16": lambda x: x.bfloat16().float()}


def simulated_logits(model, batch, rounding):
    """The model's outputs with every dense convolution's and linear layer's operands rounded
    by `rounding` (None: as they are), summed in float64."""
    functional = torch.nn.functional
    conv2d, linear = functional.conv2d, functional.linear

    def rounded(x):
        return rounding(x) if rounding else x

    def conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
        if groups == 1:
            x, w = rounded(x), rounded(w)
        return conv2d(x.double(), w.double(), None if b is None else b.double(), stride, padding,
                      dilation, groups).float()

    def lin(x, w, b=None):
        x, w = rounded(x), rounded(w)
        return linear(x.double(), w.double(), None if b is None else b.double()).float()

    torch.nn.modules.conv.F.conv2d, torch.nn.modules.linear.F.linear = conv, lin
    try:
        with torch.no_grad():
            return model(batch).double().tolist()
    finally:
        torch.nn.modules.conv.F.conv2d, torch.nn.modules.linear.F.linear = conv2d, linear


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("out")
    p.add_argument("inputs", nargs="*")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--simulate", type=lambda v: [x for x in v.split(",") if x], default=[])
    p.add_argument("--simulate-out")
    a = p.parse_intermixed_args()
    name, out, inputs, size, simulate, simulate_out = a.model, a.out, a.inputs, a.size, a.simulate, a.simulate_out
    for q in simulate:
        if q not in ROUNDINGS:
            sys.exit(f"error: --simulate {q}: one of {', '.join(ROUNDINGS)}")
    if simulate and not simulate_out:
        sys.exit("error: --simulate needs --simulate-out FILE.json")
    make = getattr(torchvision.models, name, None)
    if make is None or not callable(make):
        sys.exit(f"error: MODEL {name}: not a torchvision model")
    torch.manual_seed(1000)
    model = make(weights=None).eval()
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if inputs:
        batch = np.concatenate([np.load(f) for f in inputs]).astype(np.float32)
        if batch.ndim != 4 or batch.shape[1] != 3:
            sys.exit(f"error: inputs: shape {list(batch.shape)} stacked; each must be [1, 3, H, W]")
        if not norms:
            sys.exit(f"error: MODEL {name} has no batch norms to calibrate")
        for m in norms:
            m.reset_running_stats()
            m.momentum = None  # a cumulative average: after one batch, that batch's statistics
            m.train()
        with torch.no_grad():
            model(torch.from_numpy(batch))
        model.eval()
        example = torch.from_numpy(batch[:1])
    else:
        example = torch.zeros(1, 3, size, size)
    torch.onnx.export(model, example, out, opset_version=13, input_names=["input"],
                      output_names=["output"])
    if simulate:
        if not inputs:
            sys.exit("error: --simulate needs inputs")
        batch = torch.from_numpy(batch)
        logits = {"reference": simulated_logits(model, batch, None)}
        for p in simulate:
            logits[p] = simulated_logits(model, batch, ROUNDINGS[p])
        with open(simulate_out, "w") as f:
            json.dump(logits, f)
    what = f"{len(norms)} batch norms calibrated on {len(inputs)} inputs" if inputs else \
        "the initialisation's statistics"
    print(f"{name}: {what}; wrote {out}")


if __name__ == "__main__":
    main()
