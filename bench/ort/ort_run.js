// ONNX Runtime (npm onnxruntime-node) as the reference of the model corpus test: runs a model
// on .npy inputs and writes its first output as a .npy, at graph optimisation level "all"
// with one thread.
//
//   node ort_run.js [--optimization LEVEL] MODEL.onnx OUTPUT.npy NAME=INPUT.npy [...]
//
// LEVEL: disabled, basic, extended or all (the default).
//
// .npy: version 1 files, little-endian float32, int64, int32 or bool, C order.
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

const kTypes = {
  '<f4': ['float32', Float32Array],
  '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array],
  '|b1': ['bool', Uint8Array],
};

function readNpy(path) {
  const b = fs.readFileSync(path);
  if (b.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${path}: not a .npy file`);
  const major = b[6];
  const headerLen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const offset = major === 1 ? 10 : 12;
  const header = b.toString('latin1', offset, offset + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${path}: fortran order`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').filter(s => s.trim()).map(Number);
  const type = kTypes[descr];
  if (!type) throw new Error(`${path}: dtype ${descr} is not supported`);
  const data = b.subarray(offset + headerLen);
  const copy = new Uint8Array(data.length);
  copy.set(data);
  let values = new type[1](copy.buffer, 0, copy.length / type[1].BYTES_PER_ELEMENT);
  if (type[0] === 'bool') values = Uint8Array.from(values);
  return new ort.Tensor(type[0], values, shape);
}

function writeNpy(path, tensor) {
  const descr = { float32: '<f4', int64: '<i8', int32: '<i4', bool: '|b1' }[tensor.type];
  if (!descr) throw new Error(`output dtype ${tensor.type} is not supported`);
  const dims = tensor.dims.length === 1 ? `${tensor.dims[0]},` : tensor.dims.join(', ');
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${dims}), }`;
  header += ' '.repeat((64 - ((10 + header.length + 1) % 64)) % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const data = Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  fs.writeFileSync(path, Buffer.concat([head, Buffer.from(header, 'latin1'), data]));
}

async function main() {
  let args = process.argv.slice(2);
  let level = 'all';
  if (args[0] === '--optimization') {
    level = args[1];
    args = args.slice(2);
  }
  const [model, output, ...inputs] = args;
  if (!model || !output || inputs.length === 0) {
    console.error('usage: node ort_run.js MODEL.onnx OUTPUT.npy NAME=INPUT.npy [...]');
    process.exit(2);
  }
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    graphOptimizationLevel: level,
  });
  const feeds = {};
  for (const item of inputs) {
    const eq = item.indexOf('=');
    feeds[item.slice(0, eq)] = readNpy(item.slice(eq + 1));
  }
  const result = await session.run(feeds);
  writeNpy(output, result[session.outputNames[0]]);
}

module.exports = { readNpy };

if (require.main === module) {
  main().catch(e => {
    console.error(`ort_run: ${e.message}`);
    process.exit(1);
  });
}
