// decode_v4.wgsl, decode version 4: keys owned whole, columns owned whole, one barrier a chunk;
// float32 or float16 storage, contiguous or paged.
//
// Versions 1-3 share a key's dot product among the invocations that hold its columns, so every
// key costs a reduction across invocations (workgroup memory or subgroupAdd) before its weight
// is known. Here the work of a chunk of BK keys is cut twice:
//   A (scores): invocation t owns key t / TPK of the chunk (and KPT − 1 more, WG / TPK apart):
//     it reads the key's row itself, TPK invocations a key taking every TPK-th vec4 of it, and
//     writes its R partial dot products q_r · k to workgroup memory, no reduction;
//   C (P V): invocation t owns one word of columns (4 in float32, 8 in float16) and a run of KPS
//     consecutive keys of the chunk (the NKS = WG / NC runs cover it): it sums the TPK partials
//     of each of its keys (masking and soft-cap there), and keeps its own online softmax (m, ℓ)
//     and o over its runs of keys, so no maximum is shared within the chunk either.
// The scores go to one of two buffers by the chunk's parity, so a chunk needs one barrier (A's
// writes before C's reads; the next chunk's A writes the other buffer). The NKS run states are
// merged once at the end of the split, through workgroup memory, and the split's partial
// (m, ℓ, o) goes to `part` for decode version 2's merge, as version 3's does.
//
// Storage (the host sets F16 and PAGED, `//#if` lines, and the override constants):
//   float32:  K, V (n_kv_heads, n_kv, D) as vec4f, a word is 4 columns;
//   F16:      the same numbers rounded to float16 and packed two to a u32 (pack2x16float), a word
//             a vec4u of 8 halves, unpacked in registers by unpack2x16float (core WGSL: every
//             adapter, with or without `shader-f16`): half the bytes of float32;
//   PAGED:    K, V pools (n_pages, PS, n_kv_heads, D) as the engine's paged cache lays them out
//             (src/engine/paged.h), key j at page table[j / PS], slot j % PS.
// Q (n_q_heads, n_q, D) float32; part (n_q_heads, n_q, n_split, 2 + D); scores in base-2 units.
// Dispatch (n_split, n_kv_heads), WG invocations; no subgroups (the same code on every adapter).

override D: u32 = 128u;
override RQ: u32 = 4u;                  // rows of the GQA group, G · n_q (≤ 8)
override WG: u32 = 128u;                // invocations of a workgroup
override TPK: u32 = 1u;                 // invocations that share a key's row in A (divides NC)
override KPT: u32 = 1u;                 // keys an invocation scores in A, a chunk
override PS: u32 = 16u;                 // keys a page (PAGED)
const MAXR: u32 = 8u;

//#if F16
alias Word = vec4u;
const CW: u32 = 8u;                     // columns a word
const NH: u32 = 2u;                     // vec4f a word
fn half4(w: Word, h: u32) -> vec4f {
  if (h == 0u) { return vec4f(unpack2x16float(w.x), unpack2x16float(w.y)); }
  return vec4f(unpack2x16float(w.z), unpack2x16float(w.w));
}
//#else
alias Word = vec4f;
const CW: u32 = 4u;
const NH: u32 = 1u;
fn half4(w: Word, h: u32) -> vec4f { return w; }
//#endif

override D4: u32 = D / 4u;
override NC: u32 = D / CW;              // words of a row
override BK: u32 = WG * KPT / TPK;      // keys of a chunk
override NKS: u32 = WG / NC;            // runs of keys in C
override KPS: u32 = BK / NKS;           // keys of a run
override SN: u32 = TPK * RQ * BK;       // floats of one score buffer

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> q_in: array<vec4f>;
@group(0) @binding(2) var<storage, read> k_in: array<Word>;
@group(0) @binding(3) var<storage, read> v_in: array<Word>;
@group(0) @binding(4) var<storage, read> mask_bits: array<u32>;
@group(0) @binding(6) var<storage, read_write> part: array<f32>;
//#if PAGED
@group(0) @binding(7) var<storage, read> table: array<u32>;
//#endif

var<workgroup> Qs: array<vec4f, RQ * D4>;        // q of row r, pre-scaled by scale · log₂e
var<workgroup> S: array<f32, 2u * SN>;           // partial scores: [parity][lane c][row r][key]
var<workgroup> sm_ml: array<vec2f, NKS * MAXR>;  // (m, ℓ) of run s, row r
var<workgroup> sm_o: array<vec4f, NKS * D4>;     // o of run s for one row

// The first word of key j's row of KV head kvh.
fn row_of(kvh: u32, j: u32) -> u32 {
//#if PAGED
  return ((table[j / PS] * PS + j % PS) * P.n_kv_heads + kvh) * NC;
//#else
  return (kvh * P.n_kv + j) * NC;
//#endif
}

// Key kk of the chunk (key j) against row r: the TPK partials summed; NEG when masked or past the split's end.
fn score(b: u32, r: u32, kk: u32, j: u32, end: u32) -> f32 {
  var s = 0.0;
  for (var c = 0u; c < TPK; c++) { s += S[b + (c * RQ + r) * BK + kk]; }
  if (j >= end || !visible(r % P.n_q, j)) { return NEG; }
  if (P.softcap > 0.0) { s = capped(s / LOG2E) * LOG2E; }
  return s;
}

