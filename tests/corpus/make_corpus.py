#!/usr/bin/python3
"""Writes the corpus of real exported models: torchvision architectures with random
weights (no download) and a small transformer encoder, exported by torch.onnx.export at several
opsets, each with a random input in .npy.

    /usr/bin/python3 tests/corpus/make_corpus.py OUT_DIR [--models a,b] [--opsets 11,13,17]

Needs Debian's python3-torch and python3-torchvision. Writes OUT_DIR/NAME_opsetN.onnx and
OUT_DIR/NAME.input.npy (a model of several inputs: OUT_DIR/NAME.INPUT.npy each), and
OUT_DIR/manifest.txt (one "NAME OPSET FILE INPUTS" line per model, INPUTS the one input's file or
"name=file,name=file")
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


class BertEncoder(torch.nn.Module):
    """A BERT-base encoder written as Hugging Face's exports it: word, position and token-type
    embeddings, 12 post-norm layers of hidden 768 and 12 heads, attention as MatMul + Softmax with
    the attention mask (an input) added as (1 - mask) * -10000, GELU in its erf form; it returns
    the last hidden states."""

    def __init__(self, vocab=30522, dim=768, heads=12, layers=12, ffn=3072, positions=512):
        super().__init__()
        self.heads = heads
        self.word = torch.nn.Embedding(vocab, dim)
        self.position = torch.nn.Embedding(positions, dim)
        self.token_type = torch.nn.Embedding(2, dim)
        self.norm = torch.nn.LayerNorm(dim, eps=1e-12)
        self.layers = torch.nn.ModuleList()
        for _ in range(layers):
            self.layers.append(torch.nn.ModuleDict({
                "q": torch.nn.Linear(dim, dim), "k": torch.nn.Linear(dim, dim),
                "v": torch.nn.Linear(dim, dim), "o": torch.nn.Linear(dim, dim),
                "norm1": torch.nn.LayerNorm(dim, eps=1e-12), "up": torch.nn.Linear(dim, ffn),
                "down": torch.nn.Linear(ffn, dim), "norm2": torch.nn.LayerNorm(dim, eps=1e-12)}))

    def forward(self, input_ids, attention_mask):
        batch, tokens = input_ids.shape
        positions = torch.arange(tokens).unsqueeze(0)
        x = self.norm(self.word(input_ids) + self.position(positions) +
                      self.token_type(torch.zeros_like(input_ids)))
        bias = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        head_dim = x.shape[-1] // self.heads

        def split(t):
            return t.view(batch, tokens, self.heads, head_dim).transpose(1, 2)

        for layer in self.layers:
            q, k, v = split(layer["q"](x)), split(layer["k"](x)), split(layer["v"](x))
            scores = torch.matmul(q, k.transpose(-1, -2)) / (head_dim ** 0.5) + bias
            context = torch.matmul(torch.softmax(scores, dim=-1), v)
            context = context.transpose(1, 2).reshape(batch, tokens, -1)
            x = layer["norm1"](x + layer["o"](context))
            x = layer["norm2"](x + layer["down"](torch.nn.functional.gelu(layer["up"](x))))
        return x


def bert_inputs(rng, tokens=128, padding=16, vocab=30522):
    """Token ids and an attention mask whose last `padding` positions are padding."""
    ids = rng.integers(0, vocab, size=(1, tokens)).astype(np.int64)
    mask = np.ones((1, tokens), dtype=np.int64)
    mask[:, tokens - padding:] = 0
    return {"input_ids": ids, "attention_mask": mask}


class Gpt2(torch.nn.Module):
    """A GPT-2-small-shaped decoder (12 pre-norm layers of hidden 768 and 12 heads, learned
    positions, GELU in its tanh form, the LM head tied to the token embedding) over `tokens` new
    tokens after `past` cached ones: the causal mask written with Where, the key/value cache taken
    as inputs (past_key_i, past_value_i, each [1, heads, past, head_dim]) and returned after the
    logits (present_key_i, present_value_i). past = 0 is the prefill, which takes no cache."""

    def __init__(self, tokens, past, vocab=50257, dim=768, heads=12, layers=12, positions=1024):
        super().__init__()
        self.tokens, self.past, self.heads = tokens, past, heads
        self.word = torch.nn.Embedding(vocab, dim)
        self.position = torch.nn.Embedding(positions, dim)
        self.layers = torch.nn.ModuleList()
        for _ in range(layers):
            self.layers.append(torch.nn.ModuleDict({
                "norm1": torch.nn.LayerNorm(dim), "qkv": torch.nn.Linear(dim, 3 * dim),
                "o": torch.nn.Linear(dim, dim), "norm2": torch.nn.LayerNorm(dim),
                "up": torch.nn.Linear(dim, 4 * dim), "down": torch.nn.Linear(4 * dim, dim)}))
        self.norm = torch.nn.LayerNorm(dim)

    def forward(self, input_ids, *cache):
        t, p, h = self.tokens, self.past, self.heads
        x = self.word(input_ids) + self.position(torch.arange(p, p + t).unsqueeze(0))
        d = x.shape[-1] // h
        # Query i (at position p + i) sees keys 0 .. p + i.
        allowed = torch.ones(t, p + t, dtype=torch.bool).tril(diagonal=p)
        presents = []
        for i, layer in enumerate(self.layers):
            q, k, v = layer["qkv"](layer["norm1"](x)).split(x.shape[-1], dim=-1)
            q, k, v = (z.view(1, t, h, d).transpose(1, 2) for z in (q, k, v))
            if p:
                k = torch.cat([cache[2 * i], k], dim=2)
                v = torch.cat([cache[2 * i + 1], v], dim=2)
            presents += [k, v]
            scores = torch.matmul(q, k.transpose(-1, -2)) / (d ** 0.5)
            scores = torch.where(allowed, scores, torch.tensor(torch.finfo(torch.float32).min))
            context = torch.matmul(torch.softmax(scores, dim=-1), v)
            x = x + layer["o"](context.transpose(1, 2).reshape(1, t, -1))
            x = x + layer["down"](torch.nn.functional.gelu(layer["up"](layer["norm2"](x)),
                                                           approximate="tanh"))
        logits = torch.matmul(self.norm(x), self.word.weight.t())
        return (logits, *presents)


def gpt2_inputs(tokens, past, layers=12, heads=12, head_dim=64):
    def make(rng):
        feeds = {"input_ids": rng.integers(0, 50257, size=(1, tokens)).astype(np.int64)}
        for i in range(layers if past else 0):
            for kind in ("key", "value"):
                feeds[f"past_{kind}_{i}"] = \
                    rng.standard_normal((1, heads, past, head_dim)).astype(np.float32)
        return feeds
    return make


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
    "vit_b_16": (lambda: torchvision.models.vit_b_16(weights=None), (1, 3, 224, 224), "image"),
    "swin_t": (lambda: torchvision.models.swin_t(weights=None), (1, 3, 224, 224), "image"),
    "bert_base": (BertEncoder, (1, 128), bert_inputs),
    # A small BERT exported with its sequence axis dynamic, as Hugging Face's exports are: the
    # model of `compile --input-shape input_ids=1x1..64` (a range of lengths).
    "bert_dynamic": (lambda: BertEncoder(vocab=1000, dim=64, heads=4, layers=2, ffn=128,
                                         positions=128), (1, 16),
                     lambda rng: bert_inputs(rng, 16, 4, vocab=1000)),
    "gpt2_prefill": (lambda: Gpt2(128, 0), (1, 128), gpt2_inputs(128, 0)),
    "gpt2_decode": (lambda: Gpt2(1, 128), (1, 1), gpt2_inputs(1, 128)),
}
# Models whose operators need a newer opset than the corpus's first.
MIN_OPSET = {"qdq_convnet": 13}
# Models exported with these axes dynamic (input or output name -> {axis: name}).
DYNAMIC_AXES = {"bert_dynamic": {"input_ids": {1: "tokens"}, "attention_mask": {1: "tokens"},
                                 "output": {1: "tokens"}}}
# Large models, exported at these opsets only (LayerNormalization decomposed into its Reduce
# form at 13, one node at 17): each file is hundreds of megabytes.
ONLY_OPSETS = {"bert_base": (13, 17), "bert_dynamic": (13,), "gpt2_prefill": (17,), "gpt2_decode": (17,),
               "vit_b_16": (17,), "swin_t": (17,)}


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
        # Several inputs: a function of the generator gives them by name (input_ids, ...).
        if callable(kind):
            feeds = kind(rng)
        elif kind == "image":
            feeds = {"input": rng.standard_normal(shape).astype(np.float32)}
        else:
            feeds = {"input": rng.integers(0, 100, size=shape).astype(np.int64)}
        # One input named "input": NAME.input.npy (what the manifest's older readers expect);
        # named inputs: NAME.<input>.npy each, listed as input=file pairs.
        named = callable(kind)
        input_files = {}
        for input_name, value in feeds.items():
            file = f"{name}.{input_name}.npy" if named else f"{name}.input.npy"
            np.save(os.path.join(a.out_dir, file), value)
            input_files[input_name] = file
        input_column = ",".join(f"{k}={v}" for k, v in input_files.items()) if named else \
            next(iter(input_files.values()))
        for opset in (int(o) for o in a.opsets.split(",")):
            if opset < MIN_OPSET.get(name, 0) or opset not in ONLY_OPSETS.get(name, (opset,)):
                continue
            path = os.path.join(a.out_dir, f"{name}_opset{opset}.onnx")
            # With autograd on: under no_grad, torch's attention takes a fused fast path that
            # has no ONNX export.
            # A decoder returns its key/value cache after the logits.
            outputs = ["output"] + [f"present_{kv}_{i}" for i in range(len(getattr(model, "layers", [])) if isinstance(model, Gpt2) else 0) for kv in ("key", "value")]
            torch.onnx.export(model, tuple(torch.from_numpy(v) for v in feeds.values()), path,
                              opset_version=opset, input_names=list(feeds),
                              output_names=outputs, dynamic_axes=DYNAMIC_AXES.get(name))
            manifest.append(f"{name} {opset} {os.path.basename(path)} {input_column}")
            print(f"corpus: {name} opset {opset}: {os.path.getsize(path) / 1e6:.1f} MB", flush=True)
    with open(stamp_path, "w") as f:
        f.write(stamp)
    with open(manifest_path, "w") as f:
        f.write("\n".join(manifest) + "\n")


if __name__ == "__main__":
    main()
