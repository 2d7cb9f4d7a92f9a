// ONNX Runtime (npm onnxruntime-node, its bundled native library) on an ONNX model: the anchor
// that bench/e2e_bench.sh prints our compiled networks against. Same protocol as
// `tensortune bench`: one warm-up run not counted, then `repeat` rounds of `number` runs,
// number grown until a round lasts min_repeat_ms; median per-run latency over rounds.
//
//   node ort_bench.js MODEL.onnx THREADS [REPEAT] [MIN_REPEAT_MS] [PROVIDER] [INPUT.npy | NAME=INPUT.npy ...]
// PROVIDER: cpu (default) or cuda (ONNX Runtime's CUDA execution provider, where the installed
// onnxruntime-node has it: its install script fetches it, which `--ignore-scripts` skips).
// INPUT.npy: the first input's value (its shape and dtype; a token-id model's int64 ids); without
// it, a deterministic uniform float32 image of 1x3x224x224.
// prints one JSON line: {"model", "threads", "median_ms", "min_ms", "max_ms", "number", "repeat"}
'use strict';
const ort = require('onnxruntime-node');

async function main() {
  const [model, threadsArg, repeatArg, minMsArg, providerArg, ...inputArgs] = process.argv.slice(2);
  if (!model || !threadsArg) {
    console.error('usage: node ort_bench.js MODEL.onnx THREADS [REPEAT] [MIN_REPEAT_MS]');
    process.exit(2);
  }
  const threads = parseInt(threadsArg, 10);
  const repeat = parseInt(repeatArg || '10', 10);
  const minRepeatMs = parseFloat(minMsArg || '100');
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    executionProviders: [providerArg || 'cpu'],
  });
  const name = session.inputNames[0];
  const dims = [1, 3, 224, 224];
  const data = new Float32Array(dims.reduce((a, b) => a * b, 1));
  let seed = 1;
  for (let i = 0; i < data.length; ++i) {  // deterministic uniform [0, 1)
    seed = (seed * 1103515245 + 12345) % 2147483648;
    data[i] = seed / 2147483648;
  }
  // Inputs: INPUT.npy for the first input, or NAME=INPUT.npy each; none: a uniform image.
  const feeds = {};
  for (const arg of inputArgs) {
    const eq = arg.indexOf('=');
    feeds[eq < 0 ? name : arg.slice(0, eq)] = require('./ort_run.js').readNpy(eq < 0 ? arg : arg.slice(eq + 1));
  }
  if (inputArgs.length === 0) feeds[name] = new ort.Tensor('float32', data, dims);
  const now = () => Number(process.hrtime.bigint()) / 1e6;
  let t = now();
  await session.run(feeds);  // warm-up, not counted
  const warmup = now() - t;
  let number = Math.max(1, Math.ceil(minRepeatMs / Math.max(warmup, 1e-3)));
  const rounds = [];
  while (rounds.length < repeat) {
    t = now();
    for (let i = 0; i < number; ++i) await session.run(feeds);
    const ms = now() - t;
    if (ms < minRepeatMs && rounds.length === 0) {
      number = Math.max(Math.ceil(minRepeatMs / (ms / number)) + 1, Math.ceil(number * 1.618));
      continue;
    }
    rounds.push(ms / number);
  }
  rounds.sort((a, b) => a - b);
  const mid = rounds.length >> 1;
  const median = rounds.length % 2 ? rounds[mid] : 0.5 * (rounds[mid - 1] + rounds[mid]);
  console.log(JSON.stringify({
    model,
    threads,
    median_ms: median,
    min_ms: rounds[0],
    max_ms: rounds[rounds.length - 1],
    number,
    repeat,
    provider: providerArg || 'cpu',
    ort_version: require('onnxruntime-node/package.json').version
  }));
}

main().catch((e) => { console.error('error: ' + e.message); process.exit(1); });
