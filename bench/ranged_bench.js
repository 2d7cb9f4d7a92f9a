#!/usr/bin/env node
// A model compiled for a range of sequence lengths, timed at lengths across it beside ONNX
// Runtime (which takes any length) and beside an artifact compiled for that exact length (what
// the bucket's padding costs), in one run, passes interleaved, medians quoted.
//
//   node bench/ranged_bench.js --model bert.onnx [--inputs input_ids,attention_mask]
//        [--range 1..512] [--lengths 16,64,100,128,384,512] [--threads 1,2] [--passes 3]
//        [--repeat 5] [--records DB] [--vocab 30522] [--tensortune build/cli/tensortune]
//        [--work-dir build/ranged_bench]
//
// The model's sequence inputs are int64 [1, L] (token ids below --vocab, an attention mask of
// ones: an input named *mask*); each
// length runs the same data in all three.
'use strict';
const fs = require('fs');
const path = require('path');
const { parseArgs, run, ortDir, ensureOrt, median } = require('./bench_common');

const opts = parseArgs(process.argv.slice(2), {
  tensortune: 'build/cli/tensortune', inputs: 'input_ids,attention_mask', range: '1..512',
  lengths: '16,64,100,128,384,512', threads: '1,2', passes: '3', repeat: '5',
  'work-dir': 'build/ranged_bench', vocab: '30522',
});
if (!opts.model) {
  console.error('error: --model MODEL.onnx (an export with a dynamic sequence axis) is required');
  process.exit(2);
}
const tt = path.resolve(opts.tensortune);
const work = path.resolve(opts['work-dir']);
fs.mkdirSync(work, { recursive: true });
const inputs = opts.inputs.split(',');
const lengths = opts.lengths.split(',').map(Number);
const threads = opts.threads.split(',').map(Number);
const records = opts.records ? ['--records', opts.records] : [];
const ortVersion = ensureOrt();

/// An int64 [1, n] .npy of `value(i)`.
function writeInt64Npy(file, n, value) {
  let header = `{'descr': '<i8', 'fortran_order': False, 'shape': (1, ${n}), }`;
  header += ' '.repeat(64 - ((10 + header.length + 1) % 64)) + '\n';
  const head = Buffer.alloc(10);
  Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]).copy(head);
  head.writeUInt16LE(header.length, 8);
  const data = Buffer.alloc(8 * n);
  for (let i = 0; i < n; ++i) data.writeBigInt64LE(BigInt(value(i)), 8 * i);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), data]));
}

const ranged = path.join(work, 'ranged.tt');
const shapesAt = (len) => inputs.flatMap(n => ['--input-shape', `${n}=1x${len}`]);
process.stderr.write(`compiling ${opts.model} for lengths ${opts.range} ...\n`);
const compiled = run(tt, ['--log-level', 'error', 'compile', '--model', opts.model, ...shapesAt(opts.range),
                          ...records, '-o', ranged]);
const buckets = [...compiled.matchAll(/bucket \d+\/\d+: length (\d+)/g)].map(m => Number(m[1]));
const feeds = {}, exact = {};
for (const len of lengths) {
  feeds[len] = inputs.map(n => {
    const file = path.join(work, `${n}.${len}.npy`);
    writeInt64Npy(file, len, n.includes('mask') ? () => 1 : i => (i * 7919 + 101) % Number(opts.vocab));
    return `${n}=${file}`;
  });
  exact[len] = path.join(work, `exact.${len}.tt`);
  process.stderr.write(`compiling ${opts.model} for length ${len} ...\n`);
  run(tt, ['--log-level', 'error', 'compile', '--model', opts.model, ...shapesAt(len), ...records, '-o', exact[len]]);
}

const ours = (args) => JSON.parse(run(tt, ['bench', ...args, '--repeat', opts.repeat, '--json'])).median_ms;
function ort(len, t) {
  const out = run('node', [path.join(ortDir, 'ort_bench.js'), opts.model, String(t), opts.repeat, '100', 'cpu', ...feeds[len]],
                  { env: { ...process.env, NODE_PATH: path.join(ortDir, 'node_modules') } });
  return JSON.parse(out.trim().split('\n').pop()).median_ms;
}

const times = {};
for (let pass = 1; pass <= Number(opts.passes); ++pass) {
  for (const len of lengths) {
    for (const t of threads) {
      const key = `${len}/${t}`;
      times[key] = times[key] || { ort: [], exact: [], ranged: [] };
      times[key].ort.push(ort(len, t));
      times[key].exact.push(ours([exact[len], '--threads', String(t)]));
      times[key].ranged.push(ours([ranged, '--sequence-length', String(len), '--threads', String(t)]));
      process.stderr.write(`pass ${pass}: length ${len}, ${t} thread(s) done\n`);
    }
  }
}

console.log(`${opts.model}: compiled once for lengths ${opts.range} (buckets ${buckets.join(', ')}), ` +
            `against ONNX Runtime ${ortVersion} and artifacts compiled for each exact length; ` +
            `${opts.passes} interleaved passes, medians (ms)${opts.records ? `, records ${opts.records}` : ', default configs'}`);
console.log('| length | bucket | threads | ONNX Runtime | exact length | ranged | ranged / ORT | ranged / exact |');
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const len of lengths) {
  const bucket = buckets.find(b => b >= len);
  for (const t of threads) {
    const m = times[`${len}/${t}`];
    const [o, e, r] = [median(m.ort), median(m.exact), median(m.ranged)];
    console.log(`| ${len} | ${bucket} | ${t} | ${o.toFixed(2)} | ${e.toFixed(2)} | ${r.toFixed(2)} | ` +
                `${(r / o).toFixed(3)} | ${(r / e).toFixed(3)} |`);
  }
}
