// Times ONNX Runtime (CPU, npm onnxruntime-node) on one model and batch.
//
// Usage: node ort-bench.js MODEL.onnx INPUT.bin DIMS WARMUP ITERS THREADS OUT.bin
//                          [DTYPE]
//   INPUT.bin: the input as raw little-endian DTYPE (float32, the default, or
//   int64 for token ids); DIMS: "1,3,224,224".
// Writes the first output as raw float32 to OUT.bin and prints
// {"p50_ms": ..., "p90_ms": ...} on stdout.
const fs = require('fs');
const ort = require('onnxruntime-node');

async function main() {
  const [model, input, dims, warmup, iters, threads, out, dtype = 'float32'] =
      process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads),
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const buffer = fs.readFileSync(input);
  const data = dtype === 'int64'
      ? new BigInt64Array(buffer.buffer.slice(
            buffer.byteOffset, buffer.byteOffset + buffer.byteLength))
      : new Float32Array(buffer.buffer, buffer.byteOffset,
                         buffer.byteLength / 4);
  const feeds = {
    [session.inputNames[0]]:
        new ort.Tensor(dtype, data, dims.split(',').map(Number)),
  };
  let result;
  const times = [];
  for (let i = 0; i < Number(warmup) + Number(iters); ++i) {
    const start = process.hrtime.bigint();
    result = await session.run(feeds);
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (i >= Number(warmup)) times.push(ms);
  }
  times.sort((a, b) => a - b);
  const pick = (p) => times[Math.min(times.length - 1,
                                     Math.round(p * (times.length - 1)))];
  const first = result[session.outputNames[0]].data;
  fs.writeFileSync(out, Buffer.from(first.buffer, first.byteOffset,
                                    first.byteLength));
  console.log(JSON.stringify({p50_ms: pick(0.5), p90_ms: pick(0.9)}));
}

main().catch((e) => {
  console.error('ort-bench: error: ' + e.message);
  process.exit(1);
});
