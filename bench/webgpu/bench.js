#!/usr/bin/env node
/* bench.js: flashstep's WGSL kernels from Node, through Dawn (npm's `webgpu`): the same kernels,
 * host (src/kernels/webgpu/fsgpu.js), checks and benchmark plan as the page's "Run on this GPU".
 *
 *   node bench/webgpu/bench.js [--plan full|quick|tiny] [--seed N] [--json FILE] [--check-only]
 *                              [--count N] [--sweep] [--sweep-n N1,N2] [--only K1,K2] [--decode-only | --prefill-only]
 *                              [--dawn-toggles T1,T2] [--new K1,K2] [--ablation] [--ablation-only K1,K2] [--dawn FLAG]...
 *
 * --dawn-toggles: Dawn's adapter toggles to turn on (its `enable-dawn-features` list, beside
 * allow_unsafe_apis, which is always on here so that Dawn lists every feature it has), e.g.
 * vulkan_enable_f16_on_nvidia, which offers shader-f16 and float16 subgroup matrices on NVIDIA's
 * Vulkan driver. A page cannot set these: a browser's WebGPU offers what its own defaults offer.
 * Every Dawn flag and the device's features go into the JSON (`dawn`, `device`) and the log.
 *
 * First, the new kernels (--new; prefill versions 6 to 11, 13, 14 and 16 to 20 and decode versions 6, 7, 10 and 11 unless
 * told) are checked against float64 on their own, one line each: PASS or FAIL with the largest error
 * and the tolerance, or SKIP with the reason the device does not offer them (a fused decode, version
 * 7 or 10, also on problems of several splits and of one, with its counters back at 0 after each
 * dispatch and O bit for bit its two-pass twin's, version 5 or 9: its line says so); then their rows of the
 * plan are timed before every other row. Then it checks every kernel against float64 on random problems drawn fresh
 * (seed printed; with subgroups and without, where the adapter has them), then runs the plan:
 * each row checked on sampled rows, then timed (timestamp queries where offered), beside this
 * device's copy rate and float32 FMA rate measured by the same host. Exit 0 when every check
 * passed, 1 when one failed, 2 on bad arguments or no adapter. With --json the file is written
 * again after every timed row, so a run stopped by a time limit keeps the rows it finished. --sweep also times the decode
 * kernels' two passes apart at several split lengths (versions 1-3, 5 and 9, version 9 with 4 or 8 subgroups a workgroup too; version 7, one pass, whole) and decode version 4's shapes, storages and
 * page sizes (what sets the decode's speed), at 128k keys or the --sweep-n lengths, every interval kept; --only limits the sweep and the
 * plan to the kernels named. With --check-only and --sweep, the sweep runs and the plan does not.
 * --decode-only, --prefill-only: the plan's rows of that kind only. --probe-sizes MIB1,MIB2: after the
 * checks, the copy and read probes at each size (MiB read; as much written by the copy), one line a
 * size: how a pass's time splits into a cost each dispatch pays and a rate.
 * --ablation (after the checks, before the plan; with --check-only too; with prefill-v5 or -v11 in --only, their own
 * ablation forms as well: fwd_v4.wgsl's NOQK, NOPV, NOSOFT, NOLOAD): prefill versions 7 to 10, 13,
 * 14 and 16 to 20 (those --ablation-only, else --only, names), each of their ablation forms (fwd_sgmat*.wgsl: each removes one part of a
 * tile's work) and their variants (right forms: staged K or V, unrolled loops, other tiles), and version 5
 * beside them, timed on 16 heads, N = 4096, d = 128 and 64, causal and not, on one problem a head
 * size: one table, a form a line, its ms in each column and the usual form's ms less the form's
 * (an ablation form: what the removed part cost; a variant: what it saves). The ablation forms'
 * outputs are not checked (they are wrong on purpose); the usual forms and the variants are
 * checked against float64 first (a wrong one is not timed and fails the run). About 35-45 s for
 * one kernel's forms on the H200 (`2026-11-30-h200-stage`).
 * --decode-ablation (after the checks, before the plan; with --check-only too): decode version 9,
 * float32 and float16 storage (or those of them --only names), at 32768 and 131072 keys (or the
 * --decode-ablation-n lengths), in its usual form and each ablation form of decode_v9.wgsl (NOQK,
 * NOSOFT, NOPV, LOADONLY: the loads alone, and NOQK with NOSOFT), its split pass timed alone and
 * with the merge, beside the read probe at the same bytes: one table, a form a line.
 * --ablation-n N1,N2: other Ns, a table each (the tests' 256). --ablation-only K1,K2: take apart those versions only (default:
 * those of --only). --variants-only: the usual forms and their variants, none of the ablation forms.
 * --ablation-rounds R: every form timed R times a shape, each round in an order turned by one, the
 * median in the table with the range beside it (a change of a few per cent between two forms is
 * within what one timing moves: rounds show it). --null: Dawn's null backend (no GPU; nothing computed),
 * --ablation's, --decode-ablation's and --probe-sizes' side run end to end and nothing else (the tests' way to see they cannot
 * fail for a silly reason).
 * --vkstats FILE: pipelines made one at a time, each between two lines of its own in FILE ("bench
 * pipeline begin" with the kernel's file, entry point, subgroups, preprocessor flags and constants;
 * "bench pipeline end"), for the Vulkan layer vkstats/fs_vkstats.c, which writes the driver's
 * statistics of each pipeline into the same FILE (run-device.sh's VKSTATS=1 sets it up;
 * vkstats/summary.py turns the file into a table).
 *
 * Setup: `npm ci --prefix bench/webgpu` (Dawn's prebuilt dawn.node for linux-x64, macOS and
 * Windows). On Linux Dawn needs a Vulkan driver (libvulkan1 and the GPU's ICD); on a Mac it uses
 * Metal. docs/webgpu.md says how it ran on the lent H100.
 */
'use strict';
const fs = require('fs');
const path = require('path');
const FSGPU = require('../../src/kernels/webgpu/fsgpu.js');

