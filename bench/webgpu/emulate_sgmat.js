#!/usr/bin/env node
/* emulate_sgmat.js: prefill versions 7, 8 to 10, 13, 14 and 16 to 20 (src/kernels/webgpu/fwd_sgmat.wgsl, fwd_sgmat8.wgsl;
 * 9, 10, 13, 14 and 16 to 20 are forms of 8: its loops unrolled, other tiles, RB = 2 row blocks a subgroup, K and V
 * staged, full tiles' scores without tests; 16 declares 14's workgroup arrays in blocks of 16 rows, the
 * same addresses, so 14's transcription is 16's; 17 copies 16's tiles by plain loads, the same halves
 * into the same places; 18 pairs row blocks in a workgroup (PAIR); 19 gives the workgroups their
 * blocks longest first (LPT) and runs its tile loop over the keys the mask can show (RANGE); 20 scores
 * the causal diagonal's full-width tiles with one comparison (FASTC))
 * transcribed into plain JavaScript, statement for statement, and checked against float64 on random
 * problems, for the machines that have no subgroup matrices (this one: SwiftShader has none, and
 * Dawn's null backend validates the WGSL but runs nothing).
 *
 *   node bench/webgpu/emulate_sgmat.js [--seed N] [--count N] [--kernel v7|v8|both] [--fault NAME]
 *
 * --fault plants one fault in version 8's transcription (its run must then fail, exit 1): noshuffle
 * (a row's maximum not combined across its lanes), alpha1 (O not rescaled when m moves), nopad (the
 * host's padding of Q, K and V left out: a load past a buffer), pstride (P read with stride BK, not
 * Ps's padded PST), rbstore (version 10's second row block of S stored over the first), firstk
 * (version 13's first K tile staged from key 0, not from the first visited tile), fasts (version
 * 14's untested scores on partial tiles too), pairzero (version 18's second block of a pair begun
 * with the first one's O), rangeend (version 19's tile loop stopped a tile short of the last
 * row's keys), fastc (FASTC's causal test one key short). Version 8's transcription also
 * models its subgroups: a shuffle reads the value of lane l ^ o of the same subgroup, as
 * subgroupShuffleXor does.
 *
 * What it checks: the kernel's index arithmetic (which rows, keys and columns each subgroup
 * matrix load and store touches, as Dawn's spec of the extension defines row- and column-major
 * loads with a stride), the tile loop and its skips, the masks, the online softmax with its lazy
 * rescale (m moved only past m + TAU; O scaled through workgroup memory on those tiles), the
 * float16 rounding of Q, K, V and P, and the end's ℓ from the invocations' shares. Workgroup
 * memory and each subgroup's matrices are arrays; a phase between two barriers runs every
 * invocation (or subgroup) in turn, which is what the barriers promise. What it cannot check: the
 * WGSL text itself (a transcription can differ from it: bench/webgpu/validate.js compiles the
 * text) and the GPU's own matrix units. Seed printed; exit 1 on a failure.
 */
'use strict';
const FSGPU = require('../../src/kernels/webgpu/fsgpu.js');

const NEG = FSGPU.NEG, LOG2E = FSGPU.LOG2E;
const f32 = Math.fround;
const f16 = x => FSGPU.half1(Float32Array.of(x)).r[0];   // round to float16 (nearest, ties to even)

// A subgroup matrix of rows × cols, loaded from arr at off with a stride, row- or column-major:
// entry [r][c] at off + r·stride + c (row-major) or off + c·stride + r (column-major).
function load(arr, off, colMajor, stride, rows, cols) {
  const m = [];
  for (let r = 0; r < rows; r++) {
    m.push([]);
    for (let c = 0; c < cols; c++) {
      const i = off + (colMajor ? c * stride + r : r * stride + c);
      if (i >= arr.length) throw new Error(`subgroup matrix load past the array (${i} ≥ ${arr.length})`);
      m[r].push(arr[i]);
    }
  }
  return m;
}
function store(arr, off, m, stride) {
  for (let r = 0; r < m.length; r++)
    for (let c = 0; c < m[0].length; c++) {
      const i = off + r * stride + c;
      if (i >= arr.length) throw new Error(`subgroup matrix store past the array (${i} ≥ ${arr.length})`);
      arr[i] = m[r][c];
    }
}
const zero = (rows, cols) => Array.from({length: rows}, () => new Array(cols).fill(0));
// left (M × K) · right (K × N) + acc (M × N), float32 accumulation
function mma(a, b, acc) {
  const out = zero(acc.length, acc[0].length);
  for (let r = 0; r < acc.length; r++)
    for (let c = 0; c < acc[0].length; c++) {
      let s = acc[r][c];
      for (let k = 0; k < b.length; k++) s = f32(s + f32(a[r][k] * b[k][c]));
      out[r][c] = s;
    }
  return out;
}

