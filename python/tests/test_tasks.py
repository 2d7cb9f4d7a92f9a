"""Tasks and config spaces: what the CLI lists, indices <-> entities, bad input."""

import random

import pytest

import tensortune as tt


def test_extracted_tasks_are_the_clis(cli):
    tasks = tt.extract_tasks("resnet-18")
    listed = cli("tasks", "--model", "resnet-18", "--json", parse_json=True)["tasks"]
    assert [t.workload_key for t in tasks] == [t["workload_key"] for t in listed]
    assert [t.template_name for t in tasks] == [t["template"] for t in listed]
    assert [t.nodes for t in tasks] == [t["nodes"] for t in listed]
    assert [t.flop for t in tasks] == pytest.approx([t["flop"] for t in listed])
    no_winograd = tt.extract_tasks("resnet-18", exclude_algorithms=["winograd"])
    assert all("winograd" not in t.template_name for t in no_winograd)
    assert len(no_winograd) < len(tasks)
    with pytest.raises(tt.InvalidArgumentError, match="'winogard' is no template's algorithm"):
        tt.extract_tasks("resnet-18", exclude_algorithms=["winogard"])


def test_config_space_indexing_and_entities_round_trip():
    task = tt.Task("conv2d", data=(1, 64, 56, 56), weight=(64, 64, 3, 3), pads=(1, 1, 1, 1))
    assert task.template_name == "conv2d_NCHWc.x86"
    # 2 * 64 * 64 * 9 MACs per output pixel of 56 x 56.
    assert task.flop == 2 * 64 * 56 * 56 * 64 * 3 * 3
    space = task.config_space
    assert len(space) > 1000
    assert 0 < space.valid_count() <= len(space)
    # The host's CPU model keeps back tiles that spill or leave its FMA pipes waiting.
    assert 0 < space.offered_count() < space.valid_count()
    knob_names = [k["name"] for k in space.knobs]
    # The flat index is mixed radix over the knobs, first knob fastest (AutoTVM's order).
    sizes = [len(k["options"]) for k in space.knobs]
    rng = random.Random(7)
    for _ in range(50):
        index = rng.randrange(len(space))
        config = space[index]
        assert config.index == index
        assert list(config.entity) == knob_names
        rest = index
        for k, size in zip(space.knobs, sizes):
            assert config.entity[k["name"]] == k["options"][rest % size]
            rest //= size
        assert space.config(config.entity) == config
        # AutoTVM's list form of an entity names the same point.
        as_list = [[k["name"], k["kind"], config.entity[k["name"]]] for k in space.knobs]
        assert space.config(as_list) == config
    assert space[-1].index == len(space) - 1


def test_workload_key_round_trip():
    task = tt.Task("dense", data=(1, 512), weight=(1000, 512))
    again = tt.Task.from_workload_key(task.workload_key, task.target)
    assert again.workload_key == task.workload_key
    assert len(again.config_space) == len(task.config_space)
    # 7-bit weights: a task of its own ("int7" in the key), which reads back as itself.
    wide = tt.Task("conv2d_int8", data=(1, 16, 8, 8), weight=(32, 16, 1, 1))
    narrow = tt.Task("conv2d_int8", data=(1, 16, 8, 8), weight=(32, 16, 1, 1), weight_bits=7)
    assert '"int8"' in wide.workload_key and '"int7"' in narrow.workload_key
    assert tt.Task.from_workload_key(narrow.workload_key, narrow.target).workload_key == \
        narrow.workload_key
    with pytest.raises(tt.InvalidArgumentError, match="--weight-bits = 7 is for quantized"):
        tt.Task("dense", data=(1, 512), weight=(1000, 512), weight_bits=7)


def test_bad_input_raises_clear_errors():
    with pytest.raises(tt.InvalidArgumentError, match="data = '1x64x0x56': dimension 0"):
        tt.Task("conv2d", data=(1, 64, 0, 56), weight=(64, 64, 3, 3))
    with pytest.raises(ValueError):  # InvalidArgumentError is a ValueError too
        tt.Task("conv3d", data=(1, 64, 56, 56), weight=(64, 64, 3, 3))
    space = tt.Task("dense", data=(1, 512), weight=(1000, 512)).config_space
    with pytest.raises(IndexError, match=str(len(space))):
        space[len(space)]
    with pytest.raises(tt.InvalidArgumentError, match="unknown knob 'tile_zz'"):
        space.config({"tile_zz": [-1, 4]})
    with pytest.raises(tt.InvalidArgumentError, match="not a dict"):
        space.config(42)
    with pytest.raises(TypeError):
        tt.Task("dense", data=(1, 512), weight=(1000, 512), stride=(1, 1))  # unknown keyword
    with pytest.raises(tt.NotFoundError, match="neither a zoo model"):
        tt.extract_tasks("no-such-model")
    with pytest.raises(tt.InvalidArgumentError, match="input_shapes"):
        tt.extract_tasks("resnet-18", input_shapes={"data": "1x3x64x64"})


def test_a_reduced_precision_makes_tensor_core_tasks_and_keeps_them_apart(cli):
    half = tt.Task("dense", data=(32, 64), weight=(48, 64), target="cuda", precision="fp16")
    assert half.template_name == "dense_tensorcore.cuda"
    assert half.precision == "float16"
    assert '"float16"' in half.workload_key
    tf32 = tt.Task("dense", data=(32, 64), weight=(48, 64), target="cuda", precision="tf32")
    assert tf32.workload_key != half.workload_key
    split = tt.Task("dense", data=(32, 64), weight=(48, 64), target="cuda", precision="3xtf32")
    assert split.precision == "3xtf32"
    assert split.workload_key not in (tf32.workload_key, half.workload_key)
    assert tt.Task("dense", data=(32, 64), weight=(48, 64), target="cuda").precision == "float32"
    with pytest.raises(tt.InvalidArgumentError, match="tensor cores"):
        tt.Task("dense", data=(32, 64), weight=(48, 64), precision="fp16")  # a CPU target
    with pytest.raises(tt.InvalidArgumentError, match="'fp8'"):
        tt.Task("dense", data=(32, 64), weight=(48, 64), target="cuda", precision="fp8")
    # A model's tasks at fp16: every convolution and the classifier on the tensor cores, as the
    # CLI lists them; on a CPU target the precision is refused, naming it.
    tasks = tt.extract_tasks("resnet-18", target="cuda", precision="fp16")
    listed = cli("tasks", "--model", "resnet-18", "--target", "cuda", "--precision", "fp16",
                 "--json", parse_json=True)["tasks"]
    assert [t.workload_key for t in tasks] == [t["workload_key"] for t in listed]
    assert {t.template_name for t in tasks} == {"conv2d_nchw_tensorcore.cuda",
                                                 "dense_tensorcore.cuda"}
    assert all(t.precision == "float16" for t in tasks)
    with pytest.raises(tt.InvalidArgumentError, match="llvm"):
        tt.extract_tasks("resnet-18", precision="fp16")
