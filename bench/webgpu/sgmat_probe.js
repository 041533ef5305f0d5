#!/usr/bin/env node
/* sgmat_probe.js: what a GPU's subgroup matrices really do, one assumption of prefill version 7
 * (src/kernels/webgpu/fwd_sgmat.wgsl) at a time: made for the device call that found, on an NVIDIA
 * H200, that version 7's first failure was in its own code, not in the hardware's matrices
 * (docs/webgpu.md, "Wrong on the H200 at first").
 *
 *   node bench/webgpu/sgmat_probe.js [--seed N] [--dawn-toggles T1,T2] [--budget S] [--null]
 *
 * Part 1, tiny kernels, each checking ONE assumption against a CPU result, for every f16 × f16 →
 * f32 configuration the adapter offers (M dividing the subgroup size): a product C = A·B from
 * storage and from workgroup memory, row-major, with an offset and a stride wider than the matrix,
 * with B read column-major (Kᵀ as version 7 reads K's rows), a result stored to workgroup memory
 * and read by invocations, a result loaded back (from storage, and from workgroup memory after
 * the invocations scaled its rows: version 7's rescale), left matrices kept in registers after
 * their memory is overwritten (an array indexed by a loop variable, the same array with constant
 * indices, a single matrix), result matrices accumulated in an array (loop index, constant
 * indices, separate variables), the zero value of a result matrix, subgroup_id against
 * local_invocation_index / subgroup size, every subgroup of a workgroup on its own rows (by
 * subgroup_id), and version 7's two products alone (S = Q Kᵀ over two tiles with Q
 * kept in an array; O += P V with O in an array). One line each:
 *   probe NAME MxNxK: PASS|FAIL max err E (first mismatch at C[i] (row r, col c): gpu X, want Y)
 * and under a FAIL what the output matches instead where it can tell (transposed, zeros, the
 * sentinel −7 that C held before the kernel ran: nothing written).
 * Part 2, prefill version 7 whole, and its probe forms that each remove one suspect (fwd_sgmat's
 * QWG: Q reloaded from workgroup memory at each use, no array of left matrices; OWG: O kept in
 * workgroup memory, no array of result matrices; both),
 * on small problems (one with Q = 0, whose S is 0: the P V path alone), checked against float64
 * as bench.js does, and version 7 in each other configuration the adapter offers. One line each:
 *   kernel FORM PROBLEM: PASS|FAIL max err E (tolerance T; first mismatch at {...})
 * The last lines sum up both parts. Exit 0 when everything ran and passed, 1 when something failed,
 * errored or was skipped for time, 2 when there is no device with subgroup matrices to probe.
 *
 * --null: Dawn's null backend, shown 32-lane subgroups and the H200's three configurations (as
 * validate.js does): every probe's WGSL compiled and made into a pipeline, and the script's own
 * side (buffers, bindings, read-back, the CPU results) run end to end, so that it cannot fail on
 * the device for a silly reason. The null backend computes nothing: its PASS/FAIL mean nothing;
 * a line that says ERROR does. --budget S (default 75): parts not started after S seconds are
 * skipped and said to be (the device call's limit is 90 s).
 * Device setup: as bench.js (allow_unsafe_apis, vulkan_enable_f16_on_nvidia unless
 * --dawn-toggles says otherwise, timestamp_quantization off), the device opened by fsgpu.js.
 */
'use strict';
const fs = require('fs');
const path = require('path');
const FSGPU = require('../../src/kernels/webgpu/fsgpu.js');

const usage = 'usage: node bench/webgpu/sgmat_probe.js [--seed N] [--dawn-toggles T1,T2] [--budget S] [--null]';
const SENT = -7;   // what C holds before a probe kernel runs (an entry left so was never written)
const H200 = [[16, 16, 16], [16, 8, 16], [16, 8, 8]].map(([M, N, K]) => ({componentType: 'f16', resultComponentType: 'f32', M, N, K}));

function parse(argv) {
  const o = {seed: null, toggles: null, budget: 75, nullBackend: false};
  for (let k = 0; k < argv.length; k++) {
    const a = argv[k], v = () => { if (k + 1 >= argv.length) throw new Error(`${a} needs a value`); return argv[++k]; };
    if (a === '--seed') o.seed = Number(v());
    else if (a === '--dawn-toggles') o.toggles = v().split(',').filter(Boolean);
    else if (a === '--budget') o.budget = Number(v());
    else if (a === '--null') o.nullBackend = true;
    else if (a === '-h' || a === '--help') { console.log(usage); process.exit(0); }
    else throw new Error(`unknown argument '${a}'`);
  }
  if (o.seed !== null && !(Number.isInteger(o.seed) && o.seed >= 0)) throw new Error('--seed: a whole number');
  if (!(o.budget > 0)) throw new Error('--budget: seconds, more than 0');
  if (o.toggles && !o.toggles.every(t => /^[a-z0-9_]+$/.test(t))) throw new Error('--dawn-toggles: names of Dawn toggles');
  return o;
}

// The null adapter as fsgpu.js sees it (validate.js's way): 32-lane subgroups, the H200's configurations.
function shown(gpu) {
  return {
    requestAdapter: async (o) => {
      const a = await gpu.requestAdapter(o);
      if (!a) return null;
      const info = {vendor: 'null backend', architecture: '', device: '', description: 'Dawn null backend (validation only)',
                    subgroupMinSize: 32, subgroupMaxSize: 32, subgroupMatrixConfigs: H200};
      return new Proxy(a, {get(t, k) { if (k === 'info') return info; const v = t[k]; return typeof v === 'function' ? v.bind(t) : v; }});
    },
  };
}