function visible(p, i, j) {
  const m = p.mask, pos = i + m.offset;
  switch (m.kind) {
    case 1: return j <= pos;
    case 2: return j <= pos && j > pos - m.window;
    case 3: return ((m.bits[i * m.words + (j >>> 5)] >>> (j & 31)) & 1) !== 0;
    default: return true;
  }
}
// common.wgsl's classify, its class only
function classify(p, r0, r1, c0, c1) {
  let seen = 0;
  for (let i = r0; i < r1; i++) for (let j = c0; j < c1; j++) seen += visible(p, i, j) ? 1 : 0;
  return seen === 0 ? 2 : seen === (r1 - r0) * (c1 - c0) ? 0 : 1;
}
const capped = (p, s) => (p.softcap > 0 ? f32(p.softcap * Math.tanh(s / p.softcap)) : s);

// fwd_sgmat.wgsl's main, every workgroup; q, k, v already float16-rounded. Returns {O, lse}.
function kernel(p, C) {
  const {D, SM, SN, SK, SGS, NSG, BK} = C;
  const BQ = NSG * SM, WG = NSG * SGS, TPR = WG / BQ, NQK = D / SK, NO = D / SN;
  const CW = Math.min(BK, D), NCH = D / CW, KVN = Math.max(BK, BQ) * D, TAU = 8;
  const O = new Float32Array(p.n_q_heads * p.n_q * D), lse = new Float32Array(p.n_q_heads * p.n_q);
  const scale = p.scale;
  for (let h = 0; h < p.n_q_heads; h++) for (let wx = 0; wx < Math.ceil(p.n_q / BQ); wx++) {
    const kvh = Math.floor(h / (p.n_q_heads / p.n_kv_heads));
    const r0 = wx * BQ, r1 = Math.min(r0 + BQ, p.n_q);
    const KV = new Float32Array(KVN), Ss = new Float32Array(BQ * BK), Ps = new Float32Array(BQ * BK);
    const alpha_s = new Float32Array(BQ), lsum = new Float32Array(WG);
    let moved = 0;
    const inv = Array.from({length: WG}, (_, t) => ({row: Math.floor(t / TPR), u: t % TPR, m: NEG, l: 0}));
    const sgs = Array.from({length: NSG}, (_, sg) => ({mine: sg * SM * BK, qL: [], acc: Array.from({length: NO}, () => zero(SM, SN))}));
    const score = (row, j, c0, c1, cls) => {
      const i = r0 + row;
      if (i >= p.n_q || c0 + j >= c1 || (cls === 1 && !visible(p, i, c0 + j))) return NEG;
      return f32(capped(p, f32(Ss[row * BK + j] * scale)) * LOG2E);
    };
    const D4 = D / 4, kv4 = kvh * p.n_kv * D4;   // vec4<f16> units, as the kernel loads them
    const loadTile = (c0, c1, src) => {
      for (let x = 0; x < BK * D4; x++) {
        const j = c0 + Math.floor(x / D4), w = kv4 + Math.min(j, p.n_kv - 1) * D4 + x % D4;
        for (let e = 0; e < 4; e++) KV[4 * x + e] = j < c1 ? src[4 * w + e] : 0;
      }
    };
    for (let x = 0; x < BQ * D4; x++) {
      const i = r0 + Math.floor(x / D4), w = (h * p.n_q + Math.min(i, p.n_q - 1)) * D4 + x % D4;
      for (let e = 0; e < 4; e++) KV[4 * x + e] = i < p.n_q ? p.q[4 * w + e] : 0;
    }
    for (const [sg, S] of sgs.entries()) for (let kc = 0; kc < NQK; kc++) S.qL[kc] = load(KV, sg * SM * D + kc * SK, false, D, SM, SK);
    for (let c0 = 0; c0 < p.n_kv; c0 += BK) {
      const c1 = Math.min(c0 + BK, p.n_kv);
      const cls = classify(p, r0, r1, c0, c1);
      if (cls === 2) continue;
      loadTile(c0, c1, p.k);
      for (const [sg, S] of sgs.entries()) {   // 1. S = Q Kᵀ
        for (let n = 0; n < BK / SN; n++) {
          let s = zero(SM, SN);
          for (let kc = 0; kc < NQK; kc++) s = mma(S.qL[kc], load(KV, n * SN * D + kc * SK, true, D, SK, SN), s);
          store(Ss, S.mine + n * SN, s, BK);
          void sg;
        }
      }
      loadTile(c0, c1, p.v);
      for (const I of inv) {                    // 2. the online softmax
        let m_blk = NEG;
        for (let j = 0; j < BK; j++) m_blk = Math.max(m_blk, score(I.row, j, c0, c1, cls));
        let alpha = 1;
        if (m_blk > f32(I.m + TAU)) {
          alpha = I.m === NEG ? 0 : f32(2 ** (I.m - m_blk));
          if (I.m !== NEG && I.u === 0) moved = 1;
          I.m = m_blk;
        }
        if (I.u === 0) alpha_s[I.row] = alpha;
        let share = 0;
        for (let j = I.u; j < BK; j += TPR) {
          const s = score(I.row, j, c0, c1, cls);
          const pp = f16(s !== NEG ? f32(2 ** (s - I.m)) : 0);
          Ps[I.row * BK + j] = pp;
          share = f32(share + pp);
        }
        I.l = f32(f32(alpha * I.l) + share);
      }
      if (moved) {                              // O ← diag(α) O through Ss
        C.rescales = (C.rescales || 0) + 1;
        for (let ch = 0; ch < NCH; ch++) {
          for (const S of sgs) for (let b = 0; b < CW / SN; b++) store(Ss, S.mine + b * SN, S.acc[ch * (CW / SN) + b], BK);
          for (let x = 0; x < BQ * BK; x++) Ss[x] = f32(Ss[x] * alpha_s[Math.floor(x / BK)]);
          for (const S of sgs) for (let b = 0; b < CW / SN; b++) S.acc[ch * (CW / SN) + b] = load(Ss, S.mine + b * SN, false, BK, SM, SN);
        }
        moved = 0;
      }
      for (const S of sgs)                      // 3. O += P V
        for (let kk = 0; kk < BK / SK; kk++) {
          const pl = load(Ps, S.mine + kk * SK, false, BK, SM, SK);
          for (let nc = 0; nc < NO; nc++) S.acc[nc] = mma(pl, load(KV, kk * SK * D + nc * SN, false, D, SK, SN), S.acc[nc]);
        }
    }
    for (const [t, I] of inv.entries()) lsum[t] = I.l;
    for (let ch = 0; ch < NCH; ch++) {
      for (const S of sgs) for (let b = 0; b < CW / SN; b++) store(Ss, S.mine + b * SN, S.acc[ch * (CW / SN) + b], BK);
      for (let x = 0; x < BQ * BK; x++) {
        const rr = Math.floor(x / BK), cc = x % BK, i = r0 + rr;
        if (cc >= CW || i >= p.n_q) continue;
        let L = 0;
        for (let k = 0; k < TPR; k++) L = f32(L + lsum[rr * TPR + k]);
        O[(h * p.n_q + i) * D + ch * CW + cc] = L > 0 ? f32(Ss[x] / L) : 0;
      }
    }
    for (const I of inv) {
      const i = r0 + I.row;
      if (I.u !== 0 || i >= p.n_q) continue;
      let L = 0;
      for (let k = 0; k < TPR; k++) L = f32(L + lsum[I.row * TPR + k]);
      lse[h * p.n_q + i] = L > 0 ? f32(I.m / LOG2E + Math.log(L)) : NEG;
    }
  }
  return {O, lse};
}