const usage = 'usage: node bench/webgpu/bench.js [--plan full|quick|tiny] [--seed N] [--json FILE] [--check-only] [--count N] [--sweep] [--sweep-n N1,N2] [--only K1,K2] [--decode-only | --prefill-only] [--probe-sizes MIB1,MIB2] [--dawn-toggles T1,T2] [--new K1,K2] [--ablation] [--ablation-n N1,N2] [--ablation-only K1,K2] [--ablation-rounds R] [--variants-only] [--decode-ablation] [--decode-ablation-n N1,N2] [--variants SPEC] [--null] [--vkstats FILE] [--dawn FLAG]...';
const NEW = ['prefill-v6', 'prefill-v7', 'prefill-v8', 'prefill-v9', 'prefill-v10', 'prefill-v11', 'prefill-v13', 'prefill-v14', 'prefill-v16', 'prefill-v17', 'prefill-v18', 'prefill-v19', 'prefill-v20', 'decode-v6', 'decode-v7', 'decode-v7-f16', 'decode-v7-paged', 'decode-v7-paged-f16',
             'decode-v10', 'decode-v10-f16', 'decode-v10-paged', 'decode-v10-paged-f16', 'decode-v11-paged', 'decode-v11-paged-f16',
             'decode-v14-paged', 'decode-v14-paged-f16'];
// --variants SPEC: forms of prefill versions 8 to 10, 13, 14 and 16 to 20 for --ablation instead of their own
// variants: forms separated by ';', each its flags and shape settings separated by spaces, e.g.
// "UNROLL BK=32;UNROLL BK=32 NSG=2", or with + for the spaces (flags: KWG VWG STAGE FASTS REREAD UNROLL BLK VCOPY PAIR LPT RANGE FASTC QWG;
// settings: BK, NSG, RB). A form TY=N alone is for the float32 versions 5 and 11 instead (their row groups: 4 N rows, 16 N invocations).
const SGMAT_FLAGS = ['KWG', 'VWG', 'STAGE', 'FASTS', 'REREAD', 'UNROLL', 'BLK', 'VCOPY', 'PAIR', 'LPT', 'RANGE', 'FASTC', 'QWG'];
function parseVariants(spec) {
  const out = [];
  for (const form of spec.split(';').map(x => x.trim()).filter(Boolean)) {
    const v = {flags: [], over: {}};
    for (const w of form.split(/[\s+]+/)) {
      const m = /^(BK|NSG|RB|TY)=(\d+)$/.exec(w);
      if (m && [1, 2, 4, 8, 16, 32, 64, 128].includes(Number(m[2]))) v.over[m[1]] = Number(m[2]);
      else if (SGMAT_FLAGS.includes(w)) v.flags.push(w);
      else throw new Error(`--variants: '${w}' in '${form}' is neither a flag (${SGMAT_FLAGS.join(', ')}) nor BK=N, NSG=N, RB=N or TY=N (N a power of two, 1 to 128)`);
    }
    if ('TY' in v.over && (v.flags.length || Object.keys(v.over).length > 1))
      throw new Error(`--variants: '${form}': TY=N (the float32 versions' row groups) stands alone in its form`);
    if (!Object.keys(v.over).length) v.over = null;
    out.push(v);
  }
  if (!out.length) throw new Error('--variants: no form given');
  return out;
}

function parse(argv) {
  const o = {plan: 'full', seed: null, json: null, checkOnly: false, count: 40, sweep: false, only: null, decodeOnly: false, prefillOnly: false, sweepN: [131072], dawn: [], toggles: [], news: NEW, newGiven: false, ablation: false, ablationN: [4096], ablationRounds: 1, variantsOnly: false, decodeAblation: null, nullBackend: false, variants: null, probeSizes: null, ablationOnly: null, vkstats: null};
  for (let k = 0; k < argv.length; k++) {
    const a = argv[k], v = () => { if (k + 1 >= argv.length) throw new Error(`${a} needs a value`); return argv[++k]; };
    if (a === '--plan') o.plan = v();
    else if (a === '--seed') o.seed = Number(v());
    else if (a === '--json') o.json = v();
    else if (a === '--check-only') o.checkOnly = true;
    else if (a === '--count') o.count = Number(v());
    else if (a === '--dawn') o.dawn.push(v());
    else if (a === '--dawn-toggles') o.toggles.push(...v().split(',').filter(Boolean));
    else if (a === '--new') { o.news = v().split(',').filter(Boolean); o.newGiven = true; }
    else if (a === '--sweep') o.sweep = true;
    else if (a === '--ablation') o.ablation = true;
    else if (a === '--ablation-n') o.ablationN = v().split(',').map(Number);
    else if (a === '--ablation-rounds') o.ablationRounds = Number(v());
    else if (a === '--variants-only') o.variantsOnly = true;
    else if (a === '--ablation-only') o.ablationOnly = v().split(',').filter(Boolean);
    else if (a === '--decode-ablation') o.decodeAblation = [32768, 131072];
    else if (a === '--decode-ablation-n') o.decodeAblation = v().split(',').map(Number);
    else if (a === '--variants') o.variants = parseVariants(v());
    else if (a === '--null') o.nullBackend = true;
    else if (a === '--only') o.only = v().split(',');
    else if (a === '--sweep-n') o.sweepN = v().split(',').map(Number);
    else if (a === '--decode-only') o.decodeOnly = true;
    else if (a === '--probe-sizes') o.probeSizes = v().split(',').map(Number);
    else if (a === '--prefill-only') o.prefillOnly = true;
    else if (a === '--vkstats') o.vkstats = v();
    else if (a === '-h' || a === '--help') { console.log(usage); process.exit(0); }
    else throw new Error(`unknown argument '${a}'`);
  }
  if (!['full', 'quick', 'tiny'].includes(o.plan)) throw new Error(`--plan: full, quick or tiny, not '${o.plan}'`);
  if (o.seed !== null && !(Number.isInteger(o.seed) && o.seed >= 0)) throw new Error('--seed: a whole number');
  if (!o.ablationN.every(n => Number.isInteger(n) && n >= 64)) throw new Error('--ablation-n: whole numbers from 64, separated by commas');
  if (!(Number.isInteger(o.ablationRounds) && o.ablationRounds >= 1 && o.ablationRounds <= 20)) throw new Error('--ablation-rounds: a whole number from 1 to 20');
  if (o.decodeAblation && !o.decodeAblation.every(n => Number.isInteger(n) && n >= 64 && n <= 1048576))
    throw new Error('--decode-ablation-n: key counts from 64 to 1048576, separated by commas');
  if (!(Number.isInteger(o.count) && o.count > 0)) throw new Error('--count: a positive whole number');
  if (o.probeSizes && !o.probeSizes.every(m => Number.isInteger(m) && m >= 1 && m <= 65536)) throw new Error('--probe-sizes: whole numbers of MiB, 1 to 65536, separated by commas');
  if (!o.sweepN.every(n => Number.isInteger(n) && n >= 32)) throw new Error('--sweep-n: key counts, whole numbers from 32');
  if (!o.toggles.every(t => /^[a-z0-9_]+$/.test(t))) throw new Error('--dawn-toggles: names of Dawn toggles (a-z, 0-9, _), comma-separated');
  return o;
}

