// End-to-end benchmark: resnet-18 and resnet-50, batch 1, fp32, compiled at opt level 3
// with default configs and with the records of a tuning run, on 1 and 2 threads, against ONNX
// Runtime on the same ONNX model, in one run. Measurements interleave (ORT, ours default, ours
// tuned, for every model and thread count, then again) and each figure is the median over the
// passes of each measurement's median, so a noisy minute hits every column alike.
//
// --models also takes the corpus's torchvision exports (mobilenet_v2, densenet121, ...):
// build/corpus/NAME_opset13.onnx, or --onnx-NAME FILE.
//
//   node bench/e2e_bench.js [--tensortune build/cli/tensortune] [--records-resnet-18 r18.db]
//        [--records-resnet-50 r50.db] [--borrowed-resnet-18 other.db] [--models
//        resnet-18,resnet-50]
//        [--threads 1,2] [--passes 3] [--repeat 10] [--work-dir build/e2e_bench] [--graph-tune 1]
//        [--int8 1]
//
// --borrowed-MODEL DB adds a column: the model compiled with another model's records, so that
// its untuned workloads borrow the configs of the nearest tuned ones.
//
// --graph-tune 1 adds the graph tuner's table for every model with records: the model
// compiled three ways from a copy of its DB, with every workload's fastest record
// (--fastest-records), with the layout-aware heuristic (--no-graph-best), and graph-tuned
// (`tensortune graph-tune` on the copy, transforms timed on this machine), beside ONNX Runtime.
//
// --int8 1 adds int8 rows: every model quantized by `tensortune quantize` (QDQ, random
// calibration, written to WORK/MODEL.int8.onnx), run by ONNX Runtime (its int8 kernels, from the
// QDQ file and from its own QOperator form of it, WORK/MODEL.int8.qoperator.onnx) and by
// us (its convolutions on the conv2d_NCHWc_int8 kernels; default configs, and tuned with
// --int8-records-MODEL DB or else the float model's DB: tune the QDQ file's int8 tasks into it
// with `tensortune tune --model WORK/MODEL.int8.onnx --db DB`), beside both float32 runs.
// --reduce-range 1 quantizes with `--reduce-range` (weights in [-64, 64]; ONNX Runtime runs
// the same file): on CPUs without VNNI our int8 kernels then multiply bytes directly, exactly;
// --reduce-range auto only in the layers where that adds little noise (--noise-growth F);
// --bias-correction 0 quantizes without correcting the biases. --quantize-outputs 1 (the
// default) quantizes as ONNX Runtime's own quantizer does, every layer's output and residual sum
// too: ONNX Runtime then fuses each DequantizeLinear -> Conv -> QuantizeLinear into its integer
// QLinearConv (and the sums into QLinearAdd); with 0, only the layers' inputs are quantized, and
// ONNX Runtime runs the convolutions whose result is not quantized in float32.
//
// ONNX Runtime comes from npm (onnxruntime-node ships its native library): the script installs
// it into bench/ort with `npm install --ignore-scripts` when it is missing.
'use strict';
const { parseArgs, run, ortDir, ensureOrt, median, quantizeFlags } = require('./bench_common');
const fs = require('fs');
const os = require('os');
const path = require('path');

const opts = parseArgs(process.argv.slice(2), { tensortune: 'build/cli/tensortune', models: 'resnet-18,resnet-50', threads: '1,2', passes: '3',
                 repeat: '10', 'work-dir': 'build/e2e_bench', 'quantize-outputs': '1' });
const tt = path.resolve(opts.tensortune);
const work = path.resolve(opts['work-dir']);
fs.mkdirSync(work, { recursive: true });

const ortVersion = ensureOrt();

const models = opts.models.split(',');
const threads = opts.threads.split(',').map(Number);
const passes = Number(opts.passes);
const graphTune = opts['graph-tune'] === '1';
const int8 = opts.int8 === '1';
const repeat = opts.repeat;

