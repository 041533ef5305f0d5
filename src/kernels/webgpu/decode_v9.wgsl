// decode_v9.wgsl, decode version 9: subgroups stream the keys in batches, and a batch's dot
// products are summed across the lanes all at once (a transpose-reduction), so that no lane
// repeats another's work.
//
// Version 3 had the right shape (no workgroup memory and no barrier until the end: each lane holds
// four columns of every row, the subgroups stream the keys), but it spent its time in two places.
// Each key's R dot products were R subgroupAdds (log2 W shuffles each, and every lane got every
// sum), and then every lane took every row's exponentials, the same numbers W times over. Here a
// subgroup of W lanes takes B = W / RP keys at a time (RP: the group's R rows, padded to a power
// of two), so a batch has exactly W (row, key) scores, one for each lane:
//   1. each lane multiplies its four columns (NV vec4s of them for d > 4 W) of every row of Q with
//      the same columns of every key of the batch: W partial sums x[r B + k];
//   2. the transpose-reduction sums them across the lanes in log2 W steps: at the step of
//      offset h, lane l keeps the half of its array whose index bit h matches its own bit h,
//      sends the other half to lane l ^ h and adds what it receives. After the last step lane l
//      holds the whole sum of index l: row l / B, key l % B. W − 1 shuffles for W scores;
//   3. the softmax: lane l takes its one score, the batch's maximum of its row (log2 B shuffles
//      over the B lanes of the row), α and its one weight p = 2^(s − m). A row's m is the same
//      in its B lanes; ℓ is each lane's own share, summed over the row's lanes once at the end;
//   4. O += P V: every lane needs every weight and every row's α, which it gets by
//      subgroupBroadcast from the lane that owns it (W + RP broadcasts a batch), and adds p V into
//      its own columns of every row.
// A batch's K and V are requested while the previous batch is computed (the raw words kept in
// registers: packed halves are unpacked where they are used), so each subgroup keeps one batch,
// 2 B rows, in flight. The NSG subgroups of a workgroup take batches g, g + NSG, … of the split;
// at the end they merge through workgroup memory (version 3's ending) and the split's partial
// goes to `part` for version 2's merge pass.
//
// Every shape is a constant (the host sets numeric defs: D, W the subgroup's size, RP, B, NV,
// LOGW, LOGB, NSG; and UNROLL), so the loops over rows, keys and columns unroll and each array
// index is a constant: the arrays stay in registers. Needs subgroups of one size W ≥ RP.
// Storage as decode version 2's forms (F16: four halves a vec2u, the lower half first; PAGED: key
// j in page table[j / PS], slot j % PS of pools (n_pages, PS, n_kv_heads, D), or with HND of
// head-major pools (n_pages, n_kv_heads, PS, D): a head's PS rows of a page lie together).
//
// Dispatch (n_split, n_kv_heads), NSG · W invocations; then decode_v2's merge.
//
// Decode version 10 is this file's FUSED form: version 9 with the merge in the same dispatch, the
// last split workgroup of each KV head merging the head's rows (decode_merge.wgsl, as version 7
// does it for version 5). On the H200 the merge pass, a second dispatch, was 12 % of version 9's
// time with float16 storage at 32768 keys. The host gives version 10 NSG · W = 256 invocations,
// the merge pass's own count, so its merge adds in the same order and O is bit for bit version
// 9's with as many subgroups. Measured slower (the last workgroup's merge of its head's rows, one
// after another, costs more than the dispatch it saves); kept as the measured step.
//
// Decode version 11 is version 9's paged forms with TAHEAD: each batch's page read from the table
// one batch ahead (the host sets it where B divides PS and the split length). Version 9 reads
// table[j / PS] inside each batch's address chain, a load that the batch's own loads wait on;
// here the page is in a register before the batch is requested. Version 10's paged forms do the
// same.
//
// Decode version 14 is version 11 with TBASE: a batch's keys lie in one page a fixed stride apart
// (B divides PS), so fetch computes the first key's address once and each other key's as a
// multiply-add from it, where version 11 works out page, slot and head for each key. Measured on
// the H200 (2026-11-30): the paged float16 split pass 1.4 % faster at 32k keys, the call from 0.96
// to 0.97-0.98 of contiguous.