// ---- part 1: the tiny kernels ----

// Random float16 numbers in [−1, 1] (as float32 values, and packed two a u32 for an array<f16>).
function halfData(r, n) {
  const x = new Float32Array(n + (n & 1));
  for (let k = 0; k < x.length; k++) x[k] = 2 * r() - 1;
  const h = FSGPU.half1(x);
  return {val: h.r, packed: h.packed};
}
// entry (r, c) of a matrix in arr at off with a stride, row- or column-major (the extension's rule)
const at = (arr, off, stride, col) => (r, c) => arr[off + (col ? c * stride + r : r * stride + c)];
// C's expected contents: the sentinel everywhere, then blocks written (row-major, at off, stride)
function sentinel(n) { return new Float64Array(n).fill(SENT); }
function put(C, off, stride, rows, cols, f) { for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) C[off + r * stride + c] = f(r, c); }
// left (rows × inner) · right (inner × cols), accumulated onto acc(r, c)
const prod = (a, b, inner, acc = () => 0) => (r, c) => { let s = acc(r, c); for (let k = 0; k < inner; k++) s += a(r, k) * b(k, c); return s; };

// Each probe: name, what it checks, wg (workgroup size: 'SGS' or 'NSG * SGS'), decls (WGSL before
// main), body (main's body; t, sg, lane, sgsize are main's builtins), sizes {A, B, C0, C} in
// elements (A, B f16; C0, C f32), want(A, B, C0) → expected C, view (C's row stride for the
// mismatch's row and column), alts(A, B, C0) → {name: expected C} (what else the output might match).
function probes(c, NSG) {
  const {M, N, K} = c, L = [];
  const add = x => L.push(x);
  const mmStore = (src, offA, sA, offB, sB, col, offC, sC) => `
  let a = subgroupMatrixLoad<Left, row_major>(&${src[0]}, ${offA}u, ${sA}u);
  let b = subgroupMatrixLoad<Right, ${col ? 'col_major' : 'row_major'}>(&${src[1]}, ${offB}u, ${sB}u);
  let c = subgroupMatrixMultiplyAccumulate(a, b, Res());
  subgroupMatrixStore<row_major>(&C, ${offC}u, c, ${sC}u);`;
  const stage = (arr, from, n) => `
  for (var x = t; x < ${n}u; x += WGN) { ${arr}[x] = ${from}[x]; }`;
  // the plain product and its variants of place, offset, stride and B's order
  const plain = {offA: 0, sA: K, offB: 0, sB: N, col: false, offC: 0, sC: N, nA: M * K, nB: K * N, nC: M * N};
  const wide = {offA: 2 * 4 * K + K, sA: 4 * K, offB: 2 * 3 * N + N, sB: 3 * N, col: false, offC: 3 * 2 * N + N, sC: 2 * N,
                nA: (2 + M) * 4 * K, nB: (2 + K) * 3 * N, nC: (3 + M) * 2 * N};
  // B column-major as version 7 reads K: key block 1 (N keys), column chunk 1 (K of D = 4K), stride D
  const kT = {offA: 0, sA: K, offB: N * 4 * K + K, sB: 4 * K, col: true, offC: 0, sC: N, nA: M * K, nB: 2 * N * 4 * K, nC: M * N};
  const mmWant = g => (A, B) => { const C = sentinel(g.nC); put(C, g.offC, g.sC, M, N, prod(at(A, g.offA, g.sA, false), at(B, g.offB, g.sB, g.col), K)); return C; };
  const mmAlts = g => (A, B) => {
    const alts = {}, a = at(A, g.offA, g.sA, false), b = at(B, g.offB, g.sB, g.col);
    const C0 = sentinel(g.nC);
    alts.zeros = (put(C0, g.offC, g.sC, M, N, () => 0), C0);
    if (M === N) { const C = sentinel(g.nC); put(C, g.offC, g.sC, M, N, (r, cc) => prod(a, b, K)(cc, r)); alts['C transposed'] = C; }
    if (K === N) { const C = sentinel(g.nC); put(C, g.offC, g.sC, M, N, prod(a, at(B, g.offB, g.sB, !g.col), K)); alts['B read in the other order'] = C; }
    if (M === K) { const C = sentinel(g.nC); put(C, g.offC, g.sC, M, N, prod((r, k) => a(k, r), b, K)); alts['A read transposed'] = C; }
    return alts;
  };
  for (const [name, g, what] of [['storage_row_major', plain, 'C = A·B, A and B row-major in storage, no offset'],
                                  ['storage_offset_stride', wide, 'the same with offsets and strides wider than the matrices'],
                                  ['storage_col_major_B', kT, 'B read column-major with a stride (Kᵀ from K\'s rows, as version 7)']]) {
    add({name, what, sizes: {A: g.nA, B: g.nB, C: g.nC}, view: g.sC, want: mmWant(g), alts: mmAlts(g),
         body: mmStore(['A', 'B'], g.offA, g.sA, g.offB, g.sB, g.col, g.offC, g.sC)});
    add({name: name.replace('storage', 'workgroup'), what: what.replace('in storage', 'in workgroup memory') + ' (from workgroup memory)',
         sizes: {A: g.nA, B: g.nB, C: g.nC}, view: g.sC, want: mmWant(g), alts: mmAlts(g),
         decls: `var<workgroup> As: array<f16, ${g.nA}>;\nvar<workgroup> Bs: array<f16, ${g.nB}>;`,
         body: stage('As', 'A', g.nA) + stage('Bs', 'B', g.nB) + '\n  workgroupBarrier();' + mmStore(['As', 'Bs'], g.offA, g.sA, g.offB, g.sB, g.col, g.offC, g.sC)});
  }
  // a result stored to workgroup memory (offset N, stride 2N: version 7's Ss) and read back by invocations
  add({name: 'result_to_workgroup_read_by_invocations', what: 'A·B stored to workgroup memory, copied out by the invocations',
       sizes: {A: M * K, B: K * N, C: M * 2 * N}, view: 2 * N,
       decls: `var<workgroup> Ss: array<f32, ${M * 2 * N}>;`,
       body: `
  let c = subgroupMatrixMultiplyAccumulate(subgroupMatrixLoad<Left, row_major>(&A, 0u, SK), subgroupMatrixLoad<Right, row_major>(&B, 0u, SN), Res());
  subgroupMatrixStore<row_major>(&Ss, SN, c, 2u * SN);
  workgroupBarrier();
  for (var x = t; x < ${M * 2 * N}u; x += WGN) { C[x] = Ss[x]; }`,
       want: (A, B) => { const C = new Float64Array(M * 2 * N); put(C, N, 2 * N, M, N, prod(at(A, 0, K), at(B, 0, N), K)); return C; }});
  // a result loaded back from storage: stored again as is, and used as a product's accumulator
  add({name: 'result_load_store', what: 'a result matrix loaded from storage (offset, stride) and stored again',
       sizes: {C0: M * 2 * N + N, C: M * N}, view: N,
       body: `
  let c = subgroupMatrixLoad<Res, row_major>(&C0, SN, 2u * SN);
  subgroupMatrixStore<row_major>(&C, 0u, c, SN);`,
       want: (A, B, C0) => { const C = sentinel(M * N); put(C, 0, N, M, N, at(C0, N, 2 * N)); return C; }});
  add({name: 'result_load_as_accumulator', what: 'C = A·B + C0, C0 a result matrix loaded from storage',
       sizes: {A: M * K, B: K * N, C0: M * N, C: M * N}, view: N,
       body: `
  let c0 = subgroupMatrixLoad<Res, row_major>(&C0, 0u, SN);
  let c = subgroupMatrixMultiplyAccumulate(subgroupMatrixLoad<Left, row_major>(&A, 0u, SK), subgroupMatrixLoad<Right, row_major>(&B, 0u, SN), c0);
  subgroupMatrixStore<row_major>(&C, 0u, c, SN);`,
       want: (A, B, C0) => { const C = sentinel(M * N); put(C, 0, N, M, N, prod(at(A, 0, K), at(B, 0, N), K, at(C0, 0, N))); return C; }});
  // version 7's rescale: a result through workgroup memory, its rows scaled by invocations, loaded back, added to
  add({name: 'result_rescaled_through_workgroup', what: 'A·B stored to workgroup memory, row r scaled by (r + 1)/16 by the invocations, loaded back, A·B added',
       sizes: {A: M * K, B: K * N, C: M * N}, view: N,
       decls: `var<workgroup> Ss: array<f32, ${M * 2 * N}>;`,
       body: `
  let a = subgroupMatrixLoad<Left, row_major>(&A, 0u, SK);
  let b = subgroupMatrixLoad<Right, row_major>(&B, 0u, SN);
  let c = subgroupMatrixMultiplyAccumulate(a, b, Res());
  subgroupMatrixStore<row_major>(&Ss, SN, c, 2u * SN);
  workgroupBarrier();
  for (var x = t; x < ${M * 2 * N}u; x += WGN) { Ss[x] *= f32(x / (2u * SN) + 1u) / 16.0; }
  workgroupBarrier();
  let c2 = subgroupMatrixLoad<Res, row_major>(&Ss, SN, 2u * SN);
  subgroupMatrixStore<row_major>(&C, 0u, subgroupMatrixMultiplyAccumulate(a, b, c2), SN);`,
       want: (A, B) => { const C = sentinel(M * N), ab = prod(at(A, 0, K), at(B, 0, N), K); put(C, 0, N, M, N, (r, cc) => ab(r, cc) * (r + 1) / 16 + ab(r, cc)); return C; }});
  // left matrices kept in registers after their workgroup memory is overwritten (version 7's qL), used on two tiles
  const NK = 4, T = 2;
  const keptWant = (A, B) => { const C = sentinel(T * M * N); for (let it = 0; it < T; it++) put(C, it * M * N, N, M, N, prod(at(A, 0, NK * K), at(B, it * NK * K * N, N), NK * K)); return C; };
  const keptHead = `
  for (var x = t; x < ${M * NK * K}u; x += WGN) { As[x] = A[x]; }
  workgroupBarrier();`;
  const keptTail = `
  workgroupBarrier();
  for (var x = t; x < ${M * NK * K}u; x += WGN) { As[x] = f16(1000.0); }   // the memory the matrices came from, overwritten
  workgroupBarrier();`;
  const keptDecl = `var<workgroup> As: array<f16, ${M * NK * K}>;`;
  add({name: 'left_array_loop_index', what: `array<Left, ${NK}> loaded in a loop from workgroup memory, the memory overwritten, used in a loop on ${T} tiles`,
       sizes: {A: M * NK * K, B: T * NK * K * N, C: T * M * N}, view: N, decls: keptDecl, want: keptWant, body: keptHead + `
  var aL: array<Left, ${NK}>;
  for (var kc = 0u; kc < ${NK}u; kc++) { aL[kc] = subgroupMatrixLoad<Left, row_major>(&As, kc * SK, ${NK}u * SK); }` + keptTail + `
  for (var it = 0u; it < ${T}u; it++) {
    var s = Res();
    for (var kc = 0u; kc < ${NK}u; kc++) {
      s = subgroupMatrixMultiplyAccumulate(aL[kc], subgroupMatrixLoad<Right, row_major>(&B, (it * ${NK}u + kc) * SK * SN, SN), s);
    }
    subgroupMatrixStore<row_major>(&C, it * SM * SN, s, SN);
  }`});
  let unrolled = '';
  for (let it = 0; it < T; it++) {
    unrolled += `\n  var s${it} = Res();`;
    for (let kc = 0; kc < NK; kc++) unrolled += `\n  s${it} = subgroupMatrixMultiplyAccumulate(aL[${kc}], subgroupMatrixLoad<Right, row_major>(&B, ${(it * NK + kc) * K * N}u, SN), s${it});`;
    unrolled += `\n  subgroupMatrixStore<row_major>(&C, ${it * M * N}u, s${it}, SN);`;
  }
  add({name: 'left_array_const_index', what: `the same, every index a constant (unrolled)`,
       sizes: {A: M * NK * K, B: T * NK * K * N, C: T * M * N}, view: N, decls: keptDecl, want: keptWant, body: keptHead + `
  var aL: array<Left, ${NK}>;` + [...Array(NK).keys()].map(kc => `\n  aL[${kc}] = subgroupMatrixLoad<Left, row_major>(&As, ${kc * K}u, ${NK * K}u);`).join('') + keptTail + unrolled});
  let scalars = '';
  for (let kc = 0; kc < NK; kc++) scalars += `\n  let a${kc} = subgroupMatrixLoad<Left, row_major>(&As, ${kc * K}u, ${NK * K}u);`;
  scalars += keptTail;
  for (let it = 0; it < T; it++) {
    scalars += `\n  var s${it} = Res();`;
    for (let kc = 0; kc < NK; kc++) scalars += `\n  s${it} = subgroupMatrixMultiplyAccumulate(a${kc}, subgroupMatrixLoad<Right, row_major>(&B, ${(it * NK + kc) * K * N}u, SN), s${it});`;
    scalars += `\n  subgroupMatrixStore<row_major>(&C, ${it * M * N}u, s${it}, SN);`;
  }
  add({name: 'left_separate_variables', what: `the same with ${NK} separate left matrices (no array)`,
       sizes: {A: M * NK * K, B: T * NK * K * N, C: T * M * N}, view: N, decls: keptDecl, want: keptWant, body: keptHead + scalars});
  // result matrices accumulated in an array (version 7's acc) over three steps
  const NO = 4, S3 = 3;
  const accWant = (A, B) => { const C = sentinel(M * NO * N); put(C, 0, NO * N, M, NO * N, prod(at(A, 0, S3 * K), at(B, 0, NO * N), S3 * K)); return C; };
  const accTail = v => [...Array(NO).keys()].map(nc => `\n  subgroupMatrixStore<row_major>(&C, ${nc * N}u, ${v(nc)}, ${NO * N}u);`).join('');
  add({name: 'result_array_loop_index', what: `array<Res, ${NO}> (zero by default) accumulated in loops over ${S3} steps, stored in a loop`,
       sizes: {A: M * S3 * K, B: S3 * K * NO * N, C: M * NO * N}, view: NO * N, want: accWant, body: `
  var acc: array<Res, ${NO}>;
  for (var it = 0u; it < ${S3}u; it++) {
    let a = subgroupMatrixLoad<Left, row_major>(&A, it * SK, ${S3}u * SK);
    for (var nc = 0u; nc < ${NO}u; nc++) {
      acc[nc] = subgroupMatrixMultiplyAccumulate(a, subgroupMatrixLoad<Right, row_major>(&B, it * SK * ${NO}u * SN + nc * SN, ${NO}u * SN), acc[nc]);
    }
  }
  for (var nc = 0u; nc < ${NO}u; nc++) { subgroupMatrixStore<row_major>(&C, nc * SN, acc[nc], ${NO}u * SN); }`});
  let accC = `\n  var acc: array<Res, ${NO}>;`;
  for (let it = 0; it < S3; it++) {
    accC += `\n  let a${it} = subgroupMatrixLoad<Left, row_major>(&A, ${it * K}u, ${S3 * K}u);`;
    for (let nc = 0; nc < NO; nc++) accC += `\n  acc[${nc}] = subgroupMatrixMultiplyAccumulate(a${it}, subgroupMatrixLoad<Right, row_major>(&B, ${it * K * NO * N + nc * N}u, ${NO * N}u), acc[${nc}]);`;
  }
  add({name: 'result_array_const_index', what: 'the same, every index a constant (unrolled)',
       sizes: {A: M * S3 * K, B: S3 * K * NO * N, C: M * NO * N}, view: NO * N, want: accWant, body: accC + accTail(nc => `acc[${nc}]`)});
  let accS = [...Array(NO).keys()].map(nc => `\n  var acc${nc} = Res();`).join('');
  for (let it = 0; it < S3; it++) {
    accS += `\n  let a${it} = subgroupMatrixLoad<Left, row_major>(&A, ${it * K}u, ${S3 * K}u);`;
    for (let nc = 0; nc < NO; nc++) accS += `\n  acc${nc} = subgroupMatrixMultiplyAccumulate(a${it}, subgroupMatrixLoad<Right, row_major>(&B, ${it * K * NO * N + nc * N}u, ${NO * N}u), acc${nc});`;
  }
  add({name: 'result_separate_variables', what: `the same with ${NO} separate result matrices, each Res() to begin with (no array)`,
       sizes: {A: M * S3 * K, B: S3 * K * NO * N, C: M * NO * N}, view: NO * N, want: accWant, body: accS + accTail(nc => `acc${nc}`)});
  add({name: 'result_zero_values', what: 'an array<Res, 2> never written and Res() stored: zeros',
       sizes: {C: M * 3 * N}, view: 3 * N, body: `
  var acc: array<Res, 2>;
  subgroupMatrixStore<row_major>(&C, 0u, acc[0], 3u * SN);
  subgroupMatrixStore<row_major>(&C, SN, acc[1], 3u * SN);
  subgroupMatrixStore<row_major>(&C, 2u * SN, Res(), 3u * SN);`,
       want: () => { const C = sentinel(M * 3 * N); put(C, 0, 3 * N, M, 3 * N, () => 0); return C; }});
  // subgroup_id and the subgroup's lanes
  add({name: 'subgroup_ids', what: 'per invocation t: subgroup_id = t / SGS, subgroup_invocation_id = t % SGS, subgroup_size = SGS',
       wg: 'NSG * SGS', sizes: {C: 4 * NSG * c.SGS}, view: 4, body: `
  C[4u * t] = f32(sg);
  C[4u * t + 1u] = f32(lane);
  C[4u * t + 2u] = f32(sgsize);
  C[4u * t + 3u] = f32(t / SGS);`,
       want: () => { const C = new Float64Array(4 * NSG * c.SGS); for (let t = 0; t < NSG * c.SGS; t++) C.set([Math.floor(t / c.SGS), t % c.SGS, c.SGS, Math.floor(t / c.SGS)], 4 * t); return C; }});
  // every subgroup of a workgroup on its own rows (version 7's `mine`)
  // (by subgroup_id only: t / SGS, even through subgroupBroadcastFirst, is not uniform enough for
  // WGSL's analysis to take as a subgroup matrix's offset; subgroup_ids checks the two agree)
  for (const [name, g] of [['subgroups_own_rows', 'sg']]) {
    add({name, what: `${NSG} subgroups, subgroup g multiplies rows g·M … of A (workgroup memory) by B, g = ${g}`, wg: 'NSG * SGS',
         sizes: {A: NSG * M * K, B: K * N, C: NSG * M * N}, view: N, decls: `var<workgroup> As: array<f16, ${NSG * M * K}>;`, body: `
  for (var x = t; x < ${NSG * M * K}u; x += WGN) { As[x] = A[x]; }
  workgroupBarrier();
  let g = ${g};
  let c = subgroupMatrixMultiplyAccumulate(subgroupMatrixLoad<Left, row_major>(&As, g * SM * SK, SK), subgroupMatrixLoad<Right, row_major>(&B, 0u, SN), Res());
  subgroupMatrixStore<row_major>(&C, g * SM * SN, c, SN);`,
         want: (A, B) => { const C = sentinel(NSG * M * N); put(C, 0, N, NSG * M, N, prod(at(A, 0, K), at(B, 0, N), K)); return C; }});
  }
  // version 7's S = Q Kᵀ alone: Q (NSG·M rows × D = 4K) kept as array<Left, 4> after its memory
  // is overwritten; two tiles of BK = 2N keys, each K tile in workgroup memory, read column-major
  const D = 4 * K, BK = 2 * N, BQ = NSG * M;
  add({name: 'v7_S_step', what: `version 7's S = Q Kᵀ: ${NSG} subgroups, Q in array<Left, 4>, 2 tiles of ${BK} keys read column-major from workgroup memory, D = ${D}`,
       wg: 'NSG * SGS', sizes: {A: BQ * D, B: 2 * BK * D, C: 2 * BQ * BK}, view: BK,
       decls: `var<workgroup> KV: array<f16, ${Math.max(BQ, BK) * D}>;`, body: `
  for (var x = t; x < ${BQ * D}u; x += WGN) { KV[x] = A[x]; }
  workgroupBarrier();
  var qL: array<Left, 4>;
  for (var kc = 0u; kc < 4u; kc++) { qL[kc] = subgroupMatrixLoad<Left, row_major>(&KV, sg * SM * ${D}u + kc * SK, ${D}u); }
  for (var it = 0u; it < 2u; it++) {
    workgroupBarrier();
    for (var x = t; x < ${BK * D}u; x += WGN) { KV[x] = B[it * ${BK * D}u + x]; }
    workgroupBarrier();
    for (var n = 0u; n < ${BK / N}u; n++) {
      var s = Res();
      for (var kc = 0u; kc < 4u; kc++) {
        s = subgroupMatrixMultiplyAccumulate(qL[kc], subgroupMatrixLoad<Right, col_major>(&KV, n * SN * ${D}u + kc * SK, ${D}u), s);
      }
      subgroupMatrixStore<row_major>(&C, it * ${BQ * BK}u + sg * SM * ${BK}u + n * SN, s, ${BK}u);
    }
  }`,
       want: (A, B) => { const C = sentinel(2 * BQ * BK); for (let it = 0; it < 2; it++) put(C, it * BQ * BK, BK, BQ, BK, prod(at(A, 0, D), at(B, it * BK * D, D, true), D)); return C; }});
  // version 7's O += P V alone: P (BQ × BK, f16) and V (BK × D) of two tiles in workgroup memory, O in array<Res, D / N>
  const BKp = 2 * K, NOv = D / N;
  add({name: 'v7_PV_step', what: `version 7's O += P V: ${NSG} subgroups, O in array<Res, ${NOv}>, 2 tiles of ${BKp} keys, P and V from workgroup memory`,
       wg: 'NSG * SGS', sizes: {A: 2 * BQ * BKp, B: 2 * BKp * D, C: BQ * D}, view: D,
       decls: `var<workgroup> Ps: array<f16, ${BQ * BKp}>;\nvar<workgroup> KV: array<f16, ${BKp * D}>;`, body: `
  var acc: array<Res, ${NOv}>;
  for (var it = 0u; it < 2u; it++) {
    workgroupBarrier();
    for (var x = t; x < ${BQ * BKp}u; x += WGN) { Ps[x] = A[it * ${BQ * BKp}u + x]; }
    for (var x = t; x < ${BKp * D}u; x += WGN) { KV[x] = B[it * ${BKp * D}u + x]; }
    workgroupBarrier();
    for (var kk = 0u; kk < ${BKp / K}u; kk++) {
      let pl = subgroupMatrixLoad<Left, row_major>(&Ps, sg * SM * ${BKp}u + kk * SK, ${BKp}u);
      for (var nc = 0u; nc < ${NOv}u; nc++) {
        acc[nc] = subgroupMatrixMultiplyAccumulate(pl, subgroupMatrixLoad<Right, row_major>(&KV, kk * SK * ${D}u + nc * SN, ${D}u), acc[nc]);
      }
    }
  }
  for (var nc = 0u; nc < ${NOv}u; nc++) { subgroupMatrixStore<row_major>(&C, sg * SM * ${D}u + nc * SN, acc[nc], ${D}u); }`,
       want: (A, B) => {
         const C = sentinel(BQ * D);
         const p0 = prod(at(A, 0, BKp), at(B, 0, D), BKp), p1 = prod(at(A, BQ * BKp, BKp), at(B, BKp * D, D), BKp);
         put(C, 0, D, BQ, D, (r, cc) => p0(r, cc) + p1(r, cc));
         return C;
       }});
  return L;
}