// Artifacts: the ONNX model, ours with default configs, ours with the tuning run's records.
const variants = {};
// A zoo model is exported to ONNX here; any other name is an ONNX file of the model corpus
// (build/corpus/NAME_opset13.onnx, written by `ctest -L corpus`) or --onnx-NAME FILE,
// and both runtimes read that file.
const zoo = ['resnet-18', 'resnet-50', 'vgg-16', 'mobilenet-v1'];
for (const m of models) {
  let onnx = path.join(work, `${m}.onnx`);
  let modelArg = m;
  if (zoo.includes(m)) {
    run(tt, ['export-onnx', '--model', m, '-o', onnx]);
  } else {
    onnx = path.resolve(opts[`onnx-${m}`] || path.join('build', 'corpus', `${m}_opset13.onnx`));
    if (!fs.existsSync(onnx)) {
      console.error(`error: --models ${m}: not a zoo model (${zoo.join(', ')}) and ${onnx} does not exist ` +
                    '(run `cd build && ctest -L corpus` to write the corpus, or give --onnx-' + m + ' FILE)');
      process.exit(2);
    }
    modelArg = onnx;
  }
  variants[m] = { onnx, default: path.join(work, `${m}-default.tt`) };
  run(tt, ['--log-level', 'error', 'compile', '--model', modelArg, '--opt-level', '3', '-o', variants[m].default]);
  const records = opts[`records-${m}`];
  if (records) {
    // One tuned artifact per thread count: compile --threads T takes the records measured on T
    // threads where the DB has them, else any thread count's.
    variants[m].tuned = {};
    variants[m].direct = {};
    for (const t of threads) {
      variants[m].tuned[t] = path.join(work, `${m}-tuned-t${t}.tt`);
      const out = run(tt, ['--log-level', 'error', 'compile', '--model', modelArg, '--opt-level', '3', '--records', records,
                           '--threads', String(t), '-o', variants[m].tuned[t]]);
      if (t === threads[0]) variants[m].schedules = (out.match(/conv2d\/dense kernels: .*/) || [''])[0];
      // The same records without the Winograd template's: what direct convolution
      // alone reaches, measured in the same passes.
      variants[m].direct[t] = path.join(work, `${m}-direct-t${t}.tt`);
      run(tt, [
        '--log-level', 'error', 'compile', '--model', modelArg, '--opt-level', '3', '--records', records,
        '--threads', String(t), '--no-winograd', '-o', variants[m].direct[t]
      ]);
    }
    if (graphTune) {
      // A copy, so that graph-tune's tables (graph-best, transform times) leave the user's DB be.
      const db = path.join(work, `${m}-graph.db`);
      fs.copyFileSync(records, db);
      for (const suffix of ['-wal', '-shm'])
        if (fs.existsSync(records + suffix)) fs.copyFileSync(records + suffix, db + suffix);
      const g = run(tt, ['--log-level', 'error', 'graph-tune', '--model', modelArg, '--db', db]);
      variants[m].graphSummary = (g.match(/convolutions \+ transforms.*/) || [''])[0];
      for (const [name, flags] of [
               ['fastest', ['--fastest-records']], ['heuristic', ['--no-graph-best']],
               ['graph', []]]) {
        variants[m][name] = path.join(work, `${m}-${name}.tt`);
        run(tt, [
          '--log-level', 'error', 'compile', '--model', modelArg, '--opt-level', '3', '--records', db,
          ...flags, '-o', variants[m][name]
        ]);
      }
    }
  }
  if (int8) {
    // The QDQ model from the ONNX file ONNX Runtime runs; its convolutions run the int8
    // template (their records come from tuning this file), the rest the float model's.
    const int8Records = opts[`int8-records-${m}`] || records;
    variants[m].int8Onnx = path.join(work, `${m}.int8.onnx`);
    run(tt, ['--log-level', 'error', 'quantize', variants[m].onnx, '-o', variants[m].int8Onnx,
             ...quantizeFlags(opts)]);
    // ONNX Runtime's QOperator form of the same file (QLinearConv nodes; ort_qoperator.js):
    // its int8 anchor is the faster of the two forms.
    variants[m].int8QopOnnx = path.join(work, `${m}.int8.qoperator.onnx`);
    const qop = JSON.parse(run('node', [path.join(ortDir, 'ort_qoperator.js'), variants[m].int8Onnx,
                                        variants[m].int8QopOnnx],
                               { env: { ...process.env, NODE_PATH: path.join(ortDir, 'node_modules') } })
                               .trim().split('\n').pop());
    variants[m].int8QopOps = qop.ops;
    variants[m].int8Default = path.join(work, `${m}-int8-default.tt`);
    run(tt, ['--log-level', 'error', 'compile', '--model', variants[m].int8Onnx, '--opt-level', '3', '-o',
             variants[m].int8Default]);
    if (int8Records) {
      variants[m].int8Tuned = {};
      for (const t of threads) {
        variants[m].int8Tuned[t] = path.join(work, `${m}-int8-tuned-t${t}.tt`);
        run(tt, ['--log-level', 'error', 'compile', '--model', variants[m].int8Onnx, '--opt-level', '3',
                 '--records', int8Records, '--threads', String(t), '-o', variants[m].int8Tuned[t]]);
      }
    }
  }
  const borrowedFrom = opts[`borrowed-${m}`];
  if (borrowedFrom) {
    variants[m].borrowed = path.join(work, `${m}-borrowed.tt`);
    const out = run(tt, ['--log-level', 'error', 'compile', '--model', modelArg, '--opt-level', '3', '--records',
                         borrowedFrom, '-o', variants[m].borrowed]);
    variants[m].borrowedSchedules = (out.match(/conv2d\/dense kernels: .*/) || [''])[0];
  }
}