// Ablation forms (bench.js --decode-ablation; never the host's default; finite, not right), to
// measure where a split's time goes: NOQK (no partial dot products and no transpose-reduction:
// every score 0), NOSOFT (no maximum, no exp2: α = 1 and each weight its score / 1024), NOPV (no
// O += P V: no broadcasts, no multiply-adds), LOADONLY (none of the four steps: the batches are
// only loaded). What a form no longer uses of K or V is folded into one word a lane (`sink`, an
// exclusive or of the raw bits) and stored where the compiler cannot prove it is never stored, so
// every form loads the same bytes as the usual one (SINK, which the host sets with any of them).

override PS: u32 = 16u;                 // keys a page (PAGED)
const D4: u32 = D / 4u;                 // vec4s (four columns) of a row

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> q_in: array<vec4f>;
//#if F16
@group(0) @binding(2) var<storage, read> k_in: array<vec2u>;   // four halves: columns 4y … 4y + 3
@group(0) @binding(3) var<storage, read> v_in: array<vec2u>;
alias Word = vec2u;
//#else
@group(0) @binding(2) var<storage, read> k_in: array<vec4f>;
@group(0) @binding(3) var<storage, read> v_in: array<vec4f>;
alias Word = vec4f;
//#endif
@group(0) @binding(4) var<storage, read> mask_bits: array<u32>;
//#if PAGED
@group(0) @binding(7) var<storage, read> table: array<u32>;
//#endif

const MWG: u32 = NSG * W;              // the merge's invocations (decode_merge.wgsl): the workgroup's
//#include decode_merge

var<workgroup> sm_ml: array<vec2f, NSG * RP>;   // (m, ℓ) of subgroup g's row r at g · RP + r
var<workgroup> sm_o: array<vec4f, NSG * D4>;    // o of subgroup g for one row: g · D4 + y

// Word y of key j's row of KV head kvh (a word: four columns). pg: the page that holds key j,
// read from the table a batch ahead (PAGED with TAHEAD), else unused: the table is read here.
fn word_of(kvh: u32, pg: u32, j: u32, y: u32) -> u32 {
//#if PAGED
//#if TAHEAD
  let page = pg;
//#else
  let page = table[j / PS];
//#endif
//#if HND
  return ((page * P.n_kv_heads + kvh) * PS + j % PS) * D4 + y;
//#else
  return ((page * PS + j % PS) * P.n_kv_heads + kvh) * D4 + y;
//#endif
//#else
  return (kvh * P.n_kv + j) * D4 + y;
//#endif
}

// The page of the batch that starts at key j0 (PAGED with TAHEAD): B divides PS and every batch
// starts at a multiple of B, so a batch's keys, clamped to the cache as fetch clamps them, lie in
// one page. Read one batch before the batch's own loads, so that their addresses do not wait on it.
fn page_of(j0: u32) -> u32 {
//#if TAHEAD
  return table[min(j0, P.n_kv - 1u) / PS];
//#else
  return 0u;
//#endif
}

// The raw bits of a word folded to one (the ablation forms' sink).
fn fold(w: Word) -> u32 {
//#if F16
  return w.x ^ w.y;
//#else
  let u = bitcast<vec4u>(w);
  return u.x ^ u.y ^ u.z ^ u.w;
//#endif
}

fn widen(w: Word) -> vec4f {
//#if F16
  return vec4f(unpack2x16float(w.x), unpack2x16float(w.y));
//#else
  return w;
//#endif
}

// The lane's words of a batch of B keys from j0 (K if v is false, else V): word v of key k at
// k · NV + v, columns 4 (lane + v W) …; keys past the cache are read as its last key (the score
// masks them), columns past D as zeros.
fn fetch(kvh: u32, pg: u32, j0: u32, lane: u32, v: bool) -> array<Word, B * NV> {
  var r: array<Word, B * NV>;
//#if TBASE
  // the batch's keys lie in one page, a fixed stride apart: the address of its first key (clamped
  // as below) once, then one multiply-add a key
  let jb = min(j0, P.n_kv - 1u);
  let kmax = P.n_kv - 1u - jb;
  let base = word_of(kvh, pg, jb, 0u);
//#if HND
  let stride = D4;
//#else
  let stride = P.n_kv_heads * D4;
//#endif
//#endif
  //#for k B
  //#for c NV
  {
    let y = lane + c * W;
//#if TBASE
    let src = base + min(k, kmax) * stride + min(y, D4 - 1u);
//#else
    let src = word_of(kvh, pg, min(j0 + k, P.n_kv - 1u), min(y, D4 - 1u));
//#endif
    var u = Word();
    if (y < D4) { if (v) { u = v_in[src]; } else { u = k_in[src]; } }
    r[k * NV + c] = u;
  }
  //#endfor
  //#endfor
  return r;
}