function wgsl(c, SGS, NSG, pr, WG1) {
  return `enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
diagnostic(off, chromium_experimental.subgroup_matrix_uniformity);
const SM: u32 = ${c.M}u;
const SN: u32 = ${c.N}u;
const SK: u32 = ${c.K}u;
const SGS: u32 = ${SGS}u;
const NSG: u32 = ${NSG}u;
const WGN: u32 = ${pr.wg || WG1};
alias Left = subgroup_matrix_left<f16, SK, SM>;
alias Right = subgroup_matrix_right<f16, SN, SK>;
alias Res = subgroup_matrix_result<f32, SN, SM>;
@group(0) @binding(0) var<storage, read> A: array<f16>;
@group(0) @binding(1) var<storage, read> B: array<f16>;
@group(0) @binding(2) var<storage, read> C0: array<f32>;
@group(0) @binding(3) var<storage, read_write> C: array<f32>;
${pr.decls || ''}
@compute @workgroup_size(WGN)
fn main(@builtin(local_invocation_index) t: u32, @builtin(subgroup_id) sg: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sgsize: u32) {
${pr.body}
}
`;
}

// The first entry of got that differs from want beyond 1e-3 · max(1, |want|), the largest error, and
// which of alts got matches instead.
function compare(got, want, view, alts) {
  let worst = 0, first = -1;
  for (let i = 0; i < want.length; i++) {
    const e = Number.isFinite(got[i]) ? Math.abs(got[i] - want[i]) / Math.max(1, Math.abs(want[i])) : Infinity;
    if (!(e <= worst)) worst = e;
    if (!(e <= 1e-3) && first < 0) first = i;
  }
  const like = [];
  const near = (w) => w.every((x, i) => Math.abs(got[i] - x) <= 1e-3 * Math.max(1, Math.abs(x)));
  for (const [name, w] of Object.entries(alts || {})) if (near(w)) like.push(name);
  if (first >= 0 && got.every(x => x === SENT)) like.push(`nothing written (C still holds the sentinel ${SENT})`);
  const written = got.reduce((n, x) => n + (x !== SENT ? 1 : 0), 0), wantWritten = want.reduce((n, x) => n + (x !== SENT ? 1 : 0), 0);
  return {ok: first < 0, worst, first, got: got[first], want: want[first], row: first < 0 ? 0 : Math.floor(first / view), col: first < 0 ? 0 : first % view,
          like, written, wantWritten};
}

