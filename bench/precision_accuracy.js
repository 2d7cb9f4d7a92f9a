// Accuracy of whole networks at the tensor cores' precisions, measured without a GPU: every model
// is compiled for CUDA at each precision (`tensortune compile --target cuda-sm80 --precision P`)
// and run through the CUDA emulation (`tensortune run --emulate`: the generated kernels on this
// CPU with the GPU's numerics, TF32 / FP16 / BF16 rounding of the inputs and FP32 accumulation in
// the mma fragments' order), and each photo's logits are compared with the FP32 reference
// interpreter's (`tensortune run --model M --reference`) on the same input tensor. Printed per
// model and precision:
//
// - top-1 equal to the FP32 reference on how many images, on the raw logits and on the logits
//   centred on the reference's mean over the images (their image-dependent part: random weights
//   make one class win on most photos, so the raw top-1 alone says little);
// - the cosine of the logits against the reference, raw and centred (min and median over the
//   images), and the largest difference as a share of the reference logits' range;
// - with calibrated weights, the same cosines of torch's own run of the network with the same
//   rounding of every dense convolution's and linear layer's operands and float64 sums
//   (calibrated_export.py --simulate): what the precision costs this network however a kernel
//   computes it, so that a missed goal says whether our kernels or the precision miss it;
// - the goal (issue 59: top-1 unchanged and a cosine of at least 0.9999 at tf32 and 0.999 at
//   fp16), met or not, judged on the raw and the centred figures alike.
//
//   node bench/precision_accuracy.js [--tensortune build/cli/tensortune]
//        [--models resnet50,mobilenet_v2] [--precisions tf32,fp16] [--weights calibrated|corpus]
//        [--images DIR] [--max-images N] [--threads 2] [--target cuda-sm80]
//        [--work-dir build/precision_accuracy] [--records-MODEL DB] [--onnx-MODEL FILE]
//
// Weights: nothing trained is downloaded, and a random network with its initial batch-norm
// statistics gives nearly the same logits for every photo (the corpus's mobilenet_v2: the
// photos' logits differ by less than float16's rounding, so its centred cosine is noise and its
// raw top-1 can hardly change). --weights calibrated (the default) therefore runs torchvision's
// random initialisation with every batch norm's statistics measured on the photos themselves
// (bench/calibrated_export.py), so that the logits vary with the image as a trained network's
// do; --weights corpus runs the corpus's file (or --onnx-MODEL) as it is.
//
// Images: every .png/.jpg/.jpeg of at least 16 kB in --images (default: the natural images of
// Debian's python3-skimage, /usr/lib/python3/dist-packages/skimage/data), in name order, or
// --max-images of them spread over that order; fed as `tensortune run --input NAME=photo.png`
// feeds them (bilinear resize to the input's size, ImageNet's mean and std). Models: torchvision
// classifiers' names, which are also the corpus's (build/corpus/NAME_opset13.onnx, or
// --onnx-NAME, with --weights corpus). Precisions: any `compile --precision` takes (fp32 runs the FP32 CUDA kernels:
// the floor of float rounding). The emulation is slow (resnet50: about a minute and a half per
// image and precision on two cores), so progress goes to stderr as each run ends.
'use strict';
const { parseArgs, run, median, readNpyFloat32, argmax, cosine, photos } = require('./bench_common');
const fs = require('fs');
const path = require('path');

const opts = parseArgs(process.argv.slice(2), {
  tensortune: 'build/cli/tensortune', models: 'resnet50,mobilenet_v2', precisions: 'tf32,fp16',
  images: '/usr/lib/python3/dist-packages/skimage/data', 'max-images': '0', threads: '2',
  target: 'cuda-sm80', 'work-dir': 'build/precision_accuracy', weights: 'calibrated',
});
if (!['calibrated', 'corpus'].includes(opts.weights)) {
  console.error(`error: --weights ${opts.weights}: calibrated or corpus`);
  process.exit(2);
}
const tt = path.resolve(opts.tensortune);
const work = path.resolve(opts['work-dir']);
fs.mkdirSync(work, { recursive: true });