// fwd_sgmat8.wgsl's main, every workgroup; q, k, v already float16-rounded; the buffers padded as
// fsgpu.js's prefill-v8 layout pads them (Q by BQ rows, K and V by BK rows of zeros). C.KWG, C.VWG,
// C.REREAD: its variant forms (K or V staged in workgroup memory, scores read twice); C.STAGE:
// version 13's (K and V staged by subgroup matrices, the next visited tile's K during this tile's
// softmax); C.FASTS: version 14's (a full tile's scores without tests); C.PAIR: version 18's (two
// row blocks a workgroup, wx's and nqb − 1 − wx's, workgroup memory kept between them); C.LPT:
// version 19's (workgroup wx takes block nqb − 1 − wx); C.RANGE: version 19's (the tile loop over
// the keys the mask can show the block). fault: see the header. Returns {O, lse}.
function kernel8(p, C, fault = null) {
  const {D, SM, SN, SK, SGS, NSG, BK} = C, KST = D + 8, RB = C.RB || 1, SR = RB * SM;
  const BQ = NSG * SR, TPR = SGS / SR, KPI = BK / TPR, NQK = D / SK, NO = D / SN;
  const SST = BK + 4, PST = BK + 8, CW = Math.min(BK, D), NCH = D / CW, TAU = 8;
  const pad = (x, rows) => { const y = new Float32Array(x.length + (fault === 'nopad' ? 0 : rows * D)); y.set(x); return y; };
  const q_in = pad(p.q, BQ), k_in = pad(p.k, BK), v_in = pad(p.v, BK);
  const O = new Float32Array(p.n_q_heads * p.n_q * D), lse = new Float32Array(p.n_q_heads * p.n_q);
  const pst = fault === 'pstride' ? BK : PST;
  const nqb = Math.ceil(p.n_q / BQ);
  for (let h = 0; h < p.n_q_heads; h++) for (let wx = 0; wx < (C.PAIR ? Math.ceil(nqb / 2) : nqb); wx++) {
    const Ss = new Float32Array(BQ * SST), Ps = new Float32Array(BQ * PST), Ls = new Float32Array(BQ);
    const Ks = new Float32Array(BK * KST), Vs = new Float32Array(BK * KST);   // (KWG, VWG)
    const Kt = new Float32Array(BK * KST), Vt = new Float32Array(BK * KST);   // (STAGE)
    let carried = null;                         // (pairzero) the first block's subgroups
    for (let item = 0; item < (C.PAIR ? 2 : 1); item++) {   // (PAIR) block wx, then block nqb − 1 − wx
    const qb = item === 0 ? (C.LPT ? nqb - 1 - wx : wx) : nqb - 1 - wx;
    if (item === 1 && qb === wx) break;
    const kvh = Math.floor(h / (p.n_q_heads / p.n_kv_heads));
    const r0 = qb * BQ, r1 = Math.min(r0 + BQ, p.n_q), kv0 = kvh * p.n_kv * D;
    const NDB = D / SK, NB = (BK / SM) * NDB, NCP = Math.ceil(NB / NSG);
    // (STAGE) subgroup sg's share of a tile: blocks sg, sg + NSG, … as SM × SK left matrices from storage
    const blocks = sg => Array.from({length: NCP}, (_, c) => sg + c * NSG).filter(b => b < NB);
    const blockAt = (b, base, stride) => base + Math.floor(b / NDB) * SM * stride + (b % NDB) * SK;
    // (RANGE, version 19) keys [kbeg, kend): those the causal mask or the window can show rows r0 to r1 − 1;
    // rangeend: kend one tile short
    let kbeg = 0, kend = p.n_kv;
    const clampKv = x => Math.min(Math.max(x, 0), p.n_kv);
    if (C.RANGE && (p.mask.kind === 1 || p.mask.kind === 2)) {
      kend = clampKv(r1 + p.mask.offset - (fault === 'rangeend' ? BK : 0));
      if (p.mask.kind === 2) kbeg = Math.floor(clampKv(r0 + p.mask.offset - p.mask.window + 1) / BK) * BK;
    }
    const nextVisited = c => { while (c < kend && classify(p, r0, r1, c, Math.min(c + BK, p.n_kv)) === 2) c += BK; return c; };
    let moved = 0;
    // every subgroup: its matrices and its lanes (each lane: its row, share u, m, ℓ share, scores)
    const sgs = Array.from({length: NSG}, (_, sg) => ({
      sS: sg * SR * SST, sP: sg * SR * PST, qL: [], acc: Array.from({length: RB * NO}, () => zero(SM, SN)),
      lanes: Array.from({length: SGS}, (__, lane) => {
        const row = sg * SR + Math.floor(lane / TPR);
        return {u: lane % TPR, row, i: r0 + row, m: NEG, l: 0, sc: new Array(KPI), m_blk: NEG, alpha: 1};
      }),
    }));
    if (fault === 'pairzero' && carried) sgs.forEach((S, sg) => { S.acc = carried[sg].acc; });   // O not zeroed again
    carried = sgs;
    // subgroupShuffleXor(x, o) for every lane at once: lane l gets lane (l ^ o)'s x
    const shuffleXor = (S, get, o) => S.lanes.map((_, l) => get(S.lanes[l ^ o]));
    for (const [sg, S] of sgs.entries()) {
      const q0 = (h * p.n_q + r0 + sg * SR) * D;
      for (let rb = 0; rb < RB; rb++) for (let kc = 0; kc < NQK; kc++) S.qL[rb * NQK + kc] = load(q_in, q0 + rb * SM * D + kc * SK, false, D, SM, SK);
    }
    let stamp = 0;
    if (C.STAGE) {                              // (STAGE) the first visited tile's K, before the loop
      const cf = fault === 'firstk' ? 0 : nextVisited(kbeg);
      if (cf < kend) for (let sg = 0; sg < NSG; sg++) for (const b of blocks(sg)) store(Kt, blockAt(b, 0, KST), load(k_in, blockAt(b, kv0 + cf * D, D), false, D, SM, SK), KST);
    }
    for (let c0 = kbeg; c0 < kend; c0 += BK) {
      const c1 = Math.min(c0 + BK, p.n_kv);
      const cls = classify(p, r0, r1, c0, c1);
      if (cls === 2) continue;
      stamp++;
      const kt = kv0 + c0 * D;
      if (C.KWG) for (let x = 0; x < BK * D; x++) Ks[Math.floor(x / D) * KST + x % D] = k_in[kt + x];
      for (const S of sgs)                      // 1. S = Q Kᵀ, K's rows read as columns from storage, a load for RB products
        for (let n = 0; n < BK / SN; n++) {
          const s = Array.from({length: RB}, () => zero(SM, SN));
          for (let kc = 0; kc < NQK; kc++) {
            const kr = C.KWG ? load(Ks, n * SN * KST + kc * SK, true, KST, SK, SN) : C.STAGE ? load(Kt, n * SN * KST + kc * SK, true, KST, SK, SN)
              : load(k_in, kt + n * SN * D + kc * SK, true, D, SK, SN);
            for (let rb = 0; rb < RB; rb++) s[rb] = mma(S.qL[rb * NQK + kc], kr, s[rb]);
          }
          for (let rb = 0; rb < RB; rb++) store(Ss, S.sS + (fault === 'rbstore' ? 0 : rb * SM * SST) + n * SN, s[rb], SST);
        }
      // (barrier) 2. the online softmax, each lane its keys u, u + TPR, … of its row, read once
      if (C.VWG) for (let x = 0; x < BK * D; x++) Vs[Math.floor(x / D) * KST + x % D] = v_in[kt + x];
      // (STAGE) this tile's V and the next visited tile's K, each subgroup its blocks, loaded now
      const cn = C.STAGE ? nextVisited(c0 + BK) : 0;
      const staged = C.STAGE ? sgs.map((_, sg) => blocks(sg).map(b => ({b, v: load(v_in, blockAt(b, kt, D), false, D, SM, SK),
                                                                       k: cn < kend ? load(k_in, blockAt(b, kv0 + cn * D, D), false, D, SM, SK) : null}))) : [];
      const score = (I, j) => (I.i < p.n_q && c0 + j < c1 && (cls === 0 || visible(p, I.i, c0 + j)) ? f32(capped(p, f32(Ss[I.row * SST + j] * p.scale)) * LOG2E) : NEG);
      // (FASTS, version 14) a full tile of BK keys without a soft-cap: the scores read and scaled, no test
      const fast = C.FASTS && (cls === 0 || fault === 'fasts') && c1 === c0 + BK && !(p.softcap > 0);
      // (FASTC, version 20) a full-width tile on the causal diagonal: one comparison a score;
      // fastc: the comparison one key short
      const fastc = C.FASTC && !fast && cls === 1 && p.mask.kind === 1 && c1 === c0 + BK && !(p.softcap > 0);
      const lim = I => I.i + p.mask.offset - c0 - (fault === 'fastc' ? 1 : 0);
      const scoreOf = fast ? (I, j) => f32(Ss[I.row * SST + j] * f32(p.scale * LOG2E))
        : fastc ? (I, j) => (j <= lim(I) ? f32(Ss[I.row * SST + j] * f32(p.scale * LOG2E)) : NEG) : score;
      for (const S of sgs) {
        for (const I of S.lanes) {
          I.m_blk = NEG;
          for (let k = 0; k < KPI; k++) {
            const x = scoreOf(I, I.u + k * TPR);
            I.sc[k] = C.REREAD ? undefined : x;
            I.m_blk = Math.max(I.m_blk, x);
          }
        }
        for (let o = 1; o < TPR && fault !== 'noshuffle'; o <<= 1) {
          const other = shuffleXor(S, I => I.m_blk, o);
          S.lanes.forEach((I, l) => { I.m_blk = Math.max(I.m_blk, other[l]); });
        }
        for (const I of S.lanes) {
          I.alpha = 1;
          if (I.m_blk > f32(I.m + TAU)) {
            I.alpha = I.m === NEG ? 0 : f32(2 ** (I.m - I.m_blk));
            if (I.m !== NEG) moved = stamp;
            I.m = I.m_blk;
          }
          let share = 0;
          for (let k = 0; k < KPI; k++) {
            const x = C.REREAD ? score(I, I.u + k * TPR) : I.sc[k];
            const pp = f16(x !== NEG ? f32(2 ** (x - I.m)) : 0);
            Ps[I.row * PST + I.u + k * TPR] = pp;
            share = f32(share + pp);
          }
          I.l = f32(f32(I.alpha * I.l) + share);
        }
      }
      for (const mine of staged) for (const {b, v, k} of mine) {   // (STAGE) stored after the softmax
        store(Vt, blockAt(b, 0, KST), v, KST);
        if (k) store(Kt, blockAt(b, 0, KST), k, KST);
      }
      if (moved === stamp && fault !== 'alpha1') {   // (workgroupUniformLoad) O ← diag(α) O through Ss
        C.rescales = (C.rescales || 0) + 1;
        for (let ch = 0; ch < NCH; ch++) {
          for (const S of sgs) for (let rb = 0; rb < RB; rb++) for (let b = 0; b < CW / SN; b++) store(Ss, S.sS + rb * SM * SST + b * SN, S.acc[rb * NO + ch * (CW / SN) + b], SST);
          for (const S of sgs) for (const I of S.lanes) for (let c = I.u; c < CW; c += TPR) Ss[I.row * SST + c] = f32(Ss[I.row * SST + c] * I.alpha);
          for (const S of sgs) for (let rb = 0; rb < RB; rb++) for (let b = 0; b < CW / SN; b++) S.acc[rb * NO + ch * (CW / SN) + b] = load(Ss, S.sS + rb * SM * SST + b * SN, false, SST, SM, SN);
        }
      }
      for (const S of sgs)                      // 3. O += P V, V's rows from storage, a load for RB products
        for (let kk = 0; kk < BK / SK; kk++) {
          const pl = Array.from({length: RB}, (_, rb) => load(Ps, S.sP + rb * SM * pst + kk * SK, false, pst, SM, SK));
          for (let nc = 0; nc < NO; nc++) {
            const vr = C.VWG ? load(Vs, kk * SK * KST + nc * SN, false, KST, SK, SN) : C.STAGE ? load(Vt, kk * SK * KST + nc * SN, false, KST, SK, SN)
              : load(v_in, kt + kk * SK * D + nc * SN, false, D, SK, SN);
            for (let rb = 0; rb < RB; rb++) S.acc[rb * NO + nc] = mma(pl[rb], vr, S.acc[rb * NO + nc]);
          }
        }
    }
    // the end: ℓ from the row's lanes, O / ℓ through Ss
    for (const S of sgs) {
      const L = S.lanes.map(I => I.l);
      for (let o = 1; o < TPR; o <<= 1) { const other = L.map((_, l) => L[l ^ o]); for (let l = 0; l < L.length; l++) L[l] = f32(L[l] + other[l]); }
      S.lanes.forEach((I, l) => {
        if (I.u !== 0) return;
        Ls[I.row] = L[l];
        if (I.i < p.n_q) lse[h * p.n_q + I.i] = L[l] > 0 ? f32(I.m / LOG2E + Math.log(L[l])) : NEG;
      });
    }
    for (let ch = 0; ch < NCH; ch++) {
      for (const S of sgs) for (let rb = 0; rb < RB; rb++) for (let b = 0; b < CW / SN; b++) store(Ss, S.sS + rb * SM * SST + b * SN, S.acc[rb * NO + ch * (CW / SN) + b], SST);
      for (let x = 0; x < BQ * CW; x++) {
        const rr = Math.floor(x / CW), ii = r0 + rr;
        if (ii >= p.n_q) continue;
        const LL = Ls[rr];
        O[(h * p.n_q + ii) * D + ch * CW + x % CW] = LL > 0 ? f32(Ss[rr * SST + x % CW] / LL) : 0;
      }
    }
    }
  }
  return {O, lse};
}

