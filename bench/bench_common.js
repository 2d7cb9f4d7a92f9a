// What the node benchmarks share: their --name value arguments, running a command for its
// output, ONNX Runtime from npm, the median they quote, and reading the logits they compare.
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

/// `--name value` pairs over `defaults`; anything else ends the process with a usage error.
function parseArgs(argv, defaults) {
  const opts = { ...defaults };
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || argv[i + 1] === undefined) {
      console.error(`error: expected --name value pairs, got '${argv[i]}'`);
      process.exit(2);
    }
    opts[argv[i].slice(2)] = argv[i + 1];
  }
  return opts;
}

/// The command's stdout; its failure (with stderr) throws.
function run(cmd, args, options = {}) {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 26, ...options });
}

const ortDir = path.join(__dirname, 'ort');

/// Installs onnxruntime-node into bench/ort (it ships its native library) when it is missing;
/// returns its version.
function ensureOrt() {
  if (!fs.existsSync(path.join(ortDir, 'node_modules', 'onnxruntime-node'))) {
    process.stderr.write('installing onnxruntime-node into bench/ort (npm install --ignore-scripts) ...\n');
    run('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: ortDir });
  }
  return JSON.parse(fs.readFileSync(path.join(ortDir, 'node_modules', 'onnxruntime-node', 'package.json'))).version;
}

function median(v) {
  const s = [...v].sort((a, b) => a - b);
  const k = s.length >> 1;
  return s.length % 2 ? s[k] : 0.5 * (s[k - 1] + s[k]);
}

// The options of `tensortune quantize` that a bench's --reduce-range (1 or all, auto),
// --noise-growth and --bias-correction 0 ask for, and how they read in a table's caption.
function quantizeFlags(opts) {
  const flags = [];
  const mode = opts['reduce-range'];
  if (mode === '1' || mode === 'all') flags.push('--reduce-range');
  else if (mode === 'auto') flags.push('--reduce-range=auto');
  else if (mode !== undefined && mode !== '0') throw new Error(`--reduce-range ${mode}: 0, 1 (all) or auto`);
  if (opts['noise-growth'] !== undefined) flags.push('--noise-growth', opts['noise-growth']);
  if (opts['bias-correction'] === '0') flags.push('--no-bias-correction');
  const outputs = opts['quantize-outputs'];
  if (outputs === '1') flags.push('--quantize-outputs');
  else if (outputs !== undefined && outputs !== '0') throw new Error(`--quantize-outputs ${outputs}: 0 or 1`);
  return flags;
}

/// The data of a .npy file of version 1, little-endian float32, C order (what `tensortune run -o`
/// and ort_run.js write).
function readNpyFloat32(file) {
  const b = fs.readFileSync(file);
  const headerLen = b.readUInt16LE(8);
  const header = b.toString('latin1', 10, 10 + headerLen);
  if (!/'descr':\s*'<f4'/.test(header)) throw new Error(`${file}: not float32`);
  const data = b.subarray(10 + headerLen);
  return new Float32Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length));
}

/// The index of the largest value (the first of equals): a classifier's top-1 class.
function argmax(v) {
  let k = 0;
  for (let i = 1; i < v.length; ++i) if (v[i] > v[k]) k = i;
  return k;
}

function cosine(a, b) {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; ++i) ab += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i];
  return ab / Math.sqrt(aa * bb);
}

/// The photos of an accuracy bench: every .png/.jpg/.jpeg of at least 16 kB in `dir` (the default
/// is python3-skimage's sample images), in name order; a missing folder or fewer than `atLeast`
/// photos end the process with a usage error that says why.
function photos(dir, atLeast, why) {
  if (!fs.existsSync(dir)) {
    console.error(`error: --images ${dir} does not exist (install python3-skimage, whose ` +
                  'sample photos are the default, or give a folder of .png/.jpg files)');
    process.exit(2);
  }
  const found = fs.readdirSync(dir)
                    .filter((f) => /\.(png|jpe?g)$/i.test(f))
                    .filter((f) => fs.statSync(path.join(dir, f)).size >= 16384)
                    .sort();
  if (found.length < atLeast) {
    console.error(`error: --images ${dir} holds ${found.length} images of at least 16 kB; need ${atLeast} ` +
                  `or more (${why})`);
    process.exit(2);
  }
  return found;
}

module.exports = { parseArgs, run, ortDir, ensureOrt, median, quantizeFlags, readNpyFloat32, argmax, cosine,
                   photos };
