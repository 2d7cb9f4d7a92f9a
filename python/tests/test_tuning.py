"""Tuning from Python: the per-batch callback, stopping early, resuming, Ctrl-C between
batches, and the records it leaves."""

import os
import signal
import subprocess
import threading
import time

import pytest

import tensortune as tt

# Small and quick to measure: every batch takes milliseconds.
FAST = dict(number=1, repeat=1, min_repeat_ms=0, batch_size=4, tuner="random", seed=3)


def dense_task():
    return tt.Task("dense", data=(1, 64), weight=(32, 64))


def test_callback_sees_every_batch_and_stops_the_task(scratch):
    db = scratch / "t.db"
    seen = []

    def stop_after_two(progress, results):
        seen.append((progress["done"], len(results)))
        for r in results:
            assert isinstance(r["config"], tt.Config)
            assert r["error_no"] == 0 and r["gflops"] > 0 and len(r["costs"]) == 1
        return len(seen) < 2

    result = tt.tune_op(dense_task(), trials=40, db=db, callbacks=[stop_after_two], **FAST)
    assert seen == [(4, 4), (8, 4)]
    assert result["stopped"] and result["measured"] == 8 and result["trials"] == 8
    assert result["best_gflops"] > 0 and result["best_config"] is not None
    with tt.RecordStore(db) as store:
        assert len(store) == 8
        rows = store.results()
        assert [r["run_id"] for r in rows] == ["random-seed3"] * 8
        best = store.best()
        assert len(best) == 1
        assert best[0]["gflops"] == pytest.approx(max(r["gflops"] for r in rows))
        assert best[0]["config_index"] == result["best_config"].index

    # The same run again resumes: its 8 trials count, 4 more are measured.
    again = tt.tune_op(dense_task(), trials=12, db=db, **FAST)
    assert again["resumed"] == 8 and again["measured"] == 4 and not again["stopped"]
    with tt.RecordStore(db) as store:
        assert len(store) == 12


def test_a_raising_callback_stops_after_its_batch_and_raises(scratch):
    db = scratch / "r.db"

    def boom(progress, results):
        raise RuntimeError("from the callback")

    with pytest.raises(RuntimeError, match="from the callback"):
        tt.tune_op(dense_task(), trials=40, db=db, callbacks=boom, **FAST)
    with tt.RecordStore(db) as store:
        assert len(store) == 4  # the batch it saw was recorded


def test_ctrl_c_between_batches_stops_cleanly(scratch):
    db = scratch / "c.db"
    batches = []

    def slow_down(progress, results):
        batches.append(progress["done"])
        if len(batches) == 2:
            # A Ctrl-C arriving while the C++ loop measures the next batch (GIL released).
            threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()
        return True

    task = tt.Task("dense", data=(1, 256), weight=(256, 256))
    with pytest.raises(KeyboardInterrupt):
        tt.tune_op(task, trials=400, db=db, callbacks=slow_down,
                   **dict(FAST, min_repeat_ms=20))
    # The batch measured when the signal came is recorded too; its callbacks never ran.
    with tt.RecordStore(db) as store:
        assert len(store) == 4 * (len(batches) + 1)
        assert store.check()["mismatches"] == 0
    assert 2 <= len(batches) < 99


def test_tune_model_tunes_the_chosen_tasks(scratch):
    db = scratch / "m.db"
    progress = []
    results = tt.tune_model("mobilenet-v1", input_shapes={"data": (1, 3, 32, 32)}, tasks=[0, 2],
                            trials=4, db=db, callbacks=lambda p, r: progress.append(p),
                            **FAST)
    tasks = tt.extract_tasks("mobilenet-v1", input_shapes={"data": (1, 3, 32, 32)})
    assert [r["task"].workload_key for r in results] == [tasks[0].workload_key,
                                                        tasks[2].workload_key]
    assert {p["task_index"] for p in progress} == {0, 2}
    assert all(p["task_count"] == len(tasks) for p in progress)
    with tt.RecordStore(db) as store:
        assert len(store) == 8
    with pytest.raises(tt.InvalidArgumentError, match="tasks: 99"):
        tt.tune_model("mobilenet-v1", tasks=[99], trials=4, db=db)


