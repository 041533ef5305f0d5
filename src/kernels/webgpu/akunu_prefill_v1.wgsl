// akunu_prefill_v1.wgsl: 003's kernel 4, Prefill V1 (flash_attention_prefill_f16 in 003's Metal),
// with its dispatch shape and thread assignment, in plain WGSL: no matrix unit.
//
// 003's geometry, kept: a workgroup (threadgroup) of 128 invocations, four SIMD groups of 32,
// takes NQ query rows of one head (NQ = 16 for d ≤ 64, 8 for d ≤ 128, 4 for d ≤ 256: 003's table;
// halved where this device's workgroup memory is smaller) and walks the keys in blocks of 32.
// The output accumulator O lives in workgroup memory (003's tg_O, float32), with the rows' running
// maximum and sum (tg_row_max, tg_row_sum); the scores of a block go to workgroup memory (tg_S);
// the V block is loaded into workgroup memory once per block and serves every pass; K is read
// straight from device memory. Rows are taken in passes of 8 (003's TILE_ROWS: the matrix
// unit's 8 × 8 tile), each pass: S = Q Kᵀ, the online softmax, O = α O + P V.
//
// What replaces 003's matrix unit (simdgroup_matrix, 8 × 8, 2 entries a lane: thread_elements()).
// Each lane of a SIMD group owns the same number of entries of every 8 × 8 tile as on Apple's
// hardware, two: row ⌊lane / 4⌋, columns 2 (lane mod 4) and 2 (lane mod 4) + 1, and computes
// them with plain loops:
//   simdgroup_load(q_tile, tg_Q …)        the lane reads its row of Q from workgroup memory (Qs)
//   simdgroup_load(k_tile, k_base …, true) the lane reads its two keys' rows straight from device
//                                         memory (k_in); a transposed load is only an index here
//   simdgroup_multiply_accumulate (Q Kᵀ)  the lane's two dot products, a loop over the head size;
//                                         SIMD group g takes the 8 keys 8g … 8g + 7 of the block
//   simdgroup_load(o, tg_O), P, V, multiply_accumulate, simdgroup_store(o, tg_O)
//                                         the lane reads its two entries of O from Os, scales them
//                                         by the row's correction α, adds Σⱼ P[row, j] V[j, col]
//                                         (a loop over the block's 32 keys) and writes them back;
//                                         SIMD group g takes O's 8-column tiles g, g + 4, …
//   simd_max / simd_sum of a row          4 invocations a row (8 scores each): subgroup shuffles
//                                         (xor 1, 2) where the adapter has subgroups of at least 4
//                                         lanes, else through workgroup memory (SUBGROUPS form)
//   half storage and products             float32 throughout
//   function constants FC_HEAD_DIM, FC_NQ_ROWS
//                                         override constants D and NQ; FC_NON_CAUSAL and the tree
//                                         mask are common.wgsl's masks (Params)
// 003 stages the K block in workgroup memory when the block has fewer than 32 keys (an 8 × 8 load
// would read past the end) and reuses that buffer as P's scratch; a plain loop reads only the keys
// that exist, so every block's K comes from device memory here, and P has its own scratch (Ps).
// 003's causal skip (blocks past the last row's position) and block classification (a fully
// visible block only scaled, a partial one masked key by key) are common.wgsl's classify: the
// workgroup skips the blocks its rows cannot see and tests (row, key) only in partial ones.
// The softmax takes exp, scores scaled by 1/√d (V1 has no exp2; that is V2's).
//
// Shapes: q (n_q_heads, n_q, D), k and v (n_kv_heads, n_kv, D), o like q, float32; lse
// (n_q_heads, n_q): m + ln ℓ per row, natural units. Dispatch: (⌈n_q / NQ⌉, n_q_heads).
// The host compiles two forms of this file: with `enable subgroups;` (SUBGROUPS) or without.

