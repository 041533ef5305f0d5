// fwd_v4.wgsl, version 4: the next tile's loads in flight while this tile is computed.
//
// What changes from version 3, one idea: version 3 reads each K and V tile from device memory
// between two barriers, so every invocation of the workgroup waits out the load's whole latency
// twice a tile, with nothing to do. Here an invocation carries its share of a tile in registers
// (pf: NPF vec4s, tile words t, t + WG, …) and issues the loads one phase early:
//   V of this tile is requested before S = Q Kᵀ is computed, and stored to workgroup memory after;
//   K of the next visited tile is requested before O += P V, and stored at the next tile's start.
// So the loads' latency runs under the products, and only the stores to workgroup memory sit
// between barriers. The next visited tile is found ahead (masks skip tiles, and a bitmask may
// skip any). Everything else (the 4 × 2 block of S, the softmax by subgroup shuffles or
// workgroup memory, P transposed, the 4 × D/16 block of O) is version 3's.
//
// Shapes as version 1. Dispatch: (⌈n_q / BQ⌉, n_q_heads). D: 64, 128 or 256, where BQ = 4 TY
// rows fit the device's workgroup memory and a tile's share fits NPF ≤ MAXPF registers.
//
// Version 6 is this file's H16 form (the host sets it only where the device has shader-f16): Q,
// K and V stored as float16 (`enable f16;`, arrays of vec4<f16>, half the bytes of every load),
// widened to float32 as they are read (vec4f(…), a no-op in the float32 forms); everything after
// the load is version 4's float32 arithmetic.
//
// Version 5 is this file's NODOT form (the host sets it), one idea more: version 4 (like 3) scores
// a row against a key with dot(q, k) per four columns and adds the four dots into the block of S:
// per four columns and pair, one multiply, three multiply-adds and an add, five instructions for
// four multiply-adds. In version 5 each (row, key) pair of the 4 × 2 block keeps four running
// sums, one per lane of a vec4 (four multiply-adds, nothing else), added once a tile, after the
// loop over the head's columns: eight vec4 accumulators (32 registers) instead of two.
//
// Version 11 is this file's NODOT and LAZY form, one idea more, from version 5's ablation on the
// H200 (`2026-11-29-h200-v5-ablation`: its softmax took about 1.7 of 7.7 ms at d = 128, a chain of
// dependent steps between two barriers every tile): (1) a row's m moves only when some score of
// the tile passes m + TAU (the lazy rescale of versions 7-10), which each subgroup learns with one
// subgroupAny instead of the row group's maximum (four shuffles); only then is the maximum taken
// and O rescaled; P = exp2(s − m) ≤ 2^TAU meanwhile, and the 2^TAU cancels in O / ℓ; (2) ℓ is kept
// as each invocation's own share of its rows' sums (a row's α is the same in all its lanes) and
// summed over the row group once, at the end, instead of every tile. Without subgroups m moves
// every tile, as in version 5, and only (2) applies.
//
// Ablation forms (bench.js --ablation with prefill-v5 or -v11 in --only; never the host's
// default; finite, not right), to measure where the time goes as for the matrix-unit versions:
// NOQK (no S = Q Kᵀ loop: every score 0), NOPV (no O += P V loop), NOSOFT (no maximum, exp2 or
// sums across the row group: P = 1/32, α = 1; the compiler may drop S with it), NOLOAD (every
// tile's K and V fetched from the first visited tile's place: cache hits).

override D: u32 = 64u;
override TY: u32 = 16u;               // row groups: BQ = 4 TY, invocations 16 TY
const TX: u32 = 16u;
const BK: u32 = 32u;
override BQ: u32 = 4u * TY;
override WG: u32 = TX * TY;
override D4: u32 = D / 4u;
override NV: u32 = D4 / TX;           // output vec4s of a row an invocation keeps (1, 2 or 4)
override PAD: u32 = D4 + 1u;          // a key's stride in workgroup memory (vec4s)
const MAXPF: u32 = 16u;
override NPF: u32 = (BK * D4 + WG - 1u) / WG;   // vec4s of a tile an invocation carries (≤ MAXPF)

