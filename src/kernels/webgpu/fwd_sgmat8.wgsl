// fwd_sgmat8.wgsl, prefill version 8: version 7 (fwd_sgmat.wgsl) with the work around its two
// matrix products cut down. The same algorithm, the same float16 inputs and float32 products, the
// same lazy rescale (a row's m moves only past m + TAU); what changed, and why (a rough count of
// version 7's work a tile of BK = 64 keys at d = 128, four subgroups of 32 lanes, BQ = 64 rows):
//
// 1. K and V are never staged. Version 7 copied each tile of K and then of V into workgroup
//    memory, a vec4 load and four scalar f16 stores at a time (64 scalar stores a lane for K, 64
//    for V), with two barriers around each copy. Here every subgroup loads its right-hand
//    matrices with subgroupMatrixLoad straight from the storage buffers (the extension takes a
//    storage pointer as well as a workgroup one: sgmat_probe.js's storage_* probes passed on the
//    H200). The four subgroups of a workgroup read the same tile at about the same time, so
//    three of the four reads should be cache hits. The host pads Q's buffer by BQ rows and K's and V's
//    by BK rows of zeros, so that the last block's loads stay inside the buffers; rows past n_kv
//    (the next KV head's, or that padding: finite numbers either way) meet a masked score (P = 0,
//    and 0 × a finite number is 0), and rows past n_q are never written.
// 2. Q is loaded the same way, straight from storage into its left matrices (no staging either).
// 3. The softmax is done by the subgroup that owns the rows, once. In version 7 every one of the
//    TPR = 2 invocations of a row read all BK scores to find the maximum, then read its BK / TPR
//    scores again for P: 96 reads of workgroup memory a lane, and since all the rows of Ss start
//    on the same bank (a row is BK = 64 floats), the 16 rows a subgroup reads at once were a
//    16-way bank conflict on every read and every write of P. Here lane l of subgroup sg takes row
//    sg·SM + l / TPR (one of its own subgroup's rows) and keys u, u + TPR, … (u = l mod TPR): it
//    reads its BK / TPR scores once into registers (sc), the row's maximum and ℓ are combined
//    across the TPR lanes by subgroupShuffleXor (lanes l and l ^ o, o < TPR, are in one subgroup
//    and on one row, as TPR is a power of two dividing the subgroup size), and the rows of Ss and
//    Ps are padded (SST = BK + 4 floats, PST = BK + 8 halves: 16-byte multiples, as a matrix's rows
//    want) so that the rows a subgroup reads at once fall on different banks (2-way at worst).
// 4. Two barriers a tile instead of four or five: one after S is stored (a lane reads scores its
//    subgroup's matrices wrote), and workgroupUniformLoad of the rescale flag, which is a barrier
//    too, after P is written (the P V product reads it). No barrier guards K or V: nothing writes
//    them. The flag holds the number of the tile that moved an m (stamp), so it is never reset.
// 5. Workgroup memory is only S and P (26.3 KiB at BK = 64, BQ = 64, whatever D), against version
//    7's 40.8 KiB at D = 128, so more workgroups share an SM.
//
// Ablation forms, as version 7's (bench/webgpu/bench.js --ablation; never the host's default;
// finite, not right): NOQK (no S = Q Kᵀ: Ss keeps its zeros), NOPV (no O += P V), NOSOFT (P = 1/64
// written once; no score read, no exp2, α = 1, ℓ = 1 a tile), NOLOAD (every tile's K and V read
// from the first tile's place: cache hits), NOSTORE (with VCOPY: each 16-byte word of a tile stored as
// one half, not eight: the copy's loads kept, its stores into workgroup memory nearly all gone),
// NOCOPY (with VCOPY: no copy of K or V in the loop at all, neither the loads nor the stores: Kt keeps
// the first tile's K and Vt its zeros).
//
// Variant forms (right, checked against float64 by bench.js --ablation before they are timed;
// never the host's default), for the choices this file makes without a measurement: whether a
// matrix load straight from storage is slower than staging (if a lane's pair of a Right matrix
// is consecutive along K, as NVIDIA's mma instructions want, V's row-major blocks give it two
// keys' elements, two rows apart), and whether the scores kept in registers, or arrays of
// matrices indexed in loops, spill. KWG: K's tile staged in workgroup memory (Ks, rows padded to D +
// 8 halves) by all invocations, one barrier more a tile, and S read from it. VWG: V's tile staged
// in workgroup memory (Vs) during the softmax, between the two barriers it already has (no barrier
// more: the last tile's P V has read Vs before this tile's first barrier). REREAD: no scores kept
// in registers; the softmax reads its scores from Ss again for P (with FASTS, a tile's second reads
// take the same path as its first: the fast one, or score()). UNROLL: every `//#for` loop
// (fsgpu.js's preprocessor: a `for`, or with UNROLL its body once a step, the step a constant)
// unrolled, so that no array of subgroup matrices (qL, acc) nor the scores (sc) is ever indexed by a
// variable, which a compiler could answer by keeping the array in memory instead of registers.
// STAGE: K's and V's tiles staged in workgroup memory (Kt, Vt) as KWG and VWG stage them, but
// copied by subgroup matrices (subgroup sg loads blocks sg, sg + NSG, … of SM × SK halves from
// storage and stores them, where KWG's invocations copy one half each), and with no barrier
// more: a tile's V and the next visited tile's K are loaded between the tile's two barriers,
// before the softmax, and stored after it (Kt's last reader, the tile's S, is done by the first
// barrier, Vt's, the last tile's P V, by the same; the second barrier makes both visible); the
// first tile's K is staged before the loop. Every subgroup then reads its right matrices from
// workgroup memory. The search for the next visited tile is written out twice on purpose: moved
// into one function it took version 13 from 2.10 to 3.33 ms on the H200
// (`2026-11-30-h200-ahead-trial`); every change here is timed, a tidy-up too.
// FASTS: on a full tile of BK keys (every row sees every key) without a soft-cap, a lane reads its
// scores and scales them, nothing else: score()'s tests (the row past n_q, the key past c1, the
// mask) and its soft-cap branch are per score, and on the H200 they were about a fifth of version
// 13's time at d = 128 and two fifths at d = 64 (`2026-11-30-h200-fasts`). Rows past n_q (the
// padding of the last block) then get scores too; they are finite (Q's padding is zeros) and
// their rows are never written.
//
// Prefill version 10 is this file with RB = 2 (versions 8 and 9: RB = 1): each subgroup takes RB
// blocks of SM query rows instead of one, so that every right matrix it loads (a block of K for S,
// of V for P V) feeds RB products instead of one. Why (`2026-11-29-h200-ablation`, the device's own
// probes): the H200's matrix units do 622 TFLOP/s through subgroup matrices when the operands sit in
// registers, 118 when a right matrix is loaded from storage before every product (probes_sgmat.wgsl),
// and version 9 spends most of its time in its products, at about 32 TFLOP/s; each load used twice halves
// the loads a product. It costs registers (RB times the Q matrices and O's accumulators) and gives
// a row's softmax TPR = SGS / (RB · SM) lanes (one, with 32-lane subgroups and 16-row blocks).
//
// BLK: the workgroup arrays (Ss, Ps, and with STAGE Kt and Vt) declared as arrays of blocks of SM
// rows or keys, the same bytes in the same places. A subgroup matrix load or store then takes a
// pointer to one block (&Ss[sg * RB + rb]) and an offset inside it that is a constant once the
// loops are unrolled, where the flat arrays took a run-time offset (sg * SR * SST + ...). Dawn keeps
// every load and store of a matrix inside its array (robustness, on in every browser) by testing
// offset + stride · (rows − 1) + columns against the array's length before it: with a constant
// offset into a block of known size that test is decided when the shader is compiled; a block's
// index is only clamped. A number read or written alone (the softmax's S and P) has its block's
// index clamped; the index inside the block Tint bounds from row % SM, so it needs no clamp (seen
// in the SPIR-V of a test shader with the same expressions: webgpu.md, "Prefill version 16").
// VCOPY (with STAGE): K's and V's tiles copied by plain loads from storage, 16 bytes (eight halves)
// an invocation (k_in and v_in bound as arrays of vec4<u32>: NCV words an invocation at most), held
// across the softmax as the matrices were, then stored as halves into the same padded rows. Dawn
// guards a subgroup matrix load from storage with a branch (zeros past the buffer's end), and a
// loaded value leaves that branch only once it has arrived: in front of the softmax the load was
// issued ahead of. A plain load is clamped (a min, no branch) and stays in flight.
// PAIR: two row blocks a workgroup, block wg.x and then block nqb − 1 − wg.x (the host dispatches
// ⌈nqb / 2⌉): under a causal mask the first rows' short block with the last rows' long one, so that
// every workgroup has the same work.
// FASTC (with FASTS and BLK): under the causal mask a full-width tile on the diagonal without a
// soft-cap also skips score()'s tests: one comparison a score, key c0 + j visible to row i when
// j ≤ i + offset − c0 (rows past n_q get scores too, as under FASTS, and are never written).
// RANGE: the tile loop runs over the keys the mask can show the block's rows, not over all n_kv:
// under a causal mask up to the last row's position, under a sliding window from the first row's
// first key. The tiles outside were skipped one by one before (each classified, then passed over),
// and the search for the next visited tile ran on through them from a block's last tile.
// LPT: the longest row blocks first. Workgroup (x, y) takes head x and row block nqb − 1 − y (the
// host dispatches (n_q_heads, nqb)): assuming the GPU starts workgroups in the order of their index,
// x the fastest (not measured here; LPT's effect is: 2026-12-01-h200-lpt), under a causal mask every head's last block (every key) starts first and the first
// blocks (a few keys each) fill the end, where they leave no SM idle for long.
// QWG (with STAGE and BLK): Q's rows stored into workgroup memory (Qs) once, and each left matrix of
// Q loaded from there at every tile instead of held in registers (qL): 39 registers fewer at d = 64
// on the H200 (136 against 175, so 3 workgroups an SM instead of 2), and 1.9 times the time
// (`2026-12-02-h200-qwg`): the occupancy it buys is worth less than the loads it adds.
//
// Prefill version 13 is this file with STAGE (above): K and V read from workgroup memory, where a
// product's right matrix loads in about half the time it takes from storage (the H200's probe:
// 228 TFLOP/s against 118, `2026-11-30-h200-stage`), and the tile shared by more subgroups (at
// d = 128 sixteen of one row block; fsgpu.js's prefill-v13 says which shape where). Version 14
// is version 13 with FASTS: a full tile's scores read without per-score tests. Version 16 is
// version 14 with BLK: on the H200 with the checks on, 9 % less time at d = 128 and 19 % at d = 64
// in version 14's shapes, and two row blocks of eight subgroups at d = 128 (1.42 ms against 1.74,
// `2026-12-01-h200-blk`). Version 17 is version 16 with VCOPY: 0.84 ms against 1.44 at d = 128
// with the checks on, faster than version 16 with them off (`2026-12-01-h200-vcopy`). Version 18
// is version 17 with PAIR under the causal mask (0.665 ms against 0.939 at d = 128, N = 4096,
// `2026-12-01-h200-v18`). Version 19 is version 17 with RANGE under a causal mask or a window and
// LPT under the causal mask (6.94 ms against version 18's 8.72 at d = 128, N = 16384, causal,
// `2026-12-01-h200-v19-ort` and `-range`). Version 20 is version 19 with FASTC under the causal mask
// (0.499 ms against 0.561 at d = 128, N = 4096, causal; 6.85 against 7.05 at N = 16384,
// `2026-12-01-h200-v20`).
//
// Shapes: q, k, v float16 (the host rounds them, to nearest, ties to even, and pads them: see 1),
// q (n_q_heads, n_q, D), k and v (n_kv_heads, n_kv, D); o float32 like q; lse (n_q_heads, n_q)
// natural units. Dispatch: (nqb = ⌈n_q / BQ⌉, n_q_heads); PAIR (⌈nqb / 2⌉, n_q_heads); LPT
// (n_q_heads, nqb). Set by the host as constants: D (64, 128 or
// 256), SM, SN, SK (the configuration), SGS (the subgroup size, every subgroup's), NSG, BK, RB,
// and with STAGE NCP (blocks a subgroup copies a tile, at most: (BK / SM) · (D / SK) / NSG, rounded up).

enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
// offsets from the subgroup's index: uniform within a subgroup, which is what a matrix needs
diagnostic(off, chromium_experimental.subgroup_matrix_uniformity);

const SR: u32 = RB * SM;              // query rows a subgroup: RB blocks of SM
const BQ: u32 = NSG * SR;             // query rows a workgroup
const WG: u32 = NSG * SGS;            // invocations a workgroup
const TPR: u32 = SGS / SR;            // lanes a row in the softmax, all in the row's own subgroup
const KPI: u32 = BK / TPR;            // keys a lane scores a tile
const NQK: u32 = D / SK;              // left matrices of Q a subgroup keeps
const NO: u32 = D / SN;               // result matrices of O a subgroup keeps
const SST: u32 = BK + 4u;             // Ss's row stride in floats (16 bytes of padding)
const PST: u32 = BK + 8u;             // Ps's row stride in halves (16 bytes of padding)
const CW: u32 = min(BK, D);           // O's columns that one pass through Ss holds
const NCH: u32 = D / CW;              // passes of O through Ss
const TAU: f32 = 8.0;                 // a row's m moves when a score passes m + TAU (base 2)
const KST: u32 = D + 8u;              // (KWG, VWG) a staged key's row stride in halves (16 bytes of padding)

alias Left = subgroup_matrix_left<f16, SK, SM>;
alias Right = subgroup_matrix_right<f16, SN, SK>;
alias Res = subgroup_matrix_result<f32, SN, SM>;

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> q_in: array<f16>;   // what a subgroup matrix loads from
//#if VCOPY
@group(0) @binding(2) var<storage, read> k_in: array<vec4<u32>>;   // (VCOPY) K and V as words of eight halves
@group(0) @binding(3) var<storage, read> v_in: array<vec4<u32>>;
//#else
@group(0) @binding(2) var<storage, read> k_in: array<f16>;
@group(0) @binding(3) var<storage, read> v_in: array<f16>;
//#endif
@group(0) @binding(4) var<storage, read> mask_bits: array<u32>;
@group(0) @binding(5) var<storage, read_write> o_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> lse: array<f32>;

