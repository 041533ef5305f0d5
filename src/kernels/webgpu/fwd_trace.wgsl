// fwd_trace.wgsl, version 0: the lesson's tiled algorithm, traced (the engine's fs_tiled).
//
// Nothing clever: one invocation owns query row i of head h and walks the KV tiles in order,
// folding each visible tile into its running (m, ℓ, o) exactly as the engine's row update does,
// in either form (the α/β normalized form or the unnormalized one). For every (row, KV tile) it
// writes a record: the tile's class and skip reason, the number of visible keys, m_old, m_blk,
// m_new, ℓ_old, ℓ_blk, ℓ_new, α, β, then the scores s[Bk], the weights P̃[Bk] = exp(s − m_blk)
// and o_new[d_v]. The host (src/kernels/gpu_records.c) turns the records into the engine's
// TILE / SKIP / ROW / OUT events, in the engine's loop order, and compares them with its trace.
//
// Shapes: Q or S (given scores) in qs; K, V, O as in common.wgsl; ml (n_q_heads · n_q, 2): m in
// the run's units and ℓ; rec (n_q_heads, n_q, n_kt, rec_len), rec_len = 11 + 2 Bk + d_v.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> qs: array<f32>;
@group(0) @binding(2) var<storage, read> k_in: array<f32>;
@group(0) @binding(3) var<storage, read> v_in: array<f32>;
@group(0) @binding(4) var<storage, read> mask_bits: array<u32>;
@group(0) @binding(5) var<storage, read_write> o_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> ml: array<f32>;
@group(0) @binding(7) var<storage, read_write> rec: array<f32>;

const R_CLS = 0u; const R_WHY = 1u; const R_VISIBLE = 2u; const R_M_OLD = 3u; const R_M_BLK = 4u;
const R_M_NEW = 5u; const R_L_OLD = 6u; const R_L_BLK = 7u; const R_L_NEW = 8u; const R_ALPHA = 9u;
const R_BETA = 10u; const R_STATS = 11u;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let g = gid.x;
  if (g >= P.n_q_heads * P.n_q) { return; }
  let h = g / P.n_q;
  let i = g % P.n_q;
  let kvh = h / (P.n_q_heads / P.n_kv_heads);
  let qt = i / P.Bq;
  let r0 = qt * P.Bq;
  let r1 = min(r0 + P.Bq, P.n_q);
  let qbase = g * P.d;
  let kbase = kvh * P.n_kv * P.d;
  let vbase = kvh * P.n_kv * P.d_v;
  let obase = g * P.d_v;
  for (var c = 0u; c < P.d_v; c++) { o_out[obase + c] = 0.0; }
  var m = NEG;
  var l = 0.0;

  for (var kt = 0u; kt < P.n_kt; kt++) {
    let c0 = kt * P.Bk;
    let c1 = min(c0 + P.Bk, P.n_kv);
    let nc = c1 - c0;
    let rb = (g * P.n_kt + kt) * P.rec_len;
    let sb = rb + R_STATS;     // s[Bk]
    let pb = sb + P.Bk;        // P̃[Bk]
    let ob = pb + P.Bk;        // o_new[d_v]
    let cw = classify(r0, r1, c0, c1);
    rec[rb + R_CLS] = f32(cw.x);
    rec[rb + R_WHY] = f32(cw.y);
    if (cw.x == SKIPPED) { continue; }   // costs nothing

    // s = scale · q·k (or the given score), soft-capped, masked only in partial tiles
    var m_blk = NEG;
    var seen = 0u;
    for (var j = 0u; j < nc; j++) {
      var x = NEG;
      if (cw.x == FULL || visible(i, c0 + j)) {
        if (has(F_GIVEN_S)) {
          x = qs[g * P.n_kv + c0 + j];
          if (x != NEG) { x *= P.scale; }
        } else {
          var dot = 0.0;
          let kb = kbase + (c0 + j) * P.d;
          for (var c = 0u; c < P.d; c++) { dot = fma(qs[qbase + c], k_in[kb + c], dot); }
          x = dot * P.scale;
        }
        if (x != NEG) {
          x = capped(x);
          if (has(F_EXP2)) { x *= LOG2E; }
        }
      }
      rec[sb + j] = x;
      if (x != NEG) { seen++; m_blk = max(m_blk, x); }
    }
    // P̃ = exp(s − m_blk), ℓ_blk = Σ P̃ (0 where masked, all 0 when nothing is visible)
    var l_blk = 0.0;
    for (var j = 0u; j < nc; j++) {
      let x = rec[sb + j];
      var p = 0.0;
      if (m_blk != NEG && x != NEG) { p = ex(x - m_blk); }
      rec[pb + j] = p;
      l_blk += p;
    }
    let m_old = m;
    let l_old = l;
    let m_new = max(m_old, m_blk);
    var alpha = 1.0;
    var beta = 0.0;
    var l_new = l_old;
    if (m_new != NEG) {
      alpha = select(ex(m_old - m_new), 0.0, m_old == NEG);   // 0 on the first visible key
      beta = select(ex(m_blk - m_new), 0.0, m_blk == NEG);    // 0 when the tile shows nothing
      if (has(F_NORMALIZED)) {
        // o_new = (α ℓ_old o_old + β P̃ V) / ℓ_new
        l_new = alpha * l_old + beta * l_blk;
        for (var c = 0u; c < P.d_v; c++) {
          var pv = 0.0;
          for (var j = 0u; j < nc; j++) {
            let p = rec[pb + j];
            if (p != 0.0) { pv = fma(p, v_in[vbase + (c0 + j) * P.d_v + c], pv); }
          }
          o_out[obase + c] = (alpha * l_old * o_out[obase + c] + beta * pv) / l_new;
        }
      } else {
        // P = exp(s − m_new);  ℓ_new = α ℓ_old + Σ P;  o_new = α o_old + P V
        var sum = 0.0;
        for (var j = 0u; j < nc; j++) {
          let x = rec[sb + j];
          if (x != NEG) { sum += ex(x - m_new); }
        }
        for (var c = 0u; c < P.d_v; c++) {
          var pv = 0.0;
          for (var j = 0u; j < nc; j++) {
            let x = rec[sb + j];
            if (x != NEG) { pv = fma(ex(x - m_new), v_in[vbase + (c0 + j) * P.d_v + c], pv); }
          }
          o_out[obase + c] = alpha * o_out[obase + c] + pv;
        }
        l_new = alpha * l_old + sum;
      }
    }
    m = m_new;
    l = l_new;
    rec[rb + R_VISIBLE] = f32(seen);
    rec[rb + R_M_OLD] = m_old;
    rec[rb + R_M_BLK] = m_blk;
    rec[rb + R_M_NEW] = m_new;
    rec[rb + R_L_OLD] = l_old;
    rec[rb + R_L_BLK] = l_blk;
    rec[rb + R_L_NEW] = l_new;
    rec[rb + R_ALPHA] = alpha;
    rec[rb + R_BETA] = beta;
    for (var c = 0u; c < P.d_v; c++) { rec[ob + c] = o_out[obase + c]; }
  }
  // The unnormalized form divides by ℓ once, at the end (a row that saw nothing stays 0).
  if (!has(F_NORMALIZED)) {
    for (var c = 0u; c < P.d_v; c++) {
      o_out[obase + c] = select(0.0, o_out[obase + c] / l, l > 0.0);
    }
  }
  ml[2u * g] = m;
  ml[2u * g + 1u] = l;
}
