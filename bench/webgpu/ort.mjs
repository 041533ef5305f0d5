#!/usr/bin/env node
/* ort.mjs: the peer, side by side: ONNX Runtime Web's attention on WebGPU, from Node through the
 * same Dawn as bench.js, on the same shapes as bench.js's plan, checked against float64 on sampled
 * rows, then timed.
 *
 *   node bench/webgpu/ort.mjs [--plan full|quick|tiny] [--seed N] [--json FILE] [--decode-only | --prefill-only] [--f16]
 *                             [--dawn-toggles T1,T2]
 *
 * --f16: the model in float16 (Q, K, V and O float16, as PyTorch's float16 SDPA and our float16
 * prefill take them), checked against float64 on the float16-rounded inputs (tolerance 2e-2: ORT
 * may keep its softmax in float16); its rows say `"storage": "f16"`. ORT asks for shader-f16 where
 * the adapter offers it; on NVIDIA's Vulkan driver Dawn offers it only with its
 * vulkan_enable_f16_on_nvidia toggle (--dawn-toggles, as bench.js's).
 *
 * The model is one com.microsoft MultiHeadAttention node (ORT's contrib op; its WebGPU kernel is
 * the one ORT Web runs for transformer attention), written here as ONNX protobuf bytes, float32,
 * `unidirectional` = 1 for causal. Q, K and V stay on the GPU between runs (GPU-resident input
 * tensors, output kept as a GPU buffer); a launch is timed by the wall clock from session.run to
 * the queue's completion, the median of the runs. For the decode rows (GQA 32/8) MultiHeadAttention
 * takes K and V with all 32 heads, so it reads four times the bytes our decode reads: the table
 * gives both the time and the bytes. Needs npm's onnxruntime-web and webgpu (npm ci --prefix
 * bench/webgpu).
 */
import fs from 'fs';
import {createRequire} from 'module';
const require = createRequire(import.meta.url);
const FSGPU = require('../../src/kernels/webgpu/fsgpu.js');
const {create, globals} = await import('webgpu');
Object.assign(globalThis, globals);

// ---- a minimal ONNX protobuf writer: just what one node with three inputs needs ----
const enc = new TextEncoder();
function varint(n) { const b = []; n = BigInt(n); do { let x = Number(n & 0x7fn); n >>= 7n; if (n) x |= 0x80; b.push(x); } while (n); return b; }
const field = (no, wire, bytes) => [...varint((no << 3) | wire), ...(wire === 2 ? varint(bytes.length) : []), ...bytes];
const str = (no, s) => field(no, 2, [...enc.encode(s)]);
const int = (no, v) => field(no, 0, varint(v));
const msg = (no, bytes) => field(no, 2, bytes);
const dim = d => msg(1, typeof d === 'string' ? str(2, d) : int(1, d));
// elem: ONNX's element type, 1 float32, 10 float16
const tensorInfo = (name, dims, elem) => [...str(1, name), ...msg(2, msg(1, [...int(1, elem), ...msg(2, dims.flatMap(dim))]))];
function mhaModel(H, width, causal, elem = 1) {
  const attr = (name, v) => msg(5, [...str(1, name), ...int(3, v), ...int(20, 2)]);
  const node = [...str(1, 'q'), ...str(1, 'k'), ...str(1, 'v'), ...str(2, 'o'), ...str(3, 'attn'), ...str(4, 'MultiHeadAttention'),
                ...attr('num_heads', H), ...(causal ? attr('unidirectional', 1) : []), ...str(7, 'com.microsoft')];
  const graph = [...msg(1, node), ...str(2, 'mha'), ...msg(11, tensorInfo('q', ['B', 'S', width], elem)),
                 ...msg(11, tensorInfo('k', ['B', 'L', width], elem)), ...msg(11, tensorInfo('v', ['B', 'L', width], elem)),
                 ...msg(12, tensorInfo('o', ['B', 'S', width], elem))];
  return new Uint8Array([...int(1, 8), ...msg(8, [...str(1, ''), ...int(2, 17)]), ...msg(8, [...str(1, 'com.microsoft'), ...int(2, 1)]),
                         ...msg(7, graph)]);
}