override D: u32 = 64u;       // head size (d = d_v), 1 to 256
override NQ: u32 = 16u;      // query rows of a workgroup: 16, 8 or 4
const WG: u32 = 128u;        // 4 SIMD groups of 32 (003's V2_TG_SIZE)
const BK: u32 = 32u;         // keys of a block (003's KV_BLOCK_SIZE)
const TR: u32 = 8u;          // rows of a pass (003's TILE_ROWS)
override NT: u32 = (D + 7u) / 8u;   // 8-column tiles of O

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> q_in: array<f32>;
@group(0) @binding(2) var<storage, read> k_in: array<f32>;
@group(0) @binding(3) var<storage, read> v_in: array<f32>;
@group(0) @binding(4) var<storage, read> mask_bits: array<u32>;
@group(0) @binding(5) var<storage, read_write> o_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;

var<workgroup> Qs: array<f32, NQ * D>;      // tg_Q
var<workgroup> Os: array<f32, NQ * D>;      // tg_O: the output accumulator
var<workgroup> Vs: array<f32, BK * D>;      // tg_V: the block's values
var<workgroup> Ss: array<f32, NQ * BK>;     // tg_S: the block's scores
var<workgroup> Ps: array<f32, TR * BK>;     // the pass's weights P = exp(S − m_new)
var<workgroup> row_max: array<f32, NQ>;     // tg_row_max: m of each row
var<workgroup> row_sum: array<f32, NQ>;     // tg_row_sum: ℓ of each row
var<workgroup> corr: array<f32, NQ>;        // the pass's α of each row
//#if !SUBGROUPS
var<workgroup> red: array<f32, WG>;
//#endif

