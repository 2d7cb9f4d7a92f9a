#!/usr/bin/python3
"""Writes the corpus of real exported models: torchvision architectures with random
weights (no download) and a small transformer encoder, exported by torch.onnx.export at several
opsets, each with a random input in .npy.

    /usr/bin/python3 tests/corpus/make_corpus.py OUT_DIR [--models a,b] [--opsets 11,13,17]

Needs Debian's python3-torch and python3-torchvision. Writes OUT_DIR/NAME_opsetN.onnx and
OUT_DIR/NAME.input.npy, and OUT_DIR/manifest.txt (one "NAME OPSET FILE INPUT" line per model)
last, so that a manifest means a complete corpus. Models and inputs come from fixed seeds: the
same torch version writes the same files.
"""
import argparse
import hashlib
import os
import sys
import warnings

import numpy as np

try:
    import torch
    import torchvision
except ImportError as e:
    print(f"SKIP: {e}: the corpus needs Debian's python3-torch and python3-torchvision "
          "(scripts/deps.sh --test)")
    sys.exit(77)

# torch.onnx.export warns about constant folding and training flags on every model.
warnings.filterwarnings("ignore")


class TinyTransformer(torch.nn.Module):
    """A token-embedding transformer encoder (post-norm, GELU) with a mean-pooled classifier."""

    def __init__(self, vocab=100, dim=64, heads=4, layers=2):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        layer = torch.nn.TransformerEncoderLayer(dim, heads, dim_feedforward=128, dropout=0.0,
                                                 activation="gelu", batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers)
        self.head = torch.nn.Linear(dim, 10)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)).mean(dim=1))


class QdqConvNet(torch.nn.Module):
    """A quantized network in ONNX's QDQ form, as quantization tools write it: uint8 activations
    (per tensor), int8 weights (per output channel, symmetric), a residual add; torch's fake
    quantization exports as QuantizeLinear -> DequantizeLinear pairs (opset 13 and later)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.pointwise = torch.nn.Conv2d(16, 16, 1)

    @staticmethod
    def weight(conv):
        scale = (conv.weight.abs().amax((1, 2, 3)) / 127).detach()
        zero = torch.zeros(conv.weight.shape[0], dtype=torch.int32)
        return torch.fake_quantize_per_channel_affine(conv.weight, scale, zero, 0, -128, 127)

    def forward(self, x):
        x = torch.fake_quantize_per_tensor_affine(x, 0.02, 128, 0, 255)
        y = torch.relu(torch.nn.functional.conv2d(x, self.weight(self.conv), self.conv.bias,
                                                  padding=1))
        y = torch.fake_quantize_per_tensor_affine(y, 0.01, 0, 0, 255)
        z = torch.nn.functional.conv2d(y, self.weight(self.pointwise), self.pointwise.bias) + y
        return torch.fake_quantize_per_tensor_affine(z, 0.01, 128, 0, 255)


def tiny_vit():
    return torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                                                num_heads=2, hidden_dim=64, mlp_dim=128,
                                                num_classes=10)


# name -> (constructor, input shape, input kind)
MODELS = {
    "resnet50": (lambda: torchvision.models.resnet50(weights=None), (1, 3, 224, 224), "image"),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), (1, 3, 224, 224), "image"),
    "mobilenet_v3_large": (lambda: torchvision.models.mobilenet_v3_large(weights=None),
                           (1, 3, 224, 224), "image"),
    "squeezenet1_1": (lambda: torchvision.models.squeezenet1_1(weights=None), (1, 3, 224, 224), "image"),
    "densenet121": (lambda: torchvision.models.densenet121(weights=None), (1, 3, 224, 224), "image"),
    "googlenet": (lambda: torchvision.models.googlenet(weights=None, aux_logits=False,
                                                        init_weights=True), (1, 3, 224, 224), "image"),
    "inception_v3": (lambda: torchvision.models.inception_v3(weights=None, aux_logits=False,
                                                              init_weights=True), (1, 3, 299, 299), "image"),
    "mnasnet1_0": (lambda: torchvision.models.mnasnet1_0(weights=None), (1, 3, 224, 224), "image"),
    "vit_tiny": (tiny_vit, (1, 3, 32, 32), "image"),
    "transformer_tiny": (TinyTransformer, (1, 16), "tokens"),
    "qdq_convnet": (QdqConvNet, (1, 8, 16, 16), "image"),
}
# Models whose operators need a newer opset than the corpus's first.
MIN_OPSET = {"qdq_convnet": 13}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--opsets", default="11,13,17")
    p.add_argument("--if-stale", action="store_true",
                   help="do nothing when OUT_DIR already holds a corpus of this script, these "
                        "models and opsets, and this torch version")
    a = p.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    with open(__file__, "rb") as f:
        stamp = hashlib.sha256(f.read() + f"{a.models} {a.opsets} {torch.__version__}".encode()).hexdigest()
    stamp_path = os.path.join(a.out_dir, "stamp.txt")
    manifest_path = os.path.join(a.out_dir, "manifest.txt")
    if a.if_stale and os.path.exists(manifest_path) and os.path.exists(stamp_path) and \
            open(stamp_path).read() == stamp:
        print(f"corpus: {a.out_dir} is up to date")
        return
    if os.path.exists(manifest_path):
        os.remove(manifest_path)
    manifest = []
    for seed, name in enumerate(a.models.split(",")):
        if name not in MODELS:
            sys.exit(f"error: --models: unknown model '{name}' (known: {', '.join(MODELS)})")
        make, shape, kind = MODELS[name]
        torch.manual_seed(1000 + seed)
        model = make().eval()
        # Weights a model initialises to zero (ViT's classifier head) would make every output
        # equal whatever the network computes: they get random values too.
        with torch.no_grad():
            for p in model.parameters():
                if p.dim() >= 2 and not p.any():
                    p.normal_(0, 0.05)
        # BatchNorm statistics other than 0/1, so that folding them is tested.
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
        rng = np.random.default_rng(seed)
        if kind == "image":
            x = rng.standard_normal(shape).astype(np.float32)
        else:
            x = rng.integers(0, 100, size=shape).astype(np.int64)
        input_path = os.path.join(a.out_dir, f"{name}.input.npy")
        np.save(input_path, x)
        for opset in (int(o) for o in a.opsets.split(",")):
            if opset < MIN_OPSET.get(name, 0):
                continue
            path = os.path.join(a.out_dir, f"{name}_opset{opset}.onnx")
            # With autograd on: under no_grad, torch's attention takes a fused fast path that
            # has no ONNX export.
            torch.onnx.export(model, torch.from_numpy(x), path, opset_version=opset,
                              input_names=["input"], output_names=["output"])
            manifest.append(f"{name} {opset} {os.path.basename(path)} {os.path.basename(input_path)}")
            print(f"corpus: {name} opset {opset}: {os.path.getsize(path) / 1e6:.1f} MB", flush=True)
    with open(stamp_path, "w") as f:
        f.write(stamp)
    with open(manifest_path, "w") as f:
        f.write("\n".join(manifest) + "\n")


if __name__ == "__main__":
    main()
