#!/usr/bin/env node
/* validate.js: every WGSL kernel, in every form the host makes, compiled and made into pipelines
 * by Dawn's null backend (npm's `webgpu`, no GPU needed), so that the kernels this machine's
 * GPUs cannot run (the shader-f16 forms, prefill version 7 on subgroup matrices) are at least
 * checked by Tint, Dawn's WGSL compiler, the same compiler the H200's run uses.
 *
 *   node bench/webgpu/validate.js
 *
 * The null backend offers every feature (shader-f16, subgroups, subgroup matrices) but lists no
 * subgroup matrix configuration and reports 128-lane subgroups; the adapter is shown to fsgpu.js
 * with 32-lane subgroups and the three f16 × f16 → f32 configurations the H200 offers (16×16×16,
 * 16×8×16, 16×8×8), and prefill versions 7 to 10, 13, 14 and 16 to 20 and the matrix units' probes (probes_sgmat.wgsl) are made for each. Then both again, sized for the
 * H200's 48 KiB of workgroup memory (BK = 64, as the device makes them), in their usual form and
 * in every ablation form (bench.js --ablation), one flag at a time and together, and version 8 in
 * each of its variants (staged K, staged V, scores read twice, other tile shapes): those pass the
 * null backend's 16 KiB, so their WGSL is compiled and their pipelines are refused for their size,
 * which counts as compiled. Nothing runs: the null backend computes
 * nothing. Exit 0 when every pipeline was made, 1 when one was not, 2 when the null backend or
 * npm's webgpu is missing (the reason printed).
 */
'use strict';
const fs = require('fs');
const path = require('path');
const FSGPU = require('../../src/kernels/webgpu/fsgpu.js');

const CONFIGS = [[16, 16, 16], [16, 8, 16], [16, 8, 8]].map(([M, N, K]) => ({componentType: 'f16', resultComponentType: 'f32', M, N, K}));

// The null adapter as fsgpu.js sees it: its features, 32-lane subgroups, the given configurations.
function shown(gpu, configs) {
  return {
    requestAdapter: async (o) => {
      const a = await gpu.requestAdapter(o);
      if (!a) return null;
      const info = {vendor: 'null backend', architecture: '', device: '', description: 'Dawn null backend (validation only)',
                    subgroupMinSize: 32, subgroupMaxSize: 32, subgroupMatrixConfigs: configs};
      return new Proxy(a, {get(t, k) { if (k === 'info') return info; const v = t[k]; return typeof v === 'function' ? v.bind(t) : v; }});
    },
  };
}

