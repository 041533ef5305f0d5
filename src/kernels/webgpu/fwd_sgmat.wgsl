// fwd_sgmat.wgsl, prefill version 7: FlashAttention's forward on the matrix units, through
// Chromium's experimental subgroup matrices (Vulkan's cooperative matrices, Apple's simdgroup
// matrices). Q, K and V are float16; every product accumulates in float32; O and lse are float32.
//
// A subgroup matrix is a small matrix spread over the lanes of one subgroup: no lane can name
// an entry, the subgroup loads it from memory, multiplies and adds it as a whole, and stores it.
// Its shape is the adapter's: M × K times K × N into M × N (the host picks an f16 × f16 → f32
// configuration the adapter lists and passes SM, SN, SK). In WGSL's words:
//   subgroup_matrix_left<f16, SK, SM>    SM rows × SK columns (a block of Q, or of P)
//   subgroup_matrix_right<f16, SN, SK>   SK rows × SN columns (a block of Kᵀ, or of V)
//   subgroup_matrix_result<f32, SN, SM>  SM rows × SN columns (a block of S, or of O)
//
// One workgroup takes BQ = NSG · SM query rows of one head; subgroup g owns rows g·SM … g·SM +
// SM − 1 of them. Per KV tile of BK keys (tiles the mask hides from every row are skipped, as in
// every prefill here):
//   1. K's tile into workgroup memory (float16, a key a row); S = Q Kᵀ on subgroup matrices, Q
//      held in registers as D / SK left matrices for the whole run; S stored as float32.
//   2. V's tile into the same buffer. The online softmax, between the two products, on ordinary
//      invocations: TPR of them a row read the row's BK scores, scale, cap and mask them, take
//      the maximum, and write P = 2^(s − m) as float16 for the matrix units.
//   3. O += P V on subgroup matrices, O in D / SN result matrices in registers.
// A subgroup matrix has no per-row scale, so α (a row's rescaling) cannot be applied to O in
// registers. O goes through workgroup memory to be scaled, and only on the tiles that need it:
// a row keeps its maximum m until a tile's maximum passes m + TAU (2^TAU = 256), so P stays
// ≤ 256 and α = 1 on most tiles. The result is the same softmax: every p and ℓ uses the m the row
// holds, and o / ℓ does not depend on which m that is. A workgroup flag says whether any row
// moved an m it already had this tile (a first m needs no rescale: O is still 0 there); all
// subgroups then scale their O together.
//
// Probe forms (bench/webgpu/sgmat_probe.js; never the host's default), each removing one suspect
// of the float64 check failed on an NVIDIA H200 (docs/webgpu.md): QWG keeps Q in workgroup memory
// (Qs) and loads its left matrix at each use instead of keeping an array of them in registers;
// OWG keeps O in workgroup memory (Os, float32 BQ × D) instead of an array of result matrices:
// each tile's P V loads a block of O, adds to it and stores it, and α is applied to Os by the
// invocations. (The subgroup's index cannot be taken as t / SGS instead of subgroup_id: WGSL's
// uniformity analysis rejects it as a subgroup matrix's offset.)
//
// Ablation forms (bench/webgpu/bench.js --ablation; never the host's default, and wrong on
// purpose): each removes one part of a tile's work, the rest unchanged, so that its time beside the
// usual form's is that part's cost. Their outputs are finite, not right. NOQK: no S = Q Kᵀ (no K
// matrix loads, no products, no store of S: Ss keeps its zeros, so every score is 0). NOPV: no
// O += P V (O stays 0). NOSOFT: no softmax (P written once, at the start, as the constant 1/64;
// no score read, no exp2, no P written per tile, α = 1, ℓ = 1 a tile). NOLOAD: K and V loaded
// from storage into workgroup memory for the first visited tile only (the later tiles reuse what
// KV holds). KROW: K's blocks loaded row-major instead of column-major (Kᵀ's transposing load
// replaced by a plain one). They combine (NOQK and NOPV together: no matrix product at all).
//
// Shapes: q, k, v float16 (the host rounds them, to nearest, ties to even), q (n_q_heads, n_q,
// D), k and v (n_kv_heads, n_kv, D); o float32 like q; lse (n_q_heads, n_q) natural units.
// Dispatch: (⌈n_q / BQ⌉, n_q_heads). Set by the host as constants (subgroup matrix shapes must
// be constant expressions): D (64, 128 or 256), SM, SN, SK, SGS (the subgroup size; every
// subgroup of the adapter has it), NSG, BK. TPR = SGS / SM invocations a row.

enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
// the offsets below depend on the subgroup's index: uniform within a subgroup, which is what a
// subgroup matrix needs, though not within the workgroup, which is all WGSL's analysis proves
diagnostic(off, chromium_experimental.subgroup_matrix_uniformity);

const BQ: u32 = NSG * SM;             // query rows a workgroup
const WG: u32 = NSG * SGS;            // invocations a workgroup
const TPR: u32 = WG / BQ;             // invocations a row in the softmax
const NQK: u32 = D / SK;              // left matrices of Q a subgroup keeps
const NO: u32 = D / SN;               // result matrices of O a subgroup keeps
const D4: u32 = D / 4u;               // vec4<f16>s a row
const CW: u32 = min(BK, D);           // O's columns that one pass through Ss holds
const NCH: u32 = D / CW;              // passes of O through Ss
const KVN: u32 = max(BK, BQ) * D;     // the K/V buffer (it also stages Q at the start)
const TAU: f32 = 8.0;                 // a row's m moves when a score passes m + TAU (base 2)

alias Left = subgroup_matrix_left<f16, SK, SM>;
alias Right = subgroup_matrix_right<f16, SN, SK>;
alias Res = subgroup_matrix_result<f32, SN, SM>;

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> q_in: array<vec4<f16>>;   // four halves a load
@group(0) @binding(2) var<storage, read> k_in: array<vec4<f16>>;
@group(0) @binding(3) var<storage, read> v_in: array<vec4<f16>>;
@group(0) @binding(4) var<storage, read> mask_bits: array<u32>;
@group(0) @binding(5) var<storage, read_write> o_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;

var<workgroup> KV: array<f16, KVN>;   // Q (once), then each tile's K, then its V: a key a row of D
var<workgroup> Ss: array<f32, BQ * BK>;   // S, a row of BK a query row; also O on its way to be scaled
var<workgroup> Ps: array<f16, BQ * BK>;   // P as the matrix units read it
var<workgroup> alpha_s: array<f32, BQ>;   // α of each row this tile
var<workgroup> lsum: array<f32, WG>;      // the shares of ℓ, summed at the end
// some row's m moved this tile (its O needs α): moved[0]. Four words, not one, so that every
// workgroup variable is a multiple of 16 bytes long: with a lone 4-byte atomic among them, the
// H200 placed KV 4 bytes past a 16-byte boundary, and its right-hand (K and V) matrix loads read
// every row two halves early (2026-11-29: the outputs matched K and V shifted by two halves,
// exactly; the probes, whose arrays were all multiples of 16 bytes, passed)
var<workgroup> moved: array<atomic<u32>, 4>;
//#if QWG
var<workgroup> Qs: array<f16, BQ * D>;    // (probe form QWG) Q, a row of D a query row
//#endif
//#if OWG
var<workgroup> Os: array<f32, BQ * D>;    // (probe form OWG) O, a row of D a query row (zero to begin with)
//#endif

// Row `row`'s score against key c0 + j of this tile, in base-2 units, or NEG where masked.
fn score(row: u32, j: u32, r0: u32, c0: u32, c1: u32, cls: u32) -> f32 {
  let i = r0 + row;
  if (i >= P.n_q || c0 + j >= c1 || (cls == PARTIAL && !visible(i, c0 + j))) { return NEG; }
  return capped(Ss[row * BK + j] * P.scale) * LOG2E;
}