// Dawn's flags for create(): the --dawn ones, with every enable-dawn-features list (theirs,
// allow_unsafe_apis and --dawn-toggles) merged into one (Dawn keeps only the last of a key).
function dawnFlags(o) {
  const enable = ['allow_unsafe_apis'], rest = [];
  for (const f of o.dawn) {
    if (f.startsWith('enable-dawn-features=')) enable.push(...f.slice(21).split(',').filter(Boolean));
    else rest.push(f);
  }
  enable.push(...o.toggles);
  return [`enable-dawn-features=${[...new Set(enable)].join(',')}`, ...rest];
}

// The new kernels against float64, each on its own, before anything else: random problems of
// every mask (GQA, soft-cap, ragged sizes) and the plan's shapes at N = 1024, d = 64 and 128,
// causal and not. One line a kernel: PASS, FAIL (the worst case) or SKIP (why not offered).
async function checkNew(dev, names, seed, count) {
  let bad = 0;
  // every other random case ramped (later keys score higher, spread 8): a row's maximum keeps
  // moving, so prefill versions 7 and 8 take their rescaling path (O scaled through workgroup
  // memory); those go to the kernels with a tolerance of their own (prefill versions 7 and 8) only
  const cases = randomCases(seed + 7, Math.max(count, 12)).map((c, k) => ({c: k % 2 ? Object.assign(c, {ramp: 12, spread: 8}) : c, seed: seed * 1000 + 500 + k}));
  for (const d of [64, 128]) for (const causal of [false, true])
    cases.push({c: {n_q_heads: 8, n_kv_heads: 2, n_q: 1024, n_kv: 1024, d, mask: causal ? 'causal' : 'none', ramp: causal ? 12 : 0, spread: causal ? 8 : 1},
                seed: seed + d + (causal ? 1 : 0), big: true});
  cases.push({c: {n_q_heads: 32, n_kv_heads: 8, n_q: 1, n_kv: 4096, d: 128}, seed: seed + 3, big: true});
  for (const name of names) {
    const K = dev.kernels[name];
    if (!K) { console.log(`new kernel ${name}: FAIL: no such kernel`); bad++; continue; }
    const why = K.absent ? K.absent() : null;
    if (why) { console.log(`new kernel ${name}: SKIP (${why})`); continue; }
    let ran = 0, worst = 0, tol = 0, fail = null;
    for (const {c, seed: s, big} of cases) {
      if (c.ramp && !K.tol) continue;   // ramped scores reach ±150: float32's rounding of them alone nears 1e-4
      const p = FSGPU.randomProblem(s, c);
      if (K.ok(p)) continue;
      try {
        const r = await dev.check(name, p, {sample: big ? 48 : 32});
        ran++;
        tol = r.tol;
        if (r.worst > worst || !(r.worst <= worst)) worst = r.worst;
        if (!r.ok && !fail) fail = `${JSON.stringify(c)}: ${JSON.stringify(r.where)}`;
      } catch (e) {
        ran++;
        if (!fail) fail = `${JSON.stringify(c)}: ${e.message}`;
      }
    }
    // a fused decode: several splits (short ones), one split, and the plan's shape; every time its
    // counters back at 0 after the dispatch, twice, and O bit for bit its two-pass twin's (K.twoPass)
    let fused = '';
    if (K.fused) {
      const fc = [[{n_q_heads: 8, n_kv_heads: 2, n_q: 1, n_kv: 150, d: 32, mask: 'causal'}, 40],
                  [{n_q_heads: 4, n_kv_heads: 1, n_q: 2, n_kv: 90, d: 64, mask: 'window', window: 9, softcap: 2.5}, 32],
                  [{n_q_heads: 4, n_kv_heads: 2, n_q: 1, n_kv: 77, d: 128}, 0],
                  [{n_q_heads: 32, n_kv_heads: 8, n_q: 1, n_kv: 5000, d: 128}, 0],
                  [{n_q_heads: 32, n_kv_heads: 8, n_q: 1, n_kv: 4096, d: 128, mask: 'causal'}, 256]];
      const splits = [];
      for (const [k, [c, split_len]] of fc.entries()) {
        const p = FSGPU.randomProblem(seed * 1000 + 900 + k, c);
        if (split_len) p.split_len = split_len;
        if (K.ok(p)) continue;
        try {
          const r = await dev.checkFused(name, p, {sample: 48});
          ran++;
          tol = r.check.tol;
          splits.push(r.n_split);
          if (!(r.check.worst <= worst)) worst = r.check.worst;
          if (!r.ok && !fail) fail = `${JSON.stringify(c)} split_len ${split_len || 'default'}: ` + (!r.check.ok ? JSON.stringify(r.check.where) :
            !r.counters_zero ? 'a counter not back at 0 after the dispatch' : !r.same_twice ? 'the second launch\'s O differs from the first' :
            `${r.differ} numbers of O differ from ${K.twoPass}'s bits`);
        } catch (e) {
          ran++;
          if (!fail) fail = `${JSON.stringify(c)}: ${e.message}`;
        }
      }
      fused = `; fused: splits ${splits.join(', ')} a KV head, counters back at 0, O bit for bit ${K.twoPass}'s`;   // (printed on a PASS only)
    }
    const cfg = K.config ? ` with ${K.config.component} x ${K.config.component} -> ${K.config.result} ${K.config.M}x${K.config.N}x${K.config.K}` : '';
    if (!ran) console.log(`new kernel ${name}: SKIP (no problem it takes)`);
    else if (fail) { bad++; console.log(`new kernel ${name}: FAIL on ${ran} problems${cfg}, largest error ${worst.toExponential(2)} (tolerance ${tol}); first failure ${fail}`); }
    else console.log(`new kernel ${name}: PASS on ${ran} problems${cfg}, largest error ${worst.toExponential(2)} (tolerance ${tol})${fused}`);
  }
  return bad;
}