async function runProbe(dev, c, SGS, NSG, pr, r, WG1) {
  const code = wgsl(c, SGS, NSG, pr, WG1);
  const d = dev.device;
  d.pushErrorScope('validation');
  const module = d.createShaderModule({code, label: pr.name});
  const info = await module.getCompilationInfo();
  const err = await d.popErrorScope();
  const bad = info.messages.filter(m => m.type === 'error');
  if (bad.length || err) throw new Error(bad.length ? `line ${bad[0].lineNum}: ${bad[0].message}` : err.message);
  d.pushErrorScope('validation');
  const pipeline = await d.createComputePipelineAsync({layout: 'auto', compute: {module, entryPoint: 'main'}});
  const perr = await d.popErrorScope();
  if (perr) throw new Error(perr.message);
  const s = pr.sizes;
  const A = halfData(r, s.A || 2), B = halfData(r, s.B || 2);
  const C0 = new Float32Array(Math.max(s.C0 || 1, 1)).map(() => 4 * r() - 2);
  const bufs = [];
  const mk = x => { const b = dev.buffer(x); bufs.push(b); return b; };
  const used = name => new RegExp(`\\b${name}\\b`).test((pr.decls || '') + pr.body);   // 'auto' layouts drop unused bindings
  const cb = mk(new Float32Array(s.C).fill(SENT));
  const bind = [[0, 'A', () => mk(A.packed)], [1, 'B', () => mk(B.packed)], [2, 'C0', () => mk(C0)]]
    .filter(([, n]) => used(n)).map(([k, , f]) => [k, f()]).concat([[3, cb]]);
  try {
    await dev.submit([{pipeline, bind, groups: [1, 1, 1]}]);
    const got = await dev.read(cb, s.C);
    const want = pr.want(A.val, B.val, C0);
    return compare(got, want, pr.view, pr.alts ? pr.alts(A.val, B.val, C0) : null);
  } finally {
    bufs.forEach(b => b.destroy());
  }
}