// every variable a multiple of 16 bytes long (fwd_sgmat.wgsl's `moved` says why)
//#if BLK
var<workgroup> Ss: array<array<f32, SM * SST>, BQ / SM>;   // (BLK) the same bytes, a block of SM rows an element
var<workgroup> Ps: array<array<f16, SM * PST>, BQ / SM>;
//#else
var<workgroup> Ss: array<f32, BQ * SST>;  // S, a padded row a query row; also O on its way out or to be scaled
var<workgroup> Ps: array<f16, BQ * PST>;  // P as the matrix units read it
//#endif
var<workgroup> Ls: array<f32, BQ>;        // each row's ℓ, at the end
var<workgroup> moved: array<atomic<u32>, 4>;   // moved[0]: the last tile (stamp) on which a row's m moved
//#if KWG
var<workgroup> Ks: array<f16, BK * KST>;  // (KWG) K's tile, a key a padded row
//#endif
//#if VWG
var<workgroup> Vs: array<f16, BK * KST>;  // (VWG) V's tile, a key a padded row
//#endif
//#if QWG
var<workgroup> Qs: array<array<f16, SM * KST>, BQ / SM>;   // (QWG, with STAGE and BLK) Q's rows, a block of SM rows an element
//#endif
//#if STAGE
//#if BLK
var<workgroup> Kt: array<array<f16, SM * KST>, BK / SM>;   // (BLK) the same bytes, a block of SM keys an element
var<workgroup> Vt: array<array<f16, SM * KST>, BK / SM>;
//#else
var<workgroup> Kt: array<f16, BK * KST>;  // (STAGE) K's tile, a key a padded row
var<workgroup> Vt: array<f16, BK * KST>;  // (STAGE) V's tile, the same
//#endif
const NDB: u32 = D / SK;                  // (STAGE) blocks of SK columns across a key's row
const NB: u32 = (BK / SM) * NDB;          // (STAGE) SM × SK blocks a tile, NCP or fewer a subgroup
//#endif

