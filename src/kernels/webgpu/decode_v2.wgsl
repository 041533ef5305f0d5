// decode_v2.wgsl, decode version 2: no invocation works alone.
//
// Version 1 gives the softmax of a tile to one invocation a row (32 scores, one after another)
// while the rest wait at a barrier, and merges a row's splits with one loop over them. Here:
// split: after the scores, every invocation that owns four output columns of a row reads that
//   row's 32 scores itself (the same address across the row's invocations: one broadcast read),
//   takes the tile's maximum, α, and the weights 2^(s − m) on the fly while it adds P V: no
//   serial step and one barrier less a tile. Each owner keeps its row's (m, ℓ) itself.
// merge: the row's splits are shared out: the maximum and ℓ by a tree in workgroup memory, o by
//   (column, group of splits) and a tree over the groups.
//
// Shapes and dispatch as version 1; merge uses 256 invocations.
// Storage (the host sets F16 and PAGED, as for decode version 4): K and V float32, or float16
// packed two to a u32 (a vec4u word holds 8 halves, unpacked into the tile as two vec4f); and
// contiguous, or pools of pages read through a block table (key j in page table[j / PS], slot
// j % PS, pools (n_pages, PS, n_kv_heads, D) as the engine's paged cache).
//
// Decode version 5 is this file's AHEAD form (the host sets it), prefill version 4's idea on this
// one: here each tile of K and of V is read between two barriers, so the workgroup waits out every
// load's latency with nothing to do, four times a tile of 32 keys. In version 5 each invocation
// carries its share of a tile in registers (pf: its words t, t + WG, … of the tile, as stored) and
// issues the loads one phase early: V of this tile before the scores, the next tile's K before
// P V. Only the stores into workgroup memory (unpacking float16 there) sit between barriers. The
// scores, the owners' softmax, P V and the merge are the same in both forms.
//
// Decode version 6 is version 5 with F16 and H16 (the host sets H16 only where the device has
// shader-f16): the same float16 bytes, declared as f16 (`enable f16;`, a stored word a
// mat2x4<f16>, 8 halves) and widened with vec4f(…) instead of unpacked from u32s; arithmetic in
// float32 as in every form.
//
// Decode version 7 is version 5 with the merge in the same dispatch (the host sets AHEAD and
// FUSED): no merge pass. A split workgroup writes its rows' partials (m, ℓ, o), then counts itself
// in its KV head's counter `arrived` (one atomic<u32> a KV head, zeroed by the host once, when the
// buffer is made). The workgroup whose atomicAdd returns n_split − 1 is the head's last: it sets
// the counter back to 0 (so the next dispatch starts from 0 with no clear by the host) and merges
// the head's R rows one after another with merge_row (decode_merge.wgsl), the function the merge
// pass calls for its one row, so the arithmetic, and its order, is the merge pass's: O is bit for bit version 5's
// (the partials are the same numbers: they go through `part` as their bits, bitcast to u32 and
// back).
//
// What WGSL promises about this pattern, and what it does not: decode_merge.wgsl.

override D: u32 = 128u;
const WG: u32 = 256u;
override BK: u32 = 32u;             // keys a tile (bench.js --sweep tries 64: p.bk)
const MAXR: u32 = 8u;
override D4: u32 = D / 4u;
override PAD: u32 = D4 + 1u;

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> q_in: array<vec4f>;
//#if F16
//#if H16
enable f16;
@group(0) @binding(2) var<storage, read> k_in: array<mat2x4<f16>>;   // the same bytes, read as f16
@group(0) @binding(3) var<storage, read> v_in: array<mat2x4<f16>>;
//#else
@group(0) @binding(2) var<storage, read> k_in: array<vec4u>;
@group(0) @binding(3) var<storage, read> v_in: array<vec4u>;
//#endif
const NH: u32 = 2u;                     // vec4f a stored word
//#else
@group(0) @binding(2) var<storage, read> k_in: array<vec4f>;
@group(0) @binding(3) var<storage, read> v_in: array<vec4f>;
const NH: u32 = 1u;
//#endif
@group(0) @binding(4) var<storage, read> mask_bits: array<u32>;
//#if PAGED
@group(0) @binding(7) var<storage, read> table: array<u32>;
//#endif
override PS: u32 = 16u;                 // keys a page (PAGED)
override NW: u32 = D4 / NH;             // stored words of a row
//#if AHEAD
const MAXPF: u32 = 8u;
override NPF: u32 = (BK * NW + WG - 1u) / WG;   // stored words of a tile an invocation carries (≤ MAXPF)
//#if H16
alias Word = mat2x4<f16>;
//#elif F16
alias Word = vec4u;
//#else
alias Word = vec4f;
//#endif
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

