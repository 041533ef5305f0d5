// decode_v5.wgsl, decode version 5: the next tile's loads in flight while this tile is computed.
//
// What changes from version 2, one idea (prefill version 4's): version 2 reads each tile of K
// and of V between two barriers, so the workgroup waits out every load's latency with nothing
// to do, four times a tile of 32 keys. Here each invocation carries its share of a tile in
// registers (pf: its words t, t + WG, … of the tile, as stored) and issues the loads one phase
// early: V of this tile before the scores, the next tile's K before P V. Only the stores into
// workgroup memory (unpacking float16 there) sit between barriers. The scores, the owners'
// softmax and P V are version 2's; the merge pass is version 2's (decode_v2.wgsl).
//
// Shapes, dispatch and storage forms (F16, PAGED) as version 2.

override D: u32 = 128u;
const WG: u32 = 256u;
const BK: u32 = 32u;
const MAXR: u32 = 8u;
override D4: u32 = D / 4u;
override PAD: u32 = D4 + 1u;

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> q_in: array<vec4f>;
//#if F16
@group(0) @binding(2) var<storage, read> k_in: array<vec4u>;
@group(0) @binding(3) var<storage, read> v_in: array<vec4u>;
const NH: u32 = 2u;                     // vec4f a stored word
//#else
@group(0) @binding(2) var<storage, read> k_in: array<vec4f>;
@group(0) @binding(3) var<storage, read> v_in: array<vec4f>;
const NH: u32 = 1u;
//#endif
@group(0) @binding(4) var<storage, read> mask_bits: array<u32>;
@group(0) @binding(5) var<storage, read_write> o_out: array<vec4f>;
@group(0) @binding(6) var<storage, read_write> part: array<f32>;
//#if PAGED
@group(0) @binding(7) var<storage, read> table: array<u32>;
//#endif
override PS: u32 = 16u;                 // keys a page (PAGED)
override NW: u32 = D4 / NH;             // stored words of a row
const MAXPF: u32 = 8u;
override NPF: u32 = (BK * NW + WG - 1u) / WG;   // stored words of a tile an invocation carries (≤ MAXPF)
//#if F16
alias Word = vec4u;
//#else
alias Word = vec4f;
//#endif

var<workgroup> Qs: array<vec4f, MAXR * D4>;
var<workgroup> KV: array<vec4f, BK * PAD>;
var<workgroup> Ss: array<f32, MAXR * BK>;

// The first stored word of key j's row of KV head kvh.
fn row_of(kvh: u32, j: u32) -> u32 {
//#if PAGED
  return ((table[j / PS] * PS + j % PS) * P.n_kv_heads + kvh) * NW;
//#else
  return (kvh * P.n_kv + j) * NW;
//#endif
}

// This invocation's share of the K (v false) or V (v true) tile of keys [c0, c1): words t,
// t + WG, … of its BK · NW stored words, zeros past c1 (and none at all once c0 ≥ c1). Only
// requested here; put() uses them.
fn fetch(kvh: u32, c0: u32, c1: u32, t: u32, v: bool) -> array<Word, MAXPF> {
  var r: array<Word, MAXPF>;
  for (var i = 0u; i < NPF; i++) {
    let x = t + i * WG;
    let j = c0 + x / NW;
    let src = row_of(kvh, min(j, P.n_kv - 1u)) + x % NW;
    var u = Word(0);
    if (x < BK * NW && j < c1) { if (v) { u = v_in[src]; } else { u = k_in[src]; } }
    r[i] = u;
  }
  return r;
}

// The share into the tile KV (float16 words unpacked into two vec4f).
fn put(r: array<Word, MAXPF>, t: u32) {
  for (var i = 0u; i < NPF; i++) {
    let x = t + i * WG;
    if (x >= BK * NW) { break; }
    let jj = x / NW;
    let w = x % NW;
//#if F16
    KV[jj * PAD + 2u * w] = vec4f(unpack2x16float(r[i].x), unpack2x16float(r[i].y));
    KV[jj * PAD + 2u * w + 1u] = vec4f(unpack2x16float(r[i].z), unpack2x16float(r[i].w));
//#else
    KV[jj * PAD + w] = r[i];
//#endif
  }
}