def test_tune_model_tunes_each_thread_count(scratch):
    db = scratch / "t.db"
    results = tt.tune_model("mobilenet-v1", input_shapes={"data": (1, 3, 32, 32)}, tasks=[0],
                            trials=4, db=db, threads=[2, 1], **FAST)
    assert len(results) == 2
    assert results[0]["task"].workload_key == results[1]["task"].workload_key
    with tt.RecordStore(db) as store:
        assert len(store) == 8
        assert sorted(r["threads"] for r in store.results()) == [1] * 4 + [2] * 4


def test_graph_tune_stores_a_choice_that_compile_uses(scratch, cli):
    db = scratch / "g.db"
    shapes = {"data": (1, 3, 32, 32)}
    tt.tune_model("mobilenet-v1", input_shapes=shapes, trials=4, db=db, imposed_trials=0, **FAST)
    with tt.RecordStore(db) as store:
        tuned = store.stats()["results"]
    # Then the layers compiled at blocks their neighbours impose: every config measured is
    # recorded (how many layers that is depends on the measured times).
    measured = tt.tune_imposed_blocks("mobilenet-v1", db=db, input_shapes=shapes, trials=2,
                                      number=1, repeat=1, min_repeat_ms=0)
    with tt.RecordStore(db) as store:
        assert store.stats()["results"] == tuned + measured
    tt.graph_tune("mobilenet-v1", db=db, input_shapes=shapes, export_log=scratch / "graph.log")
    with tt.RecordStore(db) as store:
        assert store.stats()["graph_best_models"] == 1
    assert (scratch / "graph.log").read_text().count("\n") >= 1
    net = tt.compile("mobilenet-v1", records=db, input_shapes=shapes)
    assert all(s["tuned"] for s in net.schedules)
    with pytest.raises(tt.InvalidArgumentError, match="solver = 'greedy'"):
        tt.graph_tune("mobilenet-v1", db=db, input_shapes=shapes, solver="greedy")


def test_bad_tuning_arguments():
    with pytest.raises(tt.InvalidArgumentError, match="tuner = 'annealing'"):
        tt.tune_op(dense_task(), tuner="annealing")
    with pytest.raises(tt.InvalidArgumentError, match="trials = 0"):
        tt.tune_op(dense_task(), trials=0)
    with pytest.raises(tt.InvalidArgumentError, match="is not callable"):
        tt.tune_op(dense_task(), trials=4, callbacks=[1])
    with pytest.raises(TypeError):
        tt.tune_op(dense_task(), trails=4)


def test_tune_op_on_a_farm_builds_the_kernels_here_when_asked(tmp_path):
    # A tracker and a device that loads built code, as real processes; the client builds.
    cli = os.environ["TT_CLI"]
    port_file = tmp_path / "port"
    procs = [subprocess.Popen([cli, "tracker", "--host", "127.0.0.1", "--port", "0",
                               "--db", str(tmp_path / "t.db"), "--port-file", str(port_file)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        for _ in range(300):
            if port_file.exists() and port_file.read_text().strip():
                break
            time.sleep(0.05)
        tracker = "127.0.0.1:" + port_file.read_text().strip()
        procs.append(subprocess.Popen([cli, "device", "--tracker", tracker, "--key", "x86",
                                       "--accept-built-code"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        result = tt.tune_op(dense_task(), trials=8, db=tmp_path / "r.db", tracker=tracker,
                            key="x86", build_workers=2, **FAST)
        assert result["measured"] == 8 and result["errors"] == 0
        with pytest.raises(tt.InvalidArgumentError, match="build_workers"):
            tt.tune_op(dense_task(), trials=8, tracker=tracker, key="x86", build_workers=-1,
                       **FAST)
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=30)
