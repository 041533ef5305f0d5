// decode_v3.wgsl, decode version 3: subgroups stream the keys, no barrier until the end.
//
// Versions 1 and 2 pass each tile of 32 keys through workgroup memory with four barriers, so a
// workgroup has at most one tile's loads in flight and waits for them between phases. Here the
// split's keys are shared out like 003's parallel decode: subgroup g of the workgroup takes keys
// g, g + NSG, … (two at a time, both loads issued before either is used), and each lane holds
// four columns of every query row of the GQA group and of the key (one vec4 for d ≤ 4 · lanes).
// A key's R dot products are R subgroupAdds; the online softmax (m, ℓ, o) of each row is kept in
// registers, the same in every lane. Only at the end do the NSG subgroups merge their states
// through workgroup memory (003's cross-SG reduction), and the split's partial goes to `part`
// for decode version 2's merge.
//
// Needs subgroups of one size (LANES). Shapes as version 1; dispatch (n_split, n_kv_heads),
// NSG · LANES invocations.

override D: u32 = 128u;
override LANES: u32 = 32u;
override NSG: u32 = 8u;                 // subgroups of a workgroup
override RQ: u32 = 4u;                  // rows of the group, G · n_q (a constant, so that the
                                        // row loops unroll and q, o stay in registers)
const MAXR: u32 = 8u;
override D4: u32 = D / 4u;
override NV: u32 = (D4 + LANES - 1u) / LANES;   // vec4s of a row a lane holds (≤ 2)

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> q_in: array<vec4f>;
@group(0) @binding(2) var<storage, read> k_in: array<vec4f>;
@group(0) @binding(3) var<storage, read> v_in: array<vec4f>;
@group(0) @binding(4) var<storage, read> mask_bits: array<u32>;
@group(0) @binding(6) var<storage, read_write> part: array<f32>;

var<workgroup> sm_ml: array<vec2f, 64>;          // (m, ℓ) of subgroup g, row r at g · MAXR + r (NSG ≤ 8)
var<workgroup> sm_o: array<vec4f, 512>;          // o of subgroup g for one row: g · D4 + y

// the score of key j against row r from the lane's columns; NEG when masked
fn score(q: ptr<function, array<array<vec4f, 2>, 8>>, r: u32, kv: ptr<function, array<vec4f, 2>>, i: u32, j: u32, live: bool) -> f32 {
  var d = 0.0;
  for (var v = 0u; v < NV; v++) { d += dot((*q)[r][v], (*kv)[v]); }
  d = subgroupAdd(d);
  if (!live || !visible(i, j)) { return NEG; }
  if (P.softcap > 0.0) { d = capped(d / LOG2E) * LOG2E; }
  return d;
}

@compute @workgroup_size(NSG * LANES)
fn split(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let sp = wg.x;
  let kvh = wg.y;
  let G = P.n_q_heads / P.n_kv_heads;
  let R = RQ;                           // = G · n_q, as the host sets it
  let h0 = kvh * G;
  let kv0 = kvh * P.n_kv * D4;
  let first = sp * P.split_len;
  let end = min(first + P.split_len, P.n_kv);
  let g = t / LANES;
  let lane = t % LANES;
  let qk_scale = P.scale * LOG2E;
  var q: array<array<vec4f, 2>, 8>;
  var acc: array<array<vec4f, 2>, 8>;
  var m: array<f32, 8>;
  var l: array<f32, 8>;
  for (var r = 0u; r < R; r++) {
    m[r] = NEG;
    l[r] = 0.0;
    for (var v = 0u; v < NV; v++) {
      let y = lane + v * LANES;
      q[r][v] = select(vec4f(0.0), q_in[(h0 * P.n_q + r) * D4 + min(y, D4 - 1u)] * qk_scale, y < D4);
      acc[r][v] = vec4f(0.0);
    }
  }
  // every subgroup makes the same number of passes (a pass past the end reads a clamped key and
  // keeps nothing), so that subgroupAdd always has the whole subgroup
  let n = end - first;
  let passes = (n + 2u * NSG - 1u) / (2u * NSG);
  for (var it = 0u; it < passes; it++) {
    let ja = first + it * 2u * NSG + g;
    let jb = ja + NSG;
    let la = ja < end;
    let lb = jb < end;
    var ka: array<vec4f, 2>;
    var kb: array<vec4f, 2>;
    var va: array<vec4f, 2>;
    var vb: array<vec4f, 2>;
    for (var v = 0u; v < NV; v++) {    // four loads in flight before any is used
      let y = min(lane + v * LANES, D4 - 1u);
      ka[v] = k_in[kv0 + min(ja, P.n_kv - 1u) * D4 + y];
      kb[v] = k_in[kv0 + min(jb, P.n_kv - 1u) * D4 + y];
      va[v] = v_in[kv0 + min(ja, P.n_kv - 1u) * D4 + y];
      vb[v] = v_in[kv0 + min(jb, P.n_kv - 1u) * D4 + y];
    }
    for (var r = 0u; r < R; r++) {
      let i = r % P.n_q;
      let sa = score(&q, r, &ka, i, ja, la);
      let sb = score(&q, r, &kb, i, jb, lb);
      let m_new = max(m[r], max(sa, sb));
      // (no branch on the scores: subgroupAdd needs every lane on the same path, and WGSL's
      // analysis cannot see that the scores are the same in every lane; a row that has seen
      // nothing yet keeps α = 1 and weights 0)
      let alpha = select(select(exp2(m[r] - m_new), 0.0, m[r] == NEG), 1.0, m_new == NEG);
      let pa = select(0.0, exp2(sa - m_new), sa != NEG);
      let pb = select(0.0, exp2(sb - m_new), sb != NEG);
      l[r] = alpha * l[r] + pa + pb;
      m[r] = m_new;
      for (var v = 0u; v < NV; v++) { acc[r][v] = fma(vec4f(pa), va[v], fma(vec4f(pb), vb[v], acc[r][v] * alpha)); }
    }
  }
  // the NSG subgroups' states merged, row by row
  if (lane == 0u) { for (var r = 0u; r < R; r++) { sm_ml[g * MAXR + r] = vec2f(m[r], l[r]); } }
  workgroupBarrier();
  let stride = 2u + D;
  for (var r = 0u; r < R; r++) {
    var M = NEG;
    for (var s = 0u; s < NSG; s++) { M = max(M, sm_ml[s * MAXR + r].x); }
    let f = select(exp2(m[r] - M), 0.0, m[r] == NEG);
    for (var v = 0u; v < NV; v++) {
      let y = lane + v * LANES;
      if (y < D4) { sm_o[g * D4 + y] = acc[r][v] * f; }
    }
    workgroupBarrier();
    let b = (((h0 + r / P.n_q) * P.n_q + r % P.n_q) * P.n_split + sp) * stride;
    for (var y = t; y < D4; y += NSG * LANES) {
      var o = vec4f(0.0);
      for (var s = 0u; s < NSG; s++) { o += sm_o[s * D4 + y]; }
      part[b + 2u + 4u * y] = o.x;
      part[b + 3u + 4u * y] = o.y;
      part[b + 4u + 4u * y] = o.z;
      part[b + 5u + 4u * y] = o.w;
    }
    if (t == 0u) {
      var L = 0.0;
      for (var s = 0u; s < NSG; s++) {
        let st = sm_ml[s * MAXR + r];
        if (st.x != NEG) { L += st.y * exp2(st.x - M); }
      }
      part[b] = M;
      part[b + 1u] = L;
    }
    workgroupBarrier();
  }
}