// ---- part 2: prefill version 7 whole, and its probe forms ----

// Version 7 with fwd_sgmat.wgsl's probe defs on, in configuration cfg; Os (OWG) and Qs (QWG) are
// counted in the workgroup memory that sets BK (fsgpu.js's shape, with those bytes added).
function form(dev, extra, cfg, mem) {
  const base = dev.kernels['prefill-v7'], lim = dev.limits, SGS = dev.subgroups.max;
  const K = Object.create(base);
  K.config = cfg || base.config;
  K.shape = function (p) {
    const c = this.config;
    let NSG = 4;
    while (NSG > 1 && NSG * SGS > lim.maxComputeInvocationsPerWorkgroup) NSG >>= 1;
    const BQ = NSG * c.M, WG = NSG * SGS;
    const more = (extra.QWG ? 2 * BQ * p.d : 0) + (extra.OWG ? 4 * BQ * p.d : 0);
    const bytes = bk => 2 * Math.max(bk, BQ) * p.d + 6 * BQ * bk + 4 * BQ + 4 * WG + 16 + more;
    const BK = [64, 32, 16].find(bk => bk % c.N === 0 && bk % c.K === 0 && bytes(bk) <= mem) || 0;
    return {D: p.d, SM: c.M, SN: c.N, SK: c.K, SGS, NSG, BK, BQ, WG};
  };
  K.defs = function (p) { return Object.assign(base.defs.call(this, p), extra); };
  return K;
}

