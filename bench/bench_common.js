// What the node benchmarks share: their --name value arguments, running a command for its
// output, ONNX Runtime from npm, and the median they quote.
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

module.exports = { parseArgs, run, ortDir, ensureOrt, median, quantizeFlags };
