// common.wgsl: what every flashstep WGSL kernel shares, prepended to each by the host (fsgpu.js).
//
// The problem, as the engine's fs_attn describes it (src/engine/attn.h), in float32:
//   Q (n_q_heads, n_q, d), K (n_kv_heads, n_kv, d), V (n_kv_heads, n_kv, d_v), O (n_q_heads, n_q, d_v)
//   S = scale · Q Kᵀ, soft-capped when softcap > 0, masked, P = softmax(S), O = P V.
// Query head h reads KV head h / (n_q_heads / n_kv_heads) (GQA). Query row i sits at position
// i + offset, key j at j. Masks: 0 none, 1 causal, 2 sliding window, 3 bitmask (a tree).
//
// WGSL lets an implementation assume that no value is infinite (Metal compiles with fast math),
// so no kernel computes with −∞: NEG, float32's lowest finite number, stands for it, every
// exponential of a masked score is skipped rather than taken, and the host reads NEG back as −∞.

struct Params {
  n_q_heads: u32, n_kv_heads: u32, n_q: u32, n_kv: u32,
  d: u32, d_v: u32, Bq: u32, Bk: u32,
  n_kt: u32, rec_len: u32, mask_kind: u32, words: u32,  // words: u32 words of one bitmask row
  offset: i32, window: i32, flags: u32, n_split: u32,   // n_split: decode splits (or parts)
  scale: f32, softcap: f32, split_len: u32, stride: u32, // split_len: keys a split; stride: 1 or P
}

const NEG: f32 = -0x1.fffffep+127f;
const LOG2E: f32 = 1.4426950408889634;
const F_EXP2: u32 = 1u;       // scores in base-2 units, exp2 everywhere (003)
const F_NORMALIZED: u32 = 2u; // the α/β form that keeps o divided by ℓ (001)
const F_TREE: u32 = 4u;       // the bitmask is a tree: skips say "tree"
const F_GIVEN_S: u32 = 8u;    // the scores are given (in the Q buffer), not Q Kᵀ
const F_MERGE_TREE: u32 = 16u;// decode: pairwise merges instead of left to right
const F_STRIDED: u32 = 32u;   // decode: 003's strided parts (keys p, p + P, …), not contiguous splits

// tile classes and skip reasons, as the engine numbers them (fs_tile_class, fs_skip_reason)
const FULL: u32 = 0u;
const PARTIAL: u32 = 1u;
const SKIPPED: u32 = 2u;
const SKIP_CAUSAL: u32 = 1u;
const SKIP_WINDOW: u32 = 2u;
const SKIP_TREE: u32 = 3u;
const SKIP_BITMASK: u32 = 4u;

fn has(f: u32) -> bool { return (P.flags & f) != 0u; }

// e^x, or 2^x in base-2 units. x ≤ 0 always (a score minus a maximum at least as large).
fn ex(x: f32) -> f32 { if (has(F_EXP2)) { return exp2(x); } return exp(x); }

// Is key j visible to query row i?
fn visible(i: u32, j: u32) -> bool {
  let pos = i32(i) + P.offset;
  let k = i32(j);
  switch P.mask_kind {
    case 1u: { return k <= pos; }
    case 2u: { return k <= pos && k > pos - P.window; }
    case 3u: { return ((mask_bits[i * P.words + j / 32u] >> (j % 32u)) & 1u) != 0u; }
    default: { return true; }
  }
}

// The class of the tile of rows [r0, r1) and keys [c0, c1) (fs_mask_classify); why in .y.
fn classify(r0: u32, r1: u32, c0: u32, c1: u32) -> vec2u {
  if (P.mask_kind == 0u) { return vec2u(FULL, 0u); }
  if (P.mask_kind == 1u || P.mask_kind == 2u) {
    let p0 = i32(r0) + P.offset;
    let p1 = i32(r1) - 1 + P.offset;
    let last = i32(c1) - 1;
    if (i32(c0) > p1) { return vec2u(SKIPPED, SKIP_CAUSAL); }
    if (P.mask_kind == 2u && last <= p0 - P.window) { return vec2u(SKIPPED, SKIP_WINDOW); }
    var full = last <= p0;
    if (P.mask_kind == 2u) { full = full && i32(c0) > p1 - P.window; }
    return vec2u(select(PARTIAL, FULL, full), 0u);
  }
  var seen = 0u;
  for (var i = r0; i < r1; i++) {
    for (var j = c0; j < c1; j++) { seen += select(0u, 1u, visible(i, j)); }
  }
  if (seen == 0u) { return vec2u(SKIPPED, select(SKIP_BITMASK, SKIP_TREE, has(F_TREE))); }
  return vec2u(select(PARTIAL, FULL, seen == (r1 - r0) * (c1 - c0)), 0u);
}

// The soft-cap (003): cap · tanh(s / cap), when on. s is finite.
fn capped(s: f32) -> f32 {
  if (P.softcap > 0.0) { return P.softcap * tanh(s / P.softcap); }
  return s;
}