// Random lesson-sized to mid-sized problems for every kernel: every mask, GQA, soft-cap, ragged
// sizes. Each kernel runs the problems it takes (decode kernels: few query rows).
function randomCases(seed, count) {
  const r = FSGPU.rng(seed), pick = a => a[Math.floor(r() * a.length)], int = (lo, hi) => lo + Math.floor(r() * (hi - lo + 1));
  const cases = [];
  for (let k = 0; k < count; k++) {
    const groups = pick([1, 2, 4]), kvh = int(1, 2), decode = r() < 0.4;
    const n_kv = int(1, 300), n_q = decode ? int(1, Math.min(2, n_kv)) : int(1, Math.min(n_kv, 200));
    const mask = pick(['none', 'causal', 'window', 'tree']);
    cases.push({n_q_heads: groups * kvh, n_kv_heads: kvh, n_q: mask === 'tree' ? n_kv : n_q, n_kv,
                d: pick([32, 64, 128]), mask, window: int(1, 40), softcap: r() < 0.25 ? 5 * r() + 0.5 : 0, spread: pick([1, 4])});
  }
  return cases;
}

async function checks(gpu, seed, count, label) {
  let bad = 0, ran = 0;
  const cases = randomCases(seed, count);
  for (const name of Object.keys(gpu.kernels)) {
    for (const [k, c] of cases.entries()) {
      const p = FSGPU.randomProblem(seed * 1000 + k, c);
      if (gpu.kernels[name].ok(p)) continue;
      const r = await gpu.check(name, p, {sample: 32});
      ran++;
      if (!r.ok) {
        bad++;
        console.log(`  FAIL ${name} (${label}) case ${k} ${JSON.stringify(c)}: ${JSON.stringify(r.where)}, error ${r.worst.toExponential(2)} > ${r.tol}`);
      }
    }
  }
  const sm = await gpu.checkSoftmax(seed);   // 003's softmax kernel, on rows of scores
  ran++;
  if (!sm.ok) { bad++; console.log(`  FAIL akunu softmax_rows (${label}): error ${sm.worst.toExponential(2)} > ${sm.tol}`); }
  console.log(`checks (${label}): ${ran - bad} of ${ran} kernel runs match float64 within their tolerance (1e-4; prefill-v7 and -v8 2e-3) (seed ${seed})`);
  return bad;
}

// The decode kernels' split and merge passes timed apart: versions 1-3, 5 and 9 at several split lengths
// (version 9 also with 4 or 8 subgroups a workgroup, p.nsg; version 10, its merge in its dispatch,
// whole, at split lengths and subgroup counts, and paged with the page read in each batch's chain)
// (version 5 also with tiles of 64 keys, p.bk),
// version 4 (float32 and float16, contiguous and paged) in several shapes (p.v4: WG invocations,
// TPK of them a key, KPT keys each, NWG workgroups aimed at) and page sizes; version 7, whose
// merge is in its one dispatch, at several split lengths, whole (no split_ms, merge_ms). Every
// interval of the timing of both passes is kept (the first timing on freshly made buffers).
async function sweep(dev, seed, only, copy, ns) {
  const out = [];
  const v4 = [{}, {KPT: 2}, {WG: 256}, {WG: 256, KPT: 2}, {WG: 64, KPT: 2}, {TPK: 2, KPT: 2}, {TPK: 4, KPT: 4}, {NWG: 512}, {NWG: 2048}, {KPT: 2, NWG: 2048}];
  const cases = [];
  for (const name of ['decode-v1', 'decode-v2', 'decode-v3'])
    for (const split_len of (name === 'decode-v1' ? [1024] : [512, 1024, 4096])) cases.push({name, set: {split_len}});
  cases.push({name: 'decode-v2-f16', set: {split_len: 1024}});
  for (const name of ['decode-v5', 'decode-v5-f16'])
    for (const split_len of [256, 512, 768, 1024, 1536, 2048, 4096]) cases.push({name, set: {split_len}});
  for (const name of ['decode-v5', 'decode-v5-f16'])   // tiles of 64 keys: half the barriers a key
    for (const split_len of [512, 1024, 2048, 4096]) cases.push({name, set: {split_len, bk: 64}});
  for (const name of ['decode-v7', 'decode-v7-f16'])
    for (const split_len of [256, 512, 1024, 2048]) cases.push({name, set: {split_len}});
  for (const name of ['decode-v9', 'decode-v9-f16']) {   // its default shape, then split lengths with 4 or 8 subgroups a workgroup (p.nsg)
    cases.push({name, set: {}});
    for (const split_len of [1024, 2048, 4096]) for (const nsg of [4, 8]) cases.push({name, set: {split_len, nsg}});
  }
  for (const page_size of [16, 64]) for (const name of ['decode-v9-paged', 'decode-v9-paged-f16', 'decode-v9-paged-hnd', 'decode-v9-paged-hnd-f16']) cases.push({name, set: {page_size}});
  // version 10 (version 9 with the merge in its dispatch): its default shape, 4 or 16 subgroups
  // (not the merge pass's 256 invocations), other split lengths; its paged forms with the page
  // read a batch ahead (their default) and in each batch's chain (p.table_now), pages of 16 and 64
  for (const name of ['decode-v10', 'decode-v10-f16']) {
    cases.push({name, set: {}});
    for (const split_len of [512, 1024, 2048, 4096]) cases.push({name, set: {split_len}});
    for (const nsg of [4, 16]) cases.push({name, set: {nsg}});
  }
  for (const page_size of [16, 64]) for (const name of ['decode-v10-paged', 'decode-v10-paged-f16'])
    for (const table_now of [false, true]) cases.push({name, set: table_now ? {page_size, table_now} : {page_size}});
  // version 11 (version 9's paged forms with the page read a batch ahead), pages of 16 and 64;
  // and its float16 forms with each batch's first address computed once (p.tbase: TBASE), with the
  // table's pages in the pool's own order (p.pages_in_order), and both
  for (const page_size of [16, 64]) for (const name of ['decode-v11-paged', 'decode-v11-paged-f16']) cases.push({name, set: {page_size}});
  for (const page_size of [16, 64])
    for (const set of [{tbase: true}, {pages_in_order: true}, {tbase: true, pages_in_order: true}])
      cases.push({name: 'decode-v11-paged-f16', set: Object.assign({page_size}, set)});
  for (const page_size of [16, 64]) cases.push({name: 'decode-v5-paged', set: {split_len: 1024, page_size}});
  for (const page_size of [16, 64]) cases.push({name: 'decode-v2-paged-f16', set: {split_len: 1024, page_size}});
  for (const name of ['decode-v4', 'decode-v4-f16']) for (const s of v4) cases.push({name, set: {v4: s}});
  for (const name of ['decode-paged', 'decode-paged-f16'])
    for (const page_size of [16, 64]) for (const s of [{}, {KPT: 2}]) cases.push({name, set: {v4: s, page_size}});
  for (const n of ns) {
    const base = FSGPU.randomProblem(seed, {n_q_heads: 32, n_kv_heads: 8, n_q: 1, n_kv: n, d: 128});
    for (const {name, set} of cases) {
      if (only && !only.includes(name)) continue;
      const K = dev.kernels[name], p = Object.assign({}, base, set);
      if (K.ok(p)) continue;
      // the measures' own forms (not in the plan, so not in the random checks) against float64 first
      const check = set.tbase || set.pages_in_order ? await dev.check(name, p, {sample: 16}) : null;
      if (check && !check.ok) {
        console.log(`  FAIL sweep ${name} ${JSON.stringify(set)} n_kv ${n}: ${JSON.stringify(check.where)}, error ${check.worst.toExponential(2)} > ${check.tol}`);
        out.failed = (out.failed || 0) + 1;
        continue;
      }
      const r = await dev.prepare(name, p);
      try {
        const both = await dev.timeSteps(r.steps, {reps: 5});
        const two = r.steps.length > 1;   // a merge pass (not decode version 7)
        const s = two ? await dev.timeSteps([r.steps[0]], {reps: 5}) : {};
        const m = two ? await dev.timeSteps([r.steps[1]], {reps: 5}) : {};
        const bytes = K.kvBytes ? K.kvBytes(p) : 4 * (base.k.length + base.v.length);
        const row = {name, n_kv: n, set, split_len: K.splitLen(p), splits: Math.ceil(n / K.splitLen(p)), constants: r.constants,
                     check: check ? check.worst : undefined, ms: both.ms, split_ms: s.ms, merge_ms: m.ms, gbps: bytes / (both.ms * 1e6), split_gbps: two ? bytes / (s.ms * 1e6) : undefined,
                     of_copy: copy ? bytes / (both.ms * 1e6) / copy : undefined, settled: both.settled, first: both.first,
                     intervals: both.intervals.map(x => +x.toFixed(4))};
        console.log(`sweep ${JSON.stringify(row)}`);
        out.push(row);
      } finally { r.destroy(); }
    }
  }
  return out;
}

