"""A range of sequence lengths from Python: a transformer exported by torch with its sequence axis
dynamic, compiled with range(1, 33) in input_shapes, run on lengths across the range against torch
itself, saved and loaded, timed; lengths outside the range are refused naming it."""

import numpy as np
import pytest

import tensortune as tt

torch = pytest.importorskip("torch", reason="the exporter of the test's model is torch")


class Encoder(torch.nn.Module):
    """Token and position embeddings, one attention (MatMul + Softmax, the attention mask added
    as (1 - mask) * -10000), a layer norm."""

    def __init__(self, vocab=40, dim=16, heads=2):
        super().__init__()
        self.heads = heads
        self.word = torch.nn.Embedding(vocab, dim)
        self.position = torch.nn.Embedding(64, dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.norm = torch.nn.LayerNorm(dim)

    def forward(self, input_ids, attention_mask):
        batch, tokens = input_ids.shape
        x = self.word(input_ids) + self.position(torch.arange(tokens).unsqueeze(0))
        q, k, v = (t.view(batch, tokens, self.heads, -1).transpose(1, 2)
                   for t in self.qkv(x).split(x.shape[-1], dim=-1))
        bias = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        p = torch.softmax(q @ k.transpose(-1, -2) / 8 ** 0.5 + bias, dim=-1)
        return self.norm(x + (p @ v).transpose(1, 2).reshape(batch, tokens, -1))


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    torch.manual_seed(0)
    module = Encoder().eval()
    path = tmp_path_factory.mktemp("ranged") / "encoder.onnx"
    ids = torch.zeros(1, 8, dtype=torch.int64)
    torch.onnx.export(module, (ids, torch.ones_like(ids)), str(path), opset_version=13,
                      input_names=["input_ids", "attention_mask"], output_names=["hidden"],
                      dynamic_axes={"input_ids": {1: "tokens"}, "attention_mask": {1: "tokens"},
                                    "hidden": {1: "tokens"}})
    return module, path


def feeds(length):
    rng = np.random.default_rng(length)
    mask = np.ones((1, length), np.int64)
    mask[:, length - length // 4:] = 0
    return {"input_ids": rng.integers(0, 40, (1, length)).astype(np.int64), "attention_mask": mask}


def test_every_length_equals_torch_and_the_artifact_round_trips(model, tmp_path):
    module, path = model
    net = tt.compile(path, input_shapes={"input_ids": (1, range(1, 33)),
                                         "attention_mask": (1, range(1, 33))})
    assert net.sequence_range == range(1, 33)
    assert net.buckets == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]  # half octaves
    assert net.inputs["input_ids"] == ((1, range(1, 33)), "int64")
    for length in (1, 3, 8, 13, 32):
        x = feeds(length)
        with torch.no_grad():
            want = module(*(torch.from_numpy(v) for v in x.values())).numpy()
        got = net.run(x)["hidden"]
        assert got.shape == want.shape
        assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max(), length
    net.save(tmp_path / "ranged.tt")
    back = tt.load(tmp_path / "ranged.tt")
    assert back.sequence_range == range(1, 33)
    np.testing.assert_array_equal(back.run(feeds(13))["hidden"], net.run(feeds(13))["hidden"])
    assert net.bench(inputs=feeds(5), repeat=2)["median_ms"] > 0
    with pytest.raises(tt.InvalidArgumentError, match=r"sequence length 33 .* outside the range 1..32"):
        net.run(feeds(33))
    octaves = tt.compile(path, input_shapes={"input_ids": (1, range(1, 33)),
                                             "attention_mask": (1, range(1, 33))},
                         sequence_buckets="octaves")
    assert octaves.buckets == [1, 2, 4, 8, 16, 32]
    np.testing.assert_allclose(octaves.run(feeds(13))["hidden"], net.run(feeds(13))["hidden"],
                               atol=1e-5)
    with pytest.raises(tt.InvalidArgumentError, match="last bucket 16 is not the range's top 32"):
        tt.compile(path, input_shapes={"input_ids": (1, range(1, 33))}, sequence_buckets="8,16")
    tasks = tt.extract_tasks(path, input_shapes={"input_ids": (1, range(1, 33)),
                                                 "attention_mask": (1, range(1, 33))})
    lengths = {n.rsplit("(length ", 1)[1].rstrip(")") for t in tasks for n in t.nodes}
    assert lengths == {str(b) for b in net.buckets}  # every bucket's layers, named by length
    with pytest.raises(tt.InvalidArgumentError, match="not a range of lengths"):
        tt.compile(path, input_shapes={"input_ids": (1, range(5, 6))})