@compute @workgroup_size(NSG * W)
fn split(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32,
         @builtin(subgroup_invocation_id) lane: u32) {
  let sp = wg.x;
  let kvh = wg.y;
  let G = P.n_q_heads / P.n_kv_heads;
  let R = G * P.n_q;                    // ≤ RP, as the host makes sure
  let h0 = kvh * G;
  let first = sp * P.split_len;
  let end = min(first + P.split_len, P.n_kv);
  let g = t / W;
  let qk_scale = P.scale * LOG2E;
  // Q's columns of every row (base-2 units), zeros for a padded row or past D
  var q: array<vec4f, RP * NV>;
  var acc: array<vec4f, RP * NV>;
  //#for r RP
  //#for c NV
  {
    let y = lane + c * W;
    q[r * NV + c] = select(vec4f(0.0), q_in[(h0 * P.n_q + min(r, R - 1u)) * D4 + min(y, D4 - 1u)] * qk_scale, r < R && y < D4);
    acc[r * NV + c] = vec4f(0.0);
  }
  //#endfor
  //#endfor
  // the lane's score: row rr, key kk of each batch
  let rr = lane / B;
  let kk = lane % B;
  var m = NEG;                          // row rr's running maximum (the same in its B lanes)
  var l = 0.0;                          // this lane's share of row rr's ℓ
  // every subgroup makes the same number of passes (a batch past the end is read clamped and
  // masked), so that every shuffle has the whole subgroup
  let per = B * NSG;
  let passes = (end - first + per - 1u) / per;
  let pg0 = page_of(first + g * B);
  var kb = fetch(kvh, pg0, first + g * B, lane, false);
  var vb = fetch(kvh, pg0, first + g * B, lane, true);
  var pg = page_of(first + g * B + per);      // the next batch's page (TAHEAD)
//#if SINK
  var sink = 0u;                              // (ablation forms) the bits of what they do not use
//#endif
  for (var it = 0u; it < passes; it++) {
    let j0 = first + (it * NSG + g) * B;
    let kc = kb;
    let vc = vb;
    // the next batch, in flight during this one, and the page of the batch after it
    kb = fetch(kvh, pg, j0 + per, lane, false);
    vb = fetch(kvh, pg, j0 + per, lane, true);
    pg = page_of(j0 + 2u * per);

//#if LOADONLY
    if (it == 0u && visible(0u, j0)) { sink ^= 1u; }   // the mask's binding kept in the layout
    //#for k B
    //#for c NV
    sink ^= fold(kc[k * NV + c]);
    //#endfor
    //#endfor
    //#for k B
    //#for c NV
    sink ^= fold(vc[k * NV + c]);
    //#endfor
    //#endfor
//#else
//#if NOQK
    // (NOQK) no dot products, no transpose-reduction: every score 0
    var x: array<f32, 1>;
    x[0] = 0.0;
    //#for k B
    //#for c NV
    sink ^= fold(kc[k * NV + c]);
    //#endfor
    //#endfor
//#else
    // 1. partial dot products over this lane's columns: x[r B + k]
    var x: array<f32, W>;
    //#for r RP
    //#for k B
    {
      var s = 0.0;
      //#for c NV
      s += dot(q[r * NV + c], widen(kc[k * NV + c]));
      //#endfor
      x[r * B + k] = s;
    }
    //#endfor
    //#endfor
    // 2. the transpose-reduction: step e halves the array (h = W / 2^(e + 1) numbers left)
    //#for e LOGW
    //#for i W / 2
    if (i < (W >> (e + 1u))) {
      let h = W >> (e + 1u);
      let up = (lane & h) != 0u;
      x[i] = select(x[i], x[i + h], up) + subgroupShuffleXor(select(x[i + h], x[i], up), h);
    }
    //#endfor
    //#endfor
//#endif
    // 3. lane l's score (row rr, key j0 + kk), the row's maximum over the batch, α and p
    let j = j0 + kk;
    var s = NEG;
    if (rr < R && j < end && visible(rr % P.n_q, j)) {
      s = x[0];
      if (P.softcap > 0.0) { s = capped(s / LOG2E) * LOG2E; }
    }
//#if NOSOFT
    // (NOSOFT) no maximum and no exp2: α = 1, the weight the score itself, scaled down
    let alpha = 1.0;
    let p = select(0.0, s * (1.0 / 1024.0), s != NEG);
    l = l + p;
//#else
    var mb = s;
    //#for e LOGB
    mb = max(mb, subgroupShuffleXor(mb, 1u << e));
    //#endfor
    let m_new = max(m, mb);
    // (no branch on the scores: the shuffles need every lane; a row that has seen nothing yet
    // keeps α = 1 and weights 0)
    let alpha = select(select(exp2(m - m_new), 0.0, m == NEG), 1.0, m_new == NEG);
    let p = select(0.0, exp2(s - m_new), s != NEG);
    l = l * alpha + p;
    m = m_new;
//#endif
//#if NOPV
    //#for k B
    //#for c NV
    sink ^= fold(vc[k * NV + c]);
    //#endfor
    //#endfor
//#else
    // 4. O += P V in this lane's columns of every row
    //#for r RP
    {
      let a = subgroupBroadcast(alpha, r * B);
      //#for c NV
      acc[r * NV + c] *= a;
      //#endfor
      //#for k B
      {
        let pk = subgroupBroadcast(p, r * B + k);
        //#for c NV
        acc[r * NV + c] = fma(vec4f(pk), widen(vc[k * NV + c]), acc[r * NV + c]);
        //#endfor
      }
      //#endfor
    }
    //#endfor
//#endif
//#endif
  }
  // ℓ of row rr: the shares of its B lanes
  //#for e LOGB
  l += subgroupShuffleXor(l, 1u << e);
  //#endfor
//#if SINK
  // (ablation forms) a store the compiler cannot rule out keeps every load of the batches
  if (sink == 0x9e3779b9u) { m = 0.0; }
//#endif
  // the NSG subgroups' states merged, row by row (version 3's ending)
  if (kk == 0u && rr < RP) { sm_ml[g * RP + rr] = vec2f(m, l); }
  workgroupBarrier();
  let stride = 2u + D;
  //#for r RP
  if (r < R) {
    var M = NEG;
    for (var u = 0u; u < NSG; u++) { M = max(M, sm_ml[u * RP + r].x); }
    let mine = sm_ml[g * RP + r].x;
    let f = select(exp2(mine - M), 0.0, mine == NEG);
    //#for c NV
    {
      let y = lane + c * W;
      if (y < D4) { sm_o[g * D4 + y] = acc[r * NV + c] * f; }
    }
    //#endfor
    workgroupBarrier();
    let b = (((h0 + r / P.n_q) * P.n_q + r % P.n_q) * P.n_split + sp) * stride;
    for (var y = t; y < D4; y += NSG * W) {
      var o = vec4f(0.0);
      for (var u = 0u; u < NSG; u++) { o += sm_o[u * D4 + y]; }
      part_put(b + 2u + 4u * y, o.x);
      part_put(b + 3u + 4u * y, o.y);
      part_put(b + 4u + 4u * y, o.z);
      part_put(b + 5u + 4u * y, o.w);
    }
    if (t == 0u) {
      var L = 0.0;
      for (var u = 0u; u < NSG; u++) {
        let st = sm_ml[u * RP + r];
        if (st.x != NEG) { L += st.y * exp2(st.x - M); }
      }
      part_put(b, M);
      part_put(b + 1u, L);
    }
    workgroupBarrier();
  }
  //#endfor
//#if FUSED
  // decode version 10: the last of the KV head's splits merges its rows (decode_merge.wgsl)
  last_split_merges(kvh, h0, R, t);
//#endif
}
