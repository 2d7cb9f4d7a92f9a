#!/usr/bin/env python3
"""Helpers of scripts/gpu-check.sh: operator inputs with numpy references, output comparison,
the farm archive's once-per-config check, and PyTorch's ResNet-18 timing on the GPU.

  check_tools.py inputs DIR --op conv2d --data 1x64x14x14 --kernel 128x64x3x3 --pads 1 --strides 1
  check_tools.py inputs DIR --op dense --data 1x512 --weight 1000x512
  check_tools.py inputs DIR --op batch_matmul --data 12x128x64 --weight 12x96x64
      writes DIR/{data,weight,bias,ref}.npy; ref = op(data, weight) + bias, then relu (float64)
  check_tools.py compare GOT.npy WANT.npy [--rtol 1e-4]     max abs / relative error; 1 if over
  check_tools.py records DB [--at-least N]                  results per (task, config, key)
  check_tools.py count DB                                   results in an archive (0 if none yet)
  check_tools.py torch-resnet18 [--repeat 50]               median ms, batch 1, FP32 (no TF32)
"""
import argparse
import sqlite3
import sys


def dims(text):
    return [int(v) for v in text.split("x")]


def pair(text):
    v = [int(x) for x in text.split(",")]
    return v * 2 if len(v) == 1 else v


def conv2d_reference(np, x, w, strides, pads, dilation):
    """Direct NCHW/OIHW convolution in float64, grouped when the kernel has fewer input
    channels than the data: one accumulation per kernel tap."""
    n, c, h, wd = x.shape
    o, ci, kh, kw = w.shape
    groups = c // ci
    per_group = o // groups
    if len(pads) == 1:
        pads = pads * 4
    elif len(pads) == 2:
        pads = [pads[0], pads[1], pads[0], pads[1]]
    top, left, bottom, right = pads
    sh, sw = strides
    dh, dw = dilation
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    oh = (h + top + bottom - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + left + right - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow))
    for r in range(kh):
        for s in range(kw):
            win = xp[:, :, r * dh: r * dh + sh * (oh - 1) + 1: sh,
                     s * dw: s * dw + sw * (ow - 1) + 1: sw]
            # Grouped (depthwise: ci = 1): each group of outputs reads its own inputs.
            for g in range(groups):
                out[:, g * per_group:(g + 1) * per_group] += np.einsum(
                    "nchw,oc->nohw", win[:, g * ci:(g + 1) * ci],
                    w[g * per_group:(g + 1) * per_group, :, r, s])
    return out


def rounded(np, x, precision):
    """x as a reduced precision's products take it (numpy's own float16; bfloat16 to nearest
    even and TF32 to nearest, ties away, by their bit patterns), as float64."""
    if precision == "fp16":
        return x.astype(np.float16).astype(np.float64)
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    if precision == "bf16":
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000)
    elif precision == "tf32":
        bits = ((bits + 0x1000) & 0xFFFFE000)
    else:
        return x.astype(np.float64)
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def cmd_inputs(a):
    import numpy as np
    rng = np.random.default_rng(7)
    data = rng.uniform(-1, 1, dims(a.data)).astype(np.float32)
    if a.op == "conv2d":
        weight = rng.uniform(-1, 1, dims(a.kernel)).astype(np.float32)
        bias = rng.uniform(-1, 1, weight.shape[0]).astype(np.float32)
        ref = conv2d_reference(np, rounded(np, data, a.precision), rounded(np, weight, a.precision),
                               pair(a.strides), [int(p) for p in a.pads.split(",")],
                               pair(a.dilation))
        ref += bias.astype(np.float64)[None, :, None, None]
    elif a.op == "batch_matmul":  # weight (B, N, K), AutoTVM's layout; a bias per column
        weight = rng.uniform(-1, 1, dims(a.weight)).astype(np.float32)
        bias = rng.uniform(-1, 1, weight.shape[1]).astype(np.float32)
        ref = (rounded(np, data, a.precision) @
               rounded(np, weight, a.precision).transpose(0, 2, 1) + bias)
    else:
        weight = rng.uniform(-1, 1, dims(a.weight)).astype(np.float32)
        bias = rng.uniform(-1, 1, weight.shape[0]).astype(np.float32)
        ref = rounded(np, data, a.precision) @ rounded(np, weight, a.precision).T + bias
    ref = np.maximum(ref, 0).astype(np.float32)
    for name, value in (("data", data), ("weight", weight), ("bias", bias), ("ref", ref)):
        np.save(f"{a.dir}/{name}.npy", value)
    print(f"inputs: data {data.shape}, weight {weight.shape}, reference {ref.shape}")