async function main() {
  let webgpu;
  try { webgpu = require('webgpu'); } catch (e) {
    console.log(`validate.js: skipped: cannot load npm's webgpu (${e.message}); run npm ci --prefix bench/webgpu`);
    process.exit(2);
  }
  Object.assign(globalThis, webgpu.globals);
  const gpu = webgpu.create(['backend=null', 'enable-dawn-features=allow_unsafe_apis']);
  const load = name => fs.readFileSync(path.join(__dirname, '../../src/kernels/webgpu', `${name}.wgsl`), 'utf8');
  let made = 0, bad = 0;
  const small = new Set(), each = {}, each48 = {};
  let big = 0;   // forms sized for 48 KiB: compiled, their pipelines refused for their size
  const sizes = [{d: 64}, {d: 128}, {d: 256}, {d: 32}];
  for (const cfg of CONFIGS) {
    for (const subgroups of [true, false]) {
      let dev;
      try { dev = await FSGPU.open(shown(gpu, [cfg]), load, {subgroups}); } catch (e) {
        console.log(`validate.js: skipped: Dawn's null backend gives no device (${e.message})`);
        process.exit(2);
      }
      if (!dev.f16 || (subgroups && !dev.sgmat)) {
        console.log(`validate.js: skipped: the null backend lacks shader-f16 or subgroup matrices (${dev.info.features.join(' ')})`);
        process.exit(2);
      }
      // the other kernels once (the first configuration), prefill version 7 for each configuration
      const names = cfg === CONFIGS[0] ? Object.keys(dev.kernels) : FSGPU.sgmatKernels(dev.kernels);
      for (const name of names) {
        const K = dev.kernels[name];
        for (const {d} of sizes) {
          for (const mask of ['none', 'causal']) {
            const p = FSGPU.randomProblem(1, {n_q_heads: 4, n_kv_heads: 2, n_q: 1, n_kv: 96, d, mask});
            if (K.split === undefined) Object.assign(p, FSGPU.randomProblem(1, {n_q_heads: 4, n_kv_heads: 2, n_q: 70, n_kv: 96, d, mask}));
            if (K.ok(p)) continue;
            try {
              const r = await dev.prepare(name, p);
              r.destroy();
              made++;
              each[name] = (each[name] || 0) + 1;
            } catch (e) {
              // the WGSL was valid: refused for the null backend's 16 KiB, or (a workgroup of 64: prefill
              // version 10) for its own 128-lane subgroups, which the adapter shown hides
              if (/total use of workgroup storage|must be a multiple of the device maxSubgroupSize/.test(e.message)) { small.add(name); continue; }
              bad++;
              console.log(`FAIL ${name} d=${d} ${mask}${subgroups ? ' (subgroups)' : ''} ${cfg.M}x${cfg.N}x${cfg.K}: ${e.message}`);
            }
            if (mask === 'none') break;   // the mask is a run-time value: one form
          }
        }
      }
      // versions 7 and 8 at the H200's 48 KiB, every ablation form (subgroups on: they need them)
      if (subgroups) for (const base of FSGPU.sgmatKernels(dev.kernels)) {
        const B = dev.kernels[base];
        const flagSets = [{}].concat(B.ablations.map(f => ({[f]: true})), [{NOQK: true, NOPV: true}],
                                     [Object.fromEntries(B.ablations.filter(f => f !== 'KROW').map(f => [f, true]))])
          .map(extra => ({extra, over: null}))
          .concat((B.variants || []).map(v => ({extra: Object.fromEntries((v.flags || []).map(f => [f, true])), over: v.over || null})));
        for (const {extra, over} of flagSets) for (const {d} of sizes) {
          const name = `${base}${Object.keys(extra).map(f => '+' + f).join('')}${over ? ' ' + JSON.stringify(over) : ''} (48 KiB)`;
          const K = dev.kernels[name] = B.form(extra, 49152, over);
          const p = FSGPU.randomProblem(1, {n_q_heads: 4, n_kv_heads: 2, n_q: 70, n_kv: 96, d});
          if (K.ok(p)) continue;
          try {
            (await dev.prepare(name, p)).destroy();
            made++;
          } catch (e) {
            // refused for its size, or (NSG = 2: 64 invocations) for the null backend's own 128-lane
            // subgroups, which the adapter shown to fsgpu.js hides (the H200's are 32): compiled either way
            if (!/total use of workgroup storage|must be a multiple of the device maxSubgroupSize/.test(e.message)) { bad++; console.log(`FAIL ${name} d=${d} ${cfg.M}x${cfg.N}x${cfg.K}: ${e.message}`); continue; }
            big++;
          }
          each48[base] = (each48[base] || 0) + 1;
        }
      }
      // the matrix units' probes (probes_sgmat.wgsl) in this configuration
      if (subgroups) for (const form of ['', 'LOAD', 'WLOAD']) {
        const what = `probes_sgmat mma${form ? ' ' + form : ''}`;
        try {
          await dev.pipeline('probes_sgmat', 'mma', {STEPS: 8}, true, {SM: cfg.M, SN: cfg.N, SK: cfg.K, LOAD: form === 'LOAD', WLOAD: form === 'WLOAD'});
          made++;
          each[what] = (each[what] || 0) + 1;
        } catch (e) { bad++; console.log(`FAIL ${what} ${cfg.M}x${cfg.N}x${cfg.K}: ${e.message}`); }
      }
      dev.destroy();
    }
  }
  console.log(`made: ${Object.entries(each).map(([k, n]) => `${k} ${n}`).join(', ')}`);
  if (small.size) console.log(`compiled, but their pipelines need more than the null backend's 16 KiB of workgroup memory (or subgroups of its 128 lanes) in some sizes: ${[...small].join(', ')}`);
  console.log(`sized for 48 KiB (usual, ablation and variant forms): ${Object.entries(each48).map(([k, n]) => `${k} ${n}`).join(', ')}; ` +
              `${big} of them compiled and refused only for their workgroup memory (or, 64 invocations, the null backend's 128-lane subgroups)`);
  console.log(`validate.js: ${made + big} kernel forms compiled (${made} made into pipelines) by Dawn's null backend, ${bad} failed ` +
              `(prefill versions 7 to 10, 13, 14 and 16 to 20 in ${CONFIGS.map(c => `${c.M}×${c.N}×${c.K}`).join(', ')})`);
  process.exit(bad ? 1 : 0);
}

main().catch(e => { console.error(`validate.js: ${e.stack || e.message}`); process.exit(1); });