// --decode-ablation: decode version 9 (float32 and float16 storage, or the --only names among
// them) at each length of keys (GQA 32/8, d = 128, one query), in its usual form and each of its
// ablation forms (decode_v9.wgsl: NOQK, NOSOFT, NOPV, LOADONLY, and NOQK with NOSOFT: only P V
// left), the split pass timed alone and with the merge pass; beside them the read probe at the
// same bytes. What a form saves against the usual one is what the removed part costs; LOADONLY is
// the kernel's own loads with nothing done with them. The usual forms are checked against float64
// first (check false: not, on the null backend); the ablation forms are wrong on purpose.
async function decodeAblation(dev, seed, ns, check = true, only = null) {
  const kernels = ['decode-v9', 'decode-v9-f16'].filter(k => !only || only.includes(k));
  const rows = [];
  let bad = 0;
  const t0 = Date.now();
  for (const n of ns) {
    const base = FSGPU.randomProblem(seed + n, {n_q_heads: 32, n_kv_heads: 8, n_q: 1, n_kv: n, d: 128});
    for (const name of kernels) {
      const K = dev.kernels[name];
      const why = K.ok(base);
      if (why) { console.log(`decode ablation: ${name} not offered here (${why})`); continue; }
      const bytes = K.kvBytes ? K.kvBytes(base) : 4 * (base.k.length + base.v.length);
      const probe = await dev.probe({mib: Math.max(1, Math.round(bytes / 2 ** 20)), mma: null, fma: false});
      rows.push({kernel: name, n, form: `read probe, ${(bytes / 2 ** 20).toFixed(0)} MiB`, split_ms: probe.read_ms, bytes});
      for (const flags of [[]].concat(K.ablations.map(f => [f]), [['NOQK', 'NOSOFT']])) {
        const form = name + flags.map(f => ' ' + f).join('');
        const tmp = `decode ablation ${form}`;
        dev.kernels[tmp] = flags.length ? K.form(Object.fromEntries(flags.map(f => [f, true]))) : K;
        let prep = null;
        const row = {kernel: name, n, form, flags, bytes};
        try {
          if (!flags.length && check) {
            const c = await dev.check(tmp, base, {sample: 16});
            row.worst = c.worst;
            if (!c.ok) { row.wrong = JSON.stringify(c.where); bad++; rows.push(row); continue; }
          }
          prep = await dev.prepare(tmp, base);
          row.split_ms = (await dev.timeSteps([prep.steps[0]], {reps: 5})).ms;
          row.ms = (await dev.timeSteps(prep.steps, {reps: 5})).ms;
        } catch (e) {
          row.error = e.message.split('\n')[0];
        } finally {
          if (prep) prep.destroy();
          delete dev.kernels[tmp];
        }
        rows.push(row);
      }
    }
  }
  const lines = [`decode ablation (GQA 32/8, d = 128, one query; ms a launch: the split pass alone, then with the merge pass; GB/s of the split pass counting K and V; ` +
                 `in brackets the usual form's split ms less this one's; ${((Date.now() - t0) / 1000).toFixed(1)} s):`,
                 '| keys | form | split ms | split GB/s | with merge ms | float64 |', '|---|---|---|---|---|---|'];
  for (const r of rows) {
    const usual = rows.find(x => x.kernel === r.kernel && x.n === r.n && x.flags && !x.flags.length);
    const cost = r.flags && r.flags.length && usual && usual.split_ms && r.split_ms ? usual.split_ms - r.split_ms : null;
    const cell = r.wrong ? 'WRONG' : r.error ? 'error' : r.split_ms === undefined ? '-' : `${r.split_ms.toFixed(4)}${cost !== null ? ` (${cost >= 0 ? '' : '−'}${Math.abs(cost).toFixed(4)})` : ''}`;
    lines.push(`| ${r.n} | ${r.form} | ${cell} | ${r.split_ms ? (r.bytes / (r.split_ms * 1e6)).toFixed(0) : '-'} | ${r.ms ? r.ms.toFixed(4) : '-'} | ${r.worst !== undefined ? r.worst.toExponential(1) : '-'} |`);
  }
  for (const r of rows) if (r.error) lines.push(`decode ablation: ${r.form} at ${r.n} keys: ${r.error}`);
  for (const r of rows) if (r.wrong) lines.push(`decode ablation: ${r.form} at ${r.n} keys: WRONG against float64 ${r.wrong}`);
  console.log(lines.join('\n'));
  return {rows, bad};
}