function ours(artifact, t) {
  const out = JSON.parse(run(tt, ['bench', artifact, '--threads', String(t), '--repeat', repeat, '--json']));
  return out.median_ms;
}
function ort(onnx, t, inputOf = onnx) {
  // A corpus model runs on the corpus's own input (its shape; token ids for a transformer), or on
  // its inputs NAME.INPUT.npy each (BERT's token ids and attention mask).
  const input = inputOf.replace(/_opset\d+\.onnx$/, '.input.npy');
  const args = [path.join(ortDir, 'ort_bench.js'), onnx, String(t), repeat];
  if (input !== inputOf && fs.existsSync(input)) {
    args.push('100', 'cpu', input);
  } else if (input !== inputOf) {
    const stem = path.basename(input, '.input.npy') + '.';
    const named = fs.readdirSync(path.dirname(input))
                      .filter(f => f.startsWith(stem) && f.endsWith('.npy') && !f.includes('_opset'))
                      .map(f => `${f.slice(stem.length, -4)}=${path.join(path.dirname(input), f)}`);
    if (named.length) args.push('100', 'cpu', ...named);
  }
  const out = run('node', args,
                  { env: { ...process.env, NODE_PATH: path.join(ortDir, 'node_modules') } });
  return JSON.parse(out.trim().split('\n').pop()).median_ms;
}

const samples = {};
for (let p = 0; p < passes; ++p) {
  for (const m of models) {
    for (const t of threads) {
      const key = `${m}/${t}`;
      samples[key] = samples[key] || {
        ort: [],
        default: [],
        tuned: [],
        direct: [],
        borrowed: [],
        fastest: [],
        heuristic: [],
        graph: [],
        int8Ort: [],
        int8OrtQop: [],
        int8Default: [],
        int8Tuned: []
      };
      // Tuned right after ORT: their ratio within a pass is the least exposed to the machine's
      // swings (seen here: the same kernels at 77 and 123 GFLOPS a minute apart).
      samples[key].ort.push(ort(variants[m].onnx, t));
      if (variants[m].tuned) samples[key].tuned.push(ours(variants[m].tuned[t], t));
      if (variants[m].direct) samples[key].direct.push(ours(variants[m].direct[t], t));
      if (variants[m].borrowed) samples[key].borrowed.push(ours(variants[m].borrowed, t));
      samples[key].default.push(ours(variants[m].default, t));
      for (const name of ['fastest', 'heuristic', 'graph'])
        if (variants[m][name]) samples[key][name].push(ours(variants[m][name], t));
      if (variants[m].int8Onnx) {
        samples[key].int8Ort.push(ort(variants[m].int8Onnx, t, variants[m].onnx));
        samples[key].int8OrtQop.push(ort(variants[m].int8QopOnnx, t, variants[m].onnx));
        samples[key].int8Default.push(ours(variants[m].int8Default, t));
        if (variants[m].int8Tuned) samples[key].int8Tuned.push(ours(variants[m].int8Tuned[t], t));
      }
      process.stderr.write(`pass ${p + 1}/${passes} ${key} done\n`);
    }
  }
}