//#if AHEAD
// This invocation's share of the K (v false) or V (v true) tile of keys [c0, c1): words t,
// t + WG, … of its BK · NW stored words, zeros past c1 (and none at all once c0 ≥ c1). Only
// requested here; put() uses them.
fn fetch(kvh: u32, c0: u32, c1: u32, t: u32, v: bool) -> array<Word, MAXPF> {
  var r: array<Word, MAXPF>;
  for (var i = 0u; i < NPF; i++) {
    let x = t + i * WG;
    let j = c0 + x / NW;
    let src = row_of(kvh, min(j, P.n_kv - 1u)) + x % NW;
    var u = Word();
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
//#if H16
    KV[jj * PAD + 2u * w] = vec4f(r[i][0]);
    KV[jj * PAD + 2u * w + 1u] = vec4f(r[i][1]);
//#elif F16
    KV[jj * PAD + 2u * w] = vec4f(unpack2x16float(r[i].x), unpack2x16float(r[i].y));
    KV[jj * PAD + 2u * w + 1u] = vec4f(unpack2x16float(r[i].z), unpack2x16float(r[i].w));
//#else
    KV[jj * PAD + w] = r[i];
//#endif
  }
}
//#else
// Keys [c0, c1) of K (v false) or V (v true) into the tile KV, zeros past c1; invocation t of WG
// takes words t, t + WG, … of the tile.
fn load_tile(kvh: u32, c0: u32, c1: u32, t: u32, v: bool) {
  for (var x = t; x < BK * NW; x += WG) {
    let jj = x / NW;
    let w = x % NW;
    let j = c0 + jj;
    let src = row_of(kvh, min(j, P.n_kv - 1u)) + w;
//#if H16
    var u = mat2x4<f16>();
    if (j < c1 && v) { u = v_in[src]; } else if (j < c1) { u = k_in[src]; }
    KV[jj * PAD + 2u * w] = vec4f(u[0]);
    KV[jj * PAD + 2u * w + 1u] = vec4f(u[1]);
//#elif F16
    var u = vec4u(0u);
    if (j < c1 && v) { u = v_in[src]; } else if (j < c1) { u = k_in[src]; }
    KV[jj * PAD + 2u * w] = vec4f(unpack2x16float(u.x), unpack2x16float(u.y));
    KV[jj * PAD + 2u * w + 1u] = vec4f(unpack2x16float(u.z), unpack2x16float(u.w));
//#else
    var u = vec4f(0.0);
    if (j < c1 && v) { u = v_in[src]; } else if (j < c1) { u = k_in[src]; }
    KV[jj * PAD + w] = u;
//#endif
  }
}
//#endif

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

//#if AHEAD
  var pf = fetch(kvh, first, min(first + BK, end), t, false);   // K of the first tile
//#endif
  for (var c0 = first; c0 < end; c0 += BK) {
    let c1 = min(c0 + BK, end);
    workgroupBarrier();
//#if AHEAD
    put(pf, t);
//#else
    load_tile(kvh, c0, c1, t, false);
//#endif
    workgroupBarrier();
//#if AHEAD
    pf = fetch(kvh, c0, c1, t, true);       // V of this tile: in flight during the scores
//#endif
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
//#if AHEAD
    put(pf, t);
    pf = fetch(kvh, c0 + BK, min(c0 + 2u * BK, end), t, false);   // the next tile's K: in flight during P V
//#else
    load_tile(kvh, c0, c1, t, true);
//#endif
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
    if (y == 0u) { part_put(b, m[k]); part_put(b + 1u, l[k]); }
    part_put(b + 2u + 4u * y, acc[k].x);
    part_put(b + 3u + 4u * y, acc[k].y);
    part_put(b + 4u + 4u * y, acc[k].z);
    part_put(b + 5u + 4u * y, acc[k].w);
  }
//#if FUSED
  // This split is done; the last of its KV head's splits merges the head's R rows
  // (decode_merge.wgsl).
  last_split_merges(kvh, h0, R, t);
//#endif
}

const MWG: u32 = WG;                  // the merge's invocations: the split's (decode_merge.wgsl)
//#include decode_merge