// What issue 59 asks of each precision; the others are measured without a goal.
const goals = { tf32: 0.9999, fp16: 0.999 };
const precisions = opts.precisions.split(',');
const maxImages = Number(opts['max-images']);
const threads = Number(opts.threads);
if (!Number.isInteger(maxImages) || maxImages < 0 || maxImages === 1) {
  console.error(`error: --max-images ${opts['max-images']}: 0 (every image) or a whole number of at least 2 ` +
                '(the centred logits need a mean over several)');
  process.exit(2);
}
if (!Number.isInteger(threads) || threads < 1) {
  console.error(`error: --threads ${opts.threads}: a whole number of at least 1`);
  process.exit(2);
}
let images = photos(opts.images, 2, 'the centred logits need a mean over several');
// A subset spread over the sorted list (every k-th), not its first names.
if (maxImages > 0 && images.length > maxImages) {
  const all = images;
  images = Array.from({ length: maxImages }, (_, i) => all[Math.floor((i * all.length) / maxImages)]);
}

// The corpus's file of model m.
function corpusFile(m) {
  const onnx = path.resolve(opts[`onnx-${m}`] || path.join('build', 'corpus', `${m}_opset13.onnx`));
  if (!fs.existsSync(onnx)) {
    console.error(`error: --models ${m}: ${onnx} does not exist (scripts/test.sh builds the corpus; ` +
                  `or give --onnx-${m}, or --weights calibrated)`);
    process.exit(2);
  }
  return onnx;
}
const exportScript = path.join(__dirname, 'calibrated_export.py');
const python = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

function timed(label, f) {
  const t0 = process.hrtime.bigint();
  const r = f();
  process.stderr.write(`  ${label}: ${(Number(process.hrtime.bigint() - t0) / 1e9).toFixed(1)} s\n`);
  return r;
}

const quiet = ['--log-level', 'error'];
const rows = [];
for (const m of opts.models.split(',')) {
  // The photos as the network sees them, read through a model of the right input.
  const reader = opts.weights === 'corpus' ? corpusFile(m) : path.join(work, `${m}.random.onnx`);
  if (opts.weights === 'calibrated') run(python, [exportScript, m, reader]);
  const inputName = (run(tt, [...quiet, 'check-model', reader]).match(/^\s*input\s+(\S+)\s+float32/m) || [])[1];
  if (!inputName) throw new Error(`${reader}: no float32 input found by check-model`);
  const inputs = images.map((image, k) => {
    const x = path.join(work, `${m}.x${k}.npy`);
    run(tt, [...quiet, 'run', '--model', reader, '--reference', '--input', `${inputName}=${path.join(opts.images, image)}`,
             '--save-input', `${inputName}=${x}`]);
    return x;
  });
  let onnx = reader;
  let simulation = null;  // torch's logits with the same rounding (calibrated weights only)
  if (opts.weights === 'calibrated') {
    onnx = path.join(work, `${m}.calibrated.onnx`);
    const simulated = precisions.filter((p) => ['tf32', 'fp16', 'bf16'].includes(p));
    const json = path.join(work, `${m}.simulated.json`);
    const simulate = simulated.length ? ['--simulate', simulated.join(','), '--simulate-out', json] : [];
    process.stderr.write(run(python, [exportScript, m, onnx, ...simulate, ...inputs]));
    if (simulated.length) simulation = JSON.parse(fs.readFileSync(json, 'utf8'));
  }
  const records = opts[`records-${m}`] ? ['--records', opts[`records-${m}`]] : [];
  const artifacts = {};
  for (const p of precisions) {
    artifacts[p] = path.join(work, `${m}.${p}.tt`);
    timed(`${m}: compile --precision ${p}`, () => run(tt, [...quiet, 'compile', '--model', onnx, '--target', opts.target,
                                                            '--precision', p, ...records, '-o', artifacts[p]]));
  }
  const reference = [];
  const logits = Object.fromEntries(precisions.map((p) => [p, []]));
  images.forEach((image, k) => {
    process.stderr.write(`${m} ${image}\n`);
    const x = inputs[k], ref = path.join(work, `${m}.fp32_reference.npy`);
    timed('FP32 reference interpreter', () => run(tt, [...quiet, 'run', '--model', onnx, '--reference', '--input',
                                                       `${inputName}=${x}`, '-o', ref]));
    reference.push(readNpyFloat32(ref));
    for (const p of precisions) {
      const out = path.join(work, `${m}.${p}.npy`);
      timed(`${p}, emulated`, () => run(tt, [...quiet, 'run', artifacts[p], '--emulate', '--threads', String(threads),
                                             '--input', `${inputName}=${x}`, '-o', out]));
      logits[p].push(readNpyFloat32(out));
      if (logits[p].at(-1).length !== reference.at(-1).length)
        throw new Error(`${m} ${p}: ${logits[p].at(-1).length} logits against the reference's ${reference.at(-1).length}`);
    }
  });
  const mean = new Float64Array(reference[0].length);
  for (const v of reference) v.forEach((x, i) => (mean[i] += x / reference.length));
  const centred = (v) => v.map((x, i) => x - mean[i]);
  for (const p of precisions) {
    const r = { model: m, precision: p, images: images.length, top1: 0, top1Centred: 0, cos: [], cosCentred: [],
                rel: 0, flips: [], simCos: [], simCosCentred: [] };
    if (simulation && simulation[p]) {
      const ref = simulation.reference;
      const simMean = ref[0].map((_, i) => ref.reduce((t, v) => t + v[i], 0) / ref.length);
      const c = (v) => v.map((x, i) => x - simMean[i]);
      for (let k = 0; k < images.length; ++k) {
        r.simCos.push(cosine(ref[k], simulation[p][k]));
        r.simCosCentred.push(cosine(c(ref[k]), c(simulation[p][k])));
      }
    }
    for (let k = 0; k < images.length; ++k) {
      const [a, b] = [reference[k], logits[p][k]];
      r.top1 += argmax(a) === argmax(b);
      r.top1Centred += argmax(centred(a)) === argmax(centred(b));
      if (argmax(centred(a)) !== argmax(centred(b))) r.flips.push(images[k]);
      r.cos.push(cosine(a, b));
      r.cosCentred.push(cosine(centred(a), centred(b)));
      let lo = Infinity, hi = -Infinity;
      for (const v of a) lo = Math.min(lo, v), hi = Math.max(hi, v);
      for (let i = 0; i < a.length; ++i) r.rel = Math.max(r.rel, Math.abs(a[i] - b[i]) / (hi - lo));
    }
    rows.push(r);
  }
}