// Row i's (the workgroup's row `row`) score against key c0 + j, in base-2 units, or NEG where
// masked, past n_kv or past n_q
fn score(i: u32, row: u32, j: u32, c0: u32, c1: u32, cls: u32) -> f32 {
  if (i >= P.n_q || c0 + j >= c1 || (cls == PARTIAL && !visible(i, c0 + j))) { return NEG; }
//#if BLK
  return capped(Ss[row / SM][(row % SM) * SST + j] * P.scale) * LOG2E;
//#else
  return capped(Ss[row * SST + j] * P.scale) * LOG2E;
//#endif
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32,
        @builtin(subgroup_id) sg: u32, @builtin(subgroup_invocation_id) lane: u32) {
  _ = &k_in;                          // bound in every form (the ablation forms NOQK and NOPV
  _ = &v_in;                          // read one of them nowhere; the host binds all seven)
//#if PAIR
  let h = wg.y;
//#elif LPT
  let h = wg.x;                       // (LPT) the heads innermost (with PAIR, LPT is left out)
//#else
  let h = wg.y;
//#endif
  let kvh = h / (P.n_q_heads / P.n_kv_heads);
//#if PAIR
  // (PAIR) two row blocks a workgroup, block wg.x and then block nqb − 1 − wg.x: under a causal mask
  // the first rows' block with the last rows', so that every workgroup has the same work (the host
  // dispatches ⌈nqb / 2⌉ of them; the middle block of an odd count is done once)
  let nqb = (P.n_q + BQ - 1u) / BQ;
  for (var item = 0u; item < 2u; item++) {
  let qb = select(wg.x, nqb - 1u - wg.x, item == 1u);
  if (item == 1u && qb == wg.x) { break; }
  let r0 = qb * BQ;
//#elif LPT
  let r0 = ((P.n_q + BQ - 1u) / BQ - 1u - wg.y) * BQ;   // (LPT) the last block first
//#else
  let r0 = wg.x * BQ;
//#endif
  let r1 = min(r0 + BQ, P.n_q);
  let kv0 = kvh * P.n_kv * D;         // KV head kvh's first half
  let u = lane % TPR;                 // this lane's share of its row: keys u, u + TPR, …
  let row = sg * SR + lane / TPR;     // its row in the workgroup (one of its subgroup's)
  let i = r0 + row;                   // its query row
  let sS = sg * SR * SST;             // the subgroup's rows in Ss and in Ps
  let sP = sg * SR * PST;

  // Q's SR rows of this subgroup as RB · D / SK left matrices (row block rb's are qL[rb · NQK + kc]),
  // from storage (rows past n_q: padding)
//#if !QWG
  var qL: array<Left, RB * NQK>;
//#endif
  let q0 = (h * P.n_q + r0 + sg * SR) * D;
//#if QWG
  // (QWG) or stored into Qs, this subgroup's blocks, and loaded from there again at every tile: no
  // registers held for Q (the barrier after the first K tile's copy comes before the first load)
  //#for rb RB
    //#for kc D / SK
      subgroupMatrixStore<row_major>(&Qs[sg * RB + rb], kc * SK, subgroupMatrixLoad<Left, row_major>(&q_in, q0 + rb * SM * D + kc * SK, D), KST);
    //#endfor
  //#endfor
//#else
  //#for rb RB
    //#for kc D / SK
      qL[rb * NQK + kc] = subgroupMatrixLoad<Left, row_major>(&q_in, q0 + rb * SM * D + kc * SK, D);
    //#endfor
  //#endfor
//#endif
  var acc: array<Res, RB * NO>;       // O, zero to begin with (row block rb's: acc[rb · NO + nc])
//#if PAIR
  //#for a RB * D / SN
    acc[a] = Res();                   // (PAIR) zeroed by hand: a declaration inside a loop was not always zeroed again on the H200
  //#endfor
//#endif
  var m = NEG;                        // the row's maximum (base 2), the same in its TPR lanes
  var l = 0.0;                        // this lane's share of the row's ℓ
//#if !REREAD
  var sc: array<f32, KPI>;            // this lane's scores of the tile (base 2; NEG where masked)
//#endif
  var stamp = 0u;                     // visited tiles so far (the same in every invocation)
//#if RANGE
  // (RANGE) keys [kbeg, kend): the tiles the mask can show the block's rows (kbeg a tile's first key)
  var kbeg = 0u;
  var kend = P.n_kv;
  if (P.mask_kind == 1u || P.mask_kind == 2u) {
    kend = u32(clamp(i32(r1) + P.offset, 0, i32(P.n_kv)));   // the last row sees keys up to its position
    if (P.mask_kind == 2u) { kbeg = (u32(clamp(i32(r0) + P.offset - P.window + 1, 0, i32(P.n_kv))) / BK) * BK; }
  }
//#endif
//#if FASTS
  let SL = P.scale * LOG2E;           // (FASTS) a score's factor to base-2 units
//#endif
//#if STAGE
  // (STAGE) the first visited tile's K into Kt: blocks b = sg, sg + NSG, … of its (BK / SM) × NDB
//#if RANGE
  var cf = kbeg;
  while (cf < kend && classify(r0, r1, cf, min(cf + BK, P.n_kv)).x == SKIPPED) { cf += BK; }
  if (cf < kend) {
//#else
  var cf = 0u;
  while (cf < P.n_kv && classify(r0, r1, cf, min(cf + BK, P.n_kv)).x == SKIPPED) { cf += BK; }
  if (cf < P.n_kv) {
//#endif
//#if VCOPY
    //#for c NCV
      let w0 = t + c * WG;            // (VCOPY) word w0 of the tile: key w0 / (D / 8), columns 8 (w0 % (D / 8)) …
      if (w0 < BK * D / 8u) {
        let x0 = k_in[(kv0 + cf * D) / 8u + w0];
        let key0 = w0 / (D / 8u);
        let at0 = (key0 % SM) * KST + (w0 % (D / 8u)) * 8u;
        //#for i 4
          let h0 = bitcast<vec2<f16>>(x0[i]);
          Kt[key0 / SM][at0 + 2u * i] = h0.x;
          Kt[key0 / SM][at0 + 2u * i + 1u] = h0.y;
        //#endfor
      }
    //#endfor
//#else
    //#for c NCP
      let b0 = sg + c * NSG;
      if (b0 < NB) {
        let k0 = subgroupMatrixLoad<Left, row_major>(&k_in, kv0 + cf * D + (b0 / NDB) * SM * D + (b0 % NDB) * SK, D);
//#if BLK
        subgroupMatrixStore<row_major>(&Kt[b0 / NDB], (b0 % NDB) * SK, k0, KST);
//#else
        subgroupMatrixStore<row_major>(&Kt, (b0 / NDB) * SM * KST + (b0 % NDB) * SK, k0, KST);
//#endif
      }
    //#endfor
//#endif
  }
  workgroupBarrier();                 // Kt holds the first tile's keys
//#endif
//#if NOSOFT
  m = 0.0;                            // (NOSOFT) P = 1/64 on every key, once
//#if BLK
  for (var x = t; x < BQ * PST; x += WG) { Ps[x / (SM * PST)][x % (SM * PST)] = f16(1.0 / 64.0); }
//#else
  for (var x = t; x < BQ * PST; x += WG) { Ps[x] = f16(1.0 / 64.0); }
//#endif
//#endif

//#if RANGE
  for (var c0 = kbeg; c0 < kend; c0 += BK) {
//#else
  for (var c0 = 0u; c0 < P.n_kv; c0 += BK) {
//#endif
    let c1 = min(c0 + BK, P.n_kv);
    let cls = classify(r0, r1, c0, c1).x;   // the same for every invocation
    if (cls == SKIPPED) { continue; }
    stamp++;
//#if NOLOAD
    let kt = kv0;                            // (NOLOAD) the first tile's keys, every time
//#else
    let kt = kv0 + c0 * D;                   // the tile's first key (K and V alike)
//#endif
//#if KWG
    for (var x = t; x < BK * D; x += WG) { Ks[(x / D) * KST + x % D] = k_in[kt + x]; }
    workgroupBarrier();                      // (KWG) K's tile is in Ks
//#endif

    // 1. S = Q Kᵀ: key block n is the right matrix Kᵀ[kc block, n block], K's rows read as
    // columns straight from storage, each load used by the subgroup's RB row blocks; each
    // subgroup stores its rows of S into Ss
//#if !NOQK
    //#for n BK / SN
      // zeroed explicitly: on the H200 a declaration alone inside the tile loop was not zeroed again
      // on each pass (S kept the last tile's sums; `2026-11-29-h200-run3`)
      var s: array<Res, RB>;
      //#for rb RB
        s[rb] = Res();
      //#endfor
      //#for kc D / SK
//#if KWG
        let kr = subgroupMatrixLoad<Right, col_major>(&Ks, n * SN * KST + kc * SK, KST);
//#elif STAGE
//#if BLK
        let kr = subgroupMatrixLoad<Right, col_major>(&Kt[n * SN / SM], (n * SN % SM) * KST + kc * SK, KST);
//#else
        let kr = subgroupMatrixLoad<Right, col_major>(&Kt, n * SN * KST + kc * SK, KST);
//#endif
//#else
        let kr = subgroupMatrixLoad<Right, col_major>(&k_in, kt + n * SN * D + kc * SK, D);
//#endif
        //#for rb RB
//#if QWG
          s[rb] = subgroupMatrixMultiplyAccumulate(subgroupMatrixLoad<Left, row_major>(&Qs[sg * RB + rb], kc * SK, KST), kr, s[rb]);
//#else
          s[rb] = subgroupMatrixMultiplyAccumulate(qL[rb * NQK + kc], kr, s[rb]);
//#endif
        //#endfor
      //#endfor
      //#for rb RB
//#if BLK
        subgroupMatrixStore<row_major>(&Ss[sg * RB + rb], n * SN, s[rb], SST);
//#else
        subgroupMatrixStore<row_major>(&Ss, sS + rb * SM * SST + n * SN, s[rb], SST);
//#endif
      //#endfor
    //#endfor
//#endif
    workgroupBarrier();                      // S is in Ss (and last tile's P is read)

    // 2. the online softmax of row `row`, keys u, u + TPR, … of it in this lane, read once
//#if VWG
    for (var x = t; x < BK * D; x += WG) { Vs[(x / D) * KST + x % D] = v_in[kt + x]; }   // (VWG) read after the next barrier
//#endif
//#if STAGE
    // (STAGE) this tile's V and the next visited tile's K, loaded now, stored after the softmax
    var cn = c0 + BK;
//#if RANGE
    while (cn < kend && classify(r0, r1, cn, min(cn + BK, P.n_kv)).x == SKIPPED) { cn += BK; }
    let more = cn < kend;
//#else
    while (cn < P.n_kv && classify(r0, r1, cn, min(cn + BK, P.n_kv)).x == SKIPPED) { cn += BK; }
    let more = cn < P.n_kv;
//#endif
//#if VCOPY
    var vb4: array<vec4<u32>, NCV>;          // (VCOPY) this invocation's words of the two tiles
    var kb4: array<vec4<u32>, NCV>;
//#if !NOCOPY
    //#for c NCV
      let w1 = t + c * WG;
      if (w1 < BK * D / 8u) {
        vb4[c] = v_in[kt / 8u + w1];
        if (more) { kb4[c] = k_in[(kv0 + cn * D) / 8u + w1]; }
      }
    //#endfor
//#endif
//#else
    var vb: array<Left, NCP>;
    var kb: array<Left, NCP>;
    //#for c NCP
      let b1 = sg + c * NSG;
      if (b1 < NB) {
        vb[c] = subgroupMatrixLoad<Left, row_major>(&v_in, kt + (b1 / NDB) * SM * D + (b1 % NDB) * SK, D);
        if (more) { kb[c] = subgroupMatrixLoad<Left, row_major>(&k_in, kv0 + cn * D + (b1 / NDB) * SM * D + (b1 % NDB) * SK, D); }
      }
    //#endfor
//#endif
//#endif
//#if NOSOFT
    l += 1.0;
//#else
    var m_blk = NEG;
//#if FASTS
//#if REREAD
    var fast = 0u;                           // (REREAD) how this tile's scores were read: 1 FASTS, 2 FASTC, 0 score()
    let lim = i32(i) + P.offset - i32(c0);   // (FASTC) on the causal diagonal key c0 + j is visible to row i when j ≤ lim
//#endif
    // (FASTS) a full tile of BK keys and no soft-cap: every score is visible, none needs a test
    if (cls == FULL && c1 == c0 + BK && P.softcap <= 0.0) {
//#if REREAD
      fast = 1u;
//#endif
      //#for k BK / (SGS / (RB * SM))
//#if BLK
        let x = Ss[row / SM][(row % SM) * SST + u + k * TPR] * SL;
//#else
        let x = Ss[row * SST + u + k * TPR] * SL;
//#endif
//#if !REREAD
        sc[k] = x;
//#endif
        m_blk = max(m_blk, x);
      //#endfor
//#if FASTC
    } else if (cls == PARTIAL && P.mask_kind == 1u && c1 == c0 + BK && P.softcap <= 0.0) {
      // (FASTC) a tile on the causal diagonal: key c0 + j is visible to row i when j ≤ lim
//#if REREAD
      fast = 2u;
//#else
      let lim = i32(i) + P.offset - i32(c0);
//#endif
      //#for k BK / (SGS / (RB * SM))
        let x = select(NEG, Ss[row / SM][(row % SM) * SST + u + k * TPR] * SL, i32(u + k * TPR) <= lim);
//#if !REREAD
        sc[k] = x;
//#endif
        m_blk = max(m_blk, x);
      //#endfor
//#endif
    } else {
//#endif
    //#for k BK / (SGS / (RB * SM))
      let x = score(i, row, u + k * TPR, c0, c1, cls);
//#if !REREAD
      sc[k] = x;
//#endif
      m_blk = max(m_blk, x);
    //#endfor
//#if FASTS
    }
//#endif
    for (var o = 1u; o < TPR; o <<= 1u) { m_blk = max(m_blk, subgroupShuffleXor(m_blk, o)); }   // the row's
    var alpha = 1.0;
    if (m_blk > m + TAU) {                   // also a row's first visible score (m = NEG)
      alpha = select(exp2(m - m_blk), 0.0, m == NEG);
      if (m != NEG) { atomicStore(&moved[0], stamp); }   // O holds something to scale
      m = m_blk;
    }
    var share = 0.0;
    //#for k BK / (SGS / (RB * SM))
//#if REREAD
//#if FASTS
      // (REREAD) the score read again the way the tile's first pass read it
      var x = NEG;
      if (fast != 0u) {
//#if BLK
        x = select(NEG, Ss[row / SM][(row % SM) * SST + u + k * TPR] * SL, fast == 1u || i32(u + k * TPR) <= lim);
//#else
        x = select(NEG, Ss[row * SST + u + k * TPR] * SL, fast == 1u || i32(u + k * TPR) <= lim);
//#endif
      } else {
        x = score(i, row, u + k * TPR, c0, c1, cls);
      }
//#else
      let x = score(i, row, u + k * TPR, c0, c1, cls);
//#endif
//#else
      let x = sc[k];
//#endif
      let p = f16(select(0.0, exp2(x - m), x != NEG));   // ≤ 2^TAU
//#if BLK
      Ps[row / SM][(row % SM) * PST + u + k * TPR] = p;
//#else
      Ps[row * PST + u + k * TPR] = p;
//#endif
      share += f32(p);                       // ℓ from the rounded p the product uses
    //#endfor
    l = alpha * l + share;
//#endif
//#if STAGE
//#if NOCOPY
    // (NOCOPY: nothing copied)
//#elif VCOPY
    //#for c NCV
      let w2 = t + c * WG;
      if (w2 < BK * D / 8u) {
        let key2 = w2 / (D / 8u);
        let at2 = (key2 % SM) * KST + (w2 % (D / 8u)) * 8u;
//#if NOSTORE
        // (NOSTORE) one half a word stored instead of eight, made of all four loaded words (kept loaded)
        let xv = vb4[c];
        Vt[key2 / SM][at2] = bitcast<vec2<f16>>((xv.x ^ xv.y ^ xv.z ^ xv.w) & 0x3bff3bffu).x;
        if (more) {
          let xk = kb4[c];
          Kt[key2 / SM][at2] = bitcast<vec2<f16>>((xk.x ^ xk.y ^ xk.z ^ xk.w) & 0x3bff3bffu).x;
        }
//#else
        //#for i 4
          let hv = bitcast<vec2<f16>>(vb4[c][i]);
          Vt[key2 / SM][at2 + 2u * i] = hv.x;
          Vt[key2 / SM][at2 + 2u * i + 1u] = hv.y;
          if (more) {
            let hk = bitcast<vec2<f16>>(kb4[c][i]);
            Kt[key2 / SM][at2 + 2u * i] = hk.x;
            Kt[key2 / SM][at2 + 2u * i + 1u] = hk.y;
          }
        //#endfor
//#endif
      }
    //#endfor
//#else
    //#for c NCP
      let b2 = sg + c * NSG;
      if (b2 < NB) {
//#if BLK
        subgroupMatrixStore<row_major>(&Vt[b2 / NDB], (b2 % NDB) * SK, vb[c], KST);
        if (more) { subgroupMatrixStore<row_major>(&Kt[b2 / NDB], (b2 % NDB) * SK, kb[c], KST); }
//#else
        subgroupMatrixStore<row_major>(&Vt, (b2 / NDB) * SM * KST + (b2 % NDB) * SK, vb[c], KST);
        if (more) { subgroupMatrixStore<row_major>(&Kt, (b2 / NDB) * SM * KST + (b2 % NDB) * SK, kb[c], KST); }
//#endif
      }
    //#endfor
//#endif
//#endif

    // O ← diag(α) O through Ss on the tiles where some row's m moved: the flag read uniformly
    // (workgroupUniformLoad waits for every invocation, so it is also the barrier before P V)
    if (workgroupUniformLoad(&moved[0]) == stamp) {
//#if !NOSOFT
      //#for ch D / min(BK, D)
        //#for rb RB
          //#for b min(BK, D) / SN
//#if BLK
            subgroupMatrixStore<row_major>(&Ss[sg * RB + rb], b * SN, acc[rb * NO + ch * (CW / SN) + b], SST);
//#else
            subgroupMatrixStore<row_major>(&Ss, sS + rb * SM * SST + b * SN, acc[rb * NO + ch * (CW / SN) + b], SST);
//#endif
          //#endfor
        //#endfor
        workgroupBarrier();
//#if BLK
        for (var c = u; c < CW; c += TPR) { Ss[row / SM][(row % SM) * SST + c] *= alpha; }
//#else
        for (var c = u; c < CW; c += TPR) { Ss[row * SST + c] *= alpha; }   // each lane its own row's α
//#endif
        workgroupBarrier();
        //#for rb RB
          //#for b min(BK, D) / SN
//#if BLK
            acc[rb * NO + ch * (CW / SN) + b] = subgroupMatrixLoad<Res, row_major>(&Ss[sg * RB + rb], b * SN, SST);
//#else
            acc[rb * NO + ch * (CW / SN) + b] = subgroupMatrixLoad<Res, row_major>(&Ss, sS + rb * SM * SST + b * SN, SST);
//#endif
          //#endfor
        //#endfor
        workgroupBarrier();                  // Ss read before the next S or pass is stored
      //#endfor
//#endif
    }

    // 3. O += P V: P's key block kk (left, from Ps, one a row block) times V's rows of that
    // block, columns nc block (right, straight from storage, each load used by the RB row blocks)
//#if !NOPV
    //#for kk BK / SK
      var pl: array<Left, RB>;
      //#for rb RB
//#if BLK
        pl[rb] = subgroupMatrixLoad<Left, row_major>(&Ps[sg * RB + rb], kk * SK, PST);
//#else
        pl[rb] = subgroupMatrixLoad<Left, row_major>(&Ps, sP + rb * SM * PST + kk * SK, PST);
//#endif
      //#endfor
      //#for nc D / SN
//#if VWG
        let vr = subgroupMatrixLoad<Right, row_major>(&Vs, kk * SK * KST + nc * SN, KST);
//#elif STAGE
//#if BLK
        let vr = subgroupMatrixLoad<Right, row_major>(&Vt[kk * SK / SM], (kk * SK % SM) * KST + nc * SN, KST);
//#else
        let vr = subgroupMatrixLoad<Right, row_major>(&Vt, kk * SK * KST + nc * SN, KST);
//#endif
//#else
        let vr = subgroupMatrixLoad<Right, row_major>(&v_in, kt + kk * SK * D + nc * SN, D);
//#endif
        //#for rb RB
          acc[rb * NO + nc] = subgroupMatrixMultiplyAccumulate(pl[rb], vr, acc[rb * NO + nc]);
        //#endfor
      //#endfor
    //#endfor
//#endif
  }

  // the end: the row's ℓ from its TPR lanes' shares; O / ℓ written CW columns at a time
  var L = l;
  for (var o = 1u; o < TPR; o <<= 1u) { L += subgroupShuffleXor(L, o); }
  if (u == 0u) {
    Ls[row] = L;
    if (i < P.n_q) { lse[h * P.n_q + i] = select(NEG, m / LOG2E + log(L), L > 0.0); }
  }
  //#for ch D / min(BK, D)
    workgroupBarrier();                      // Ls is written; the last pass's Ss is read
    //#for rb RB
      //#for b min(BK, D) / SN
//#if BLK
        subgroupMatrixStore<row_major>(&Ss[sg * RB + rb], b * SN, acc[rb * NO + ch * (CW / SN) + b], SST);
//#else
        subgroupMatrixStore<row_major>(&Ss, sS + rb * SM * SST + b * SN, acc[rb * NO + ch * (CW / SN) + b], SST);
//#endif
      //#endfor
    //#endfor
    workgroupBarrier();
    for (var x = t; x < BQ * CW; x += WG) {
      let rr = x / CW;
      let ii = r0 + rr;
      if (ii >= P.n_q) { continue; }
      let LL = Ls[rr];
//#if BLK
      o_out[(h * P.n_q + ii) * D + ch * CW + x % CW] = select(0.0, Ss[rr / SM][(rr % SM) * SST + x % CW] / LL, LL > 0.0);
//#else
      o_out[(h * P.n_q + ii) * D + ch * CW + x % CW] = select(0.0, Ss[rr * SST + x % CW] / LL, LL > 0.0);   // a row that sees no key gets 0
//#endif
    }
  //#endfor
//#if PAIR
  workgroupBarrier();                 // (PAIR) this block's Ss and Ls read before the next block writes them
  if (t == 0u) { atomicStore(&moved[0], 0u); }   // the next block's stamps start again at 1
  workgroupBarrier();
  }
//#endif
}