//#if SUBGROUPS
// The 4 invocations of a row are neighbouring lanes of one subgroup (at least 4 lanes).
fn row_reduce_max(x: f32, t: u32) -> f32 {
  let v = max(x, subgroupShuffleXor(x, 1u));
  return max(v, subgroupShuffleXor(v, 2u));
}
fn row_reduce_sum(x: f32, t: u32) -> f32 {
  let v = x + subgroupShuffleXor(x, 1u);
  return v + subgroupShuffleXor(v, 2u);
}
//#else
// Without subgroups: through workgroup memory, two barriers each.
fn row_reduce_max(x: f32, t: u32) -> f32 {
  red[t] = x;
  workgroupBarrier();
  let b = t - t % 4u;
  let v = max(max(red[b], red[b + 1u]), max(red[b + 2u], red[b + 3u]));
  workgroupBarrier();
  return v;
}
fn row_reduce_sum(x: f32, t: u32) -> f32 {
  red[t] = x;
  workgroupBarrier();
  let b = t - t % 4u;
  let v = (red[b] + red[b + 1u]) + (red[b + 2u] + red[b + 3u]);
  workgroupBarrier();
  return v;
}
//#endif

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let h = wg.y;
  let kvh = h / (P.n_q_heads / P.n_kv_heads);   // GQA: one integer division (003)
  let r0 = wg.x * NQ;                            // the workgroup's first row
  let r1 = min(r0 + NQ, P.n_q);
  let kv0 = kvh * P.n_kv * D;
  let sg = t / 32u;                              // the SIMD group
  let lane = t % 32u;
  let fr = lane / 4u;                            // the lane's row of an 8 × 8 tile
  let fc = 2u * (lane % 4u);                     // and its first column
  let sr = t / 4u;                               // softmax: the row of invocations 4 sr … 4 sr + 3
  let sq = t % 4u;                               //          this one's keys: sq, sq + 4, …

  for (var x = t; x < NQ * D; x += WG) {
    let i = r0 + x / D;
    Qs[x] = select(0.0, q_in[(h * P.n_q + min(i, P.n_q - 1u)) * D + x % D], i < P.n_q);
    Os[x] = 0.0;
  }
  for (var r = t; r < NQ; r += WG) { row_max[r] = NEG; row_sum[r] = 0.0; }

  for (var c0 = 0u; c0 < P.n_kv; c0 += BK) {
    let c1 = min(c0 + BK, P.n_kv);
    let cls = classify(r0, r1, c0, c1).x;   // uniform: the workgroup skips together
    if (cls == SKIPPED) { continue; }
    workgroupBarrier();                      // the last block's V and P are no longer read
    for (var x = t; x < BK * D; x += WG) {
      let j = c0 + x / D;
      Vs[x] = select(0.0, v_in[kv0 + min(j, P.n_kv - 1u) * D + x % D], j < c1);
    }
    workgroupBarrier();

    for (var q0 = 0u; q0 < NQ; q0 += TR) {
      // S = Q Kᵀ: SIMD group sg scores keys c0 + 8 sg …; this lane its row fr, keys fc, fc + 1
      let pr = q0 + fr;
      if (pr < NQ) {
        let i = r0 + pr;
        for (var e = 0u; e < 2u; e++) {
          let kc = 8u * sg + fc + e;
          let j = c0 + kc;
          var s = NEG;
          if (i < P.n_q && j < c1 && (cls == FULL || visible(i, j))) {
            var dot = 0.0;
            for (var c = 0u; c < D; c++) { dot = fma(Qs[pr * D + c], k_in[kv0 + j * D + c], dot); }
            s = capped(dot * P.scale);
          }
          Ss[pr * BK + kc] = s;
        }
      }
      workgroupBarrier();

      // the online softmax of the pass's rows: 4 invocations a row, 8 scores each
      // (invocations past the pass's rows do the same on a row they clamp to, and write nothing)
      let r = min(q0 + sr, NQ - 1u);
      let mine = sr < TR && q0 + sr < NQ;
      var m_blk = NEG;
      for (var k = 0u; k < BK / 4u; k++) { m_blk = max(m_blk, Ss[r * BK + sq + 4u * k]); }
      let m_old = row_max[r];
      let m_new = max(m_old, row_reduce_max(m_blk, t));
      var l_blk = 0.0;
      for (var k = 0u; k < BK / 4u; k++) {
        let s = Ss[r * BK + sq + 4u * k];
        var p = 0.0;
        if (s != NEG) { p = exp(s - m_new); }
        if (mine) { Ps[sr * BK + sq + 4u * k] = p; }
        l_blk += p;
      }
      let alpha = select(exp(m_old - m_new), 0.0, m_old == NEG);   // 0 before the row's first key
      let l_new = alpha * row_sum[r] + row_reduce_sum(l_blk, t);
      if (mine && sq == 0u) { corr[r] = alpha; }
      workgroupBarrier();
      if (mine && sq == 0u) { row_max[r] = m_new; row_sum[r] = l_new; }   // every read of them is done

      // O = α O + P V on the pass's rows: SIMD group sg takes O's column tiles sg, sg + 4, …;
      // this lane its row fr, columns fc, fc + 1 of each
      if (pr < NQ) {
        let a = corr[pr];
        for (var tile = sg; tile < NT; tile += 4u) {
          for (var e = 0u; e < 2u; e++) {
            let col = 8u * tile + fc + e;
            if (col < D) {
              var o = Os[pr * D + col] * a;
              for (var j = 0u; j < BK; j++) { o = fma(Ps[fr * BK + j], Vs[j * D + col], o); }
              Os[pr * D + col] = o;
            }
          }
        }
      }
    }
  }
  workgroupBarrier();
  for (var x = t; x < NQ * D; x += WG) {
    let r = x / D;
    let i = r0 + r;
    if (i < P.n_q) {
      let l = row_sum[r];
      o_out[(h * P.n_q + i) * D + x % D] = select(0.0, Os[x] / l, l > 0.0);   // a row that sees no key gets 0
    }
  }
  if (t < NQ && r0 + t < P.n_q) {
    let l = row_sum[t];
    lse[h * P.n_q + r0 + t] = select(NEG, row_max[t] + log(l), l > 0.0);
  }
}
