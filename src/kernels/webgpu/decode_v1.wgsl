// decode_v1.wgsl, decode version 1: FlashDecoding at full size, the GQA group reading its KV head once.
//
// split: one workgroup per (split of the KV cache, KV head). The G = n_q_heads / n_kv_heads query
//   heads that share the KV head, times the n_q query rows, are R ≤ 8 rows that all read the
//   same keys: K and V come from memory once for all of them (000's GQA 32/8: four query heads a
//   KV head). The split's keys pass in tiles of BK through workgroup memory (K, then V in the same
//   place), loaded by all 256 invocations together, four numbers a load:
//     scores   one invocation per (row, key) of the tile: the dot of the row's q with the key
//     softmax  one invocation per row: the tile's maximum, α, P = exp2(s − m_new), ℓ
//     O += P V one invocation per (row, four output columns), kept in registers
//   At the end each row's partial (m in base-2 units, ℓ, the unnormalized o) goes to `part`.
// merge: one workgroup per (query head, row) combines the row's partials: M = max m_s,
//   w_s = 2^(m_s − M), ℓ = Σ w_s ℓ_s, o = Σ w_s o_s / ℓ (the associative merge of 000, all
//   splits at once).
//
// Shapes: q (n_q_heads, n_q, D), k and v (n_kv_heads, n_kv, D), o (n_q_heads, n_q, D);
// part (n_q_heads, n_q, n_split, 2 + D): m, ℓ, o. The split has split_len keys (a multiple of BK).
// Dispatch: split (n_split, n_kv_heads); merge (n_q, n_q_heads).

override D: u32 = 128u;     // head size, a multiple of 4, at most 256
const WG: u32 = 256u;
const BK: u32 = 32u;
const MAXR: u32 = 8u;       // rows of a group: G · n_q ≤ 8
override D4: u32 = D / 4u;
override PAD: u32 = D4 + 1u; // a key's stride in workgroup memory: keys fall in different banks

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> q_in: array<vec4f>;
@group(0) @binding(2) var<storage, read> k_in: array<vec4f>;
@group(0) @binding(3) var<storage, read> v_in: array<vec4f>;
@group(0) @binding(4) var<storage, read> mask_bits: array<u32>;
@group(0) @binding(5) var<storage, read_write> o_out: array<vec4f>;
@group(0) @binding(6) var<storage, read_write> part: array<f32>;

var<workgroup> Qs: array<vec4f, MAXR * D4>;
var<workgroup> KV: array<vec4f, BK * PAD>;
var<workgroup> Ss: array<f32, MAXR * BK>;
var<workgroup> alpha_s: array<f32, MAXR>;