function main() {
  const argv = process.argv.slice(2), arg = (k, d) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : d);
  const seed = Number(arg('--seed', Date.now() % 1000000)), count = Number(arg('--count', 12));
  const fault = arg('--fault', null), which = arg('--kernel', fault ? 'v8' : 'both');
  const FAULTS = ['noshuffle', 'alpha1', 'nopad', 'pstride', 'rbstore', 'firstk', 'fasts', 'pairzero', 'rangeend', 'fastc'];
  if (fault && !FAULTS.includes(fault)) { console.error(`emulate_sgmat.js: --fault: one of ${FAULTS.join(', ')}`); process.exit(2); }
  if (!['v7', 'v8', 'both'].includes(which)) { console.error('emulate_sgmat.js: --kernel: v7, v8 or both'); process.exit(2); }
  const kernels = [['v7', (p, C) => kernel(p, C)], ['v8', (p, C) => kernel8(p, C, fault)]].filter(([n]) => which === 'both' || which === n);
  const r = FSGPU.rng(seed), pick = a => a[Math.floor(r() * a.length)], int = (lo, hi) => lo + Math.floor(r() * (hi - lo + 1));
  const configs = [[16, 16, 16, 32], [16, 8, 16, 32], [16, 8, 8, 32], [8, 8, 8, 32]];
  const tally = Object.fromEntries(kernels.map(([n]) => [n, {bad: 0, worst: 0, rescales: 0}]));
  for (let k = 0; k < count; k++) {
    const [SM, SN, SK, SGS] = configs[k % configs.length];
    const d = pick([64, 128]), groups = pick([1, 2, 4]), kvh = int(1, 2);
    let mask = pick(['none', 'causal', 'window', 'tree']);
    if (fault === 'firstk') mask = 'window';   // it shows only where a block's first visited tile is not tile 0
    if ((k % 8 === 4 && fault !== 'firstk') || fault === 'fastc') mask = 'causal';   // (FASTC) its tiles are the causal diagonal's
    // (pairzero) a pair shows only where a workgroup has two row blocks: at least 65 queries, below
    const n_kv = fault === 'pairzero' ? int(100, 200) : int(1, 200);
    const n_q = mask === 'tree' ? n_kv : fault === 'pairzero' ? int(70, n_kv) : int(1, Math.min(n_kv, 150));
    const c = {n_q_heads: groups * kvh, n_kv_heads: kvh, n_q, n_kv, d, mask,
               window: int(1, 40), softcap: r() < 0.25 ? 5 * r() + 0.5 : 0, spread: k % 2 ? pick([8, 16]) : pick([1, 4, 16]), ramp: k % 2 ? 12 : 0};   // every other case ramped: m moves past m + TAU
    const p = FSGPU.randomProblem(seed * 100 + k, c);
    const ref = Object.assign({}, p, {q: FSGPU.half1(p.q).r, k: FSGPU.half1(p.k).r, v: FSGPU.half1(p.v).r});
    const BK = pick([64, 32, 16]);
    const rows = [];
    for (let h = 0; h < p.n_q_heads; h++) for (let i = 0; i < p.n_q; i++) rows.push([h, i, FSGPU.referenceRow(ref, h, i)]);
    // version 8 in its usual form and its variants by turns: K staged, V staged, both; scores read
    // twice on every third; 2, 4 or 8 subgroups; every fifth with tiles of 128 keys
    const v8 = {KWG: k % 4 === 1 || k % 4 === 3, VWG: k % 4 >= 2, REREAD: k % 3 === 2, NSG: [4, 2, 8][k % 3]};
    if (k % 4 === 0 || fault === 'firstk' || fault === 'fasts') Object.assign(v8, {STAGE: true, KWG: false, VWG: false});   // version 13's K and V staged by matrices, every fourth case
    if (k % 8 === 0 || fault === 'fasts') Object.assign(v8, {FASTS: true, REREAD: false});   // version 14's full tiles without tests, every other of those
    if (k % 8 === 4 || fault === 'fastc') Object.assign(v8, {FASTS: true, FASTC: true, REREAD: false});   // and with the causal diagonal's tiles, the others
    if (k % 5 === 4) Object.assign(v8, {BK: 128, NSG: 2});   // its widest variant's tile
    if (k % 2 === 1 && SGS % (2 * SM) === 0) v8.RB = 2;       // version 10's two row blocks a subgroup, every other case
    if (fault === 'pairzero') { v8.NSG = 2; delete v8.RB; }   // blocks of at most 32 rows: two of them or more
    if (k % 3 !== 1 || fault === 'pairzero') v8.PAIR = true;  // version 18's pairs of row blocks, two cases of three
    else if (k % 2 === 0) v8.LPT = true;                      // version 19's blocks longest first, the others by turns
    if (k % 3 !== 2 || fault === 'rangeend') v8.RANGE = true; // version 19's tile loop over the keys the mask can show
    for (const [name, run] of kernels) {
      const C = Object.assign({D: d, SM, SN, SK, SGS, NSG: 4, BK}, name === 'v8' ? v8 : {}), T = tally[name];
      let out, w = 0, where = null;
      try { out = run(ref, C); } catch (e) { w = Infinity; where = e.message; }
      T.rescales += C.rescales || 0;
      for (const [h, i, rr] of out ? rows : []) {
        const row = h * p.n_q + i;
        for (let col = 0; col < d; col++) {
          const e = Math.abs(out.O[row * d + col] - rr.o[col]) / Math.max(1, Math.abs(rr.o[col]));
          if (!(e <= w)) { w = e; where = {h, i, col, got: out.O[row * d + col], want: rr.o[col]}; }
        }
        if (rr.l > 0) {
          const e = Math.abs(out.lse[row] - rr.lse) / Math.max(1, Math.abs(rr.lse));
          if (!(e <= w)) { w = e; where = {h, i, col: 'lse', got: out.lse[row], want: rr.lse}; }
        }
      }
      T.worst = Math.max(T.worst, w);
      if (!(w <= 2e-3)) { T.bad++; console.log(`FAIL ${name} case ${k} ${JSON.stringify(c)} ${JSON.stringify(C)}: error ${w.toExponential(2)} at ${JSON.stringify(where)}`); }
    }
  }
  let bad = 0;
  for (const [name] of kernels) {
    const T = tally[name];
    bad += T.bad;
    console.log(`emulate_sgmat.js: prefill ${name}${name === 'v8' && fault ? ` with the planted fault ${fault}` : ''}: ${count - T.bad} of ${count} random problems match float64 on the float16 inputs within 2e-3 ` +
                `(largest error ${T.worst.toExponential(2)}; O rescaled on ${T.rescales} tiles; seed ${seed}, replay with --seed ${seed})`);
  }
  process.exit(bad ? 1 : 0);
}

main();