@group(0) @binding(0) var<uniform> P: Params;
//#if H16
enable f16;
@group(0) @binding(1) var<storage, read> q_in: array<vec4<f16>>;
@group(0) @binding(2) var<storage, read> k_in: array<vec4<f16>>;
@group(0) @binding(3) var<storage, read> v_in: array<vec4<f16>>;
//#else
@group(0) @binding(1) var<storage, read> q_in: array<vec4f>;
@group(0) @binding(2) var<storage, read> k_in: array<vec4f>;
@group(0) @binding(3) var<storage, read> v_in: array<vec4f>;
//#endif
@group(0) @binding(4) var<storage, read> mask_bits: array<u32>;
@group(0) @binding(5) var<storage, read_write> o_out: array<vec4f>;
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;

var<workgroup> Qs: array<vec4f, BQ * D4>;
var<workgroup> KV: array<vec4f, BK * PAD>;
var<workgroup> Pt: array<vec4f, BK * TY>;   // P transposed: key j, rows 4 ty … 4 ty + 3
//#if !SUBGROUPS
var<workgroup> red: array<vec4f, WG>;
//#endif

//#if SUBGROUPS
// Over the 16 invocations of a row group: neighbouring lanes of one subgroup.
fn group_max(x: vec4f, t: u32) -> vec4f {
  var v = x;
  for (var s = 1u; s < TX; s <<= 1u) { v = max(v, subgroupShuffleXor(v, s)); }
  return v;
}
fn group_sum(x: vec4f, t: u32) -> vec4f {
  var v = x;
  for (var s = 1u; s < TX; s <<= 1u) { v += subgroupShuffleXor(v, s); }
  return v;
}
//#else
fn group_max(x: vec4f, t: u32) -> vec4f {
  red[t] = x;
  workgroupBarrier();
  let b = t - t % TX;
  var v = red[b];
  for (var s = 1u; s < TX; s++) { v = max(v, red[b + s]); }
  workgroupBarrier();
  return v;
}
fn group_sum(x: vec4f, t: u32) -> vec4f {
  red[t] = x;
  workgroupBarrier();
  let b = t - t % TX;
  var v = red[b];
  for (var s = 1u; s < TX; s++) { v += red[b + s]; }
  workgroupBarrier();
  return v;
}
//#endif

//#if LAZY
const TAU: f32 = 8.0;                  // (LAZY) a row's m moves when a score passes m + TAU (base 2)
//#if SUBGROUPS
// (LAZY) the branch on subgroupAny's answer, which is the same in every lane of a subgroup (so the
// row group's shuffles inside it run in all 16 of its lanes), a fact WGSL's analysis cannot see
diagnostic(off, subgroup_uniformity);
//#endif
//#endif

// exp2(s − m) for a visible score, 0 for a masked one
fn w(s: f32, m: f32) -> f32 { return select(0.0, exp2(s - m), s != NEG); }

// The first tile at or after key c0 that the mask leaves any visible key in (n_kv if none).
fn next_tile(r0: u32, r1: u32, c0: u32) -> u32 {
  var c = c0;
  while (c < P.n_kv && classify(r0, r1, c, min(c + BK, P.n_kv)).x == SKIPPED) { c += BK; }
  return c;
}

// This invocation's share of the K (v false) or V (v true) tile at key c0: words t, t + WG, …
// of its BK × D4 vec4s, zeros past the last key. Only requested here; used at put().
fn fetch(v: bool, kv0: u32, c0: u32, t: u32) -> array<vec4f, MAXPF> {
  var r: array<vec4f, MAXPF>;
  for (var i = 0u; i < NPF; i++) {
    let x = t + i * WG;
    let j = c0 + x / D4;
    let ok = x < BK * D4 && j < P.n_kv;
    let src = kv0 + min(j, P.n_kv - 1u) * D4 + x % D4;
    var w = vec4f(0.0);
    if (ok && v) { w = vec4f(v_in[src]); } else if (ok) { w = vec4f(k_in[src]); }
    r[i] = w;
  }
  return r;
}

