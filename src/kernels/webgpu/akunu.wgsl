// akunu.wgsl: the attention kernels of 003 ("FlashAttention Kernels" of the Akunu engine, written
// in Metal for Apple GPUs), each with 003's dispatch shape and thread assignment, in WGSL.
//
// Metal's words and WebGPU's: a threadgroup is a workgroup, a SIMD group a subgroup, threadgroup
// memory workgroup memory, simd_sum subgroupAdd, simd_shuffle_xor subgroupShuffleXor,
// threadgroup_barrier workgroupBarrier, a function constant an override. Apple's SIMD groups are
// 32 lanes; a WebGPU adapter's subgroups may be 4 (SwiftShader) to 128 lanes, or missing. So a
// "SIMD group" here is LANES invocations: the host sets LANES to the adapter's subgroup size and
// compiles the SUBGROUPS form where every subgroup has that size, and otherwise LANES = 32 with
// the reductions through workgroup memory (the same arithmetic, with barriers 003 avoids).
//
//   decode_standard  (kernel 1) grid (n_q, n_q_heads), one invocation per element of the head:
//                    each key's q·k summed over the workgroup, two barriers a key
//   decode_fast      (kernel 2) grid (n_q, n_q_heads), one SIMD group: D / LANES elements an
//                    invocation, q·k by subgroupAdd, no barrier at all
//   decode_parallel  (kernel 3) grid (n_q, n_q_heads), NSG SIMD groups (32 in 003): group g takes
//                    keys g, g + NSG, …, each with its own (m, ℓ, o); then the cross-group merge
//                    through workgroup memory
//   softmax_rows     (kernel 6) one workgroup per row of a score matrix, in place: max, Σ exp,
//                    normalize, each a strided pass with a workgroup reduction
// Masks (causal, window, tree bitmask) and soft-capping as every flashstep kernel takes them.
//
// Shapes: q (n_q_heads, n_q, D), k and v (n_kv_heads, n_kv, D), o (n_q_heads, n_q, D), in
// float32; softmax_rows: `o_out` holds the (n_q, n_kv) scores and gets the weights.

override D: u32 = 128u;      // head size
override LANES: u32 = 32u;   // a SIMD group's invocations
override NSG: u32 = 8u;      // decode_parallel: SIMD groups of its workgroup (32 in 003)
override ELEMS: u32 = D / LANES;   // elements of the head an invocation holds (≤ 8)

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> q_in: array<f32>;
@group(0) @binding(2) var<storage, read> k_in: array<f32>;
@group(0) @binding(3) var<storage, read> v_in: array<f32>;
@group(0) @binding(4) var<storage, read> mask_bits: array<u32>;
@group(0) @binding(5) var<storage, read_write> o_out: array<f32>;

var<workgroup> red: array<f32, 1024>;
var<workgroup> tg_max: array<f32, 32>;
var<workgroup> tg_sum: array<f32, 32>;

//#if SUBGROUPS
// The sum over the SIMD group of invocation t (its subgroup: LANES lanes).
fn simd_sum(x: f32, t: u32) -> f32 { return subgroupAdd(x); }
//#else
// The sum over the LANES invocations of t's group, through workgroup memory.
fn simd_sum(x: f32, t: u32) -> f32 {
  red[t] = x;
  workgroupBarrier();
  let b = t - t % LANES;
  var s = 0.0;
  for (var k = 0u; k < LANES; k++) { s += red[b + k]; }
  workgroupBarrier();
  return s;
}
//#endif

// The sum over a workgroup of n invocations (n a multiple of LANES): each SIMD group's sum into
// workgroup memory, a barrier, every invocation adds them up, a barrier (003's kernel 1).
fn workgroup_sum(x: f32, t: u32, n: u32) -> f32 {
  let s = simd_sum(x, t);
  if (t % LANES == 0u) { red[512u + t / LANES] = s; }
  workgroupBarrier();
  var total = 0.0;
  for (var g = 0u; g < n / LANES; g++) { total += red[512u + g]; }
  workgroupBarrier();
  return total;
}

fn kv_head(h: u32) -> u32 { return h / (P.n_q_heads / P.n_kv_heads); }   // GQA: one division

// the score of a visible key, in natural units, soft-capped
fn score(dot: f32) -> f32 { return capped(dot * P.scale); }

// Kernel 1: one invocation per element of the head (D of them, D a multiple of LANES).
@compute @workgroup_size(D)
fn decode_standard(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let i = wg.x;
  let h = wg.y;
  let row = h * P.n_q + i;
  let kb = kv_head(h) * P.n_kv * D;
  let q = q_in[row * D + t];               // the query element, kept in a register
  var m = NEG;
  var l = 0.0;
  var acc = 0.0;                           // this invocation's element of o
  for (var j = 0u; j < P.n_kv; j++) {
    if (!visible(i, j)) { continue; }      // uniform: every invocation has the same i and j
    let s = score(workgroup_sum(q * k_in[kb + j * D + t], t, D));
    let m_new = max(m, s);
    let e = exp(s - m_new);
    let correction = select(exp(m - m_new), 0.0, m == NEG);
    l = l * correction + e;
    acc = acc * correction + e * v_in[kb + j * D + t];
    m = m_new;
  }
  o_out[row * D + t] = select(0.0, acc / l, l > 0.0);
}