@compute @workgroup_size(WG)
fn split(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let sp = wg.x;
  let kvh = wg.y;
  let G = P.n_q_heads / P.n_kv_heads;
  let R = G * P.n_q;                       // rows: (query head kvh·G + g, query row i), g-major
  let h0 = kvh * G;
  let kv0 = kvh * P.n_kv * D4;
  let first = sp * P.split_len;
  let end = min(first + P.split_len, P.n_kv);
  let qk_scale = P.scale * LOG2E;

  for (var x = t; x < R * D4; x += WG) { Qs[x] = q_in[(h0 * P.n_q + x / D4) * D4 + x % D4] * qk_scale; }
  // this invocation's running state: as the softmax owner of row t (t < R) …
  var m = NEG;
  var l = 0.0;
  // … and as the owner of output vec4s t, t + WG, … of the R · D4
  var acc: array<vec4f, 8>;
  for (var k = 0u; k < 8u; k++) { acc[k] = vec4f(0.0); }

  for (var c0 = first; c0 < end; c0 += BK) {
    let c1 = min(c0 + BK, end);
    workgroupBarrier();                    // the last tile's V is read
    for (var x = t; x < BK * D4; x += WG) {
      let j = c0 + x / D4;
      KV[(x / D4) * PAD + x % D4] = select(vec4f(0.0), k_in[kv0 + j * D4 + x % D4], j < c1);
    }
    workgroupBarrier();
    for (var x = t; x < R * BK; x += WG) {
      let r = x / BK;
      let j = x % BK;
      let i = r % P.n_q;
      var s = NEG;
      if (c0 + j < c1 && visible(i, c0 + j)) {
        var dot4 = vec4f(0.0);
        for (var y = 0u; y < D4; y++) { dot4 = fma(Qs[r * D4 + y], KV[j * PAD + y], dot4); }
        s = dot4.x + dot4.y + dot4.z + dot4.w;
        if (P.softcap > 0.0) { s = capped(s / LOG2E) * LOG2E; }
      }
      Ss[x] = s;
    }
    workgroupBarrier();
    if (t < R) {                           // the softmax of row t over this tile
      var m_blk = NEG;
      for (var j = 0u; j < BK; j++) { m_blk = max(m_blk, Ss[t * BK + j]); }
      let m_new = max(m, m_blk);
      var l_blk = 0.0;
      for (var j = 0u; j < BK; j++) {
        let s = Ss[t * BK + j];
        var p = 0.0;
        if (s != NEG) { p = exp2(s - m_new); }
        Ss[t * BK + j] = p;
        l_blk += p;
      }
      let alpha = select(exp2(m - m_new), 0.0, m == NEG);
      l = alpha * l + l_blk;
      m = m_new;
      alpha_s[t] = alpha;
    }
    for (var x = t; x < BK * D4; x += WG) {  // V over K: every score is taken
      let j = c0 + x / D4;
      KV[(x / D4) * PAD + x % D4] = select(vec4f(0.0), v_in[kv0 + j * D4 + x % D4], j < c1);
    }
    workgroupBarrier();
    for (var k = 0u; k * WG + t < R * D4; k++) {
      let x = k * WG + t;
      let r = x / D4;
      let y = x % D4;
      var o = acc[k] * alpha_s[r];
      for (var j = 0u; j < BK; j++) { o = fma(vec4f(Ss[r * BK + j]), KV[j * PAD + y], o); }
      acc[k] = o;
    }
  }
  // the partials: m and ℓ from the softmax owners, o from the output owners
  let stride = 2u + D;
  if (t < R) {
    let b = ((h0 + t / P.n_q) * P.n_q + t % P.n_q) * P.n_split + sp;
    part[b * stride] = m;
    part[b * stride + 1u] = l;
  }
  for (var k = 0u; k * WG + t < R * D4; k++) {
    let x = k * WG + t;
    let r = x / D4;
    let b = ((h0 + r / P.n_q) * P.n_q + r % P.n_q) * P.n_split + sp;
    let y = 2u + (x % D4) * 4u;
    part[b * stride + y] = acc[k].x;
    part[b * stride + y + 1u] = acc[k].y;
    part[b * stride + y + 2u] = acc[k].z;
    part[b * stride + y + 3u] = acc[k].w;
  }
}

var<workgroup> w_s: array<f32, 1024>;   // the splits' weights, 1024 at a time

@compute @workgroup_size(64)
fn merge(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let g = wg.y * P.n_q + wg.x;            // (query head, row)
  let stride = 2u + D;
  let b0 = g * P.n_split;
  var M = NEG;
  for (var s = 0u; s < P.n_split; s++) { M = max(M, part[(b0 + s) * stride]); }
  var l = 0.0;
  var acc0 = vec4f(0.0);
  var acc1 = vec4f(0.0);
  for (var s0 = 0u; s0 < P.n_split; s0 += 1024u) {
    let n = min(1024u, P.n_split - s0);
    workgroupBarrier();
    for (var s = t; s < n; s += 64u) {
      let m_s = part[(b0 + s0 + s) * stride];
      w_s[s] = select(exp2(m_s - M), 0.0, m_s == NEG);
    }
    workgroupBarrier();
    for (var s = 0u; s < n; s++) {
      let w = w_s[s];
      let b = (b0 + s0 + s) * stride;
      l += w * part[b + 1u];
      if (t < D4) {
        acc0 = fma(vec4f(w), vec4f(part[b + 2u + 4u * t], part[b + 3u + 4u * t], part[b + 4u + 4u * t], part[b + 5u + 4u * t]), acc0);
      }
      if (t + 64u < D4) {
        let y = t + 64u;
        acc1 = fma(vec4f(w), vec4f(part[b + 2u + 4u * y], part[b + 3u + 4u * y], part[b + 4u + 4u * y], part[b + 5u + 4u * y]), acc1);
      }
    }
  }
  let inv = select(0.0, 1.0 / l, l > 0.0);
  if (t < D4) { o_out[g * D4 + t] = acc0 * inv; }
  if (t + 64u < D4) { o_out[g * D4 + t + 64u] = acc1 * inv; }
}
