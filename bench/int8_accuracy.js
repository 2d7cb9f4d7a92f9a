// Accuracy of int8 on natural images: every model is quantized by `tensortune quantize`
// calibrated on a third of the images (every third file, by name), then each of the other
// images runs through four networks: the float32 model and its QDQ model, each in ONNX Runtime
// and compiled by us (opt level 3; the QDQ model on the int8 kernels). Printed per model:
//
// - int8 against float32 (ours): the same top-1 class on how many test images, on the raw logits
//   and on the logits centred on the float model's mean over the test images (their
//   image-dependent part: random weights make one class win on most images), and the cosine of
//   the two logit vectors, raw and centred (min and median over the images); ONNX Runtime's
//   centred cosine beside it, to tell the quantization's own error from ours;
// - ours int8 against ONNX Runtime int8 on the same QDQ model: the largest difference in steps of
//   the output's quantization scale when the output is dequantized (its values on a grid, the
//   step read from ONNX Runtime's output), else as a share of the range of ONNX Runtime's logits;
//   and ours float32 against ONNX Runtime float32 the same way, the scale of float rounding.
//
//   node bench/int8_accuracy.js [--tensortune build/cli/tensortune] [--models resnet-18,mobilenet_v2]
//        [--images DIR] [--work-dir build/int8_accuracy] [--records-MODEL DB] [--percentile 100]
//        [--reduce-range 0|1|auto] [--noise-growth 1.1] [--bias-correction 1|0]
//
// Images: every .png/.jpg/.jpeg of at least 16 kB in --images (default: the natural images that
// Debian's python3-skimage ships, /usr/lib/python3/dist-packages/skimage/data), fed as
// `tensortune run --input NAME=photo.png` feeds them (bilinear resize to the input's size,
// ImageNet's mean and std); ONNX Runtime runs on the tensor that run saved (--save-input).
// Models: zoo names (exported by `tensortune export-onnx`) or corpus names
// (build/corpus/NAME_opset13.onnx). The corpus's weights are random (no download), so a class is
// an index, not a label: the check is that quantization keeps the float model's answer.
'use strict';
const { parseArgs, run, ortDir, ensureOrt, median, quantizeFlags, readNpyFloat32, argmax, cosine, photos } =
    require('./bench_common');
const fs = require('fs');
const path = require('path');

const opts = parseArgs(process.argv.slice(2), { tensortune: 'build/cli/tensortune', models: 'resnet-18,mobilenet_v2',
                 images: '/usr/lib/python3/dist-packages/skimage/data', 'work-dir': 'build/int8_accuracy',
                 percentile: '100' });
const tt = path.resolve(opts.tensortune);
const work = path.resolve(opts['work-dir']);
fs.mkdirSync(work, { recursive: true });

const images = photos(opts.images, 3, 'a third of them calibrate, the rest are tested');
const calibration = images.filter((_, i) => i % 3 === 0);
const tests = images.filter((_, i) => i % 3 !== 0);
const calibrationDir = path.join(work, 'calibration');
fs.rmSync(calibrationDir, { recursive: true, force: true });
fs.mkdirSync(calibrationDir);
for (const f of calibration) fs.symlinkSync(path.resolve(opts.images, f), path.join(calibrationDir, f));

ensureOrt();

// The grid step of a dequantized output: the smallest gap between its distinct values, when every
// value is a whole number of such steps from the smallest (else 0: not a quantized output).
function gridStep(v) {
  const s = [...new Set(v)].sort((a, b) => a - b);
  let step = Infinity;
  for (let i = 1; i < s.length; ++i) step = Math.min(step, s[i] - s[i - 1]);
  if (!isFinite(step) || step <= 0) return 0;
  for (const x of s) {
    const k = (x - s[0]) / step;
    if (Math.abs(k - Math.round(k)) > 1e-2) return 0;
  }
  return step;
}