const cpu = os.cpus()[0] ? os.cpus()[0].model : 'unknown cpu';
console.log(`End-to-end latency, batch 1, fp32, opt level 3; ${new Date().toISOString().slice(0, 10)}; ${cpu}; ` +
            `ONNX Runtime ${ortVersion} (onnxruntime-node, intra-op threads = threads, graph optimisation 'all').`);
console.log(`Each figure: median over ${passes} interleaved passes of a median over ${repeat} rounds ` +
            '(1 warm-up run not counted; rounds of >= 100 ms). Ratio = ours / ONNX Runtime (below 1: we are faster).');
console.log('');
const anyBorrowed = models.some((m) => variants[m].borrowed);
console.log('| model | threads | ONNX Runtime ms | ours, default configs ms | ratio | ours, tuned records ms | ratio | ' +
            'tuned/ORT per pass (median; min-max) |' + (anyBorrowed ? ' ours, borrowed configs ms | ratio | borrowed/tuned |' : ''));
console.log('|---|---:|---:|---:|---:|---:|---:|---|' + (anyBorrowed ? '---:|---:|---:|' : ''));
for (const m of models) {
  for (const t of threads) {
    const s = samples[`${m}/${t}`];
    const o = median(s.ort), d = median(s.default);
    const tu = s.tuned.length ? median(s.tuned) : NaN;
    const perPass = s.tuned.map((x, i) => x / s.ort[i]);
    const pp = perPass.length ? `${median(perPass).toFixed(3)}; ${Math.min(...perPass).toFixed(3)}-${Math.max(...perPass).toFixed(3)}` : '-';
    let borrowed = '';
    if (anyBorrowed) {
      const b = s.borrowed.length ? median(s.borrowed) : NaN;
      borrowed = s.borrowed.length ? ` ${b.toFixed(2)} | ${(b / o).toFixed(3)} | ${s.tuned.length ? (b / tu).toFixed(3) : '-'} |`
                                   : ' - | - | - |';
    }
    console.log(`| ${m} | ${t} | ${o.toFixed(2)} | ${d.toFixed(2)} | ${(d / o).toFixed(3)} | ` +
                `${s.tuned.length ? tu.toFixed(2) : '-'} | ${s.tuned.length ? (tu / o).toFixed(3) : '-'} | ${pp} |` + borrowed);
  }
}
console.log('');
if (models.some((m) => variants[m].direct)) {
  console.log(
      'Winograd: the same records compiled with --no-winograd (direct convolution only) ' +
      'and as `compile` takes them (Winograd where its record measured faster), same passes:');
  console.log('');
  console.log(
      '| model | threads | ONNX Runtime ms | tuned, direct only ms | ratio | tuned, with Winograd ms | ratio | ' +
      'with/without Winograd |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const m of models) {
    if (!variants[m].direct) continue;
    for (const t of threads) {
      const s = samples[`${m}/${t}`];
      const o = median(s.ort), di = median(s.direct), tu = median(s.tuned);
      console.log(
          `| ${m} | ${t} | ${o.toFixed(2)} | ${di.toFixed(2)} | ${(di / o).toFixed(3)} | ${
              tu.toFixed(2)} | ` +
          `${(tu / o).toFixed(3)} | ${(tu / di).toFixed(3)} |`);
    }
  }
  console.log('');
}
if (int8) {
  console.log(
      'int8: each model quantized by `tensortune quantize` (QDQ, random calibration' +
      (quantizeFlags(opts).length ? ', ' + quantizeFlags(opts).join(' ') : '') + '), run by ONNX ' +
      'Runtime and by us (conv2d_NCHWc_int8 kernels). ONNX Runtime runs the QDQ file and its own ' +
      'QOperator form of it (bench/ort/ort_qoperator.js: its level-2 graph, QLinearConv nodes); ' +
      'ratio = ours int8 / the faster of the two, vs fp32 = ours int8 tuned / ours fp32 tuned:');
  console.log('');
  for (const m of models)
    if (variants[m].int8QopOps) console.log(`${m} QOperator form: ${JSON.stringify(variants[m].int8QopOps)}`);
  console.log('');
  console.log('| model | threads | ORT fp32 ms | ORT int8 QDQ ms | ORT int8 QOperator ms | faster | ' +
              'ours fp32 default ms | ours int8 default ms | ratio | ours fp32 tuned ms | ' +
              'ours int8 tuned ms | ratio | vs fp32 |');
  console.log('|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|');
  const f = (v) => (v.length ? median(v).toFixed(2) : '-');
  for (const m of models) {
    for (const t of threads) {
      const s = samples[`${m}/${t}`];
      const qdq = median(s.int8Ort), qop = median(s.int8OrtQop);
      const oi = Math.min(qdq, qop);
      const r = (v) => (v.length ? (median(v) / oi).toFixed(3) : '-');
      console.log(`| ${m} | ${t} | ${f(s.ort)} | ${qdq.toFixed(2)} | ${qop.toFixed(2)} | ` +
                  `${qop < qdq ? 'QOperator' : 'QDQ'} | ${f(s.default)} | ${f(s.int8Default)} | ` +
                  `${r(s.int8Default)} | ${f(s.tuned)} | ${f(s.int8Tuned)} | ${r(s.int8Tuned)} | ` +
                  `${s.int8Tuned.length && s.tuned.length ? (median(s.int8Tuned) / median(s.tuned)).toFixed(3) : '-'} |`);
    }
  }
  console.log('');
}
for (const m of models) if (variants[m].schedules) console.log(`${m} tuned: ${variants[m].schedules}`);
for (const m of models) {
  if (variants[m].borrowedSchedules) console.log(`${m} borrowed (${opts[`borrowed-${m}`]}): ${variants[m].borrowedSchedules}`);
}