function problems(seed) {
  const P = [
    ['one block (n_q 16, n_kv 16, d 64)', {n_q: 16, n_kv: 16, d: 64}],
    ['Q = 0: the P V path alone (n_q 64, n_kv 96, d 64)', {n_q: 64, n_kv: 96, d: 64}, p => p.q.fill(0)],
    ['n_q 64, n_kv 64, d 64', {n_q: 64, n_kv: 64, d: 64}],
    ['n_q 1, n_kv 68, d 64, causal, softcap (failed on the H200)', {n_q_heads: 2, n_q: 1, n_kv: 68, d: 64, mask: 'causal', softcap: 4.06}],
    ['n_q 72, n_kv 160, d 128, window 14, GQA', {n_q_heads: 2, n_kv_heads: 1, n_q: 72, n_kv: 160, d: 128, mask: 'window', window: 14}],
    ['n_q 96, n_kv 178, d 64, ramped (the rescale path)', {n_q: 96, n_kv: 178, d: 64, spread: 8, ramp: 12}],
  ];
  return P.map(([name, c, f], k) => { const p = FSGPU.randomProblem(seed + k, c); if (f) f(p); return {name, p}; });
}

async function main() {
  let o;
  try { o = parse(process.argv.slice(2)); } catch (e) { console.error(`sgmat_probe.js: ${e.message}\n${usage}`); process.exit(2); }
  const t0 = Date.now(), late = () => (Date.now() - t0) / 1000 > o.budget;
  let webgpu;
  try { webgpu = require('webgpu'); } catch (e) { console.error(`sgmat_probe.js: cannot load npm's webgpu (${e.message})`); process.exit(2); }
  Object.assign(globalThis, webgpu.globals);
  const toggles = o.toggles || (o.nullBackend ? [] : ['vulkan_enable_f16_on_nvidia']);
  const flags = [`enable-dawn-features=${['allow_unsafe_apis', ...toggles].join(',')}`, 'disable-dawn-features=timestamp_quantization'];
  if (o.nullBackend) flags.unshift('backend=null');
  const gpu = webgpu.create(flags);
  const load = name => fs.readFileSync(path.join(__dirname, '../../src/kernels/webgpu', `${name}.wgsl`), 'utf8');
  let dev;
  try { dev = await FSGPU.open(o.nullBackend ? shown(gpu) : gpu, load); } catch (e) { console.error(`sgmat_probe.js: ${e.message}`); process.exit(2); }
  const seed = o.seed !== null ? o.seed : Date.now() % 1000000;
  console.log(`sgmat_probe.js: seed ${seed}; dawn flags ${flags.join(' ')}${o.nullBackend ? ' (null backend: nothing is computed, only ERROR lines mean something)' : ''}`);
  console.log(`adapter: ${dev.info.vendor} ${dev.info.device} ${dev.info.description}; subgroups ${JSON.stringify(dev.info.subgroups)}; ` +
              `device features ${dev.info.device_features.join(' ')}; workgroup memory ${dev.limits.maxComputeWorkgroupStorageSize}`);
  console.log(`subgroup matrices: ${dev.sgmatConfigs.map(c => `${c.component}x${c.component}->${c.result} ${c.M}x${c.N}x${c.K}`).join(', ') || 'none'}`);
  if (!dev.sgmat || !dev.f16 || !dev.subgroups || dev.subgroups.min !== dev.subgroups.max) {
    console.log('sgmat_probe.js: this device lacks shader-f16, subgroups of one size or subgroup matrices: nothing to probe');
    process.exit(2);
  }
  const SGS = dev.subgroups.max, NSG = 4;
  const chosen = dev.kernels['prefill-v7'].config;
  if (!chosen) { console.log('sgmat_probe.js: no subgroup matrix configuration prefill-v7 takes'); process.exit(2); }
  const same = c => c.M === chosen.M && c.N === chosen.N && c.K === chosen.K;
  const fits = dev.sgmatConfigs.filter(c => c.component === 'f16' && c.result === 'f32' && SGS % c.M === 0);
  const configs = fits.filter(same).concat(fits.filter(c => !same(c)));   // the host's configuration first
  const tally = {pass: [], fail: [], error: [], skipped: 0};
  const r = FSGPU.rng(seed);
  for (const c of configs) {
    const cfg = `${c.M}x${c.N}x${c.K}`;
    for (const pr of probes(Object.assign({SGS}, c), NSG)) {
      if (late()) { tally.skipped++; continue; }
      const id = `${pr.name} ${cfg}`;
      try {
        const x = await runProbe(dev, c, SGS, NSG, pr, r, o.nullBackend ? 128 : SGS);
        (x.ok ? tally.pass : tally.fail).push(id);
        console.log(`probe ${id}: ${x.ok ? 'PASS' : 'FAIL'} max err ${x.worst.toExponential(2)}` +
                    (x.ok ? '' : ` (first mismatch at C[${x.first}] (row ${x.row}, col ${x.col}): gpu ${x.got}, want ${x.want}; ` +
                     `${x.written} entries written, ${x.wantWritten} expected${x.like.length ? `; the output matches: ${x.like.join(', ')}` : ''})`));
        if (!x.ok) console.log(`  (${pr.what})`);
      } catch (e) {
        tally.error.push(id);
        console.log(`probe ${id}: ERROR ${e.message.split('\n').slice(0, 3).join(' / ')}`);
      }
      if (dev.lost) { console.log(`sgmat_probe.js: the device was lost (${dev.lost}); stopping`); break; }
    }
    if (dev.lost) break;
  }
  // part 2
  // the null backend has 16 KiB of workgroup memory: its forms are sized for the H200's 48 KiB, to be compiled
  const mem = o.nullBackend ? 49152 : dev.limits.maxComputeWorkgroupStorageSize;
  const forms = [['v7', {}], ['v7 QWG (no array of left matrices)', {QWG: true}], ['v7 OWG (no array of result matrices)', {OWG: true}],
                 ['v7 QWG+OWG (no arrays of matrices)', {QWG: true, OWG: true}]];
  const list = forms.map(([name, extra]) => ({name: `${name} ${chosen.M}x${chosen.N}x${chosen.K}`, K: form(dev, extra, chosen, mem)}));
  for (const c of configs) if (!same(c)) list.push({name: `v7 ${c.M}x${c.N}x${c.K}`, K: form(dev, {}, c, mem)});
  const probs = problems(seed + 17);
  for (const {name, K} of list) {
    if (dev.lost) break;
    const key = `probe-form ${name}`;
    dev.kernels[key] = K;
    for (const {name: pn, p} of probs) {
      if (late()) { tally.skipped++; continue; }
      const id = `kernel ${name} [${pn}]`;
      const why = K.ok(p);
      if (why) { console.log(`${id}: SKIP (it takes ${why})`); continue; }
      try {
        const x = await dev.check(key, p, {sample: 64});
        (x.ok ? tally.pass : tally.fail).push(id);
        console.log(`${id}: ${x.ok ? 'PASS' : 'FAIL'} max err ${x.worst.toExponential(2)} (tolerance ${x.tol}; BK ${K.shape(p).BK}` +
                    `${x.ok ? '' : `; first mismatch at ${JSON.stringify(x.where)}`})`);
      } catch (e) {
        if (o.nullBackend && /total use of workgroup storage/.test(e.message)) { console.log(`${id}: compiled (the null backend's workgroup memory is too small to make it)`); continue; }
        tally.error.push(id);
        console.log(`${id}: ERROR ${e.message.split('\n').slice(0, 3).join(' / ')}`);
      }
    }
  }
  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  console.log(`summary: ${tally.pass.length} passed, ${tally.fail.length} failed, ${tally.error.length} errors, ${tally.skipped} skipped for time (${secs} s, seed ${seed})`);
  if (tally.fail.length) console.log(`failed: ${tally.fail.join('; ')}`);
  if (tally.error.length) console.log(`errors: ${tally.error.join('; ')}`);
  dev.destroy();
  process.exit(tally.fail.length || tally.error.length || tally.skipped ? 1 : 0);
}

main().catch(e => { console.error(`sgmat_probe.js: ${e.stack || e.message}`); process.exit(1); });
