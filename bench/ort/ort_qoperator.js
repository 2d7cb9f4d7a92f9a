// ONNX Runtime's own QOperator form of a QDQ model: the graph its level-2 ('extended')
// transformers make of it, where each DequantizeLinear -> Conv -> QuantizeLinear becomes one
// QLinearConv (and the Adds, MatMuls, pools between quantized values their QLinear forms), written
// out with the session option optimizedModelFilePath. bench/e2e_bench.js times ONNX Runtime on
// that file beside the QDQ file, so that its int8 anchor is the faster of the two forms.
//
//   node ort_qoperator.js QDQ.onnx OUT.onnx
// prints one JSON line: {"model", "out", "ops": {"QLinearConv": n, ...}} (node counts by type,
// read off the written protobuf).
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

// A NodeProto's op_type is field 4 (tag 0x22), a length-prefixed string; counting the tag, the
// length and the name together counts nodes, not names that happen to contain the word.
function countNodes(bytes, opType) {
  const needle = Buffer.concat([Buffer.from([0x22, opType.length]), Buffer.from(opType)]);
  let n = 0;
  for (let at = bytes.indexOf(needle); at >= 0; at = bytes.indexOf(needle, at + 1)) ++n;
  return n;
}

async function main() {
  const [model, out] = process.argv.slice(2);
  if (!model || !out) {
    console.error('usage: node ort_qoperator.js QDQ.onnx OUT.onnx');
    process.exit(2);
  }
  await ort.InferenceSession.create(model, {
    graphOptimizationLevel: 'extended',
    optimizedModelFilePath: out,
    executionProviders: ['cpu'],
  });
  const bytes = fs.readFileSync(out);
  const ops = {};
  for (const op of ['QLinearConv', 'QLinearMatMul', 'QLinearAdd', 'QLinearGlobalAveragePool',
                    'QGemm', 'MatMulInteger', 'QuantizeLinear', 'DequantizeLinear', 'Conv'])
    ops[op] = countNodes(bytes, op);
  console.log(JSON.stringify({ model, out, ops }));
}

main().catch((e) => { console.error('error: ' + e.message); process.exit(1); });
