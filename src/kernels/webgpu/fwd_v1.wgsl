// fwd_v1.wgsl, version 1: the textbook tiled forward (Algorithm 1 of the tiled lessons, 000).
//
// One workgroup takes one Q tile of BQ rows of one head; one invocation owns one query row and
// keeps its running (m, ℓ, o) in private memory. The KV tiles of BK keys pass through workgroup
// memory (K and V each BK × D), loaded by every invocation together, then each row folds the tile
// in: scores, the tile's maximum, α = exp(m_old − m_new), P = exp(s − m_new), ℓ and o rescaled
// (the unnormalized form; one division by ℓ at the end). Tiles that the mask hides from every row
// of the Q tile are skipped before any load; only partial tiles test each (row, key).
//
// This is the loop as the documents draw it, with nothing else: no vector loads, one row per
// invocation (so a row's D products run one after another), the whole row of o in private
// memory. The later versions change one thing each.
//
// Shapes: q (n_q_heads, n_q, D), k (n_kv_heads, n_kv, D), v (n_kv_heads, n_kv, D), o like q;
// lse (n_q_heads, n_q): ln of Σ exp(s) per row, natural units. Dispatch: (⌈n_q / BQ⌉, n_q_heads).

override D: u32 = 64u;      // head size (d = d_v), at most 256
override BQ: u32 = 64u;     // rows of a Q tile = invocations of a workgroup
override BK: u32 = 16u;     // keys of a KV tile

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> q_in: array<f32>;
@group(0) @binding(2) var<storage, read> k_in: array<f32>;
@group(0) @binding(3) var<storage, read> v_in: array<f32>;
@group(0) @binding(4) var<storage, read> mask_bits: array<u32>;
@group(0) @binding(5) var<storage, read_write> o_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;

var<workgroup> Kt: array<f32, 4096>;   // BK × D ≤ 4096
var<workgroup> Vt: array<f32, 4096>;

// Row i folds keys [c0, c1) of the tile in workgroup memory into its (m, ℓ, o).
fn fold_tile(i: u32, c0: u32, c1: u32, cls: u32, q: ptr<function, array<f32, 256>>,
             o: ptr<function, array<f32, 256>>, m: ptr<function, f32>, l: ptr<function, f32>) {
  // scores of this row against the tile, and their maximum
  var s: array<f32, 64>;
  var m_blk = NEG;
  for (var j = 0u; j < c1 - c0; j++) {
    s[j] = NEG;
    if (cls == FULL || visible(i, c0 + j)) {
      var dot = 0.0;
      for (var c = 0u; c < D; c++) { dot = fma((*q)[c], Kt[j * D + c], dot); }
      s[j] = capped(dot);
      m_blk = max(m_blk, s[j]);
    }
  }
  if (m_blk == NEG) { return; }             // this row sees nothing here
  let m_new = max(*m, m_blk);
  let alpha = select(exp(*m - m_new), 0.0, *m == NEG);
  *l *= alpha;
  for (var c = 0u; c < D; c++) { (*o)[c] *= alpha; }
  for (var j = 0u; j < c1 - c0; j++) {
    if (s[j] == NEG) { continue; }
    let p = exp(s[j] - m_new);
    *l += p;
    for (var c = 0u; c < D; c++) { (*o)[c] = fma(p, Vt[j * D + c], (*o)[c]); }
  }
  *m = m_new;
}

@compute @workgroup_size(BQ)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let h = wg.y;
  let kvh = h / (P.n_q_heads / P.n_kv_heads);
  let r0 = wg.x * BQ;
  let r1 = min(r0 + BQ, P.n_q);
  let i = r0 + t;
  let live = i < P.n_q;
  let row = h * P.n_q + min(i, P.n_q - 1u);
  var q: array<f32, 256>;
  var o: array<f32, 256>;
  for (var c = 0u; c < D; c++) { q[c] = q_in[row * D + c] * P.scale; o[c] = 0.0; }
  var m = NEG;
  var l = 0.0;

  for (var c0 = 0u; c0 < P.n_kv; c0 += BK) {
    let c1 = min(c0 + BK, P.n_kv);
    let cls = classify(r0, r1, c0, c1).x;   // the same for every invocation: no divergence
    if (cls == SKIPPED) { continue; }
    workgroupBarrier();                      // the last tile's readers are done
    for (var x = t; x < BK * D; x += BQ) {
      let j = c0 + x / D;
      if (j < c1) {
        Kt[x] = k_in[(kvh * P.n_kv + j) * D + x % D];
        Vt[x] = v_in[(kvh * P.n_kv + j) * D + x % D];
      }
    }
    workgroupBarrier();
    if (live) { fold_tile(i, c0, c1, cls, &q, &o, &m, &l); }
  }
  if (!live) { return; }
  let inv = select(0.0, 1.0 / l, l > 0.0);  // a row that sees no key gets 0
  for (var c = 0u; c < D; c++) { o_out[row * D + c] = o[c] * inv; }
  lse[row] = select(NEG, m + log(l), l > 0.0);
}