// The copy and read probes (no FMA, no matrix units) at each size in MiB: a pass's fixed cost
// beside its rate, fitted from the times as the run's NOTE does.
async function probeSizes(dev, sizes) {
  for (const mib of sizes) {
    const p = await dev.probe({mib, mma: null, fma: false});
    console.log(`probe at ${mib} MiB: copy ${p.copy_gbps.toFixed(0)} GB/s (${(p.copy_ms * 1e3).toFixed(1)} µs for ${(p.copy_bytes / 2 / 2 ** 20).toFixed(0)} MiB each way), ` +
                `read ${p.read_gbps.toFixed(0)} GB/s (${(p.read_ms * 1e3).toFixed(1)} µs), a dispatch of next to nothing ${p.dispatch_us.toFixed(2)} µs`);
  }
}

// Prefill versions 7 and 8 (where offered) in their usual form, each ablation form and version 8's
// variants, and version 5, timed on the same problems: 16 heads, N = 4096, d = 128 and 64, causal
// and not (one problem a head size). The right forms (the usual ones, the variants) are checked
// against float64 first (check false: not, on the null backend); a wrong one is not timed and
// counts in `bad`. Returns {shapes, rows: [{form, kernel, flags, over, ms: [per shape], cost: [usual
// − form], worst}], bad} and prints one table. A form that fails (not offered, an error) says why.
async function ablation(dev, seed, n = 4096, check = true, only = null, variants = null, rounds = 1, variantsOnly = false) {
  const shapes = [];
  for (const d of [128, 64]) for (const causal of [false, true]) shapes.push({d, causal, n, heads: 16});
  const forms = [{form: 'prefill-v5 (float32, FMA)', kernel: 'prefill-v5', flags: []}];
  for (const base of ['prefill-v5', 'prefill-v11']) {   // the float32 versions' ablation forms (fwd_v4.wgsl), asked for by name
    if (!only || !only.includes(base)) continue;
    const B = dev.kernels[base];
    if (base !== 'prefill-v5') forms.push({form: base, kernel: base, flags: [], right: true});
    for (const flags of variantsOnly ? [] : B.ablations.map(f => [f]).concat([['NOQK', 'NOPV'], B.ablations]))
      forms.push({form: base + flags.map(f => ' ' + f).join(''), kernel: base, flags});
    for (const v of (variants || []).filter(v => v.over && v.over.TY))   // (TY=N: its row groups)
      forms.push({form: `${base} TY=${v.over.TY}`, kernel: base, flags: [], over: v.over, right: true, variant: true});
  }
  for (const base of FSGPU.sgmatKernels(dev.kernels)) {
    if (only && !only.includes(base)) continue;
    const B = dev.kernels[base];
    const why = B && B.absent ? B.absent() : 'no such kernel';
    if (why) { console.log(`ablation: ${base} not offered here (${why})`); continue; }
    const sets = variantsOnly ? [[]] : [[]].concat(B.ablations.map(f => [f]), [['NOQK', 'NOPV']], [B.ablations.filter(f => f !== 'KROW')]);
    for (const flags of sets) forms.push({form: base + flags.map(f => ' ' + f).join(''), kernel: base, flags, right: !flags.length});
    for (const v of (variants && base !== 'prefill-v7' ? variants.filter(v => !(v.over && v.over.TY)) : B.variants) || [])   // right forms: checked before they are timed
      forms.push({form: base + (v.flags || []).map(f => ' ' + f).join('') + Object.entries(v.over || {}).map(([k, x]) => ` ${k}=${x}`).join(''),
                  kernel: base, flags: v.flags || [], over: v.over || null, right: true, variant: true});
  }
  const rows = forms.map(f => Object.assign({}, f, {ms: [], cost: [], runs: []}));
  const t0 = Date.now(), drawn = new Map();   // a head size's problem, drawn once (its float16 rounding kept with it)
  for (const [k, sh] of shapes.entries()) {
    if (!drawn.has(sh.d)) { drawn.clear(); drawn.set(sh.d, FSGPU.randomProblem(seed + 900 + sh.d, {n_q_heads: sh.heads, n_kv_heads: sh.heads, n_q: sh.n, n_kv: sh.n, d: sh.d})); }
    const base = drawn.get(sh.d);
    const p = Object.assign({}, base, {mask: {kind: sh.causal ? FSGPU.MASK.causal : FSGPU.MASK.none, offset: 0}});
    // --ablation-rounds: every form timed `rounds` times, each round in an order turned by one (form q
    // first in round q), so that no form always follows the same one; the median is the table's
    for (let round = 0; round < rounds; round++) for (let q = 0; q < rows.length; q++) {
      const r = rows[(q + round) % rows.length];
      if (round && r.ms[k] === null) continue;   // wrong or failed in its first round
      const name = `ablation ${r.form}`;
      const B = dev.kernels[r.kernel];
      dev.kernels[name] = r.flags.length || r.over ? B.form(Object.fromEntries(r.flags.map(f => [f, true])), 0, r.over) : B;
      let prep = null;
      try {
        prep = await dev.prepare(name, p);
        if (r.right && check && !round) {   // the usual forms and the variants against float64 first (16 rows)
          const c = await dev.check(name, p, {sample: 16, prepared: prep});
          r.worst = Math.max(r.worst || 0, Number.isFinite(c.worst) ? c.worst : Infinity);
          if (!c.ok) { r.wrong = `${sh.d}${sh.causal ? ' causal' : ''}: ${JSON.stringify(c.where)}`; r.ms[k] = null; continue; }
        }
        const t = await dev.timeSteps(prep.steps, {reps: 5, warmup: 1, warmMs: 150, settleMs: 600});
        (r.runs[k] = r.runs[k] || []).push(t.ms);
        const sorted = r.runs[k].slice().sort((a, b) => a - b);
        r.ms[k] = sorted[Math.floor((sorted.length - 1) / 2)];   // the median (the lower of two)
        if (!r.shape && r.right && dev.kernels[name].shape) r.shape = dev.kernels[name].shape(p);   // the first shape's (d = 128)
      } catch (e) {
        r.ms[k] = null;
        r.error = e.message.split('\n')[0];
      } finally {
        if (prep) prep.destroy();
        delete dev.kernels[name];
      }
    }
  }
  for (const r of rows) {
    const usual = rows.find(x => x.kernel === r.kernel && !x.flags.length);
    r.cost = r.ms.map((ms, k) => (ms && usual.ms[k] && (r.flags.length || r.over) ? usual.ms[k] - ms : null));
  }
  const head = shapes.map(s => `d=${s.d}${s.causal ? ' causal' : ''}`);
  const range = k => r => (rounds > 1 && r.runs[k] && r.runs[k].length > 1 ? ` [${Math.min(...r.runs[k]).toFixed(3)}–${Math.max(...r.runs[k]).toFixed(3)}]` : '');
  const lines = [`ablation (16 heads, N = ${n}; ms a launch${rounds > 1 ? `, the median of ${rounds} rounds [their range]` : ''}; in brackets the usual form's ms less this one's: for an ablation form what the removed part cost, for a variant what it saves; ` +
                 `a right form's last column: its largest error against float64 on 16 rows a shape; ${((Date.now() - t0) / 1000).toFixed(1)} s):`,
                 `| form | ${head.join(' | ')} | float64 |`, `|---|${head.map(() => '---|').join('')}---|`];
  for (const r of rows)
    lines.push(`| ${r.form} | ${r.ms.map((ms, k) => (ms === null || ms === undefined ? (r.wrong ? 'WRONG' : 'error') : `${ms.toFixed(3)}${r.cost[k] !== null ? ` (${r.cost[k] >= 0 ? '' : '−'}${Math.abs(r.cost[k]).toFixed(3)})` : ''}${range(k)(r)}`)).join(' | ')} | ` +
               `${r.right && r.worst !== undefined ? r.worst.toExponential(1) : '-'} |`);
  for (const r of rows) if (r.error) lines.push(`ablation: ${r.form}: ${r.error}`);
  for (const r of rows) if (r.wrong) lines.push(`ablation: ${r.form}: WRONG against float64 (d = ${r.wrong})`);
  for (const r of rows) if (r.shape) lines.push(`ablation shape: ${r.form}: ${Object.entries(r.shape).map(([k, x]) => `${k}=${x}`).join(' ')}`);
  console.log(lines.join('\n'));
  return {n, shapes, rows, bad: rows.filter(r => r.wrong).length};
}