// The share into the tile in workgroup memory (a key's row PAD vec4s apart).
fn put(r: array<vec4f, MAXPF>, t: u32) {
  for (var i = 0u; i < NPF; i++) {
    let x = t + i * WG;
    if (x < BK * D4) { KV[(x / D4) * PAD + x % D4] = r[i]; }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let h = wg.y;
  let kvh = h / (P.n_q_heads / P.n_kv_heads);
  let r0 = wg.x * BQ;
  let r1 = min(r0 + BQ, P.n_q);
  let ty = t / TX;
  let tx = t % TX;
  let kv0 = kvh * P.n_kv * D4;
  let qk_scale = P.scale * LOG2E;
  for (var x = t; x < BQ * D4; x += WG) {
    let qi = r0 + x / D4;
    Qs[x] = select(vec4f(0.0), vec4f(q_in[(h * P.n_q + min(qi, P.n_q - 1u)) * D4 + x % D4]) * qk_scale, qi < P.n_q);
  }
  var m = vec4f(NEG);                  // the running maximum of rows 4 ty + a, a = 0 … 3
  var l = vec4f(0.0);
  var acc: array<array<vec4f, 4>, 4>;  // [row a][output vec4 c], c < NV
  for (var a = 0u; a < 4u; a++) { for (var c = 0u; c < 4u; c++) { acc[a][c] = vec4f(0.0); } }

  var c0 = next_tile(r0, r1, 0u);
  var pf = fetch(false, kv0, c0, t);        // K of the first visited tile
//#if NOLOAD
  let c_first = c0;                         // (NOLOAD) every fetch from here
//#endif
  while (c0 < P.n_kv) {
    let c1 = min(c0 + BK, P.n_kv);
    let cls = classify(r0, r1, c0, c1).x;   // uniform over the workgroup
    workgroupBarrier();                      // the last tile's V and P are read
    put(pf, t);
    workgroupBarrier();
//#if NOLOAD
    pf = fetch(true, kv0, c_first, t);
//#else
    pf = fetch(true, kv0, c0, t);            // V of this tile: in flight during S
//#endif

    // S: rows 4 ty + a (a = 0 … 3) against keys tx and tx + 16, as vec4s over the rows
//#if NODOT
    var a0 = vec4f(0.0); var b0 = vec4f(0.0); var c0_ = vec4f(0.0); var d0 = vec4f(0.0);   // rows a … d, key tx
    var a1 = vec4f(0.0); var b1 = vec4f(0.0); var c1_ = vec4f(0.0); var d1 = vec4f(0.0);   // rows a … d, key tx + 16
//#else
    var s0 = vec4f(0.0);
    var s1 = vec4f(0.0);
//#endif
//#if !NOQK
    for (var y = 0u; y < D4; y++) {
      let k0 = KV[tx * PAD + y];
      let k1 = KV[(tx + 16u) * PAD + y];
      let qa = Qs[(4u * ty) * D4 + y];
      let qb = Qs[(4u * ty + 1u) * D4 + y];
      let qc = Qs[(4u * ty + 2u) * D4 + y];
      let qd = Qs[(4u * ty + 3u) * D4 + y];
//#if NODOT
      a0 = fma(qa, k0, a0); b0 = fma(qb, k0, b0); c0_ = fma(qc, k0, c0_); d0 = fma(qd, k0, d0);
      a1 = fma(qa, k1, a1); b1 = fma(qb, k1, b1); c1_ = fma(qc, k1, c1_); d1 = fma(qd, k1, d1);
//#else
      s0 += vec4f(dot(qa, k0), dot(qb, k0), dot(qc, k0), dot(qd, k0));
      s1 += vec4f(dot(qa, k1), dot(qb, k1), dot(qc, k1), dot(qd, k1));
//#endif
    }
//#endif
//#if NODOT
    let one = vec4f(1.0);
    var s0 = vec4f(dot(a0, one), dot(b0, one), dot(c0_, one), dot(d0, one));
    var s1 = vec4f(dot(a1, one), dot(b1, one), dot(c1_, one), dot(d1, one));
//#endif
    // mask: keys past the tile, rows past the problem, and (partial tiles only) the mask itself
    for (var a = 0u; a < 4u; a++) {
      let i = r0 + 4u * ty + a;
      let j0 = c0 + tx;
      let j1 = c0 + tx + 16u;
      if (P.softcap > 0.0) {
        s0[a] = capped(s0[a] / LOG2E) * LOG2E;
        s1[a] = capped(s1[a] / LOG2E) * LOG2E;
      }
      if (i >= P.n_q || j0 >= c1 || (cls == PARTIAL && !visible(i, j0))) { s0[a] = NEG; }
      if (i >= P.n_q || j1 >= c1 || (cls == PARTIAL && !visible(i, j1))) { s1[a] = NEG; }
    }
//#if NOSOFT
    // (NOSOFT) P uses the scores, but a compiler may take 0 · s as 0 and drop S as well (on the
    // H200 it did: this form saves more than NOQK); read the softmax's cost from NOQK NOPV instead
    let p0 = vec4f(1.0 / 32.0) + 0.0 * s0;
    let p1 = vec4f(1.0 / 32.0) + 0.0 * s1;
    Pt[tx * TY + ty] = p0;
    Pt[(tx + 16u) * TY + ty] = p1;
    let alpha = vec4f(1.0);
    l += vec4f(1.0);
    m = vec4f(0.0);
//#elif LAZY
    // (LAZY) m moves only past m + TAU, which the subgroup learns at once (uniform within it);
    // ℓ stays this invocation's share until the end
//#if SUBGROUPS
    let moves = subgroupAny(any(max(s0, s1) > m + vec4f(TAU)));
//#else
    let moves = true;
//#endif
    var alpha = vec4f(1.0);
    if (moves) {
      let m_new = max(m, group_max(max(s0, s1), t));
      alpha = select(exp2(m - m_new), vec4f(0.0), m == vec4f(NEG));   // 0 on a row's first visible key
      m = m_new;
    }
    let p0 = vec4f(w(s0.x, m.x), w(s0.y, m.y), w(s0.z, m.z), w(s0.w, m.w));
    let p1 = vec4f(w(s1.x, m.x), w(s1.y, m.y), w(s1.z, m.z), w(s1.w, m.w));
    Pt[tx * TY + ty] = p0;
    Pt[(tx + 16u) * TY + ty] = p1;
    l = alpha * l + (p0 + p1);
//#else
    let m_new = max(m, group_max(max(s0, s1), t));
    let p0 = vec4f(w(s0.x, m_new.x), w(s0.y, m_new.y), w(s0.z, m_new.z), w(s0.w, m_new.w));
    let p1 = vec4f(w(s1.x, m_new.x), w(s1.y, m_new.y), w(s1.z, m_new.z), w(s1.w, m_new.w));
    Pt[tx * TY + ty] = p0;
    Pt[(tx + 16u) * TY + ty] = p1;
    let alpha = select(exp2(m - m_new), vec4f(0.0), m == vec4f(NEG));   // 0 on a row's first visible key
    l = alpha * l + group_sum(p0 + p1, t);
    m = m_new;
//#endif

    workgroupBarrier();                      // S is done with K; P is written
    put(pf, t);
    let cn = next_tile(r0, r1, c0 + BK);
//#if NOLOAD
    pf = fetch(false, kv0, c_first, t);
//#else
    pf = fetch(false, kv0, cn, t);           // K of the next visited tile: in flight during P V
//#endif
    workgroupBarrier();
    for (var c = 0u; c < NV; c++) {
      acc[0][c] *= alpha.x; acc[1][c] *= alpha.y; acc[2][c] *= alpha.z; acc[3][c] *= alpha.w;
    }
//#if !NOPV
    for (var j = 0u; j < BK; j++) {
      let p = Pt[j * TY + ty];
      for (var c = 0u; c < NV; c++) {
        let v = KV[j * PAD + tx + 16u * c];
        acc[0][c] = fma(vec4f(p.x), v, acc[0][c]);
        acc[1][c] = fma(vec4f(p.y), v, acc[1][c]);
        acc[2][c] = fma(vec4f(p.z), v, acc[2][c]);
        acc[3][c] = fma(vec4f(p.w), v, acc[3][c]);
      }
    }
//#endif
    c0 = cn;
  }
//#if LAZY
  l = group_sum(l, t);                       // (LAZY) the rows' ℓ from the row group's shares, once
//#endif
  for (var a = 0u; a < 4u; a++) {
    let i = r0 + 4u * ty + a;
    if (i >= P.n_q) { continue; }
    let inv = select(0.0, 1.0 / l[a], l[a] > 0.0);   // a row that sees no key gets 0
    let row = h * P.n_q + i;
    for (var c = 0u; c < NV; c++) { o_out[row * D4 + tx + 16u * c] = acc[a][c] * inv; }
    if (tx == 0u) { lse[row] = select(NEG, m[a] / LOG2E + log(l[a]), l[a] > 0.0); }
  }
}
