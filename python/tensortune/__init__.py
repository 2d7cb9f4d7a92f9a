"""tensortune from Python: tune tasks, query the record DB, compile networks and run them on
numpy arrays. The objects mirror the C++ ones and the `tensortune` command line: the same
tuners, the same record DB, the same compiler, the same error messages.

    import tensortune as tt
    tasks = tt.extract_tasks("resnet-18")
    for t in tasks:
        tt.tune_op(t, tuner="xgb", trials=150, db="r18.db",
                   callbacks=[tt.callbacks.progress_bar()])
    net = tt.compile("resnet-18", records="r18.db")
    out = net.run(data=numpy_array)          # {"output name": ndarray}

Errors are raised as tensortune.Error (InvalidArgumentError is also a ValueError,
NotFoundError a LookupError, OutOfRangeError an IndexError).
"""

from ._tensortune import (  # noqa: F401  (re-exported)
    Config,
    ConfigSpace,
    Error,
    InvalidArgumentError,
    Network,
    NotFoundError,
    OutOfRangeError,
    RecordStore,
    Task,
    UnavailableError,
    __version__,
    compile,
    export_autotvm_log,
    extract_tasks,
    graph_tune,
    import_autotvm_log,
    load,
    quantize,
    tune_imposed_blocks,
    tune_op,
)
from . import callbacks  # noqa: F401


def tune_model(model, *, tuner="xgb", trials=200, db="tensortune.db", target="llvm",
               input_shapes=None, tasks=None, exclude_algorithms=(), callbacks=None, imposed_trials=16,
               precision="fp32", **options):
    """Tunes every task of a model one after the other, as `tensortune tune --model` does
    on this machine (AutoTVM's tune_tasks).

    model: a zoo name or an ONNX file; tasks: the indices (0-based) of the extracted tasks
    to tune (default all); options: tune_op's keyword arguments (batch_size, early_stopping,
    seed, threads, tracker, key, ...); threads may also be a list of thread counts, each task
    then tuned for each count in turn (records are per count; compile(threads=T) takes T's). Each callback sees progress with two more entries,
    task_index and task_count. A callback returning False stops the current task only;
    Ctrl-C stops the whole run (KeyboardInterrupt), with everything measured recorded.
    After all the tasks of a CPU target, measured here, up to imposed_trials configs of each
    layer that the compiled network runs at blocks its neighbours impose are measured too
    (tune_imposed_blocks; 0: not). precision: 'tf32', 'fp16', 'bf16' or '3xtf32' tunes the tensor-core
    tasks that compile(precision=) runs (a CUDA target). Returns tune_op's dict per tuned task
    (and thread count), in order.
    """
    threads = options.pop("threads", 1)
    counts = sorted(set(threads)) if isinstance(threads, (list, tuple, set)) else [threads]
    if not counts:
        raise InvalidArgumentError("threads: an empty list of thread counts")
    found = extract_tasks(model, target=target, input_shapes=input_shapes,
                          exclude_algorithms=list(exclude_algorithms), precision=precision)
    chosen = range(len(found)) if tasks is None else list(tasks)
    for i in chosen:
        if not isinstance(i, int) or not 0 <= i < len(found):
            raise InvalidArgumentError(
                f"tasks: {i!r} is not a task index of {model!r} (0..{len(found) - 1})")
    if callbacks is None:
        user = []
    elif callable(callbacks):
        user = [callbacks]
    else:
        user = list(callbacks)
    results = []
    for n, i in enumerate(chosen):
        def tagged(progress, batch, _i=i):
            progress = dict(progress, task_index=_i, task_count=len(found))
            go_on = True
            for cb in user:
                if cb(progress, batch) is False:
                    go_on = False
            return go_on
        for count in counts:
            results.append(tune_op(found[i], tuner=tuner, trials=trials, db=db, threads=count,
                                   callbacks=[tagged] if user else None, **options))
    if imposed_trials and tasks is None and target == "llvm" and not options.get("tracker"):
        measure = {k: options[k] for k in ("number", "repeat", "min_repeat_ms", "device_key")
                   if k in options}
        for count in counts:
            tune_imposed_blocks(model, db=db, input_shapes=input_shapes, trials=imposed_trials,
                                threads=count, **measure)
    return results
