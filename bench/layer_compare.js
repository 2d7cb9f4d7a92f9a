// Layer by layer against ONNX Runtime: where a compiled network loses or wins its time. ONNX
// Runtime runs the model with its profiler on (each node's kernel time, per run); ours runs the
// artifact under `tensortune bench --profile --json` (each step's time, the step named by its
// first node: a kernel's anchor, which keeps the model's node name). Convolutions pair in
// execution order by output size, other layers (a Gemm's dense) by name; the rest (our layout
// transforms and element-wise kernels, ORT's reorders) are summed per kind.
//
//   node bench/layer_compare.js --model MODEL.onnx --artifact NET.tt [--threads 1] [--runs 50]
//        [--repeat 20] [--top 25] [--tensortune build/cli/tensortune]
//
// Both sides are medians over runs (ORT: of each node's time per run; ours: of each step's mean
// per round), measured one after the other, so a noisy minute can still tilt one side: read the
// ratios of large layers, and rerun.
'use strict';
const { parseArgs, run, ensureOrt, median } = require('./bench_common');
const fs = require('fs');
const os = require('os');
const path = require('path');

const opts = parseArgs(process.argv.slice(2),
                       { tensortune: 'build/cli/tensortune', threads: '1', runs: '50', repeat: '20', top: '25' });
if (!opts.model || !opts.artifact) {
  console.error('usage: node bench/layer_compare.js --model MODEL.onnx --artifact NET.tt ' +
                '[--threads 1] [--runs 50] [--repeat 20] [--top 25]');
  process.exit(2);
}
ensureOrt();
const ort = require(path.join(__dirname, 'ort', 'node_modules', 'onnxruntime-node'));
const threads = Number(opts.threads);

/// ONNX Runtime's per-node kernel times (ms, median over runs) and each node's operator.
async function ortProfile(model) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tt_layer_compare_'));
  const prefix = path.join(dir, 'ort');
  const session = await ort.InferenceSession.create(path.resolve(model), {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    enableProfiling: true,
    profileFilePrefix: prefix,
  });
  const input = session.inputNames[0];
  const dims = [1, 3, 224, 224];
  const data = new Float32Array(dims.reduce((a, b) => a * b, 1)).map((_, i) => ((i * 7919) % 1000) / 1000);
  const feeds = { [input]: new ort.Tensor('float32', data, dims) };
  for (let i = 0; i < 3; ++i) await session.run(feeds);  // warm-up
  const runs = Number(opts.runs);
  for (let i = 0; i < runs; ++i) await session.run(feeds);
  await session.endProfiling();
  const file = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => path.join(dir, f))[0];
  if (!file) throw new Error(`ONNX Runtime wrote no profile into ${dir}`);
  const events = JSON.parse(fs.readFileSync(file, 'utf8'));
  fs.rmSync(dir, { recursive: true, force: true });
  const times = new Map();  // node -> [ms per run], the last `runs` runs
  const ops = new Map();
  const elements = new Map();  // node -> its first output's element count
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const node = e.name.slice(0, -'_kernel_time'.length);
    if (!times.has(node)) times.set(node, []);
    times.get(node).push(e.dur / 1e3);
    ops.set(node, (e.args && e.args.op_name) || '?');
    const shape = e.args && e.args.output_type_shape && e.args.output_type_shape[0];
    if (shape && !elements.has(node))
      elements.set(node, Object.values(shape)[0].reduce((a, b) => a * b, 1));
  }
  const out = new Map();  // in execution order (a Map keeps the order of first insertion)
  for (const [node, ms] of times)
    out.set(node, { ms: median(ms.slice(-runs)), op: ops.get(node), elements: elements.get(node) });
  return out;
}

const isConvStep = (s) => s.kind === 'kernel' && /^(depthwise_)?conv2d/.test(s.label);

/// Our steps: [{node, label, kind, ms}] from `tensortune bench --profile --json`.
function ourProfile(artifact) {
  const json = JSON.parse(run(path.resolve(opts.tensortune),
                              ['--log-level', 'error', 'bench', artifact, '--threads', String(threads),
                               '--repeat', opts.repeat, '--profile', '--json']));
  return { steps: json.profile.map((s) => ({ node: s.node, label: s.label, kind: s.kind, ms: s.mean_ms,
                                             elements: s.output_elements })),
           median: json.median_ms };
}

function pad(s, n) { s = String(s); return s.length >= n ? s.slice(0, n) : s + ' '.repeat(n - s.length); }