def cmd_compare(a):
    import numpy as np
    got, want = np.load(a.got).astype(np.float64), np.load(a.want).astype(np.float64)
    if got.shape != want.shape:
        print(f"shape {got.shape} != reference {want.shape}")
        return 1
    diff = np.abs(got - want)
    scale = max(np.abs(want).max(), 1e-30)
    rel = diff.max() / scale
    print(f"max abs error {diff.max():.3g}, relative to the largest value {rel:.3g} "
          f"(tolerance {a.rtol:g}); {got.size} values")
    return 0 if rel <= a.rtol and np.isfinite(got).all() else 1


def cmd_records(a):
    db = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True)
    total = db.execute("SELECT count(*) FROM results").fetchone()[0]
    groups = db.execute(
        "SELECT count(*), sum(n > 1), coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n "
        "FROM results r JOIN configs c ON r.config_id = c.id "
        "GROUP BY c.task_id, c.config_index, r.device_key, r.threads)").fetchone()
    errors = db.execute(
        "SELECT error_no, count(*) FROM results WHERE error_no != 0 GROUP BY error_no").fetchall()
    configs, doubled, extra = groups[0], groups[1] or 0, groups[2]
    print(f"{total} results for {configs} configs: {doubled} configs measured more than once "
          f"({extra} extra results); errors by code: {dict(errors) or 'none'}")
    return 0 if extra == 0 and configs >= a.at_least else 1


def cmd_count(a):
    try:
        db = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True)
        print(db.execute("SELECT count(*) FROM results").fetchone()[0])
    except sqlite3.Error:
        print(0)
    return 0


def cmd_torch_resnet18(a):
    import torch
    import torchvision
    if not torch.cuda.is_available():
        print("torch: no GPU")
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet18(weights=None).eval().cuda()
    x = torch.rand(1, 3, 224, 224, device="cuda")
    times = []
    with torch.inference_mode():
        for _ in range(10):
            model(x)
        torch.cuda.synchronize()
        for _ in range(a.repeat):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            model(x)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
    times.sort()
    print(f"pytorch resnet-18 batch 1 fp32 (cudnn.benchmark, no TF32): median_ms "
          f"{times[len(times) // 2]:.3f} over {a.repeat} runs; torch {torch.__version__}, "
          f"cudnn {torch.backends.cudnn.version()}")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("inputs")
    i.add_argument("dir")
    i.add_argument("--op", choices=["conv2d", "dense", "batch_matmul"], required=True)
    i.add_argument("--data", required=True)
    i.add_argument("--kernel")
    i.add_argument("--weight")
    i.add_argument("--strides", default="1,1")
    i.add_argument("--pads", default="0")
    i.add_argument("--dilation", default="1,1")
    i.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "fp16", "bf16", "3xtf32"],
                   help="the reference's products' inputs rounded so (the tensor-core templates')")
    c = sub.add_parser("compare")
    c.add_argument("got")
    c.add_argument("want")
    c.add_argument("--rtol", type=float, default=1e-4)
    r = sub.add_parser("records")
    r.add_argument("db")
    r.add_argument("--at-least", type=int, default=1)
    n = sub.add_parser("count")
    n.add_argument("db")
    t = sub.add_parser("torch-resnet18")
    t.add_argument("--repeat", type=int, default=50)
    a = p.parse_args()
    return {"inputs": cmd_inputs, "compare": cmd_compare, "records": cmd_records,
            "count": cmd_count, "torch-resnet18": cmd_torch_resnet18}[a.cmd](a) or 0


if __name__ == "__main__":
    sys.exit(main())