@compute @workgroup_size(WG)
fn split(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let sp = wg.x;
  let kvh = wg.y;
  let G = P.n_q_heads / P.n_kv_heads;
  let h0 = kvh * G;
  let first = sp * P.split_len;
  let end = min(first + P.split_len, P.n_kv);
  let qk_scale = P.scale * LOG2E;
  for (var x = t; x < RQ * D4; x += WG) { Qs[x] = q_in[h0 * P.n_q * D4 + x] * qk_scale; }
  // A: invocation t scores keys kq, kq + WG / TPK, … of the chunk, words c, c + TPK, … of each
  let c = t % TPK;
  let kq = t / TPK;
  // C: invocation t owns word y of the columns and keys [ks · KPS, ks · KPS + KPS) of the chunk
  let y = t % NC;
  let ks = t / NC;
  var m: array<f32, MAXR>;
  var l: array<f32, MAXR>;
  var acc: array<vec4f, 2u * MAXR>;    // row r, vec4 h of the word at r · NH + h
  for (var r = 0u; r < RQ; r++) {
    m[r] = NEG;
    l[r] = 0.0;
    for (var h = 0u; h < NH; h++) { acc[r * NH + h] = vec4f(0.0); }
  }
  workgroupBarrier();
  var parity = 0u;
  for (var c0 = first; c0 < end; c0 += BK) {
    let b = parity * SN;
    for (var u = 0u; u < KPT; u++) {
      let kk = kq + u * (WG / TPK);
      let base = row_of(kvh, min(c0 + kk, P.n_kv - 1u));   // past the end: a real key, discarded in C
      var s: array<f32, MAXR>;
      for (var r = 0u; r < RQ; r++) { s[r] = 0.0; }
      for (var i = c; i < NC; i += TPK) {
        let w = k_in[base + i];
        for (var h = 0u; h < NH; h++) {
          let k = half4(w, h);
          for (var r = 0u; r < RQ; r++) { s[r] += dot(Qs[r * D4 + i * NH + h], k); }
        }
      }
      for (var r = 0u; r < RQ; r++) { S[b + (c * RQ + r) * BK + kk] = s[r]; }
    }
    workgroupBarrier();
    // C: the run's maximum of each row, then α once and the weights 2^(s − m) key by key
    let k0 = ks * KPS;
    var m_new: array<f32, MAXR>;
    for (var r = 0u; r < RQ; r++) { m_new[r] = m[r]; }
    for (var k = 0u; k < KPS; k++) {
      for (var r = 0u; r < RQ; r++) { m_new[r] = max(m_new[r], score(b, r, k0 + k, c0 + k0 + k, end)); }
    }
    for (var r = 0u; r < RQ; r++) {
      let alpha = select(exp2(m[r] - m_new[r]), 0.0, m[r] == NEG);
      l[r] *= alpha;
      for (var h = 0u; h < NH; h++) { acc[r * NH + h] *= alpha; }
      m[r] = m_new[r];
    }
    for (var k = 0u; k < KPS; k++) {
      let j = c0 + k0 + k;
      let w = v_in[row_of(kvh, min(j, P.n_kv - 1u)) + y];
      for (var r = 0u; r < RQ; r++) {
        let s = score(b, r, k0 + k, j, end);
        let p = select(0.0, exp2(s - m[r]), s != NEG);
        l[r] += p;
        for (var h = 0u; h < NH; h++) { acc[r * NH + h] = fma(vec4f(p), half4(w, h), acc[r * NH + h]); }
      }
    }
    parity = 1u - parity;
  }
  // the NKS runs' states merged, row by row
  if (y == 0u) { for (var r = 0u; r < RQ; r++) { sm_ml[ks * MAXR + r] = vec2f(m[r], l[r]); } }
  workgroupBarrier();
  let stride = 2u + D;
  for (var r = 0u; r < RQ; r++) {
    var M = NEG;
    for (var s = 0u; s < NKS; s++) { M = max(M, sm_ml[s * MAXR + r].x); }
    let f = select(exp2(m[r] - M), 0.0, m[r] == NEG);
    for (var h = 0u; h < NH; h++) { sm_o[ks * D4 + y * NH + h] = acc[r * NH + h] * f; }
    workgroupBarrier();
    let b = (((h0 + r / P.n_q) * P.n_q + r % P.n_q) * P.n_split + sp) * stride;
    for (var x = t; x < D4; x += WG) {
      var o = vec4f(0.0);
      for (var s = 0u; s < NKS; s++) { o += sm_o[s * D4 + x]; }
      part[b + 2u + 4u * x] = o.x;
      part[b + 3u + 4u * x] = o.y;
      part[b + 4u + 4u * x] = o.z;
      part[b + 5u + 4u * x] = o.w;
    }
    if (t == 0u) {
      var L = 0.0;
      for (var s = 0u; s < NKS; s++) {
        let st = sm_ml[s * MAXR + r];
        if (st.x != NEG) { L += st.y * exp2(st.x - M); }
      }
      part[b] = M;
      part[b + 1u] = L;
    }
    workgroupBarrier();
  }
}