// Keys [c0, c1) of K (v false) or V (v true) into KV, a key a row, zeros past c1: four halves
// a load (KV stays an array of f16, which is what a subgroup matrix loads from).
fn load_tile(kv0: u32, c0: u32, c1: u32, t: u32, v: bool) {
  for (var x = t; x < BK * D4; x += WG) {
    let j = c0 + x / D4;
    let src = kv0 + min(j, P.n_kv - 1u) * D4 + x % D4;
    var h = vec4<f16>(0.0);
    if (j < c1 && v) { h = v_in[src]; } else if (j < c1) { h = k_in[src]; }
    KV[4u * x] = h.x;
    KV[4u * x + 1u] = h.y;
    KV[4u * x + 2u] = h.z;
    KV[4u * x + 3u] = h.w;
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32,
        @builtin(subgroup_id) sg: u32) {
  let h = wg.y;
  let kvh = h / (P.n_q_heads / P.n_kv_heads);
  let r0 = wg.x * BQ;
  let r1 = min(r0 + BQ, P.n_q);
  let kv0 = kvh * P.n_kv * D4;        // KV head kvh's first vec4<f16>
  let row = t / TPR;                  // the softmax's row of this invocation, and its share u
  let u = t % TPR;
  let mine = sg * SM * BK;            // this subgroup's rows in Ss and Ps

  // Q: staged in KV (zeros past the last row), then into registers as left matrices
  for (var x = t; x < BQ * D4; x += WG) {
    let i = r0 + x / D4;
    let w = select(vec4<f16>(0.0), q_in[(h * P.n_q + min(i, P.n_q - 1u)) * D4 + x % D4], i < P.n_q);
//#if QWG
    Qs[4u * x] = w.x;
    Qs[4u * x + 1u] = w.y;
    Qs[4u * x + 2u] = w.z;
    Qs[4u * x + 3u] = w.w;
//#else
    KV[4u * x] = w.x;
    KV[4u * x + 1u] = w.y;
    KV[4u * x + 2u] = w.z;
    KV[4u * x + 3u] = w.w;
//#endif
  }
  workgroupBarrier();
//#if !QWG
  var qL: array<Left, NQK>;
  for (var kc = 0u; kc < NQK; kc++) {
    qL[kc] = subgroupMatrixLoad<Left, row_major>(&KV, sg * SM * D + kc * SK, D);
  }
//#endif
//#if !OWG
  var acc: array<Res, NO>;            // O, zero to begin with
//#endif
  var m = NEG;                        // the row's maximum (base 2), as the row uses it
  var l = 0.0;                        // this invocation's share of the row's ℓ
//#if NOLOAD
  var first = true;                   // (NOLOAD) the first visited tile: K and V loaded
//#endif
//#if NOSOFT
  m = 0.0;                            // (NOSOFT) P = 1/64 on every key, once
  for (var x = t; x < BQ * BK; x += WG) { Ps[x] = f16(1.0 / 64.0); }
//#endif

  for (var c0 = 0u; c0 < P.n_kv; c0 += BK) {
    let c1 = min(c0 + BK, P.n_kv);
    let cls = classify(r0, r1, c0, c1).x;   // the same for every invocation
    if (cls == SKIPPED) { continue; }
    workgroupBarrier();                      // the last tile's V (or Q) is read
//#if NOLOAD
    if (first) { load_tile(kv0, c0, c1, t, false); }
//#else
    load_tile(kv0, c0, c1, t, false);
//#endif
    workgroupBarrier();

    // 1. S = Q Kᵀ: key block n is the right matrix Kᵀ[kc block, n block], K's rows read as columns
//#if !NOQK
    for (var n = 0u; n < BK / SN; n++) {
      var s = Res();
      for (var kc = 0u; kc < NQK; kc++) {
//#if KROW
        let kr = subgroupMatrixLoad<Right, row_major>(&KV, n * SN * D + kc * SK, D);
//#else
        let kr = subgroupMatrixLoad<Right, col_major>(&KV, n * SN * D + kc * SK, D);
//#endif
//#if QWG
        let ql = subgroupMatrixLoad<Left, row_major>(&Qs, sg * SM * D + kc * SK, D);
        s = subgroupMatrixMultiplyAccumulate(ql, kr, s);
//#else
        s = subgroupMatrixMultiplyAccumulate(qL[kc], kr, s);
//#endif
      }
      subgroupMatrixStore<row_major>(&Ss, mine + n * SN, s, BK);
    }
//#endif
    workgroupBarrier();                      // S is in Ss; K is read
//#if NOLOAD
    if (first) { load_tile(kv0, c0, c1, t, true); }
    first = false;
//#else
    load_tile(kv0, c0, c1, t, true);
//#endif

    // 2. the online softmax of row `row`: its maximum from all BK scores, its P for keys u, u + TPR, …
//#if NOSOFT
    l += 1.0;
//#else
    var m_blk = NEG;
    for (var j = 0u; j < BK; j++) { m_blk = max(m_blk, score(row, j, r0, c0, c1, cls)); }
    var alpha = 1.0;
    if (m_blk > m + TAU) {                   // also a row's first visible score (m = NEG)
      alpha = select(exp2(m - m_blk), 0.0, m == NEG);
      if (m != NEG && u == 0u) { atomicStore(&moved[0], 1u); }
      m = m_blk;
    }
    if (u == 0u) { alpha_s[row] = alpha; }
    var share = 0.0;
    for (var j = u; j < BK; j += TPR) {
      let s = score(row, j, r0, c0, c1, cls);
      let p = f16(select(0.0, exp2(s - m), s != NEG));   // ≤ 2^TAU
      Ps[row * BK + j] = p;
      share += f32(p);                      // ℓ from the rounded p the product uses
    }
    l = alpha * l + share;
//#endif

    // O ← diag(α) O, through Ss, on the tiles where some row's m moved (the flag read uniformly;
    // workgroupUniformLoad waits for every invocation's writes)
    if (workgroupUniformLoad(&moved[0]) != 0u) {
//#if OWG
      for (var x = t; x < BQ * D; x += WG) { Os[x] *= alpha_s[x / D]; }
      workgroupBarrier();
//#else
      for (var ch = 0u; ch < NCH; ch++) {
        for (var b = 0u; b < CW / SN; b++) {
          subgroupMatrixStore<row_major>(&Ss, mine + b * SN, acc[ch * (CW / SN) + b], BK);
        }
        workgroupBarrier();
        for (var x = t; x < BQ * BK; x += WG) { Ss[x] *= alpha_s[x / BK]; }
        workgroupBarrier();
        for (var b = 0u; b < CW / SN; b++) {
          acc[ch * (CW / SN) + b] = subgroupMatrixLoad<Res, row_major>(&Ss, mine + b * SN, BK);
        }
        workgroupBarrier();
      }
//#endif
      if (t == 0u) { atomicStore(&moved[0], 0u); }
    }
    workgroupBarrier();                      // P and V are written

    // 3. O += P V: P's key block kk (left) times V's rows kk block, columns nc block (right)
//#if NOPV
//#elif OWG
    for (var nc = 0u; nc < NO; nc++) {
      var o = subgroupMatrixLoad<Res, row_major>(&Os, sg * SM * D + nc * SN, D);
      for (var kk = 0u; kk < BK / SK; kk++) {
        let pl = subgroupMatrixLoad<Left, row_major>(&Ps, mine + kk * SK, BK);
        let vr = subgroupMatrixLoad<Right, row_major>(&KV, kk * SK * D + nc * SN, D);
        o = subgroupMatrixMultiplyAccumulate(pl, vr, o);
      }
      subgroupMatrixStore<row_major>(&Os, sg * SM * D + nc * SN, o, D);
    }
//#else
    for (var kk = 0u; kk < BK / SK; kk++) {
      let pl = subgroupMatrixLoad<Left, row_major>(&Ps, mine + kk * SK, BK);
      for (var nc = 0u; nc < NO; nc++) {
        let vr = subgroupMatrixLoad<Right, row_major>(&KV, kk * SK * D + nc * SN, D);
        acc[nc] = subgroupMatrixMultiplyAccumulate(pl, vr, acc[nc]);
      }
    }
//#endif
  }

  // the end: ℓ of a row is the sum of its TPR shares; O / ℓ written CW columns at a time
  lsum[t] = l;
  workgroupBarrier();
//#if OWG
  for (var x = t; x < BQ * D; x += WG) {
    let i = r0 + x / D;
    if (i >= P.n_q) { continue; }
    var L = 0.0;
    for (var k = 0u; k < TPR; k++) { L += lsum[(x / D) * TPR + k]; }
    o_out[(h * P.n_q + i) * D + x % D] = select(0.0, Os[x] / L, L > 0.0);
  }
//#else
  for (var ch = 0u; ch < NCH; ch++) {
    workgroupBarrier();                      // the last pass's Ss is read
    for (var b = 0u; b < CW / SN; b++) {
      subgroupMatrixStore<row_major>(&Ss, mine + b * SN, acc[ch * (CW / SN) + b], BK);
    }
    workgroupBarrier();
    for (var x = t; x < BQ * BK; x += WG) {
      let rr = x / BK;
      let cc = x % BK;
      let i = r0 + rr;
      if (cc >= CW || i >= P.n_q) { continue; }
      var L = 0.0;
      for (var k = 0u; k < TPR; k++) { L += lsum[rr * TPR + k]; }
      o_out[(h * P.n_q + i) * D + ch * CW + cc] = select(0.0, Ss[x] / L, L > 0.0);   // a row that sees no key gets 0
    }
  }
//#endif
  let i = r0 + row;
  if (u == 0u && i < P.n_q) {
    var L = 0.0;
    for (var k = 0u; k < TPR; k++) { L += lsum[row * TPR + k]; }
    lse[h * P.n_q + i] = select(NEG, m / LOG2E + log(L), L > 0.0);
  }
}