// --null: Dawn's null backend shown to fsgpu.js as validate.js shows it (32-lane subgroups, the
// H200's f16 x f16 -> f32 16x16x16), so that --ablation's own side (forms, buffers, timing, the
// table) runs end to end here; tests/web/check_gpu.py runs it so, at --ablation-n 256.
function nullShown(gpu) {
  const configs = [{componentType: 'f16', resultComponentType: 'f32', M: 16, N: 16, K: 16}];
  return {
    requestAdapter: async (opt) => {
      const a = await gpu.requestAdapter(opt);
      if (!a) return null;
      const info = {vendor: 'null backend', architecture: '', device: '', description: 'Dawn null backend (nothing computed)',
                    subgroupMinSize: 32, subgroupMaxSize: 32, subgroupMatrixConfigs: configs};
      return new Proxy(a, {get(t, k) { if (k === 'info') return info; const x = t[k]; return typeof x === 'function' ? x.bind(t) : x; }});
    },
  };
}

function fmt(x, d = 1) { return x === undefined || x === null ? '-' : x.toFixed(d); }

function table(res) {
  const lines = [];
  lines.push('| kernel | kind | n_q | n_kv | d | heads | causal | ms | TFLOP/s | GB/s | of FMA | of copy | check |');
  lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of res.rows) {
    const heads = r.heads === r.kv_heads ? `${r.heads}` : `${r.heads}/${r.kv_heads}`;
    const of = (x) => (x === undefined ? '-' : `${(100 * x).toFixed(0)} %`);
    lines.push(`| ${r.kernel} | ${r.kind} | ${r.n_q} | ${r.n_kv} | ${r.d} | ${heads} | ${r.causal ? 'yes' : 'no'} | ` +
               (r.error ? `error: ${r.error} | | | | | |` :
                `${fmt(r.ms, 3)} | ${fmt(r.tflops, 2)} | ${fmt(r.gbps, 0)} | ${r.kind === 'prefill' ? of(r.of_fma) : '-'} | ` +
                `${r.kind === 'decode' ? of(r.of_copy) : '-'} | ${r.check.worst.toExponential(1)} |`));
  }
  return lines.join('\n');
}

// --vkstats: the device's pipelines made one at a time, each between a "begin" line naming it and
// an "end" line in FILE, so that the Vulkan layer's record of it (fs_vkstats.c, written into the
// same file when the driver makes it) lands between the two. A pipeline the host already has
// comes back at once: an empty pair.
function markPipelines(dev, file) {
  const make = dev.pipeline.bind(dev);
  let last = Promise.resolve();
  dev.pipeline = (wgsl, entry, constants, subgroups, defs = {}) => {
    const one = async () => {
      const on = Object.keys(defs).filter(k => defs[k]).sort().map(k => (typeof defs[k] === 'number' ? `${k}=${defs[k]}` : k));
      fs.appendFileSync(file, `bench pipeline begin ${wgsl}.wgsl ${entry} ${subgroups ? 'subgroups' : 'no-subgroups'} ` +
                              `[${on.join(' ')}] ${JSON.stringify(constants || {})}\n`);
      try { return await make(wgsl, entry, constants, subgroups, defs); } finally { fs.appendFileSync(file, 'bench pipeline end\n'); }
    };
    const p = last.then(one, one);
    last = p.catch(() => {});
    return p;
  };
}

