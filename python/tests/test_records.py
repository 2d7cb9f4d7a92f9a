"""The record DB from Python: the CLI's answers, AutoTVM log round trips, filters, a closed
store."""

import pytest

import tensortune as tt

FAST = dict(number=1, repeat=1, min_repeat_ms=0, batch_size=4, tuner="random")


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("records") / "r.db"
    tt.tune_op(tt.Task("dense", data=(1, 64), weight=(32, 64)), trials=8, db=path, **FAST)
    tt.tune_op(tt.Task("dense", data=(1, 128), weight=(16, 128)), trials=8, db=path, **FAST)
    return path


def test_best_is_what_the_cli_answers(db, cli):
    want = cli("records", "best", "--db", db, "--json", parse_json=True)
    with tt.RecordStore(db) as store:
        got = store.best()
    assert len(got) == len(want) == 2
    for g, w in zip(got, want):
        assert g["workload_key"] == w["workload_key"]
        assert g["config_index"] == w["config_index"]
        assert g["gflops"] == pytest.approx(w["gflops"], rel=1e-6)


def test_filters(db):
    with tt.RecordStore(db) as store:
        assert len(store.best(workload="1x128")) == 1
        assert store.best(workload="1x128")[0]["workload_key"].count("128") >= 1
        assert store.best(workload="7x7x7") == []  # matches nothing: empty, no error
        top = store.best(top_k=3)
        assert len(top) == 6
        assert [r["mean_cost"] for r in top[:3]] == sorted(r["mean_cost"] for r in top[:3])
        assert store.best(device_key="no-such-key") == []
        with pytest.raises(tt.InvalidArgumentError, match="--workload = 'conv!'"):
            store.best(workload="conv!")
        with pytest.raises(tt.InvalidArgumentError, match="since"):
            store.best(since="yesterday")
        stats = store.stats()
        assert stats["results"] == len(store) == 16 and stats["tasks"] == 2


def test_autotvm_log_round_trip(db, scratch):
    log = scratch / "out.log"
    assert tt.export_autotvm_log(db, log) == 16
    copy = scratch / "copy.db"
    stats = tt.import_autotvm_log(copy, log)
    assert stats["imported"] == 16 and stats["lines"] == 16
    with tt.RecordStore(db) as a, tt.RecordStore(copy) as b:
        for x, y in zip(a.best(), b.best()):
            assert (x["workload_key"], x["config_index"], x["costs"]) == (
                y["workload_key"], y["config_index"], y["costs"])
        assert [r["config_index"] for r in a] == [r["config_index"] for r in b]
    bad = scratch / "bad.log"
    bad.write_text(log.read_text() + "not json\n")
    with pytest.raises(tt.InvalidArgumentError, match="bad.log:17"):
        tt.import_autotvm_log(copy, bad)
    with tt.RecordStore(copy) as b:
        assert len(b) == 16  # all or nothing


def test_a_closed_store_raises(db):
    store = tt.RecordStore(db)
    store.close()
    with pytest.raises(tt.Error, match="closed"):
        store.best()
    with pytest.raises(tt.Error, match="closed"):
        len(store)
    with pytest.raises(tt.Error):
        tt.RecordStore("/nonexistent/dir/x.db")