if (models.some((m) => variants[m].graph)) {
  console.log('');
  console.log(
      'Graph tuner: the same DB compiled three ways; ratio = ours / ONNX Runtime; ' +
      'gain = fastest-records ms / graph-tuned ms (above 1: the graph tuner helped).');
  console.log('');
  console.log(
      '| model | threads | ONNX Runtime ms | fastest records ms | ratio | heuristic ms | ratio | graph-tuned ms | ratio | gain over fastest | graph-tuned never slower? |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|');
  for (const m of models) {
    if (!variants[m].graph) continue;
    for (const t of threads) {
      const s = samples[`${m}/${t}`];
      const o = median(s.ort), f = median(s.fastest), h = median(s.heuristic), g = median(s.graph);
      console.log(
          `| ${m} | ${t} | ${o.toFixed(2)} | ${f.toFixed(2)} | ${(f / o).toFixed(3)} | ${
              h.toFixed(2)} | ` +
          `${(h / o).toFixed(3)} | ${g.toFixed(2)} | ${(g / o).toFixed(3)} | ${
              (f / g).toFixed(3)} | ` +
          `${
              g <= Math.min(f, h) ? 'yes' :
                                    `no (+${((g / Math.min(f, h) - 1) * 100).toFixed(1)}%)`} |`);
    }
  }
  for (const m of models)
    if (variants[m].graphSummary) console.log(`${m}: ${variants[m].graphSummary}`);
}

// The per-layer profile of every tuned artifact (each thread count), or of the first model's
// default one when nothing was tuned, beside the table.
const profiled = models.filter((m) => variants[m].tuned);
if (profiled.length === 0) profiled.push(models[0]);
for (const m of profiled)
  for (const t of variants[m].tuned ? threads : [threads[0]]) {
    const artifact = variants[m].tuned ? variants[m].tuned[t] : variants[m].default;
    console.log('');
    console.log(`${m}, ${variants[m].tuned ? 'tuned' : 'default configs'}, ${t} thread${t === 1 ? '' : 's'}:`);
    console.log(run(tt, ['bench', artifact, '--threads', String(t), '--repeat', repeat, '--profile']));
  }