// Dawn for Node lacks two things ORT Web uses: forEach on the feature set, and writeBuffer from
// a SharedArrayBuffer view (ORT's WebAssembly memory is shared).
function navigatorGpu(gpu) {
  return {
    wgslLanguageFeatures: gpu.wgslLanguageFeatures,
    getPreferredCanvasFormat: () => 'rgba8unorm',
    requestAdapter: async o => {
      const a = await gpu.requestAdapter(o);
      if (!a) return a;
      const fp = Object.getPrototypeOf(a.features);
      if (!fp.forEach) fp.forEach = function (cb, self) { for (const x of this) cb.call(self, x, x, this); };
      const rd = a.requestDevice.bind(a);
      a.requestDevice = async d => {
        const dev = await rd(d);
        const qp = Object.getPrototypeOf(dev.queue);
        if (!qp.fsShared) {
          const wb = qp.writeBuffer;
          qp.writeBuffer = function (buf, off, data, dataOff = 0, size) {
            if (data && typeof SharedArrayBuffer !== 'undefined' && data.buffer instanceof SharedArrayBuffer) {
              const el = data.BYTES_PER_ELEMENT || 1, n = size !== undefined ? size * el : data.byteLength - dataOff * el;
              return wb.call(this, buf, off, new Uint8Array(data.buffer, data.byteOffset + dataOff * el, n).slice(), 0, n);
            }
            return wb.call(this, buf, off, data, dataOff, size);
          };
          qp.fsShared = true;
        }
        return dev;
      };
      return a;
    },
  };
}

const args = process.argv.slice(2);
const opt = {plan: 'full', seed: Date.now() % 1000000, json: null, decodeOnly: false, prefillOnly: false, f16: false, toggles: []};
for (let k = 0; k < args.length; k++) {
  if (args[k] === '--plan') opt.plan = args[++k];
  else if (args[k] === '--seed') opt.seed = Number(args[++k]);
  else if (args[k] === '--json') opt.json = args[++k];
  else if (args[k] === '--decode-only') opt.decodeOnly = true;
  else if (args[k] === '--prefill-only') opt.prefillOnly = true;
  else if (args[k] === '--f16') opt.f16 = true;
  else if (args[k] === '--dawn-toggles' && k + 1 < args.length && /^[a-z0-9_,]+$/.test(args[k + 1])) opt.toggles.push(...args[++k].split(',').filter(Boolean));
  else { console.error(`ort.mjs: unknown argument '${args[k]}'\nusage: node bench/webgpu/ort.mjs [--plan full|quick|tiny] [--seed N] [--json FILE] [--decode-only | --prefill-only] [--f16] [--dawn-toggles T1,T2]`); process.exit(2); }
}
if (!['full', 'quick', 'tiny'].includes(opt.plan) || !Number.isInteger(opt.seed)) { console.error('ort.mjs: --plan full, quick or tiny; --seed a whole number'); process.exit(2); }
globalThis.navigator = {gpu: navigatorGpu(create(opt.toggles.length ? [`enable-dawn-features=${opt.toggles.join(',')}`] : []))};
let ort;
try { ort = await import('onnxruntime-web/webgpu'); } catch (e) { console.error(`ort.mjs: cannot load onnxruntime-web (${e.message})`); process.exit(2); }
ort.env.wasm.numThreads = 1;
ort.env.logLevel = 'error';

// (B, H, N, d) planes -> ORT's (B, N, H·d) rows
function toRows(x, H, N, d) {
  const y = new Float32Array(x.length);
  for (let h = 0; h < H; h++) for (let i = 0; i < N; i++) y.set(x.subarray((h * N + i) * d, (h * N + i + 1) * d), (i * H + h) * d);
  return y;
}
// float16 bits -> number
function halfToNumber(b) {
  const e = (b >> 10) & 31, m = b & 1023, sign = b & 0x8000 ? -1 : 1;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) return m ? NaN : sign * Infinity;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}
function expandHeads(x, Hkv, H, N, d) {   // GQA: each KV head repeated for its group
  const y = new Float32Array(H * N * d), g = H / Hkv;
  for (let h = 0; h < H; h++) y.set(x.subarray(Math.floor(h / g) * N * d, (Math.floor(h / g) + 1) * N * d), h * N * d);
  return y;
}

const rows = FSGPU.benchPlan(opt.plan).filter(r => (r.kernel === 'prefill-v3' && !opt.decodeOnly) || (r.kernel === 'decode-v2' && !opt.prefillOnly));
const out = {plan: opt.plan, seed: opt.seed, peer: `onnxruntime-web ${JSON.parse(fs.readFileSync(new URL('./node_modules/onnxruntime-web/package.json', import.meta.url))).version} MultiHeadAttention (webgpu)${opt.f16 ? ', float16' : ''}`,
             dawn_toggles: opt.toggles, rows: []};