@compute @workgroup_size(WG)
fn split(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let sp = wg.x;
  let kvh = wg.y;
  let G = P.n_q_heads / P.n_kv_heads;
  let R = G * P.n_q;
  let h0 = kvh * G;
  let first = sp * P.split_len;
  let end = min(first + P.split_len, P.n_kv);
  let qk_scale = P.scale * LOG2E;
  for (var x = t; x < R * D4; x += WG) { Qs[x] = q_in[(h0 * P.n_q + x / D4) * D4 + x % D4] * qk_scale; }
  // output owners: vec4 y of row r for x = t, t + WG (R · D4 ≤ 2 WG)
  var m = array<f32, 2>(NEG, NEG);
  var l = array<f32, 2>(0.0, 0.0);
  var acc = array<vec4f, 2>(vec4f(0.0), vec4f(0.0));

  var pf = fetch(kvh, first, min(first + BK, end), t, false);   // K of the first tile
  for (var c0 = first; c0 < end; c0 += BK) {
    let c1 = min(c0 + BK, end);
    workgroupBarrier();
    put(pf, t);
    workgroupBarrier();
    pf = fetch(kvh, c0, c1, t, true);       // V of this tile: in flight during the scores
    for (var x = t; x < R * BK; x += WG) {
      let r = x / BK;
      let j = x % BK;
      var s = NEG;
      if (c0 + j < c1 && visible(r % P.n_q, c0 + j)) {
        var d4 = vec4f(0.0);
        for (var y = 0u; y < D4; y++) { d4 = fma(Qs[r * D4 + y], KV[j * PAD + y], d4); }
        s = d4.x + d4.y + d4.z + d4.w;
        if (P.softcap > 0.0) { s = capped(s / LOG2E) * LOG2E; }
      }
      Ss[x] = s;
    }
    workgroupBarrier();
    put(pf, t);
    pf = fetch(kvh, c0 + BK, min(c0 + 2u * BK, end), t, false);   // the next tile's K: in flight during P V
    workgroupBarrier();
    for (var k = 0u; k < 2u; k++) {
      let x = k * WG + t;
      if (x >= R * D4) { break; }
      let r = x / D4;
      let y = x % D4;
      var m_blk = NEG;
      for (var j = 0u; j < BK; j++) { m_blk = max(m_blk, Ss[r * BK + j]); }
      let m_new = max(m[k], m_blk);
      if (m_new == NEG) { continue; }       // nothing visible to this row yet
      let alpha = select(exp2(m[k] - m_new), 0.0, m[k] == NEG);
      var o = acc[k] * alpha;
      var lt = l[k] * alpha;
      for (var j = 0u; j < BK; j++) {
        let s = Ss[r * BK + j];
        let p = select(0.0, exp2(s - m_new), s != NEG);
        lt += p;
        o = fma(vec4f(p), KV[j * PAD + y], o);
      }
      acc[k] = o;
      l[k] = lt;
      m[k] = m_new;
    }
  }
  let stride = 2u + D;
  for (var k = 0u; k < 2u; k++) {
    let x = k * WG + t;
    if (x >= R * D4) { break; }
    let r = x / D4;
    let y = x % D4;
    let b = (((h0 + r / P.n_q) * P.n_q + r % P.n_q) * P.n_split + sp) * stride;
    if (y == 0u) { part[b] = m[k]; part[b + 1u] = l[k]; }
    part[b + 2u + 4u * y] = acc[k].x;
    part[b + 3u + 4u * y] = acc[k].y;
    part[b + 4u + 4u * y] = acc[k].z;
    part[b + 5u + 4u * y] = acc[k].w;
  }
}
