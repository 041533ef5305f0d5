// fwd_v2.wgsl, version 2: 003's Prefill V2 geometry in plain WGSL (no matrix units).
//
// What changes from version 1, one idea: the tile's work is shared out instead of one row per
// invocation. A workgroup of 128 invocations takes BQ query rows (32, as 003's V2 does; 16 where
// the device's workgroup memory is smaller or D = 256); TPR = 128 / BQ invocations share a row.
//   S = Q Kᵀ: each of a row's TPR invocations scores BK / TPR keys (keys lane, lane + TPR, …)
//             from Q and K in workgroup memory, four numbers a load (vec4).
//   softmax:  the row's maximum and sum over its TPR invocations: subgroup shuffles where the
//             adapter has subgroups (003's row_max / row_sum with simd_shuffle_xor), else through
//             workgroup memory; P goes to workgroup memory.
//   O += P V: each invocation keeps D / TPR of the row's output columns in registers (003's V2:
//             the accumulator never leaves the invocation until the end).
// Also from 003's V2: Q is pre-multiplied by scale · log2 e so the softmax runs on exp2, and K and
// V take turns in the same workgroup memory (K is not needed once S is computed).
//
// Shapes as version 1. Dispatch: (⌈n_q / BQ⌉, n_q_heads), 128 invocations a workgroup.
// The host compiles two forms of this file: with `enable subgroups;` (SUBGROUPS) or without.

override D: u32 = 64u;      // head size (d = d_v), a multiple of 16, at most 32 · TPR
override BQ: u32 = 32u;     // query rows of a workgroup: 32 or 16
const WG: u32 = 128u;
const BK: u32 = 32u;        // keys of a KV tile
override TPR: u32 = WG / BQ;          // invocations of a row: 4 or 8
override D4: u32 = D / 4u;            // vec4s of a row
override NS: u32 = BK / TPR;          // keys each invocation scores (≤ 8)
override NO: u32 = D4 / TPR;          // output vec4s each invocation keeps (≤ 8)

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> q_in: array<vec4f>;
@group(0) @binding(2) var<storage, read> k_in: array<vec4f>;
@group(0) @binding(3) var<storage, read> v_in: array<vec4f>;
@group(0) @binding(4) var<storage, read> mask_bits: array<u32>;
@group(0) @binding(5) var<storage, read_write> o_out: array<vec4f>;
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;

var<workgroup> Qs: array<vec4f, BQ * D4>;
var<workgroup> KV: array<vec4f, BK * D4>;   // K, then V, of the current tile
var<workgroup> Ps: array<f32, BQ * BK>;
//#if !SUBGROUPS
var<workgroup> red: array<f32, WG>;
//#endif