const zoo = ['resnet-18', 'resnet-50', 'vgg-16', 'mobilenet-v1'];
const rows = [];
for (const m of opts.models.split(',')) {
  let onnx = path.join(work, `${m}.onnx`);
  if (zoo.includes(m)) {
    run(tt, ['export-onnx', '--model', m, '-o', onnx]);
  } else {
    onnx = path.resolve(opts[`onnx-${m}`] || path.join('build', 'corpus', `${m}_opset13.onnx`));
    if (!fs.existsSync(onnx)) {
      console.error(`error: --models ${m}: not a zoo model (${zoo.join(', ')}) and ${onnx} does not exist`);
      process.exit(2);
    }
  }
  const qdq = path.join(work, `${m}.int8.onnx`);
  run(tt, ['--log-level', 'error', 'quantize', onnx, '-o', qdq, '--calibrate', calibrationDir,
           '--percentile', opts.percentile, ...quantizeFlags(opts)]);
  const records = opts[`records-${m}`] ? ['--records', opts[`records-${m}`]] : [];
  const floatTt = path.join(work, `${m}.tt`), int8Tt = path.join(work, `${m}.int8.tt`);
  run(tt, ['--log-level', 'error', 'compile', '--model', onnx, ...records, '-o', floatTt]);
  run(tt, ['--log-level', 'error', 'compile', '--model', qdq, ...records, '-o', int8Tt]);
  const inputName = (run(tt, ['--log-level', 'error', 'check-model', onnx]).match(/^\s*input\s+(\S+)\s+float32/m) || [])[1];
  if (!inputName) throw new Error(`${onnx}: no float32 input found by check-model`);

  const logits = { of: [], oi: [], rf: [], ri: [] };
  for (const image of tests) {
    const x = path.join(work, 'x.npy');
    const out = (name) => path.join(work, `${name}.npy`);
    run(tt, ['--log-level', 'error', 'run', floatTt, '--input', `${inputName}=${path.join(opts.images, image)}`,
             '--save-input', `${inputName}=${x}`, '-o', out('ours_f32')]);
    run(tt, ['--log-level', 'error', 'run', int8Tt, '--input', `${inputName}=${x}`, '-o', out('ours_int8')]);
    const env = { env: { ...process.env, NODE_PATH: path.join(ortDir, 'node_modules') } };
    run('node', [path.join(ortDir, 'ort_run.js'), onnx, out('ort_f32'), `${inputName}=${x}`], env);
    run('node', [path.join(ortDir, 'ort_run.js'), qdq, out('ort_int8'), `${inputName}=${x}`], env);
    logits.of.push(readNpyFloat32(out('ours_f32')));
    logits.oi.push(readNpyFloat32(out('ours_int8')));
    logits.rf.push(readNpyFloat32(out('ort_f32')));
    logits.ri.push(readNpyFloat32(out('ort_int8')));
    process.stderr.write(`${m} ${image}: top-1 fp32 ${argmax(logits.of.at(-1))} int8 ${argmax(logits.oi.at(-1))}\n`);
  }
  // Random weights make one class win on most images; the logits' image-dependent part (each
  // minus the float model's mean over the test images) is what quantization must keep.
  const mean = new Float64Array(logits.of[0].length);
  for (const v of logits.of) v.forEach((x, i) => (mean[i] += x / logits.of.length));
  const centred = (v) => v.map((x, i) => x - mean[i]);
  const r = { model: m, images: tests.length, top1: 0, top1Centred: 0, ortTop1: 0, cos: [], cosCentred: [],
              ortCos: [], flips: [], maxSteps: 0, step: 0, relInt8: 0, relF32: 0, equal: 0, values: 0 };
  for (let k = 0; k < tests.length; ++k) {
    const [of, oi, rf, ri] = [logits.of[k], logits.oi[k], logits.rf[k], logits.ri[k]];
    r.top1 += argmax(of) === argmax(oi);
    if (argmax(of) !== argmax(oi)) {
      // How close the float model's call was: its top two logits' gap, in its logits' range.
      const sorted = Array.from(of).sort((a, b) => b - a);
      const gap = (sorted[0] - sorted[1]) / (sorted[0] - sorted.at(-1));
      r.flips.push(`${tests[k]} (float top two ${(100 * gap).toFixed(2)}% of the range apart)`);
    }
    r.top1Centred += argmax(centred(of)) === argmax(centred(oi));
    r.ortTop1 += argmax(rf) === argmax(ri);
    r.cos.push(cosine(of, oi));
    r.cosCentred.push(cosine(centred(of), centred(oi)));
    r.ortCos.push(cosine(centred(rf), centred(ri)));
    // Ours against ONNX Runtime: in steps of the output's quantization when it has one, else
    // relative to the range of ONNX Runtime's logits (and the same for the float pair, the
    // scale of float rounding).
    const step = gridStep(ri);
    r.step = step;
    let lo = Infinity, hi = -Infinity;
    for (const x of ri) lo = Math.min(lo, x), hi = Math.max(hi, x);
    for (let i = 0; i < ri.length; ++i) {
      const d = Math.abs(oi[i] - ri[i]);
      if (step > 0) r.maxSteps = Math.max(r.maxSteps, d / step);
      r.relInt8 = Math.max(r.relInt8, d / (hi - lo));
      r.relF32 = Math.max(r.relF32, Math.abs(of[i] - rf[i]) / (hi - lo));
      r.equal += step > 0 ? d < 0.5 * step : d === 0;
      ++r.values;
    }
  }
  rows.push(r);
}

console.log(`int8 accuracy on natural images; ${new Date().toISOString().slice(0, 10)}; ` +
            `${calibration.length} calibration images (${calibration.join(', ')}), ${tests.length} test images ` +
            `from ${opts.images}; quantize --percentile ${opts.percentile}` +
            `${quantizeFlags(opts).map((f) => ' ' + f).join('')}.`);
console.log('');
console.log('| model | test images | int8 top-1 = fp32 | same on centred logits | cosine min / median | ' +
            'centred cosine min / median | ORT: top-1 = fp32 | ORT: centred cosine min / median | ' +
            'ours int8 vs ORT int8, max diff | ours fp32 vs ORT fp32 |');
console.log('|---|---:|---:|---:|---|---|---:|---|---|---|');
const mm = (v) => `${Math.min(...v).toFixed(4)} / ${median(v).toFixed(4)}`;
for (const r of rows) {
  const int8Diff = r.step > 0 ? `${r.maxSteps.toFixed(2)} steps (${(100 * r.equal / r.values).toFixed(1)}% equal)`
                              : `${(100 * r.relInt8).toFixed(3)}% of the logits' range`;
  console.log(`| ${r.model} | ${r.images} | ${r.top1}/${r.images} | ${r.top1Centred}/${r.images} | ${mm(r.cos)} | ` +
              `${mm(r.cosCentred)} | ${r.ortTop1}/${r.images} | ${mm(r.ortCos)} | ${int8Diff} | ` +
              `${(100 * r.relF32).toFixed(3)}% |`);
}
for (const r of rows)
  if (r.flips.length) console.log(`\n${r.model}: top-1 changed on ${r.flips.join(', ')}.`);