async function main() {
  let o;
  try { o = parse(process.argv.slice(2)); } catch (e) { console.error(`bench.js: ${e.message}\n${usage}`); process.exit(2); }
  let webgpu;
  try { webgpu = require('webgpu'); } catch (e) {
    console.error(`bench.js: cannot load npm's webgpu (${e.message}); run npm ci --prefix bench/webgpu`);
    process.exit(2);
  }
  Object.assign(globalThis, webgpu.globals);
  const flags = dawnFlags(o);
  if (o.nullBackend) flags.unshift('backend=null');
  const gpu = webgpu.create(flags);
  const load = name => fs.readFileSync(path.join(__dirname, '../../src/kernels/webgpu', `${name}.wgsl`), 'utf8');
  let dev;
  try { dev = await FSGPU.open(o.nullBackend ? nullShown(gpu) : gpu, load); } catch (e) { console.error(`bench.js: ${e.message}`); process.exit(2); }
  if (o.vkstats) markPipelines(dev, o.vkstats);
  const seed = o.seed !== null ? o.seed : (Date.now() % 1000000);
  console.log(`adapter: ${JSON.stringify(dev.info)}`);
  const dawn = {flags, toggles: o.toggles, device_features: dev.info.device_features, subgroup_matrix_kernel: dev.info.subgroup_matrix_kernel};
  console.log(`dawn: flags ${flags.join(' ')}; device features: ${dev.info.device_features.join(' ')}`);
  console.log(`subgroup matrices: ${dev.info.subgroup_matrix_configs.map(c => `${c.component}x${c.component}->${c.result} ${c.M}x${c.N}x${c.K}`).join(', ') || 'none'}` +
              `; prefill-v7 uses ${dev.info.subgroup_matrix_kernel ? JSON.stringify(dev.info.subgroup_matrix_kernel) : 'none'}`);
  if (o.nullBackend) {   // the host's side of --ablation and --probe-sizes only: nothing is computed, nothing checked
    if (o.ablation) for (const n of o.ablationN) await ablation(dev, seed, n, false, o.ablationOnly || o.only, o.variants, o.ablationRounds, o.variantsOnly);
    if (o.decodeAblation) await decodeAblation(dev, seed, o.decodeAblation, false, o.only);
    if (o.probeSizes) await probeSizes(dev, o.probeSizes);
    dev.destroy();
    console.log('bench.js --null: done (the null backend computes nothing: only errors mean something)');
    process.exit(0);
  }
  const secs = (a, b = Date.now()) => ((b - a) / 1000).toFixed(0);   // seconds from a to b
  const t0 = Date.now();
  let bad = await checkNew(dev, o.news, seed, 12);
  const t1 = Date.now();
  bad += await checks(dev, seed, o.count, dev.subgroups ? 'with subgroups' : 'no subgroups');
  if (dev.subgroups) {
    const plain = await FSGPU.open(gpu, load, {subgroups: false});
    if (o.vkstats) markPipelines(plain, o.vkstats);
    bad += await checks(plain, seed, o.count, 'without subgroups');
    plain.destroy();
  }
  console.log(`checks' time: the new kernels ${secs(t0, t1)} s, the random checks ${secs(t1)} s`);
  let res = null, abl = null;
  const rowsSoFar = [];
  if (o.ablation) {
    abl = [];
    for (const n of o.ablationN) {
      const a = await ablation(dev, seed, n, true, o.ablationOnly || o.only, o.variants, o.ablationRounds, o.variantsOnly);
      abl.push(a);
      bad += a.bad;
    }
    if (o.json) fs.writeFileSync(o.json, JSON.stringify({dawn, device: dev.info, seed, ablation: abl}, null, 1));
  }
  if (o.decodeAblation) {
    const da = await decodeAblation(dev, seed, o.decodeAblation, true, o.only);
    bad += da.bad;
    if (o.json) fs.writeFileSync(o.json, JSON.stringify({dawn, device: dev.info, seed, decode_ablation: da.rows}, null, 1));
  }
  if (o.probeSizes) await probeSizes(dev, o.probeSizes);
  if (o.sweep) {
    const probe = await dev.probe();
    console.log(`probe: ${JSON.stringify(probe)}`);
    res = {dawn, probe, sweep: await sweep(dev, seed, o.only, probe.copy_gbps, o.sweepN)};
    bad += res.sweep.failed || 0;
    if (o.json) fs.writeFileSync(o.json, JSON.stringify(res, null, 1));
  }
  if (!o.checkOnly) {
    const sw = res && res.sweep;
    // the rows so far are written after each (a time limit keeps them)
    const started = Date.now();
    res = await FSGPU.benchmark(dev, {plan: o.plan, seed, kinds: o.decodeOnly ? ['decode'] : o.prefillOnly ? ['prefill'] : null, kernels: o.only, first: o.news,
      progress: (k, n, r) => process.stderr.write(`[${k + 1}/${n}, ${secs(started)} s] ${r.kernel} n_q=${r.n_q} n_kv=${r.n_kv} d=${r.d}${r.causal ? ' causal' : ''}\n`),
      done: r => {
        console.log(`row ${JSON.stringify(Object.assign({}, r, {intervals: r.intervals && r.intervals.map(x => +x.toFixed(4))}))}`);
        if (o.json) { rowsSoFar.push(r); fs.writeFileSync(o.json, JSON.stringify({dawn, partial: true, device: dev.info, seed, rows: rowsSoFar, ablation: abl || undefined}, null, 1)); }
      }});
    res.dawn = dawn;
    console.log(`plan ${o.plan}: ${res.rows.length} rows in ${secs(started)} s`);
    for (const [k, why] of Object.entries(res.not_offered || {})) console.log(`not offered here: ${k} (${why})`);
    if (sw) res.sweep = sw;
    if (abl) res.ablation = abl;
    const p = res.probe;
    console.log(`probe: copy ${p.copy_gbps.toFixed(0)} GB/s (read + write, ${(p.copy_bytes / 2 / 2 ** 20).toFixed(0)} MiB each way, ${p.clock}), ` +
                `read only ${p.read_gbps.toFixed(0)} GB/s, float32 FMA ${p.fma_tflops.toFixed(1)} TFLOP/s` +
                (p.dispatch_us !== undefined ? `, a dispatch of next to nothing ${p.dispatch_us.toFixed(1)} µs (two in a row ${p.two_dispatches_us.toFixed(1)})` : '') +
                (p.mma_tflops ? `, subgroup-matrix products (${p.mma_config}) ${p.mma_tflops.toFixed(1)} TFLOP/s in registers, ${p.mma_load_tflops.toFixed(1)} with a load a product from storage${p.mma_wload_tflops ? `, ${p.mma_wload_tflops.toFixed(1)} from workgroup memory` : ''}` : '') +
                (p.mma_error ? `, subgroup-matrix probe: ${p.mma_error}` : ''));
    console.log(table(res));
    for (const r of res.rows) if (r.paged_over_contiguous) console.log(`paged / contiguous: ${r.kernel} n_kv=${r.n_kv}: ${r.paged_over_contiguous.toFixed(3)}`);
    for (const r of res.rows) if (r.settled === false) console.log(`unsteady: ${r.kernel} n_kv=${r.n_kv}: intervals ${r.intervals.map(x => x.toFixed(3)).join(' ')}`);
    bad += res.rows.filter(r => r.check && !r.check.ok).length;
  }
  if (o.json && res) fs.writeFileSync(o.json, JSON.stringify(abl && !res.ablation ? Object.assign(res, {ablation: abl}) : res, null, 1));
  dev.destroy();
  console.log(bad ? `FAILED: ${bad} checks (seed ${seed})` : 'all checks passed');
  process.exit(bad ? 1 : 0);
}

if (require.main === module) main().catch(e => { console.error(`bench.js: ${e.stack || e.message}`); process.exit(1); });
else module.exports = {markPipelines};   // (tests/web/check_gpu.py tries it with the layer on SwiftShader)