// Kernel 2: one SIMD group; invocation `lane` holds elements lane, lane + LANES, …
@compute @workgroup_size(LANES)
fn decode_fast(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lane: u32) {
  let i = wg.x;
  let h = wg.y;
  let row = h * P.n_q + i;
  let kb = kv_head(h) * P.n_kv * D;
  var q: array<f32, 8>;
  var acc: array<f32, 8>;
  for (var e = 0u; e < ELEMS; e++) { q[e] = q_in[row * D + lane + e * LANES]; acc[e] = 0.0; }
  var m = NEG;
  var l = 0.0;
  for (var j = 0u; j < P.n_kv; j++) {
    if (!visible(i, j)) { continue; }
    var local = 0.0;
    for (var e = 0u; e < ELEMS; e++) { local = fma(q[e], k_in[kb + j * D + lane + e * LANES], local); }
    let s = score(simd_sum(local, lane));
    let m_new = max(m, s);
    let w = exp(s - m_new);
    let correction = select(exp(m - m_new), 0.0, m == NEG);
    l = l * correction + w;
    for (var e = 0u; e < ELEMS; e++) {
      acc[e] = acc[e] * correction + w * v_in[kb + j * D + lane + e * LANES];   // strided V, as 003
    }
    m = m_new;
  }
  let inv = select(0.0, 1.0 / l, l > 0.0);
  for (var e = 0u; e < ELEMS; e++) { o_out[row * D + lane + e * LANES] = acc[e] * inv; }
}

// Kernel 3: NSG SIMD groups split the keys by stride, then merge their partial states.
@compute @workgroup_size(NSG * LANES)
fn decode_parallel(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let i = wg.x;
  let h = wg.y;
  let row = h * P.n_q + i;
  let kb = kv_head(h) * P.n_kv * D;
  let sg = t / LANES;                      // the SIMD group = which keys
  let lane = t % LANES;                    // the lane = which elements of the head
  var q: array<f32, 8>;
  var o: array<f32, 8>;
  for (var e = 0u; e < ELEMS; e++) { q[e] = q_in[row * D + lane * ELEMS + e]; o[e] = 0.0; }
  var m = NEG;
  var l = 0.0;
  // Every group makes the same number of passes (a group past the end reads nothing), so that
  // the barrier-based form of simd_sum stays in uniform control flow.
  let passes = (P.n_kv + NSG - 1u) / NSG;
  for (var p = 0u; p < passes; p++) {
    let j = p * NSG + sg;
    let live = j < P.n_kv && visible(i, min(j, P.n_kv - 1u));
    let jj = min(j, P.n_kv - 1u);
    var local = 0.0;
    for (var e = 0u; e < ELEMS; e++) { local = fma(q[e], k_in[kb + jj * D + lane * ELEMS + e], local); }
    let dot = simd_sum(local, t);
    if (live) {
      let s = score(dot);
      let m_new = max(m, s);
      let w = exp(s - m_new);
      let correction = select(exp(m - m_new), 0.0, m == NEG);
      l = l * correction + w;
      for (var e = 0u; e < ELEMS; e++) { o[e] = o[e] * correction + w * v_in[kb + jj * D + lane * ELEMS + e]; }
      m = m_new;
    }
  }
  // phase 1: the global maximum; phase 2: the corrected sums (003's cross-SG reduction)
  if (lane == 0u) { tg_max[sg] = m; tg_sum[sg] = l; }
  workgroupBarrier();
  var global_max = NEG;
  for (var g = 0u; g < NSG; g++) { global_max = max(global_max, tg_max[g]); }
  var global_sum = 0.0;
  for (var g = 0u; g < NSG; g++) {
    if (tg_max[g] != NEG) { global_sum += tg_sum[g] * exp(tg_max[g] - global_max); }
  }
  let inv_sum = select(0.0, 1.0 / global_sum, global_sum > 0.0);
  // phase 3: each element's partials staged in workgroup memory, SIMD group 0 adds them
  let factor = select(exp(m - global_max), 0.0, m == NEG);
  for (var e = 0u; e < ELEMS; e++) {
    red[lane * NSG + sg] = o[e] * factor;
    workgroupBarrier();
    if (sg == 0u) {
      var total = 0.0;
      for (var g = 0u; g < NSG; g++) { total += red[lane * NSG + g]; }
      o_out[row * D + lane * ELEMS + e] = total * inv_sum;
    }
    workgroupBarrier();
  }
}

// Kernel 6: softmax of each row of a (n_q, n_kv) score matrix, in place, one workgroup a row.
// Masked scores are NEG and get weight 0; a row with none visible gets all zeros.
@compute @workgroup_size(256)
fn softmax_rows(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let b = wg.x * P.n_kv;
  var local_max = NEG;
  for (var j = t; j < P.n_kv; j += 256u) { local_max = max(local_max, o_out[b + j]); }
  red[t] = local_max;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (t < s) { red[t] = max(red[t], red[t + s]); }
    workgroupBarrier();
  }
  let row_max = red[0];
  workgroupBarrier();
  var local_sum = 0.0;
  for (var j = t; j < P.n_kv; j += 256u) {
    let x = o_out[b + j];
    if (x != NEG) { local_sum += exp(x - row_max); }
  }
  red[t] = local_sum;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (t < s) { red[t] += red[t + s]; }
    workgroupBarrier();
  }
  let inv = select(0.0, 1.0 / red[0], red[0] > 0.0);
  for (var j = t; j < P.n_kv; j += 256u) {
    let x = o_out[b + j];
    o_out[b + j] = select(0.0, exp(x - row_max) * inv, x != NEG);
  }
}