const esz = opt.f16 ? 2 : 4, tol = opt.f16 ? 2e-2 : 1e-3;
let bad = 0;
for (const [k, r] of rows.entries()) {
  const row = {kind: r.kind, n_q: r.n_q, n_kv: r.n_kv, d: r.d, heads: r.heads, kv_heads: r.kv_heads, causal: r.causal, storage: opt.f16 ? 'f16' : 'f32'};
  out.rows.push(row);
  process.stderr.write(`[${k + 1}/${rows.length}] ORT Web ${r.kind} n_q=${r.n_q} n_kv=${r.n_kv} d=${r.d}${r.causal ? ' causal' : ''}${opt.f16 ? ' float16' : ''}\n`);
  try {
    const p0 = FSGPU.randomProblem(opt.seed + k, {n_q_heads: r.heads, n_kv_heads: r.kv_heads, n_q: r.n_q, n_kv: r.n_kv, d: r.d, mask: r.causal ? 'causal' : 'none'});
    // float16: the inputs rounded to float16 first, so that float64's answer is the answer to what ORT reads
    const p = opt.f16 ? Object.assign({}, p0, {q: FSGPU.half1(p0.q).r, k: FSGPU.half1(p0.k).r, v: FSGPU.half1(p0.v).r}) : p0;
    const H = r.heads, W = H * r.d;
    const kx = expandHeads(p.k, r.kv_heads, H, r.n_kv, r.d), vx = expandHeads(p.v, r.kv_heads, H, r.n_kv, r.d);
    const s = await ort.InferenceSession.create(mhaModel(H, W, r.causal, opt.f16 ? 10 : 1), {executionProviders: ['webgpu'], preferredOutputLocation: 'gpu-buffer'});
    const device = ort.env.webgpu.device;
    const gpuTensor = (x32, n) => {
      const x = opt.f16 ? new Uint8Array(FSGPU.half1(x32).packed.buffer, 0, x32.length * 2) : x32;
      const b = device.createBuffer({size: Math.ceil(x.byteLength / 4) * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST});
      device.queue.writeBuffer(b, 0, x);
      return ort.Tensor.fromGpuBuffer(b, {dataType: opt.f16 ? 'float16' : 'float32', dims: [1, n, W]});
    };
    const feeds = {q: gpuTensor(toRows(p.q, H, r.n_q, r.d), r.n_q), k: gpuTensor(toRows(kx, H, r.n_kv, r.d), r.n_kv), v: gpuTensor(toRows(vx, H, r.n_kv, r.d), r.n_kv)};
    // check: sampled rows against float64 (MultiHeadAttention's default scale is 1/√d, as ours)
    const o = await s.run(feeds);
    const raw = await o.o.getData();
    const O = opt.f16 && raw instanceof Uint16Array ? Float32Array.from(raw, halfToNumber) : raw;
    let worst = 0;
    for (let t = 0; t < 16; t++) {
      const x = Math.floor((t + 0.5) * H * r.n_q / 16), h = Math.floor(x / r.n_q), i = x % r.n_q;
      const ref = FSGPU.referenceRow(p, h, i);
      for (let c = 0; c < r.d; c++) worst = Math.max(worst, Math.abs(O[(i * H + h) * r.d + c] - ref.o[c]) / Math.max(1, Math.abs(ref.o[c])));
    }
    o.o.dispose();
    row.check = {ok: worst <= tol, worst, tol};
    if (!row.check.ok) { bad++; row.error = `wrong result: error ${worst}`; }
    const times = [];
    for (let t = 0; t < 12; t++) {
      const t0 = performance.now();
      const res = await s.run(feeds);
      await device.queue.onSubmittedWorkDone();
      if (t >= 2) times.push(performance.now() - t0);
      res.o.dispose();
    }
    times.sort((a, b) => a - b);
    row.ms = times[Math.floor(times.length / 2)];
    const pairs = r.causal ? r.n_q * (r.n_q + 1) / 2 : r.n_q * r.n_kv;
    row.tflops = 4 * r.d * pairs * H / (row.ms * 1e9);
    row.bytes = esz * (2 * p.q.length + kx.length + vx.length);
    row.gbps = row.bytes / (row.ms * 1e6);
    await s.release();
    for (const t of Object.values(feeds)) t.dispose();
  } catch (e) {
    row.error = e.message;
  }
  console.log(JSON.stringify(row));
  if (opt.json) fs.writeFileSync(opt.json, JSON.stringify(out, null, 1));   // kept after each row (a time limit keeps them)
}
if (opt.json) fs.writeFileSync(opt.json, JSON.stringify(out, null, 1));
process.exit(bad ? 1 : 0);
