"""Compiling and running from Python, against the CLI's reference interpreter (naive loops),
with the input checks a numpy user runs into."""

import os
import subprocess

import numpy as np
import pytest

import tensortune as tt

SHAPE = (1, 3, 64, 64)


@pytest.fixture(scope="module")
def net():
    return tt.compile("mobilenet-v1", input_shapes={"data": SHAPE}, opt_level=3)


def reference(cli, tmp_path, x):
    """`tensortune run --reference`: the interpreter's answer for the same input."""
    np.save(tmp_path / "x.npy", x)
    cli("run", "--model", "mobilenet-v1", "--input-shape", "data=1x3x64x64", "--reference",
        "--input", f"data={tmp_path / 'x.npy'}", "--output", tmp_path / "ref.npy")
    return np.load(tmp_path / "ref.npy")


def test_run_equals_the_reference_interpreter(net, cli, scratch):
    x = np.random.default_rng(0).uniform(-1, 1, SHAPE).astype(np.float32)
    out = net.run({"data": x})
    assert list(out) == net.outputs
    got = out[net.outputs[0]]
    want = reference(cli, scratch, x)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    # Keyword form, and a strided view of the same values (made contiguous, one copy).
    np.testing.assert_array_equal(net.run(data=x)[net.outputs[0]], got)
    wide = np.zeros((1, 3, 64, 128), np.float32)
    wide[..., ::2] = x
    view = wide[..., ::2]
    assert not view.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(net.run(data=view)[net.outputs[0]], got)
    # The caller's array is not modified, and the outputs are arrays of their own.
    assert np.array_equal(x, wide[..., ::2])
    again = net.run(data=x)[net.outputs[0]]
    again[...] = 0
    assert np.abs(got).max() > 0


def test_save_load_and_describe(net, scratch):
    x = np.random.default_rng(1).uniform(-1, 1, SHAPE).astype(np.float32)
    path = scratch / "net.tt"
    net.save(path)
    loaded = tt.load(path, threads=2)
    assert loaded.threads == 2 and loaded.opt_level == 3
    assert loaded.inputs == {"data": (SHAPE, "float32")}
    np.testing.assert_allclose(loaded.run(data=x)[loaded.outputs[0]],
                               net.run(data=x)[net.outputs[0]], rtol=1e-5, atol=1e-6)
    kinds = {s["kind"] for s in net.steps}
    assert "kernel" in kinds
    assert all(not s["tuned"] for s in net.schedules)  # no records: default configs


def test_bench_and_profile(net):
    b = net.bench(repeat=3, min_repeat_ms=1)
    assert len(b["round_ms"]) == 3 and b["min_ms"] <= b["median_ms"] <= b["max_ms"]
    p = net.profile(repeat=3, min_repeat_ms=1)
    assert len(p["steps"]) == len(net.steps)
    assert p["profile_sum_ms"] == pytest.approx(sum(s["mean_ms"] for s in p["steps"]), rel=1e-6)
    assert p["triad_gbs"] > 0
    assert any(s["bytes"] > 0 and s["gbs"] > 0 for s in p["steps"])
    assert "kernel" in p["table"]


def test_bad_inputs_name_the_input(net):
    x = np.zeros(SHAPE, np.float32)
    with pytest.raises(tt.InvalidArgumentError, match="input 'data' is a float64 array"):
        net.run(data=x.astype(np.float64))
    with pytest.raises(tt.InvalidArgumentError, match=r"input 'data' has shape \(1, 3, 32, 32\)"):
        net.run(data=np.zeros((1, 3, 32, 32), np.float32))
    with pytest.raises(tt.InvalidArgumentError, match="'image' is not an input.*data"):
        net.run(image=x)
    with pytest.raises(tt.InvalidArgumentError, match="not a numpy array"):
        net.run(data=[[1.0]])
    with pytest.raises(tt.InvalidArgumentError, match="opt_level = 7"):
        tt.compile("mobilenet-v1", opt_level=7)
    with pytest.raises(tt.NotFoundError):
        tt.load("/nonexistent/net.tt")
    with pytest.raises(TypeError):
        tt.compile("mobilenet-v1", optlevel=3)


def test_quantize_writes_a_qdq_model_close_to_the_float_one(tmp_path):
    float_model = tmp_path / "r18.onnx"
    subprocess.run([os.environ["TT_CLI"], "export-onnx", "--model", "resnet-18", "--input-shape",
                    "data=1x3x32x32", "-o", str(float_model)], check=True, capture_output=True)
    report = tt.quantize(float_model, tmp_path / "r18.int8.onnx", samples=2)
    assert report["quantized"] == report["candidates"] == 21
    assert report["per_channel"] and not report["skipped"]
    x = np.random.default_rng(3).uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32)
    f = tt.compile(float_model).run(data=x)
    q = tt.compile(tmp_path / "r18.int8.onnx").run(data=x)
    a, b = next(iter(f.values())).ravel(), next(iter(q.values())).ravel()
    assert float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)) >= 0.99
    assert report["weight_max"] == 127
    narrow = tt.quantize(float_model, tmp_path / "r18.rr.onnx", samples=2, reduce_range=True)
    assert narrow["weight_max"] == 64
    r = tt.compile(tmp_path / "r18.rr.onnx").run(data=x)
    c = next(iter(r.values())).ravel()
    assert float(a @ c / np.linalg.norm(a) / np.linalg.norm(c)) >= 0.99
    assert report["bias_corrected"] == 21 and report["reduced"] == 0
    mixed = tt.quantize(float_model, tmp_path / "r18.mixed.onnx", samples=2, reduce_range="auto",
                        noise_growth=1.05)
    assert mixed["reduced"] + mixed["full"] == 21
    assert len(mixed["kept_full_range"]) == mixed["full"]
    with pytest.raises(ValueError, match="reduce_range = 'some'"):
        tt.quantize(float_model, tmp_path / "x.onnx", reduce_range="some")
    with pytest.raises(tt.InvalidArgumentError, match="--percentile"):
        tt.quantize(float_model, tmp_path / "x.onnx", percentile=10)
    # A quantized model quantizes nothing more: an error naming why, unless allowed.
    with pytest.raises(tt.InvalidArgumentError, match="quantized none of its"):
        tt.quantize(tmp_path / "r18.int8.onnx", tmp_path / "again.onnx", samples=1)
    assert not (tmp_path / "again.onnx").exists()
    again = tt.quantize(tmp_path / "r18.int8.onnx", tmp_path / "again.onnx", samples=1,
                        allow_none=True)
    assert again["quantized"] == 0 and (tmp_path / "again.onnx").exists()