//#if SUBGROUPS
// The TPR invocations of a row are neighbouring lanes of one subgroup (the host uses this form
// only where every subgroup has at least TPR lanes).
fn row_max(x: f32, t: u32) -> f32 {
  var v = x;
  for (var s = 1u; s < TPR; s <<= 1u) { v = max(v, subgroupShuffleXor(v, s)); }
  return v;
}
fn row_sum(x: f32, t: u32) -> f32 {
  var v = x;
  for (var s = 1u; s < TPR; s <<= 1u) { v += subgroupShuffleXor(v, s); }
  return v;
}
//#else
// Without subgroups: through workgroup memory, two barriers each.
fn row_max(x: f32, t: u32) -> f32 {
  red[t] = x;
  workgroupBarrier();
  let b = t - t % TPR;
  var v = red[b];
  for (var s = 1u; s < TPR; s++) { v = max(v, red[b + s]); }
  workgroupBarrier();
  return v;
}
fn row_sum(x: f32, t: u32) -> f32 {
  red[t] = x;
  workgroupBarrier();
  let b = t - t % TPR;
  var v = red[b];
  for (var s = 1u; s < TPR; s++) { v += red[b + s]; }
  workgroupBarrier();
  return v;
}
//#endif

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let h = wg.y;
  let kvh = h / (P.n_q_heads / P.n_kv_heads);
  let r0 = wg.x * BQ;
  let r1 = min(r0 + BQ, P.n_q);
  let r = t / TPR;
  let lane = t % TPR;
  let i = r0 + r;
  let live = i < P.n_q;
  let kv0 = kvh * P.n_kv * D4;
  let qk_scale = P.scale * LOG2E;      // scores in base-2 units: exp2 from here on

  for (var x = t; x < BQ * D4; x += WG) {
    let qi = r0 + x / D4;
    Qs[x] = select(vec4f(0.0), q_in[(h * P.n_q + qi) * D4 + x % D4] * qk_scale, qi < P.n_q);
  }
  var m = NEG;
  var l = 0.0;
  var acc: array<vec4f, 8>;
  for (var k = 0u; k < NO; k++) { acc[k] = vec4f(0.0); }

  for (var c0 = 0u; c0 < P.n_kv; c0 += BK) {
    let c1 = min(c0 + BK, P.n_kv);
    let cls = classify(r0, r1, c0, c1).x;   // uniform: the same for the whole workgroup
    if (cls == SKIPPED) { continue; }
    workgroupBarrier();                      // V of the last tile is no longer read
    for (var x = t; x < BK * D4; x += WG) {
      let j = c0 + x / D4;
      KV[x] = select(vec4f(0.0), k_in[kv0 + j * D4 + x % D4], j < c1);
    }
    workgroupBarrier();

    // S = Q Kᵀ for keys lane, lane + TPR, …: one Q load serves NS keys
    var s: array<f32, 8>;
    for (var k = 0u; k < NS; k++) { s[k] = 0.0; }
    for (var x = 0u; x < D4; x++) {
      let qv = Qs[r * D4 + x];
      for (var k = 0u; k < NS; k++) { s[k] += dot(qv, KV[(lane + k * TPR) * D4 + x]); }
    }
    var m_blk = NEG;
    for (var k = 0u; k < NS; k++) {
      let j = c0 + lane + k * TPR;
      if (!live || j >= c1 || (cls == PARTIAL && !visible(i, j))) {
        s[k] = NEG;
      } else {
        if (P.softcap > 0.0) { s[k] = capped(s[k] / LOG2E) * LOG2E; }
        m_blk = max(m_blk, s[k]);
      }
    }
    let m_new = max(m, row_max(m_blk, t));
    var l_blk = 0.0;
    for (var k = 0u; k < NS; k++) {
      var p = 0.0;
      if (s[k] != NEG) { p = exp2(s[k] - m_new); }
      Ps[r * BK + lane + k * TPR] = p;
      l_blk += p;
    }
    let alpha = select(exp2(m - m_new), 0.0, m == NEG);   // 0 on the row's first visible key
    l = alpha * l + row_sum(l_blk, t);
    m = m_new;

    workgroupBarrier();                      // every score of K is taken: V may overwrite it
    for (var x = t; x < BK * D4; x += WG) {
      let j = c0 + x / D4;
      KV[x] = select(vec4f(0.0), v_in[kv0 + j * D4 + x % D4], j < c1);
    }
    workgroupBarrier();
    // O = α O + P V on this invocation's columns lane, lane + TPR, … (vec4s)
    for (var k = 0u; k < NO; k++) { acc[k] *= alpha; }
    for (var j = 0u; j < BK; j++) {
      let p = Ps[r * BK + j];
      for (var k = 0u; k < NO; k++) { acc[k] = fma(vec4f(p), KV[j * D4 + lane + k * TPR], acc[k]); }
    }
  }
  if (!live) { return; }
  let inv = select(0.0, 1.0 / l, l > 0.0);   // a row that sees no key gets 0
  let row = h * P.n_q + i;
  for (var k = 0u; k < NO; k++) { o_out[row * D4 + lane + k * TPR] = acc[k] * inv; }
  if (lane == 0u) { lse[row] = select(NEG, m / LOG2E + log(l), l > 0.0); }
}