async function main() {
  const theirs = await ortProfile(opts.model);
  const ours = ourProfile(opts.artifact);
  const rows = [];
  const ourOther = new Map(), ortOther = new Map();
  const paired = new Set();
  // Convolutions pair in execution order, each of ours with the first unpaired ONNX Runtime
  // convolution of the same output size (ONNX Runtime renames the nodes its NCHWc transformer
  // rewrites, and may order a block's branches differently); the rest by name.
  const ortConvs = [...theirs].filter(([, t]) => /Conv/.test(t.op));  // Conv, FusedConv, QLinearConv
  const matchConv = (s) => {
    const i = ortConvs.findIndex(([name, t]) => !paired.has(name) && t.elements === s.elements);
    return i < 0 ? [undefined, undefined] : ortConvs[i];
  };
  for (const s of ours.steps) {
    const [ortName, t] = isConvStep(s) ? matchConv(s) : [s.node, theirs.get(s.node)];
    if (s.kind === 'kernel' && t && /conv|dense|pool/.test(s.label)) {
      rows.push({ node: s.node, label: s.label, ours: s.ms, ort: t.ms, op: t.op });
      paired.add(ortName);
    } else {
      const kind = s.label.replace(/\(.*$/, '').replace(/\+.*$/, '+...');
      ourOther.set(kind, (ourOther.get(kind) || 0) + s.ms);
    }
  }
  for (const [node, t] of theirs)
    if (!paired.has(node)) ortOther.set(t.op, (ortOther.get(t.op) || 0) + t.ms);
  const sum = (xs) => xs.reduce((a, b) => a + b, 0);
  const oursPaired = sum(rows.map((r) => r.ours)), ortPaired = sum(rows.map((r) => r.ort));
  console.log(`Layer by layer: ${opts.model} (ONNX Runtime, ${opts.runs} profiled runs) against ` +
              `${opts.artifact} (tensortune bench --profile, ${opts.repeat} rounds); ${threads} thread(s).`);
  console.log(`Paired layers: ${rows.length}; ours ${oursPaired.toFixed(3)} ms, ` +
              `ONNX Runtime ${ortPaired.toFixed(3)} ms, ratio ${(oursPaired / ortPaired).toFixed(3)}.`);
  console.log(`\nThe ${opts.top} layers where we lose the most (ours - ORT):\n`);
  console.log(`| node | our step | ORT op | ours ms | ORT ms | ratio | ours - ORT ms |`);
  console.log(`|---|---|---|---:|---:|---:|---:|`);
  rows.sort((a, b) => (b.ours - b.ort) - (a.ours - a.ort));
  for (const r of rows.slice(0, Number(opts.top)))
    console.log(`| ${r.node} | ${pad(r.label, 40).trim()} | ${r.op} | ${r.ours.toFixed(3)} | ${r.ort.toFixed(3)} | ` +
                `${(r.ours / r.ort).toFixed(2)} | ${(r.ours - r.ort).toFixed(3)} |`);
  console.log(`\nThe ${Math.min(10, rows.length)} layers where we win the most:\n`);
  console.log(`| node | our step | ORT op | ours ms | ORT ms | ratio | ours - ORT ms |`);
  console.log(`|---|---|---|---:|---:|---:|---:|`);
  for (const r of rows.slice(-10).reverse())
    console.log(`| ${r.node} | ${pad(r.label, 40).trim()} | ${r.op} | ${r.ours.toFixed(3)} | ${r.ort.toFixed(3)} | ` +
                `${(r.ours / r.ort).toFixed(2)} | ${(r.ours - r.ort).toFixed(3)} |`);
  console.log(`\nThe rest, per kind: ours (${sum([...ourOther.values()]).toFixed(3)} ms)`);
  for (const [k, ms] of [...ourOther].sort((a, b) => b[1] - a[1])) console.log(`  ${pad(k, 40)} ${ms.toFixed(3)} ms`);
  console.log(`ONNX Runtime (${sum([...ortOther.values()]).toFixed(3)} ms)`);
  for (const [k, ms] of [...ortOther].sort((a, b) => b[1] - a[1])) console.log(`  ${pad(k, 40)} ${ms.toFixed(3)} ms`);
  console.log(`\nWhole runs: ours ${ours.median.toFixed(3)} ms (bench median); ONNX Runtime's nodes sum to ` +
              `${sum([...theirs.values()].map((t) => t.ms)).toFixed(3)} ms.`);
}

main().catch((e) => { console.error(e.stack || String(e)); process.exit(1); });