console.log(`Accuracy at reduced precision, CUDA kernels emulated on this CPU against the FP32 reference ` +
            `interpreter; ${new Date().toISOString().slice(0, 10)}; --target ${opts.target}; --weights ` +
            `${opts.weights}; ${images.length} ` +
            `images from ${opts.images} (${images.join(', ')}).`);
console.log('');
console.log('| model | precision | images | top-1 = fp32 | same, centred logits | cosine min / median | ' +
            'centred cosine min / median | max diff / logits\' range | torch, same rounding: cosine min, ' +
            'centred min | goal | met |');
console.log('|---|---|---:|---:|---:|---|---|---:|---|---|---|');
const mm = (v) => `${Math.min(...v).toFixed(7)} / ${median(v).toFixed(7)}`;
for (const r of rows) {
  const goal = goals[r.precision];
  const met = goal === undefined ? '-'
      : r.top1 === r.images && r.top1Centred === r.images && Math.min(...r.cos) >= goal &&
              Math.min(...r.cosCentred) >= goal ? 'yes' : '**no**';
  console.log(`| ${r.model} | ${r.precision} | ${r.images} | ${r.top1}/${r.images} | ${r.top1Centred}/${r.images} | ` +
              `${mm(r.cos)} | ${mm(r.cosCentred)} | ${(100 * r.rel).toFixed(4)}% | ` +
              `${r.simCos.length ? `${Math.min(...r.simCos).toFixed(7)}, ${Math.min(...r.simCosCentred).toFixed(7)}` : '-'} | ` +
              `${goal === undefined ? '-' : `top-1 unchanged, cosine >= ${goal}`} | ${met} |`);
}
for (const r of rows)
  if (r.flips.length) console.log(`\n${r.model} ${r.precision}: centred top-1 changed on ${r.flips.join(', ')}.`);
