/* fsgpu.js: the host of flashstep's WGSL kernels, the same file in the page and in Node.
 *
 * It opens a WebGPU device, compiles the kernels of src/kernels/webgpu/*.wgsl (common.wgsl put in
 * front of each, the SUBGROUPS form chosen from the adapter), runs them, reads back what they
 * wrote, checks results against a float64 reference and times them. It computes nothing about
 * attention itself: the kernels do, and the engine (C, compiled to WebAssembly in the page)
 * judges their traces.
 *
 *   const gpu = await FSGPU.open(navigator.gpu, name => fetch(`webgpu/${name}.wgsl`).then(r => r.text()));
 *   gpu.info                          the adapter: vendor, architecture, features, limits
 *   await gpu.trace(job)              a traced kernel (fwd_trace / decode_trace) on a job the
 *                                     engine made: its records, O, (m, ℓ)
 *   gpu.kernels                       every full-size kernel by name, with what it takes
 *   await gpu.attention(name, prob)   one kernel on one problem: O (and lse where it has one)
 *   await gpu.check(name, prob)       the same against float64: {ok, err, tol, worst}
 *   await gpu.time(name, prob, opt)   median time of a launch on resident buffers
 *   await gpu.probe()                 this device's copy bandwidth, float32 FMA rate and a dispatch's own cost
 *
 * A problem: {n_q_heads, n_kv_heads, n_q, n_kv, d, scale, softcap, mask: {kind, offset, window,
 * bits}, q, k, v} with q (n_q_heads, n_q, d), k and v (n_kv_heads, n_kv, d) Float32Arrays; mask
 * kinds 0 none, 1 causal, 2 window, 3 bitmask (bits: Uint32Array, words u32 a row, bit j of row i
 * at word i · words + j / 32); offset: query row i sits at position i + offset (default
 * n_kv − n_q).
 */
(function (root, make) {
  if (typeof module === 'object' && module.exports) module.exports = make();
  else root.FSGPU = make();
})(typeof self !== 'undefined' ? self : this, function () {
  'use strict';

  const NEG = -3.4028234663852886e38;   // common.wgsl's −∞ (float32's lowest finite number)
  const LOG2E = 1.4426950408889634;
  const MASK = {none: 0, causal: 1, window: 2, bits: 3};

  // //#if NAME, //#if !NAME, //#elif NAME, //#else, //#endif: keep the lines of the chosen form
  // (NAME: SUBGROUPS, or one of defs: decode_v2's and decode_v4's F16 and PAGED, decode_v2's AHEAD,
  // H16 and FUSED, fwd_v4's NODOT and H16, true or false). A def that is a number is also declared, as
  // `const NAME: u32 = N;` (fwd_sgmat's shapes, which must be constant expressions). Directives
  // (`enable …;`, `diagnostic(…);`) are moved to the top, once each, since WGSL wants them before
  // every declaration and common.wgsl comes first.
  // //#for VAR COUNT … //#endfor (fwd_sgmat8): the lines between, as `for (var VAR = 0u; VAR <
  // COUNT; VAR++) { … }`, or, where defs.UNROLL is on, COUNT copies of them, each in braces with VAR
  // replaced by 0u, 1u, …: every index of an array of subgroup matrices a constant. COUNT: an
  // expression of the numeric defs, whole numbers, + − * / ( ) and min(a, b).
  function unrollFor(lines, defs) {
    const out = [];
    for (let k = 0; k < lines.length; k++) {
      const m = /^(\s*)\/\/#for\s+(\w+)\s+(.+)$/.exec(lines[k]);
      if (!m) { out.push(lines[k]); continue; }
      let depth = 1, e = k + 1;
      for (; e < lines.length; e++) {
        if (/^\s*\/\/#for\s/.test(lines[e])) depth++;
        else if (lines[e].trim() === '//#endfor' && --depth === 0) break;
      }
      if (e >= lines.length) throw new Error(`//#for ${m[2]} without its //#endfor`);
      const body = unrollFor(lines.slice(k + 1, e), defs), [, ind, v, expr] = m;
      if (!defs.UNROLL) out.push(`${ind}for (var ${v} = 0u; ${v} < ${expr}; ${v}++) {`, ...body, `${ind}}`);
      else {
        const js = expr.replace(/[A-Za-z_]\w*/g, w => {
          if (w === 'min') return 'Math.min';
          if (typeof defs[w] !== 'number') throw new Error(`//#for ${v} ${expr}: ${w} is not a numeric def`);
          return String(defs[w]);
        });
        if (!/^[\d\s+\-*/(),.Mathmin]+$/.test(js)) throw new Error(`//#for ${v} ${expr}: not an expression of defs`);
        const n = Function(`return (${js});`)();
        if (!Number.isInteger(n) || n < 0) throw new Error(`//#for ${v} ${expr}: ${n} is not a count`);
        const re = new RegExp(`\\b${v}\\b`, 'g');
        for (let i = 0; i < n; i++) out.push(`${ind}{`, ...body.map(x => x.replace(re, `${i}u`)), `${ind}}`);
      }
      k = e;
    }
    return out;
  }

  function preprocess(src, subgroups, defs = {}) {
    const out = [], head = subgroups ? ['enable subgroups;'] : [];
    const stack = [];   // for each open #if: {keep: is its current branch kept?, done: was a branch kept?}
    const on = name => (name === 'SUBGROUPS' ? subgroups : !!defs[name]);
    const test = want => (want.startsWith('!') ? !on(want.slice(1)) : on(want));
    for (const line of unrollFor(src.split('\n'), defs)) {
      const t = line.trim();
      if (t.startsWith('//#if ')) { const k = test(t.slice(6).trim()); stack.push({keep: k, done: k}); continue; }
      if (t.startsWith('//#elif ')) {
        const top = stack[stack.length - 1];
        top.keep = !top.done && test(t.slice(8).trim());
        top.done = top.done || top.keep;
        continue;
      }
      if (t === '//#else') { const top = stack[stack.length - 1]; top.keep = !top.done; top.done = true; continue; }
      if (t === '//#endif') { stack.pop(); continue; }
      if (!stack.every(x => x.keep)) continue;
      if (/^(enable|diagnostic)\b/.test(t)) { if (!head.includes(t)) head.push(t); continue; }
      out.push(line);
    }
    for (const [k, v] of Object.entries(defs)) if (typeof v === 'number') head.push(`const ${k}: u32 = ${v}u;`);
    return head.join('\n') + (head.length ? '\n' : '') + out.join('\n');
  }

  // The kernels at full size. Each: what it is (`what`, the panel's words), its file and entry
  // points, what it writes (`out`), `ok(prob)` (why a problem does not suit it on this device,
  // null when it does), its override constants for a problem on this device, and the workgroups
  // of each pass. The split decodes (`split`) run their split pass, then a merge pass; those that
  // are also `fused` (decode versions 7 and 10) run the split pass alone, its last workgroup of each KV
  // head merging that head's rows.
  function kernelTable(dev) {
    const lim = dev.limits, sg = dev.subgroups;
    const d_ok = (p, lo, hi, mult) => (p.d < lo || p.d > hi || p.d % mult ? `head size ${lo}-${hi}, a multiple of ${mult}` : null);
    // a SIMD group of 003's kernels: the subgroup where every subgroup has one size, else 32
    const lanes = sg && sg.min === sg.max && sg.min >= 4 ? sg.min : 32;
    const sgForm = !!sg && sg.min === sg.max && sg.min >= 4;
    // Decode versions 1, 2 and 5 hold in workgroup memory Q of 8 rows, a tile of bk keys (32 unless
    // bench.js --sweep sets p.bk; a padded row each) and 8 × bk scores (decode version 1: 8 numbers
    // more): past 32 KiB at d = 256. extra: more bytes (decode version 7's merge scratch).
    const tileMem = (p, bk = 32, extra = 0) => (4 * (8 * p.d + bk * (p.d + 4) + 8 * (bk + 1)) + extra > lim.maxComputeWorkgroupStorageSize ?
      'more workgroup memory than this device has' : null);
    // How a decode kernel that has the F16 and PAGED forms (decode_v2, decode_v4) is fed: what it
    // reads (K and V as stored: float16 packed; pooled in pages, with the block table), what the
    // float64 check takes as K and V (the float16-rounded numbers where the kernel stores halves),
    // and the bytes it must read.
    // hnd: the head-major pools (decode version 9's HND form; pagedLayout's headMajor).
    function stored(f16, paged, hnd = false) {
      const pageSize = p => p.page_size || 16;
      return {
        storage: f16 ? 'f16' : 'f32', paged, defs: Object.assign({F16: f16, PAGED: paged}, hnd ? {HND: true} : {}), pageSize,
        layout(p) {
          const h = f16 ? halves(p) : {packed_k: p.k, packed_v: p.v};
          return paged ? pagedLayout(p, pageSize(p), h.packed_k, h.packed_v, hnd) : {k: h.packed_k, v: h.packed_v};
        },
        reference: p => (f16 ? Object.assign({}, p, {k: halves(p).k, v: halves(p).v}) : p),
        kvBytes: p => (f16 ? 2 : 4) * (p.k.length + p.v.length) + (paged ? 4 * Math.ceil(p.n_kv / pageSize(p)) : 0),
      };
    }
    // decode version 2 with float16 storage, paged, or both (decode_v2.wgsl's F16 and PAGED forms);
    // v5: decode version 5 (decode_v2.wgsl's AHEAD form: its loads issued one phase early), the same forms
    function decodeV2(f16, paged, v5 = false) {
      const name = v5 ? 'decode-v5' : 'decode-v2';
      const st = stored(f16, paged);
      return Object.assign(st, {
        defs: Object.assign({}, st.defs, {AHEAD: v5}),
        what: (v5 ? "decode version 2 with each tile's loads issued one phase early into registers (V during the scores, the next K during P V)" : 'decode version 2') +
              (paged ? ' through a paged KV cache (a shuffled block table, pages of 16 keys)' : '') +
              (f16 ? ', K and V stored as float16, packed two to a u32' : ', float32'),
        file: 'decode_v2', entry: ['split', 'merge'], out: 'o+part', split: true,
        contiguous: paged ? (f16 ? name + '-f16' : name) : null,
        // p.bk (bench.js --sweep): keys a tile other than 32, whose shares must fit the 8 words an
        // invocation carries in the AHEAD form
        ok: p => d_ok(p, f16 ? 8 : 4, 256, f16 ? 8 : 4) || ((p.n_q_heads / p.n_kv_heads) * p.n_q > 8 ? 'at most 8 query rows a KV head (query heads a group × rows)' : null) ||
                 (p.bk && (p.bk % 32 || (p.bk * p.d / (f16 ? 8 : 4)) / 256 > 8) ? 'tiles of 32 keys, or a multiple of 32 whose share fits 8 words an invocation' : null) || tileMem(p, p.bk || 32),
        // version 2: about 1024 workgroups; version 5, whose loads are already in flight, about 256
        // (fewer, longer splits: on the H100 at 32k keys 256 of them read 84 % of the copy rate,
        // 1024 78 %; bench/webgpu/results/2026-11-27-run7)
        splitLen: p => p.split_len || Math.max(256, Math.ceil(p.n_kv * p.n_kv_heads / (v5 ? 256 : 1024) / 32) * 32),
        constants(p) { return Object.assign(paged ? {D: p.d, PS: this.pageSize(p)} : {D: p.d}, p.bk ? {BK: p.bk} : {}); },
        mergeFile: 'decode_v2', mergeConstants: p => ({D: p.d}),
        dispatch(p) { return [[Math.ceil(p.n_kv / this.splitLen(p)), p.n_kv_heads, 1], [p.n_q, p.n_q_heads, 1]]; },
      });
    }
    // decode version 7: version 5 (its splits, its split lengths) with the merge in the same
    // dispatch (decode_v2.wgsl's AHEAD and FUSED forms): one pass, no merge pass. twoPass: the
    // version 5 kernel it must equal bit for bit (checkFused). Its split workgroups also hold the
    // merge's 256 floats and 256 vec4s of workgroup memory (5 KiB more than version 5's).
    function decodeV7(f16, paged) {
      const K = decodeV2(f16, paged, true), ok = K.ok, tail = (paged ? '-paged' : '') + (f16 ? '-f16' : '');
      return Object.assign(K, {
        defs: Object.assign({}, K.defs, {FUSED: true}),
        what: 'decode version 5 in one dispatch: the last split workgroup of each KV head to finish (an atomic counter a head says which) merges that head\'s rows with the merge pass\'s own code' +
              (paged ? ', through a paged KV cache (a shuffled block table, pages of 16 keys)' : '') +
              (f16 ? ', K and V stored as float16, packed two to a u32' : ', float32'),
        entry: ['split'], fused: true, twoPass: 'decode-v5' + tail,
        contiguous: paged ? (f16 ? 'decode-v7-f16' : 'decode-v7') : null,
        ok(p) { return ok.call(this, p) || tileMem(p, p.bk || 32, 4 * 256 + 16 * 256 + 4); },
        mergeFile: null, mergeConstants: null,
        dispatch(p) { return [[Math.ceil(p.n_kv / this.splitLen(p)), p.n_kv_heads, 1]]; },
      });
    }
    // decode version 9 (decode_v9.wgsl) in its four forms (float32 or float16 storage, contiguous or
    // paged; the paged ones also through head-major pools): subgroups stream batches of keys and
    // sum a batch's dot products with one transpose-reduction. Its shape, every number a constant
    // of the module: W the subgroup's size, RP the group's R rows padded to a power of two, B = W /
    // RP keys a batch, NV vec4s of a row a lane holds, NSG subgroups a workgroup (p.nsg: another,
    // from bench.js --sweep). hnd: paged through head-major pools (a head's slots of a page together).
    // fused: decode version 10 (decode_v9.wgsl's FUSED form): the merge in the split's dispatch, by
    // the last split workgroup of each KV head, whose NSG · W = 256 invocations (the merge pass's
    // count: O bit for bit version 9's with the same NSG, `twinSet`); its paged forms read each
    // batch's page a batch ahead (TAHEAD) where B divides the page size and the split length
    // (p.table_now: not, bench.js --sweep's measure of that idea alone).
    // ahead: decode version 11, version 9's paged forms with each batch's page read a batch ahead
    // (TAHEAD, where it applies as in version 10), the merge pass kept. base: decode version 14,
    // version 11 with each batch's first address computed once and the others a stride from it
    // (TBASE, where TAHEAD applies).
    function decodeV9(f16, paged, {hnd = false, fused = false, ahead = false, base = false} = {}) {
      const st = stored(f16, paged, hnd), forms = st.defs;
      const shape = p => {
        const W = sg ? sg.min : 32, R = (p.n_q_heads / p.n_kv_heads) * p.n_q;
        let RP = 1;
        while (RP < R) RP *= 2;
        const B = Math.max(1, W / RP), NV = Math.ceil(p.d / 4 / W);
        // four subgroups a workgroup, eight with float16 storage (half the bytes a batch: twice the
        // batches in flight), as many as the device allows
        const NSG = p.nsg || (fused ? Math.max(1, 256 / W) :
                                  Math.max(1, Math.min(f16 ? 8 : 4, Math.floor(Math.min(256, lim.maxComputeInvocationsPerWorkgroup) / W))));
        // workgroup memory: the subgroups' (m, ℓ) and o for the end's merge; version 10's merge
        // scratch (decode_merge.wgsl's red and redv, and `seen`) besides
        const mem = NSG * RP * 8 + NSG * (p.d / 4) * 16 + (fused ? NSG * W * 20 + 4 : 0);
        return {W, R, RP, B, NV, NSG, LOGW: Math.log2(W), LOGB: Math.log2(B), mem};
      };
      const tail = (paged ? '-paged' : '') + (hnd ? '-hnd' : '') + (f16 ? '-f16' : '');
      const K = Object.assign(st, {
        what: 'subgroups stream batches of keys with no barrier; a batch\'s dot products summed across the lanes at once (a transpose-reduction: one score a lane), its weights broadcast' +
              (paged ? '; through a paged KV cache (a shuffled block table, pages of 16 keys' +
                       (hnd ? ', head-major pools: a head\'s slots of a page lie together)' : ')') : '') +
              (f16 ? '; K and V stored as float16, packed two to a u32' : '; float32'),
        file: 'decode_v9', entry: ['split', 'merge'], out: 'o+part', split: true,
        contiguous: paged ? (f16 ? 'decode-v9-f16' : 'decode-v9') : null,
        ok(p) {
          if (!sgForm) return 'subgroups of one size';
          const s = shape(p);
          if (s.R > Math.min(8, s.W)) return `at most ${Math.min(8, s.W)} query rows a KV head (query heads a group × rows)`;
          return d_ok(p, 4, 256, 4) || (s.NV > 8 ? 'a smaller head size' : null) ||
                 (s.NSG * s.W > lim.maxComputeInvocationsPerWorkgroup ? 'fewer subgroups a workgroup' : null) ||
                 (s.mem > lim.maxComputeWorkgroupStorageSize ? 'more workgroup memory than this device has' : null);
        },
        defs(p) {
          const s = shape(p);
          return Object.assign({}, forms, {UNROLL: true, D: p.d, W: s.W, RP: s.RP, B: s.B, NV: s.NV, LOGW: s.LOGW, LOGB: s.LOGB, NSG: s.NSG});
        },
        // about 256 workgroups (two an SM of the H200), each split a whole number of the
        // workgroup's passes (B · NSG keys): on the H200 at 131072 keys, 256 workgroups of four
        // subgroups read at the copy rate, 512 of them 17-18 % slower (2026-11-29-h200-decode-v9-run1, -run2)
        splitLen(p) {
          const s = shape(p), per = s.B * s.NSG;
          return p.split_len || Math.max(2 * per, Math.ceil(p.n_kv * p.n_kv_heads / 256 / per) * per);
        },
        constants(p) { return paged ? {PS: this.pageSize(p)} : {}; },
        mergeFile: 'decode_v2', mergeConstants: p => ({D: p.d}),
        subgroups: () => true,
        dispatch(p) { return [[Math.ceil(p.n_kv / this.splitLen(p)), p.n_kv_heads, 1], [p.n_q, p.n_q_heads, 1]]; },
      });
      const defs9 = K.defs;
      // bench.js --decode-ablation: form(extra) is the kernel with those of decode_v9.wgsl's
      // ablation flags on (and SINK, which keeps every load of the batches alive without them)
      K.ablations = ['NOQK', 'NOSOFT', 'NOPV', 'LOADONLY'];
      K.form = function (extra) {
        const base = this, F = Object.create(this);
        F.extra = extra;
        F.defs = function (p) { return Object.assign(base.defs.call(this, p), extra, {SINK: true}); };
        return F;
      };
      const tahead = (p, s) => paged && !p.table_now && K.pageSize(p) % s.B === 0 && K.splitLen(p) % s.B === 0;
      if (ahead || base) return Object.assign(K, {
        what: 'decode version 9 through a paged KV cache (a shuffled block table, pages of 16 keys), each batch\'s page read from the table a batch ahead' +
              (base ? ', its first key\'s address computed once and the others a stride from it' : '') +
              (f16 ? '; K and V stored as float16, packed two to a u32' : '; float32'),
        // p.tbase (bench.js --sweep): version 11 with TBASE, the measure that made version 14
        defs(p) { const t = tahead(p, shape(p)); return Object.assign(defs9.call(this, p), {TAHEAD: t, TBASE: t && (base || !!p.tbase)}); },
      });
      if (!fused) return K;
      return Object.assign(K, {
        what: 'decode version 9 in one dispatch: the last split workgroup of each KV head merges its rows (an atomic counter a head says which)' +
              (paged ? '; through a paged KV cache (a shuffled block table, pages of 16 keys), each batch\'s page read from the table a batch ahead' : '') +
              (f16 ? '; K and V stored as float16, packed two to a u32' : '; float32'),
        entry: ['split'], fused: true, twoPass: 'decode-v9' + tail, twinSet: p => ({nsg: shape(p).NSG}),
        contiguous: paged ? (f16 ? 'decode-v10-f16' : 'decode-v10') : null,
        defs(p) { return Object.assign(defs9.call(this, p), {FUSED: true, TAHEAD: tahead(p, shape(p))}); },
        mergeFile: null, mergeConstants: null,
        dispatch(p) { return [[Math.ceil(p.n_kv / this.splitLen(p)), p.n_kv_heads, 1]]; },
      });
    }
    // decode version 4 (decode_v4.wgsl) in its four forms: float32 or float16 storage (packed
    // halves), contiguous or through a block table. Its shape: WG invocations, TPK of them a key
    // in the scores, KPT keys each; p.v4 = {WG, TPK, KPT, NWG} overrides them (bench.js --sweep).
    function decodeV4(f16, paged) {
      const cw = f16 ? 8 : 4;   // columns a word
      return Object.assign(stored(f16, paged), {
        what: (paged ? 'decode version 4 through a paged KV cache (a shuffled block table, pages of 16 keys)' :
               'an invocation reads whole keys and scores all the group\'s rows (no reduction a key), then owns a word of columns over a run of keys; one barrier a chunk') +
              (f16 ? '; K and V stored as float16, packed two to a u32' : '; float32'),
        file: 'decode_v4', entry: ['split', 'merge'], out: 'o+part', split: true,
        contiguous: paged ? (f16 ? 'decode-v4-f16' : 'decode-v4') : null,
        // the shape for p on this device: the asked one, with KPT then WG lowered until its workgroup memory fits
        shape(p) {
          const o = p.v4 || {}, nc = p.d / cw, R = (p.n_q_heads / p.n_kv_heads) * p.n_q;
          const tpk = Math.min(o.TPK || 1, nc);
          const bytes = (wg, kpt) => 4 * R * p.d + 8 * R * wg * kpt + 64 * (wg / nc) + 4 * (wg / nc) * p.d;
          let wg = Math.min(o.WG || 128, lim.maxComputeInvocationsPerWorkgroup), kpt = o.KPT || 1;
          while (kpt > 1 && bytes(wg, kpt) > lim.maxComputeWorkgroupStorageSize) kpt >>= 1;
          while (wg > Math.max(64, nc) && bytes(wg, kpt) > lim.maxComputeWorkgroupStorageSize) wg >>= 1;
          return {WG: wg, TPK: tpk, KPT: kpt, BK: wg * kpt / tpk, fits: bytes(wg, kpt) <= lim.maxComputeWorkgroupStorageSize};
        },
        ok(p) {
          const nc = p.d / cw;
          if (p.d % cw || p.d > 256 || 128 % nc) return `head size ${cw}·2^k up to 256`;
          if ((p.n_q_heads / p.n_kv_heads) * p.n_q > 8) return 'at most 8 query rows a KV head (query heads a group × rows)';
          if (!this.shape(p).fits) return 'more workgroup memory than this device has';
          return null;
        },
        splitLen(p) {
          const bk = this.shape(p).BK, nwg = (p.v4 && p.v4.NWG) || 1024;
          return p.split_len || Math.max(bk, Math.ceil(p.n_kv * p.n_kv_heads / nwg / bk) * bk);
        },
        constants(p) {
          const s = this.shape(p), c = {D: p.d, RQ: (p.n_q_heads / p.n_kv_heads) * p.n_q, WG: s.WG, TPK: s.TPK, KPT: s.KPT};
          if (paged) c.PS = this.pageSize(p);
          return c;
        },
        mergeFile: 'decode_v2', mergeConstants: p => ({D: p.d}),
        dispatch(p) { return [[Math.ceil(p.n_kv / this.splitLen(p)), p.n_kv_heads, 1], [p.n_q, p.n_q_heads, 1]]; },
      });
    }
    // Prefill versions 3, 4 and 5 (register blocking; 4 adds loads one phase ahead, 5 drops the dot products): 16 TY
    // invocations, BQ = 4 TY rows. carries: an invocation holds a tile's share (NPF ≤ 16 vec4s);
    // defs: the file's form (version 5 is fwd_v4.wgsl's NODOT form).
    function blocked(file, what, carries, defs = {}) {
      return {
        what, file, defs, entry: ['main'], out: 'o+lse',
        ok(p) { return p.d !== 64 && p.d !== 128 && p.d !== 256 ? 'head size 64, 128 or 256' : !this.ty(p) ? 'more workgroup memory than this device has' : null; },
        // the most rows (64, 32 or 16: 16 TY invocations) whose tiles fit this device's workgroup memory
        ty(p) { return [16, 8, 4].find(ty => this.fits(p, ty)) || 0; },
        fits(p, ty) {
          const bytes = 4 * (4 * ty * p.d) + 16 * 32 * (p.d / 4 + 1) + 16 * 32 * ty + (this.subgroups() ? 0 : 16 * 16 * ty);
          return bytes <= lim.maxComputeWorkgroupStorageSize && 16 * ty <= lim.maxComputeInvocationsPerWorkgroup &&
                 (!carries || 32 * (p.d / 4) <= 16 * (16 * ty));
        },
        constants(p) { return {D: p.d, TY: this.ty(p)}; },
        subgroups() { return !!sg && sg.min >= 16; },
        dispatch(p) { return [[Math.ceil(p.n_q / (4 * this.ty(p))), p.n_q_heads, 1]]; },
      };
    }
    // A float32 prefill of fwd_v4.wgsl with its ablation forms (bench.js --ablation, the kernel
    // named in --only): form(extra) is the kernel with those preprocessor flags on besides its own;
    // over.TY (a variant) its row groups, where they fit (BQ = 4 TY rows, 16 TY invocations).
    function ablatable(K) {
      return Object.assign(K, {
        ablations: ['NOQK', 'NOPV', 'NOSOFT', 'NOLOAD'],
        form(extra, mem = 0, over = null) {
          const F = Object.create(this);
          F.extra = extra;
          F.defs = Object.assign({}, this.defs, extra);
          if (over && over.TY) F.ty = p => (this.fits(p, over.TY) ? over.TY : 0);
          return F;
        },
      });
    }
    // A kernel that reads Q, K and V as f16 (`enable f16;`): offered only where the device has
    // shader-f16; fed the inputs rounded to float16 (packed two a u32, the lower half first: the
    // bytes of an array<f16>), checked against float64 on those rounded numbers.
    function halfInputs(K) {
      const ok = K.ok;
      return Object.assign(K, {
        storage: 'f16', needs: 'shader-f16',
        absent: () => (dev.f16 ? null : 'this device has no shader-f16'),
        ok(p) { return !dev.f16 ? 'shader-f16, which this device does not offer' : ok.call(this, p); },
        layout: p => ({q: half1(p.q).packed, k: half1(p.k).packed, v: half1(p.v).packed}),
        reference: p => Object.assign({}, p, {q: half1(p.q).r, k: half1(p.k).r, v: half1(p.v).r}),
        kvBytes: p => 2 * (p.k.length + p.v.length),
      });
    }
    // Prefill version 7 (fwd_sgmat.wgsl) on subgroup matrices: the configuration it uses (f16 × f16
    // → f32, M dividing the subgroup size, every subgroup of one size; the largest N · K first), or null.
    const sgmat = (() => {
      if (!dev.sgmat || !dev.f16 || !sgForm) return null;
      const fits = dev.sgmatConfigs.filter(c => c.component === 'f16' && c.result === 'f32' && sg.max % c.M === 0 &&
                                             64 % c.N === 0 && 64 % c.K === 0);
      fits.sort((a, b) => b.N * b.K - a.N * a.K || b.M - a.M);
      return fits.length ? fits[0] : null;
    })();
    // A form of prefill version 7 or 8 (`this`): its preprocessor flags `extra` on beside its own
    // defs (the ablation and variant forms: bench.js --ablation), where mem is given its tiles
    // sized for that much workgroup memory instead of this device's (validate.js compiles the
    // H200's 48 KiB forms on the null backend's 16 KiB), and where over is given ({NSG, BK},
    // version 8) those instead of its own choice.
    function sgmatForm(extra, mem = 0, over = null) {
      const base = this, K = Object.create(base);
      K.extra = extra;
      K.defs = p => Object.assign(base.defs.call(K, p), extra);
      if (mem) K.mem = mem;
      if (over) K.over = over;
      return K;
    }
    const kernels = {
      'prefill-v1': {
        what: 'the textbook tiled forward: one invocation a query row, K and V tiles in workgroup memory',
        file: 'fwd_v1', entry: ['main'], out: 'o+lse',
        ok: p => d_ok(p, 1, 256, 1),
        constants: p => ({D: p.d, BQ: 64, BK: Math.min(64, Math.floor(4096 / p.d))}),
        dispatch: p => [[Math.ceil(p.n_q / 64), p.n_q_heads, 1]],
      },
      'prefill-v2': {
        what: "003's Prefill V2 shape: 32 (or 16) rows a workgroup of 128, rows shared by 4 (or 8) invocations, o in registers, exp2",
        file: 'fwd_v2', entry: ['main'], out: 'o+lse',
        ok: p => d_ok(p, 16, 256, 16),
        bq: p => (p.d <= 128 && 4 * (32 * p.d + 32 * p.d + 32 * 32) <= lim.maxComputeWorkgroupStorageSize ? 32 : 16),
        constants(p) { return {D: p.d, BQ: this.bq(p)}; },
        subgroups(p) { return !!sg && sg.min >= 128 / this.bq(p); },
        dispatch(p) { return [[Math.ceil(p.n_q / this.bq(p)), p.n_q_heads, 1]]; },
      },
      'prefill-v3': blocked('fwd_v3', 'register blocking: an invocation scores 4 rows × 2 keys and keeps 4 rows × D/16 of o; P transposed', false),
      'prefill-v4': blocked('fwd_v4', "version 3 with each tile's loads issued one phase early into registers (V during S, the next K during P V)", true),
      'prefill-v5': ablatable(blocked('fwd_v4', 'version 4 with each (row, key) score kept as four partial sums, added once a tile (no dot products)', true, {NODOT: true})),
      // Prefill version 11: version 5 with the lazy rescale (m moves only past m + TAU, one
      // subgroupAny a tile in the common case) and ℓ summed over the row group once, at the end
      'prefill-v11': ablatable(blocked('fwd_v4', "version 5 with its softmax off the tile's critical path: m moves only past m + 8 (one subgroup vote a tile, not the row's maximum), ℓ summed once at the end", true, {NODOT: true, LAZY: true})),
      'prefill-v6': halfInputs(blocked('fwd_v4', 'version 4 with Q, K and V stored as float16 (shader-f16: arrays of vec4<f16>, widened to float32 as they are read); float32 arithmetic', true, {H16: true})),
      'prefill-v7': {
        what: "FlashAttention's forward on the matrix units (subgroup matrices, f16 × f16 → f32): S = Q Kᵀ and O += P V as subgroup matrix products, the online softmax between them on ordinary invocations; Q, K, V float16",
        file: 'fwd_sgmat', entry: ['main'], out: 'o+lse', storage: 'f16', needs: 'chromium-experimental-subgroup-matrix',
        config: sgmat,
        absent() {
          if (!dev.sgmat || !dev.f16) return 'this device has no shader-f16 and subgroup matrices';
          return this.config ? null : this.ok({d: 64});
        },
        // P is rounded to float16 for the second product: a relative error up to 2^-11 on each
        // weight, so o is within about 2^-11 · max |v| of float64 on the same float16 inputs
        tol: 2e-3,
        // its constants: the configuration's M, N, K; 4 subgroups (BQ = 4 M rows); BK = 64 keys a
        // tile, 32 or 16 where that does not fit this device's workgroup memory
        shape(p) {
          const c = this.config, SGS = sg.max;
          let NSG = 4;
          while (NSG > 1 && NSG * SGS > lim.maxComputeInvocationsPerWorkgroup) NSG >>= 1;
          const BQ = NSG * c.M, WG = NSG * SGS;
          const bytes = bk => 2 * Math.max(bk, BQ) * p.d + 6 * BQ * bk + 4 * BQ + 4 * WG + 16;
          const BK = [64, 32, 16].find(bk => bk % c.N === 0 && bk % c.K === 0 && bytes(bk) <= (this.mem || lim.maxComputeWorkgroupStorageSize)) || 0;
          return {D: p.d, SM: c.M, SN: c.N, SK: c.K, SGS, NSG, BK, BQ, WG};
        },
        ok(p) {
          if (!dev.sgmat) return 'subgroup matrices (chromium-experimental-subgroup-matrix), which this device does not offer';
          if (!dev.f16) return 'shader-f16, which this device does not offer';
          if (!sgForm) return 'subgroups of one size';
          if (!this.config) return `a subgroup matrix configuration f16 × f16 → f32 with M dividing the subgroup size (${sg.max}); this device offers ${dev.sgmatConfigs.map(c => `${c.component}→${c.result} ${c.M}×${c.N}×${c.K}`).join(', ') || 'none'}`;
          if (![64, 128, 256].includes(p.d) || p.d % this.config.N || p.d % this.config.K) return 'head size 64, 128 or 256';
          const s = this.shape(p);
          if (!s.BK) return 'more workgroup memory than this device has';
          if (s.WG % sg.max || s.WG > lim.maxComputeInvocationsPerWorkgroup) return 'more invocations a workgroup than this device has';
          return null;
        },
        defs(p) { const s = this.shape(p); return {D: s.D, SM: s.SM, SN: s.SN, SK: s.SK, SGS: s.SGS, NSG: s.NSG, BK: s.BK}; },
        // fwd_sgmat.wgsl's ablation flags (each removes one part of a tile's work), and its forms
        ablations: ['NOQK', 'NOPV', 'NOSOFT', 'NOLOAD', 'KROW'],
        form: sgmatForm,
        constants: () => ({}),
        subgroups: () => true,
        layout: p => ({q: half1(p.q).packed, k: half1(p.k).packed, v: half1(p.v).packed}),
        reference: p => Object.assign({}, p, {q: half1(p.q).r, k: half1(p.k).r, v: half1(p.v).r}),
        kvBytes: p => 2 * (p.k.length + p.v.length),
        dispatch(p) { return [[Math.ceil(p.n_q / this.shape(p).BQ), p.n_q_heads, 1]]; },
      },
      // Prefill version 8 (fwd_sgmat8.wgsl): version 7's configuration and constants; K and V
      // (and Q) loaded as matrices straight from storage, so the host pads their buffers (Q by
      // BQ rows, K and V by BK rows of zeros) for the last block's loads; workgroup memory only S
      // and P, their rows padded (BK + 4 floats, BK + 8 halves)
      'prefill-v8': {
        what: "version 7 with K, V and Q loaded as matrices straight from storage (no staging), the softmax done once by the subgroup that owns the rows (scores in registers, the row's maximum and sum by subgroup shuffles), padded rows of S and P (no bank conflicts), two barriers a tile",
        file: 'fwd_sgmat8', entry: ['main'], out: 'o+lse', storage: 'f16', needs: 'chromium-experimental-subgroup-matrix',
        config: sgmat,
        absent() { return kernels['prefill-v7'].absent.call(this); },   // version 7's, with this shape
        tol: 2e-3,   // version 7's: P rounded to float16
        // 4 subgroups (BQ = 4 M rows); BK = 64 keys a tile, 32 or 16 where S and P (and the
        // variants' staged K and V, BK keys of D + 8 halves each) do not fit; this.over's instead
        shape(p) {
          const c = this.config, SGS = sg.max, x = this.extra || {}, over = this.over || {};
          const own = this.shapeOf ? this.shapeOf(p) : {};   // a version's own shape for this head size
          let NSG = over.NSG || own.NSG || this.nsg || 4, RB = over.RB || own.RB || this.rb || 1;
          while (NSG > 1 && NSG * SGS > lim.maxComputeInvocationsPerWorkgroup) NSG >>= 1;
          while (RB > 1 && SGS % (RB * c.M)) RB >>= 1;   // a subgroup's RB · M rows share its lanes evenly
          const BQ = NSG * RB * c.M, WG = NSG * SGS;
          const stage = !!(x.STAGE || this.stage);
          const bytes = bk => 4 * BQ * (bk + 4) + 2 * BQ * (bk + 8) + 4 * BQ + 16 + ((x.KWG ? 1 : 0) + (x.VWG ? 1 : 0) + (stage ? 2 : 0)) * 2 * bk * (p.d + 8) +
                             (x.QWG ? 2 * BQ * (p.d + 8) : 0);   // (QWG: Q's rows staged too)
          // STAGE: a tile copied in whole SM × SK blocks
          const BK = (over.BK ? [over.BK] : this.bks || [64, 32, 16]).find(bk => bk % c.N === 0 && bk % c.K === 0 && (!stage || bk % c.M === 0) &&
                                                                         bytes(bk) <= (this.mem || lim.maxComputeWorkgroupStorageSize)) || 0;
          const NCP = stage && BK ? Math.ceil((BK / c.M) * (p.d / c.K) / NSG) : 0;
          const NCV = stage && BK ? Math.ceil(BK * p.d / 8 / WG) : 0;   // (VCOPY) 16-byte words of a tile an invocation copies
          return {D: p.d, SM: c.M, SN: c.N, SK: c.K, SGS, NSG, BK, BQ, WG, RB, NCP, NCV};
        },
        ok(p) { return kernels['prefill-v7'].ok.call(this, p); },   // version 7's rules, with this shape
        defs(p) { const s = this.shape(p); return {D: s.D, SM: s.SM, SN: s.SN, SK: s.SK, SGS: s.SGS, NSG: s.NSG, BK: s.BK, RB: s.RB, NCP: s.NCP, NCV: s.NCV, STAGE: !!this.stage}; },   // NCP 0 but in STAGE (its //#for counts are read in every form)
        ablations: ['NOQK', 'NOPV', 'NOSOFT', 'NOLOAD'],   // fwd_sgmat8.wgsl's (no K staging: no KROW)
        // its right variants (bench.js --ablation checks them, then times them): preprocessor
        // flags (staged K, staged V, both, scores read twice, loops unrolled) or another shape
        variants: [{flags: ['KWG']}, {flags: ['VWG']}, {flags: ['KWG', 'VWG']}, {flags: ['REREAD']}, {flags: ['UNROLL']}, {flags: ['UNROLL', 'VWG']},
                   {over: {BK: 32}}, {over: {NSG: 2}}, {over: {NSG: 8}}, {flags: ['REREAD'], over: {NSG: 2, BK: 128}}],
        form: sgmatForm,
        constants: () => ({}),
        subgroups: () => true,
        // the rounded inputs, each buffer padded with zero halves: Q by BQ rows, K and V by BK rows
        layout(p) {
          const s = this.shape(p), pad = (x, rows) => {
            const h = half1(x).packed, out = new Uint32Array(h.length + Math.ceil(rows * p.d / 2));
            out.set(h);
            return out;
          };
          return {q: pad(p.q, s.BQ), k: pad(p.k, s.BK), v: pad(p.v, s.BK)};
        },
        reference: p => Object.assign({}, p, {q: half1(p.q).r, k: half1(p.k).r, v: half1(p.v).r}),
        kvBytes: p => 2 * (p.k.length + p.v.length),
        dispatch(p) { return [[Math.ceil(p.n_q / this.shape(p).BQ), p.n_q_heads, 1]]; },
      },
      'decode-v1': {
        what: 'FlashDecoding: splits of the KV cache, each read once for its GQA group; one invocation a row does a tile\'s softmax; one merge loop',
        file: 'decode_v1', entry: ['split', 'merge'], out: 'o+part', split: true,
        ok: p => d_ok(p, 4, 256, 4) || ((p.n_q_heads / p.n_kv_heads) * p.n_q > 8 ? 'at most 8 query rows a KV head (query heads a group × rows)' : null) || tileMem(p),
        splitLen: p => p.split_len || Math.max(256, Math.ceil(p.n_kv * p.n_kv_heads / 1024 / 32) * 32),
        constants: p => ({D: p.d}),
        dispatch(p) { return [[Math.ceil(p.n_kv / this.splitLen(p)), p.n_kv_heads, 1], [p.n_q, p.n_q_heads, 1]]; },
      },
      'decode-v2': {
        what: "decode version 1 with every invocation at work: each output owner takes the tile's softmax itself, the merge shared out",
        file: 'decode_v2', entry: ['split', 'merge'], out: 'o+part', split: true,
        ok: p => d_ok(p, 4, 256, 4) || ((p.n_q_heads / p.n_kv_heads) * p.n_q > 8 ? 'at most 8 query rows a KV head (query heads a group × rows)' : null) || tileMem(p),
        splitLen: p => p.split_len || Math.max(256, Math.ceil(p.n_kv * p.n_kv_heads / 1024 / 32) * 32),
        constants: p => ({D: p.d}),
        dispatch(p) { return [[Math.ceil(p.n_kv / this.splitLen(p)), p.n_kv_heads, 1], [p.n_q, p.n_q_heads, 1]]; },
      },
      'decode-v2-f16': decodeV2(true, false),
      'decode-v2-paged': decodeV2(false, true),
      'decode-v2-paged-f16': decodeV2(true, true),
      'decode-v5': decodeV2(false, false, true),
      'decode-v5-f16': decodeV2(true, false, true),
      'decode-v5-paged': decodeV2(false, true, true),
      'decode-v5-paged-f16': decodeV2(true, true, true),
      'decode-v7': decodeV7(false, false),
      'decode-v7-f16': decodeV7(true, false),
      'decode-v7-paged': decodeV7(false, true),
      'decode-v7-paged-f16': decodeV7(true, true),
      'decode-v6': (() => {
        const K = decodeV2(true, false, true), ok = K.ok;
        return Object.assign(K, {
          what: 'decode version 5 with K and V stored as float16 and read as f16 (shader-f16: a word is a mat2x4<f16>, widened with vec4f) instead of unpacked from u32s; float32 arithmetic',
          defs: Object.assign({}, K.defs, {H16: true}), needs: 'shader-f16',
          absent: () => (dev.f16 ? null : 'this device has no shader-f16'),
          ok(p) { return !dev.f16 ? 'shader-f16, which this device does not offer' : ok.call(this, p); },
        });
      })(),
      'decode-v3': {
        what: "subgroups stream the keys two at a time with no barrier (003's parallel decode shape, GQA rows together); the subgroups merge once, then version 2's merge",
        file: 'decode_v3', entry: ['split', 'merge'], out: 'o+part', split: true,
        // the subgroup is the SIMD group; a lane holds at most 2 vec4s of a row; the end's merge fits workgroup memory
        nsg: () => Math.max(1, Math.min(8, Math.floor(Math.min(256, lim.maxComputeInvocationsPerWorkgroup) / (sg ? sg.min : 1)))),
        ok(p) {
          if (!sgForm) return 'subgroups of one size';
          return d_ok(p, 4, Math.min(256, 8 * sg.min), 4) || ((p.n_q_heads / p.n_kv_heads) * p.n_q > 8 ? 'at most 8 query rows a KV head (query heads a group × rows)' : null) ||
                 (this.nsg() * p.d / 4 > 512 ? 'a smaller head size' : null);
        },
        splitLen: p => p.split_len || Math.max(256, Math.ceil(p.n_kv * p.n_kv_heads / 1024 / 32) * 32),
        constants(p) { return {D: p.d, LANES: sg.min, NSG: this.nsg(), RQ: (p.n_q_heads / p.n_kv_heads) * p.n_q}; },
        mergeFile: 'decode_v2', mergeConstants: p => ({D: p.d}),
        subgroups: () => true,
        dispatch(p) { return [[Math.ceil(p.n_kv / this.splitLen(p)), p.n_kv_heads, 1], [p.n_q, p.n_q_heads, 1]]; },
      },
      'decode-v9': decodeV9(false, false),
      'decode-v9-f16': decodeV9(true, false),
      'decode-v9-paged': decodeV9(false, true),
      'decode-v9-paged-f16': decodeV9(true, true),
      'decode-v9-paged-hnd': decodeV9(false, true, {hnd: true}),
      'decode-v9-paged-hnd-f16': decodeV9(true, true, {hnd: true}),
      'decode-v10': decodeV9(false, false, {fused: true}),
      'decode-v10-f16': decodeV9(true, false, {fused: true}),
      'decode-v10-paged': decodeV9(false, true, {fused: true}),
      'decode-v10-paged-f16': decodeV9(true, true, {fused: true}),
      'decode-v11-paged': decodeV9(false, true, {ahead: true}),
      'decode-v11-paged-f16': decodeV9(true, true, {ahead: true}),
      'decode-v14-paged': decodeV9(false, true, {base: true}),
      'decode-v14-paged-f16': decodeV9(true, true, {base: true}),
      'decode-v4': decodeV4(false, false),
      'decode-v4-f16': decodeV4(true, false),
      'decode-paged': decodeV4(false, true),
      'decode-paged-f16': decodeV4(true, true),
      'akunu-standard': {
        what: "003's kernel 1 (standard decode): an invocation per element of the head, two barriers a key",
        file: 'akunu', entry: ['decode_standard'], out: 'o',
        ok: p => (p.d % lanes || p.d > lim.maxComputeInvocationsPerWorkgroup ? `head size a multiple of ${lanes}, at most ${lim.maxComputeInvocationsPerWorkgroup}` : null),
        constants: p => ({D: p.d, LANES: lanes}),
        subgroups: () => sgForm,
        dispatch: p => [[p.n_q, p.n_q_heads, 1]],
      },
      'akunu-fast': {
        what: "003's kernel 2 (fast decode): one SIMD group a head, no barrier",
        file: 'akunu', entry: ['decode_fast'], out: 'o',
        ok: p => (p.d % lanes || p.d > 8 * lanes ? `head size a multiple of ${lanes}, at most ${8 * lanes}` : null),
        constants: p => ({D: p.d, LANES: lanes}),
        subgroups: () => sgForm,
        dispatch: p => [[p.n_q, p.n_q_heads, 1]],
      },
      'akunu-parallel': {
        what: "003's kernel 3 (parallel decode): SIMD groups take every NSG-th key, then merge",
        file: 'akunu', entry: ['decode_parallel'], out: 'o',
        nsg: () => Math.min(32, Math.floor(Math.min(1024, lim.maxComputeInvocationsPerWorkgroup) / lanes)),
        ok: p => (p.d % lanes || p.d > 8 * lanes ? `head size a multiple of ${lanes}, at most ${8 * lanes}` : null),
        constants(p) { return {D: p.d, LANES: lanes, NSG: this.nsg()}; },
        subgroups: () => sgForm,
        dispatch: p => [[p.n_q, p.n_q_heads, 1]],
      },
      'akunu-prefill-v1': {
        what: "003's kernel 4 (Prefill V1): NQ = 16, 8 or 4 rows a workgroup of 128, o accumulated in workgroup memory, K read from device memory, the 8 × 8 matrix products as plain loops",
        file: 'akunu_prefill_v1', entry: ['main'], out: 'o+lse',
        // 003's NQ by head size (16 for d ≤ 64, 8 for d ≤ 128, 4 for d ≤ 256), halved while the
        // workgroup's memory (Q, O, the V block, S, P, three numbers a row) passes this device's limit
        nq(p) {
          const bytes = nq => 4 * (2 * nq * p.d + 32 * p.d + 32 * nq + 8 * 32 + 3 * nq + (this.subgroups() ? 0 : 128));
          for (let nq = p.d <= 64 ? 16 : p.d <= 128 ? 8 : 4; nq >= 4; nq /= 2) if (bytes(nq) <= lim.maxComputeWorkgroupStorageSize) return nq;
          return 0;
        },
        ok(p) { return p.d < 1 || p.d > 256 ? 'head size 1-256' : !this.nq(p) ? 'more workgroup memory than this device has' : null; },
        constants(p) { return {D: p.d, NQ: this.nq(p)}; },
        subgroups() { return !!sg && sg.min >= 4; },
        dispatch(p) { return [[Math.ceil(p.n_q / this.nq(p)), p.n_q_heads, 1]]; },
      },
    };
    // Prefill version 9: version 8's file (fwd_sgmat8.wgsl) with the two choices the H200's
    // ablation measured (`2026-11-29-h200-ablation`): every `//#for` loop unrolled (UNROLL: no array
    // of matrices indexed by a variable, 17 % of version 8's time at d = 128, N = 4096) and tiles of
    // BK = 32 keys (35 %: half the scores a lane holds, half the result matrices of S), 16 where 32
    // does not fit. Its variants are the other tiles, for the next ablation.
    kernels['prefill-v9'] = Object.assign(Object.create(kernels['prefill-v8']), {
      what: "version 8 with the shape its ablation measured best on the H200: every loop over an array of matrices unrolled, tiles of 32 keys",
      bks: [32, 16],
      defs(p) { return Object.assign(kernels['prefill-v8'].defs.call(this, p), {UNROLL: true}); },
      variants: [{over: {BK: 16}}, {over: {BK: 64}}, {over: {NSG: 2}}, {over: {NSG: 8}}, {over: {NSG: 2, BK: 64}}, {flags: ['REREAD']}, {flags: ['VWG']}],
    });
    // Prefill version 10: version 9 with two blocks of M query rows a subgroup (RB = 2), so that
    // each right matrix loaded (K's for S, V's for P V) feeds two products: on the H200 a product
    // whose right matrix is loaded from storage runs at a fifth of the matrix units' rate
    // (probes_sgmat.wgsl), and version 9's two products ran at about 32. Two subgroups a workgroup (64
    // rows) and tiles of 16 keys: the best of its forms in the H200's ablation
    // (`2026-11-29-h200-run4`: 3.41 ms at d = 128, N = 4096, against 5.72 with four subgroups and
    // 32 keys). Where 2 · M rows do not divide the subgroup's lanes evenly, RB = 1.
    kernels['prefill-v10'] = Object.assign(Object.create(kernels['prefill-v9']), {
      what: "version 9 with two blocks of query rows a subgroup, so that each K or V matrix loaded feeds two products; two subgroups a workgroup, tiles of 16 keys",
      rb: 2, nsg: 2, bks: [16],
      variants: [{over: {BK: 32}}, {over: {NSG: 4}}, {over: {NSG: 1}}, {over: {RB: 1}}, {over: {NSG: 4, BK: 32}},
                 {flags: ['STAGE']}, {flags: ['STAGE'], over: {NSG: 4}}, {flags: ['STAGE'], over: {RB: 1, NSG: 4}}],
    });
    // Prefill version 13 (12 was a float32 trial, taken out): version 10's file with K's and V's
    // tiles staged in workgroup memory by subgroup matrices (STAGE), each subgroup copying a share,
    // no barrier added: on the H200 a product whose right matrix is loaded from workgroup memory
    // runs at 228 TFLOP/s, from storage at 118 (probes_sgmat.wgsl's WLOAD and LOAD forms,
    // `2026-11-30-h200-stage`). Once K and V are shared, more subgroups share each tile. Its shape,
    // from that run's ablations (16 heads, N = 4096): at d = 128 sixteen subgroups of one row block
    // (256 rows a workgroup; 2.1 ms against 3.1 with eight, 3.5 for version 10), eight where that
    // leaves fewer than 256 workgroups (a guess at filling a large GPU: not measured apart); at d =
    // 64 four subgroups of two row blocks (1.8-1.9 ms, version 10 2.0); at d = 256 eight of one
    // (16 do not fit 48 KiB).
    kernels['prefill-v13'] = Object.assign(Object.create(kernels['prefill-v10']), {
      what: "version 10 with K's and V's tiles staged in workgroup memory by subgroup matrices (the next tile's K and this tile's V copied during the softmax, no barrier added), so that more subgroups share each tile: sixteen subgroups of one row block at d = 128, four of two row blocks at d = 64",
      stage: true,
      shapeOf: p => (p.d <= 64 ? {RB: 2, NSG: 4}
        : p.d <= 128 && Math.ceil(p.n_q / 256) * p.n_q_heads >= 256 ? {RB: 1, NSG: 16} : {RB: 1, NSG: 8}),
      variants: [{over: {NSG: 16}}, {over: {NSG: 8}}, {over: {NSG: 8, BK: 32}}, {over: {RB: 2, NSG: 8}}, {over: {RB: 2, NSG: 4}}, {over: {NSG: 4}}],
    });
    // Prefill version 14: version 13 with a full tile's scores read without per-score tests
    // (FASTS in fwd_sgmat8.wgsl): on a tile where every row sees every one of its BK keys and no
    // soft-cap is set, a lane's scores are its reads of S times scale · log2(e); the tests of
    // score() (row past n_q, key past the tile's end, the mask, the soft-cap) stay on the other
    // tiles. On the H200 (`2026-11-30-h200-fasts`, 16 heads, N = 4096) 1.74 ms against 2.11 at
    // d = 128 and 1.16 against 1.93 at d = 64. Version 13's shapes.
    kernels['prefill-v14'] = Object.assign(Object.create(kernels['prefill-v13']), {
      what: "version 13 with each full tile's scores read without per-score tests (the mask's, the tile end's, the soft-cap's): the tests stay on partial tiles",
      defs(p) { return Object.assign(kernels['prefill-v13'].defs.call(this, p), {FASTS: true}); },
      variants: [{over: {NSG: 16}}, {over: {NSG: 8}}, {over: {RB: 2, NSG: 8}}, {over: {RB: 1, NSG: 8}},
                 {flags: ['BLK']}, {flags: ['BLK'], over: {RB: 2, NSG: 8}}, {flags: ['BLK'], over: {RB: 2, NSG: 4}}],
    });
    // Prefill version 16 (15 was a float32 trial, taken out): version 14 with its workgroup arrays
    // declared as arrays of blocks of M rows (BLK in fwd_sgmat8.wgsl: the same bytes), so that every
    // subgroup matrix load and store of S, P, K and V takes a pointer to one block and an offset in
    // it that the compiler knows, and Dawn's bounds check of the load folds away. On the H200 with
    // the checks on (`2026-12-01-h200-blk`, 16 heads, N = 4096): 9 % less time at d = 128 and 19 %
    // at d = 64 in version 14's shapes; and at d = 128 two row blocks of eight subgroups, which the
    // checks had held back (1.69 ms, version 14 1.74), take 1.42. Its shapes: two row blocks of
    // eight subgroups at d = 128 (256 rows, version 14's), version 14's elsewhere.
    kernels['prefill-v16'] = Object.assign(Object.create(kernels['prefill-v14']), {
      what: "version 14 with its workgroup arrays as arrays of 16-row blocks, so that each matrix load and store has an offset the compiler knows and its bounds check folds away; two row blocks of eight subgroups at d = 128",
      defs(p) { return Object.assign(kernels['prefill-v14'].defs.call(this, p), {BLK: true}); },
      shapeOf: p => (p.d <= 64 ? {RB: 2, NSG: 4}
        : p.d <= 128 && Math.ceil(p.n_q / 256) * p.n_q_heads >= 256 ? {RB: 2, NSG: 8} : {RB: 1, NSG: 8}),
      variants: [{over: {RB: 1, NSG: 16}}, {over: {RB: 2, NSG: 4}}, {over: {RB: 1, NSG: 8}}, {flags: ['VCOPY']}],
    });
    // Prefill version 17: version 16 with K's and V's tiles copied into workgroup memory by plain
    // 16-byte loads from storage and stores of halves (VCOPY), in place of subgroup matrix loads and
    // stores. Dawn guards a matrix load from a storage buffer with a branch (zeros past its end),
    // and the loaded value leaves that branch only once it has arrived, in front of the softmax the
    // load was issued ahead of; a plain load is clamped (a min, no branch) and stays in flight. On
    // the H200 with the checks on (`2026-12-01-h200-vcopy`, 16 heads, N = 4096): 0.84 ms against
    // 1.44 at d = 128 and 0.54 against 0.95 at d = 64, faster than version 16 with the checks off
    // (0.91). Version 16's shapes.
    kernels['prefill-v17'] = Object.assign(Object.create(kernels['prefill-v16']), {
      what: "version 16 with K's and V's tiles copied by plain 16-byte loads from storage (clamped, no branch) and stores of halves, in place of subgroup matrix loads, which Dawn's bounds check puts behind a branch",
      defs(p) { return Object.assign(kernels['prefill-v16'].defs.call(this, p), {VCOPY: true}); },
      ablations: ['NOQK', 'NOPV', 'NOSOFT', 'NOLOAD', 'NOSTORE'],   // (NOSTORE: the copies' stores, VCOPY's alone)
      variants: [{over: {RB: 1, NSG: 16}}, {over: {RB: 2, NSG: 4}}, {over: {RB: 1, NSG: 8}}, {flags: ['PAIR']}],
      // (PAIR, a form of this file: two row blocks a workgroup, so half the workgroups)
      dispatch(p) {   // (PAIR: two row blocks a workgroup; LPT, not with PAIR: the heads innermost, fwd_sgmat8.wgsl says why)
        const d = this.defs(p), n = Math.ceil(p.n_q / this.shape(p).BQ);
        return [d.LPT && !d.PAIR ? [p.n_q_heads, n, 1] : [d.PAIR ? Math.ceil(n / 2) : n, p.n_q_heads, 1]];
      },
    });
    // Prefill version 18: version 17 with, under the causal mask, two row blocks a workgroup, the
    // first rows' with the last rows' (PAIR), so that every workgroup does the same work: version 17
    // took longer causal than not (0.935 ms against 0.831 at d = 128, N = 4096, `2026-12-01-h200-v17`),
    // its workgroups all running at once and the call as long as the last rows' block.
    kernels['prefill-v18'] = Object.assign(Object.create(kernels['prefill-v17']), {
      what: "version 17 with, under the causal mask, two row blocks a workgroup, the first rows' with the last rows', so that every workgroup does the same work",
      defs(p) { return Object.assign(kernels['prefill-v17'].defs.call(this, p), {PAIR: !!p.mask && p.mask.kind === MASK.causal}); },
      variants: [{over: {RB: 1, NSG: 16}}, {over: {RB: 2, NSG: 4}}],
    });
    // Prefill version 19: version 17 with, under a causal mask or a window, its tile loop over the
    // keys the mask can show the block (RANGE), and under the causal mask the row blocks dispatched
    // longest first (LPT) instead of version 18's pairs. Version 18 took 0.69 of its time without a
    // mask at N = 16384, d = 128, causal, where it visits half the tiles (`2026-12-01-h200-swz-desc`);
    // longest first alone 0.68 (`2026-12-01-h200-lpt`); with RANGE 0.57 (`2026-12-01-h200-range`):
    // the time went to passing over the tiles past the last row, not to the order.
    kernels['prefill-v19'] = Object.assign(Object.create(kernels['prefill-v17']), {
      what: "version 17 with, under a causal mask or a window, its tile loop over only the keys the mask can show the block, and under the causal mask the row blocks dispatched longest first, so that the short ones fill the end",
      defs(p) {
        const kind = p.mask ? p.mask.kind : MASK.none;
        return Object.assign(kernels['prefill-v17'].defs.call(this, p), {RANGE: kind === MASK.causal || kind === MASK.window, LPT: kind === MASK.causal});
      },
      variants: [{over: {RB: 1, NSG: 16}}, {over: {RB: 2, NSG: 4}}, {flags: ['FASTC']}],   // (FASTC: the causal diagonal's tiles without score()'s tests)
    });
    // Prefill version 20: version 19 with, under the causal mask, each full-width tile on the
    // diagonal scored with one comparison a score instead of score()'s tests (FASTC in
    // fwd_sgmat8.wgsl). A block of BQ rows crosses the diagonal in BQ / BK tiles (16 at d = 128):
    // an eighth of the tiles a block visits at N = 4096, a thirty-second at 16384. Timed against
    // version 19 in three rounds in turned orders (`2026-12-01-h200-v20`, `-v20-fastc`): 11 % and
    // 10 % less time causal at N = 4096 (d = 128 and 64), 2.7 % and 2.5 % at 16384. Without a mask
    // it is version 19's code (FASTC then changes no instruction that runs, yet its text made that
    // form 0.2-2.0 % faster: what any change to this shader's text moves, kept out of the version).
    kernels['prefill-v20'] = Object.assign(Object.create(kernels['prefill-v19']), {
      what: "version 19 with, under the causal mask, each full-width tile on the diagonal scored with one comparison instead of the general mask's tests",
      defs(p) {
        return Object.assign(kernels['prefill-v19'].defs.call(this, p), {FASTC: !!p.mask && p.mask.kind === MASK.causal});
      },
      ablations: ['NOQK', 'NOPV', 'NOSOFT', 'NOLOAD', 'NOSTORE', 'NOCOPY'],   // (NOCOPY: no copy of K or V into workgroup memory at all)
      // (QWG: Q staged in workgroup memory, not held in registers; REREAD: no scores held either)
      variants: [{over: {RB: 1, NSG: 16}}, {over: {RB: 2, NSG: 4}}, {flags: ['QWG']}, {flags: ['REREAD']}, {flags: ['QWG', 'REREAD']}],
    });
    return kernels;
  }

  class Device {
    constructor(adapter, device, load, consts) {
      this.adapter = adapter;
      this.device = device;
      this.load = load;
      this.U = consts.BufferUsage;
      this.M = consts.MapMode;
      this.sources = {};
      this.modules = {};
      this.pipelines = {};
      this.limits = device.limits;
      this.lost = null;
      const f = device.features;
      this.subgroups = f.has('subgroups') ? {min: adapter.info.subgroupMinSize || 0, max: adapter.info.subgroupMaxSize || 0} : null;
      if (this.subgroups && !(this.subgroups.min > 0)) this.subgroups = null;   // sizes unknown: do without
      this.timestamps = f.has('timestamp-query');
      this.f16 = f.has('shader-f16');
      const i = adapter.info || {};
      this.sgmat = f.has('chromium-experimental-subgroup-matrix') && !!this.subgroups;
      this.sgmatConfigs = Array.from(i.subgroupMatrixConfigs || [], (c) => ({component: c.componentType, result: c.resultComponentType, M: c.M, N: c.N, K: c.K}));
      this.info = {
        vendor: i.vendor || '', architecture: i.architecture || '', device: i.device || '', description: i.description || '',
        features: [...adapter.features].sort(),
        subgroups: this.subgroups, timestamps: this.timestamps, f16: this.f16,
        subgroup_matrix: adapter.features.has('chromium-experimental-subgroup-matrix'),
        // the shapes and types its subgroup matrices come in (Chromium's experimental extension)
        subgroup_matrix_configs: this.sgmatConfigs,
        // the features this device was asked for (what the kernels may use)
        device_features: [...f].sort(),
        limits: {
          maxStorageBufferBindingSize: device.limits.maxStorageBufferBindingSize,
          maxBufferSize: device.limits.maxBufferSize,
          maxComputeWorkgroupStorageSize: device.limits.maxComputeWorkgroupStorageSize,
          maxComputeInvocationsPerWorkgroup: device.limits.maxComputeInvocationsPerWorkgroup,
          maxStorageBuffersPerShaderStage: device.limits.maxStorageBuffersPerShaderStage,
        },
      };
      this.kernels = kernelTable(this);
      this.info.subgroup_matrix_kernel = this.kernels['prefill-v7'].config;   // the configuration prefill version 7 uses, or null
      device.lost.then(x => { this.lost = x.message || x.reason || 'device lost'; });
    }

    // gpu: navigator.gpu, or Dawn's for Node; load(name): the text of name.wgsl. opts.subgroups:
    // false to do without them (the tests run both forms); opts.consts: {BufferUsage, MapMode}
    // where the GPU* globals are absent. The device is asked for every feature a kernel may use
    // that the adapter offers: timestamp-query, shader-f16, subgroups and (with subgroups)
    // chromium-experimental-subgroup-matrix; info.device_features lists what it was given.
    static async open(gpu, load, opts = {}) {
      if (!gpu) throw new Error('this browser has no WebGPU (navigator.gpu is missing)');
      const adapter = await gpu.requestAdapter({powerPreference: 'high-performance'});
      if (!adapter) throw new Error('WebGPU is present but offers no adapter (no usable GPU, or it is blocked)');
      const want = ['timestamp-query', 'shader-f16'];
      if (opts.subgroups !== false) want.push('subgroups', 'chromium-experimental-subgroup-matrix');
      const requiredFeatures = want.filter(x => adapter.features.has(x));
      const L = adapter.limits, requiredLimits = {};
      for (const k of ['maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupStorageSize',
                       'maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupSizeX', 'maxStorageBuffersPerShaderStage'])
        if (L[k] !== undefined) requiredLimits[k] = L[k];
      const device = await adapter.requestDevice({requiredFeatures, requiredLimits});
      const g = typeof globalThis !== 'undefined' ? globalThis : {};
      const consts = opts.consts || {BufferUsage: g.GPUBufferUsage, MapMode: g.GPUMapMode};
      const dev = new Device(adapter, device, load, consts);
      await dev.source('common');
      return dev;
    }

    async source(name) {
      if (!(name in this.sources)) this.sources[name] = await this.load(name);
      return this.sources[name];
    }

    // The source of `file` with each `//#include NAME` line replaced by NAME.wgsl's source (itself
    // expanded; decode_merge.wgsl, the split decodes' shared merge). A file included twice on one
    // path is an error.
    async expanded(file, path = []) {
      if (path.includes(file)) throw new Error(`${file}.wgsl includes itself (${path.concat(file).join(' > ')})`);
      const out = [];
      for (const line of (await this.source(file)).split('\n')) {
        const m = /^\s*\/\/#include\s+(\w+)\s*$/.exec(line);
        out.push(m ? await this.expanded(m[1], path.concat(file)) : line);
      }
      return out.join('\n');
    }

    async module(file, subgroups, defs = {}) {
      const on = Object.keys(defs).filter(k => defs[k]).sort().map(k => (typeof defs[k] === 'number' ? `${k}=${defs[k]}` : k));
      const key = `${file}/${subgroups ? 'sg' : 'plain'}${on.map(k => '/' + k).join('')}`;
      if (this.modules[key]) return this.modules[key];
      const text = await this.expanded(file);
      const code = preprocess((file.startsWith('probes') ? '' : this.sources.common + '\n') + text, subgroups, defs);
      this.device.pushErrorScope('validation');
      const mod = this.device.createShaderModule({code, label: key});
      const info = await mod.getCompilationInfo();
      const err = await this.device.popErrorScope();
      const bad = info.messages.filter(m => m.type === 'error');
      if (bad.length || err) {
        const m = bad[0];
        throw new Error(`${file}.wgsl${subgroups ? ' (subgroups)' : ''}${on.length ? ` (${on.join(', ')})` : ''}: ` +
          (m ? `line ${m.lineNum}, column ${m.linePos} of the compiled text: ${m.message}` : err.message));
      }
      return (this.modules[key] = mod);
    }

    async pipeline(file, entry, constants, subgroups, defs = {}) {
      const key = `${file}/${entry}/${subgroups ? 1 : 0}/${JSON.stringify(constants || {})}/${JSON.stringify(defs)}`;
      if (this.pipelines[key]) return this.pipelines[key];
      const module = await this.module(file, subgroups, defs);
      this.device.pushErrorScope('validation');
      const p = await this.device.createComputePipelineAsync({layout: 'auto', compute: {module, entryPoint: entry, constants: constants || {}}})
        .catch(e => { throw new Error(`${file}.wgsl, ${entry}: ${e.message}`); });
      const err = await this.device.popErrorScope();
      if (err) throw new Error(`${file}.wgsl, ${entry}: ${err.message}`);
      return (this.pipelines[key] = p);
    }

    buffer(data, extra = 0) {
      const size = Math.max(16, Math.ceil((data.byteLength !== undefined ? data.byteLength : data) / 4) * 4);
      const b = this.device.createBuffer({size, usage: this.U.STORAGE | this.U.COPY_SRC | this.U.COPY_DST | extra});
      if (data.byteLength !== undefined && data.byteLength) this.device.queue.writeBuffer(b, 0, data);
      return b;
    }

    uniform(params) {
      const b = this.device.createBuffer({size: params.byteLength, usage: this.U.UNIFORM | this.U.COPY_DST});
      this.device.queue.writeBuffer(b, 0, params);
      return b;
    }

    async read(buf, floats) {
      const bytes = floats * 4;
      const rb = this.device.createBuffer({size: Math.max(16, bytes), usage: this.U.MAP_READ | this.U.COPY_DST});
      const enc = this.device.createCommandEncoder();
      enc.copyBufferToBuffer(buf, 0, rb, 0, Math.max(16, bytes));
      this.device.queue.submit([enc.finish()]);
      await rb.mapAsync(this.M.READ);
      const out = new Float32Array(rb.getMappedRange().slice(0, bytes));
      rb.unmap();
      rb.destroy();
      return out;
    }

    // One compute pass per step: {pipeline, bind: [[binding, buffer], …], groups: [x, y, z]}.
    encode(enc, steps, timestamps) {
      steps.forEach((s, k) => {
        let tw = null;   // the first pass writes the start, the last the end
        if (timestamps && (k === 0 || k === steps.length - 1)) {
          tw = {querySet: timestamps};
          if (k === 0) tw.beginningOfPassWriteIndex = 0;
          if (k === steps.length - 1) tw.endOfPassWriteIndex = 1;
        }
        const desc = tw ? {timestampWrites: tw} : {};
        const pass = enc.beginComputePass(desc);
        pass.setPipeline(s.pipeline);
        if (!s.group) s.group = this.device.createBindGroup({layout: s.pipeline.getBindGroupLayout(0),
          entries: s.bind.map(([binding, buffer]) => ({binding, resource: {buffer}}))});   // once a step
        pass.setBindGroup(0, s.group);
        pass.dispatchWorkgroups(...s.groups);
        pass.end();
      });
    }

    async submit(steps) {
      this.device.pushErrorScope('out-of-memory');
      this.device.pushErrorScope('validation');
      const enc = this.device.createCommandEncoder();
      this.encode(enc, steps, null);
      this.device.queue.submit([enc.finish()]);
      const v = await this.device.popErrorScope();
      const m = await this.device.popErrorScope();
      if (v) throw new Error(v.message);
      if (m) throw new Error(`out of GPU memory: ${m.message}`);
      if (this.lost) throw new Error(`the GPU device was lost: ${this.lost}`);
    }

    // ---- traced kernels (lesson size) ----

    // job: {kind: 'tiled' | 'decode', params: Uint32Array(24), qs, k, v (Float32Array), bits
    // (Uint32Array or null), sched (Uint32Array or null), rec_floats, node_floats, o_floats,
    // ml_floats}, as the engine's fs_gpu_job lays them out.
    async trace(job) {
      const P = new Uint32Array(24);
      P.set(job.params.subarray(0, 24));
      const rows = P[0] * P[2];
      const bufs = [];
      const mk = x => { const b = this.buffer(x); bufs.push(b); return b; };
      const u = this.uniform(P);
      bufs.push(u);
      const qs = mk(job.qs), k = mk(job.k), v = mk(job.v), bits = mk(job.bits || new Uint32Array(4));
      const o = mk(job.o_floats * 4), rec = mk(job.rec_floats * 4);
      try {
        if (job.kind === 'tiled') {
          const ml = mk(job.ml_floats * 4);
          const p = await this.pipeline('fwd_trace', 'main', {}, false);
          await this.submit([{pipeline: p, bind: [[0, u], [1, qs], [2, k], [3, v], [4, bits], [5, o], [6, ml], [7, rec]],
                              groups: [Math.ceil(rows / 64), 1, 1]}]);
          return {rec: await this.read(rec, job.rec_floats), O: await this.read(o, job.o_floats), ml: await this.read(ml, job.ml_floats)};
        }
        const node = mk(job.node_floats * 4), sched = mk(job.sched && job.sched.length ? job.sched : new Uint32Array(4));
        const bind = [[0, u], [1, qs], [2, k], [3, v], [4, bits], [5, o], [6, node], [7, rec], [8, sched]];
        const pp = await this.pipeline('decode_trace', 'partials', {}, false);
        const pm = await this.pipeline('decode_trace', 'merge', {}, false);
        await this.submit([
          {pipeline: pp, bind: bind.filter(([b]) => b !== 8 && b !== 5), groups: [Math.ceil(rows * P[15] / 64), 1, 1]},
          {pipeline: pm, bind: bind.filter(([b]) => b === 0 || b === 5 || b === 6 || b === 8), groups: [Math.ceil(rows / 64), 1, 1]},
        ]);
        return {rec: await this.read(rec, job.rec_floats), node: await this.read(node, job.node_floats), O: await this.read(o, job.o_floats)};
      } finally {
        bufs.forEach(b => b.destroy());
      }
    }

    // ---- full-size kernels ----

    // Params for a problem (common.wgsl's layout).
    params(p, extra = {}) {
      const P = new Uint32Array(24), F = new Float32Array(P.buffer), I = new Int32Array(P.buffer);
      const m = p.mask || {kind: 0};
      P[0] = p.n_q_heads; P[1] = p.n_kv_heads; P[2] = p.n_q; P[3] = p.n_kv;
      P[4] = p.d; P[5] = p.d;
      P[10] = m.kind || 0;
      P[11] = m.kind === 3 ? m.words : 0;
      I[12] = m.offset !== undefined ? m.offset : p.n_kv - p.n_q;
      I[13] = m.window || 0;
      P[14] = 0;
      P[15] = extra.n_split || 0;
      F[16] = p.scale !== undefined ? p.scale : 1 / Math.sqrt(p.d);
      F[17] = p.softcap || 0;
      P[18] = extra.split_len || 0;
      P[19] = 1;
      return P;
    }

    // Buffers and steps of kernel `name` on problem p, resident on the GPU: {steps, out, destroy}.
    async prepare(name, p) {
      const K = this.kernels[name];
      if (!K) throw new Error(`no kernel '${name}' (there are: ${Object.keys(this.kernels).join(', ')})`);
      if (p.n_q_heads % p.n_kv_heads) throw new Error('the query heads must be a multiple of the KV heads');
      const why = K.ok(p);
      if (why) throw new Error(`${name} takes ${why}`);
      const big = Math.max(p.q.byteLength, p.k.byteLength, p.v.byteLength) * (K.storage === 'f16' ? 0.5 : 1);
      if (big > this.limits.maxStorageBufferBindingSize)
        throw new Error(`a buffer of ${big} bytes is past this device's binding limit of ${this.limits.maxStorageBufferBindingSize}`);
      const sub = K.subgroups ? K.subgroups(p) : false;
      const consts = K.constants(p);
      const defs = typeof K.defs === 'function' ? K.defs(p) : K.defs;
      const groups = K.dispatch(p);
      const extra = K.split ? {n_split: groups[0][0], split_len: K.splitLen(p)} : {};
      const bufs = [];
      const mk = x => { const b = this.buffer(x); bufs.push(b); return b; };
      const u = this.uniform(this.params(p, extra));
      bufs.push(u);
      const lay = K.layout ? K.layout(p) : {k: p.k, v: p.v};
      const q = mk(lay.q || p.q), k = mk(lay.k), v = mk(lay.v), bits = mk(p.mask && p.mask.bits ? p.mask.bits : new Uint32Array(4));
      const o = mk(p.n_q_heads * p.n_q * p.d * 4);
      const steps = [];
      let arrived = null;
      if (K.fused) {
        // decode version 7: one pass; its counters (one a KV head) zeroed here once, and set back
        // to 0 by the kernel itself at the end of each dispatch
        const part = mk(p.n_q_heads * p.n_q * extra.n_split * (2 + p.d) * 4);
        arrived = mk(new Uint32Array(p.n_kv_heads));
        steps.push({pipeline: await this.pipeline(K.file, 'split', consts, sub, defs), groups: groups[0],
                    bind: [[0, u], [1, q], [2, k], [3, v], [4, bits], [5, o], [6, part], [8, arrived]].concat(lay.table ? [[7, mk(lay.table)]] : [])});
      } else if (K.split) {
        const part = mk(p.n_q_heads * p.n_q * extra.n_split * (2 + p.d) * 4);
        steps.push({pipeline: await this.pipeline(K.file, 'split', consts, sub, defs), groups: groups[0],
                    bind: [[0, u], [1, q], [2, k], [3, v], [4, bits], [6, part]].concat(lay.table ? [[7, mk(lay.table)]] : [])});
        steps.push({pipeline: await this.pipeline(K.mergeFile || K.file, 'merge', K.mergeConstants ? K.mergeConstants(p) : consts, sub), groups: groups[1],
                    bind: [[0, u], [5, o], [6, part]]});
      } else if (K.out === 'o+lse') {
        const lse = mk(p.n_q_heads * p.n_q * 4);
        steps.push({pipeline: await this.pipeline(K.file, K.entry[0], consts, sub, defs), groups: groups[0],
                    bind: [[0, u], [1, q], [2, k], [3, v], [4, bits], [5, o], [6, lse]]});
        steps.lse = lse;
      } else {
        steps.push({pipeline: await this.pipeline(K.file, K.entry[0], consts, sub), groups: groups[0],
                    bind: [[0, u], [1, q], [2, k], [3, v], [4, bits], [5, o]]});
      }
      return {steps, o, lse: steps.lse, arrived, n_split: extra.n_split, subgroups: sub, constants: consts, destroy: () => bufs.forEach(b => b.destroy())};
    }

    // prepared: a run of prepare(name, p) to use (and keep) instead of a fresh one.
    async attention(name, p, prepared = null) {
      const r = prepared || await this.prepare(name, p);
      try {
        await this.submit(r.steps);
        const O = await this.read(r.o, p.n_q_heads * p.n_q * p.d);
        const lse = r.lse ? await this.read(r.lse, p.n_q_heads * p.n_q) : null;
        return {O, lse, subgroups: r.subgroups, constants: r.constants};
      } finally {
        if (!prepared) r.destroy();
      }
    }

    // Kernel `name` against float64 on rows (all when p is small, else a sample of `sample` rows):
    // the largest |error| over max(1, |o|) must be within tol (float32 arithmetic: 1e-4 by default;
    // the kernel's own, K.tol, where it rounds an intermediate: prefill version 7's P).
    // A kernel that stores K and V (or Q, K, V) as float16 is compared with float64 on the
    // float16-rounded inputs. memo: a WeakMap that keeps the float64 rows for the next check on the
    // same arrays (referenceRowShared; the arrays must not change in place meanwhile).
    async check(name, p, {tol = null, sample = 64, prepared = null, memo = null} = {}) {
      const out = await this.attention(name, p, prepared);
      const K = this.kernels[name], ref_p = K.reference ? K.reference(p) : p;
      if (tol === null) tol = K.tol || 1e-4;
      const rows = p.n_q_heads * p.n_q;
      const pick = rows <= sample ? [...Array(rows).keys()] : [...Array(sample).keys()].map(x => Math.floor((x + 0.5) * rows / sample));
      let worst = 0, where = null;
      for (const r of pick) {
        const ref = memo ? referenceRowShared(memo, ref_p, Math.floor(r / p.n_q), r % p.n_q) : referenceRow(ref_p, Math.floor(r / p.n_q), r % p.n_q);
        for (let c = 0; c < p.d; c++) {
          const g = out.O[r * p.d + c];
          const e = Number.isFinite(g) ? Math.abs(g - ref.o[c]) / Math.max(1, Math.abs(ref.o[c])) : Infinity;
          if (!(e <= worst)) { worst = e; where = {head: Math.floor(r / p.n_q), row: r % p.n_q, col: c, gpu: g, ref: ref.o[c]}; }
        }
        if (out.lse && ref.l > 0) {
          const g = out.lse[r], e = Math.abs(g - ref.lse) / Math.max(1, Math.abs(ref.lse));
          if (!(e <= worst)) { worst = e; where = {head: Math.floor(r / p.n_q), row: r % p.n_q, col: 'lse', gpu: g, ref: ref.lse}; }
        }
      }
      return {ok: worst <= tol, worst, tol, where, rows: pick.length, subgroups: out.subgroups};
    }

    // A fused decode (decode versions 7 and 10) against float64 as check() does, and beyond it: launched
    // twice on the same buffers (O filled with NaN between), its counters must read 0 after each
    // dispatch and the second O must be the first bit for bit (the counters really came back to 0:
    // else no workgroup would merge the second time); and O must be bit for
    // bit its two-pass twin's (K.twoPass: the same splits, the same merge code, in two dispatches).
    // {ok, err (check()'s answer), counters_zero, same_twice, same_as_two_pass, differ (numbers of O
    // whose bits differ from the twin's), n_split}.
    async checkFused(name, p, {sample = 64} = {}) {
      const K = this.kernels[name];
      if (!K || !K.fused) throw new Error(`${name} is not a fused decode`);
      const prep = await this.prepare(name, p);
      try {
        const c = await this.check(name, p, {sample, prepared: prep});
        const n = p.n_q_heads * p.n_q * p.d;
        const u32 = f => new Uint32Array(f.buffer);
        const zero = a => u32(a).every(x => x === 0);
        const c1 = await this.read(prep.arrived, p.n_kv_heads);
        const first = u32(await this.read(prep.o, n));
        this.device.queue.writeBuffer(prep.o, 0, new Uint32Array(n).fill(0x7fc00000));   // NaN: the second O must be written anew
        await this.submit(prep.steps);
        const c2 = await this.read(prep.arrived, p.n_kv_heads);
        const second = u32(await this.read(prep.o, n));
        const twin = u32((await this.attention(K.twoPass, Object.assign({}, p, K.twinSet ? K.twinSet(p) : {}))).O);
        let differ = 0, again = 0;
        for (let x = 0; x < n; x++) { differ += first[x] !== twin[x]; again += first[x] !== second[x]; }
        const res = {counters_zero: zero(c1) && zero(c2), same_twice: again === 0, same_as_two_pass: differ === 0, differ, n_split: prep.n_split,
                     check: c};
        res.ok = c.ok && res.counters_zero && res.same_twice && res.same_as_two_pass;
        return res;
      } finally {
        prep.destroy();
      }
    }

    // 003's softmax kernel (akunu.wgsl, softmax_rows) on a random rows × cols score matrix, about
    // one score in five masked (NEG), and one row with every score masked, against float64:
    // {ok, worst, tol}. The kernel works in place, one workgroup a row.
    async checkSoftmax(seed, rows = 7, cols = 300, tol = 1e-5) {
      const r = rng(seed), x = new Float32Array(rows * cols);
      for (let k = 0; k < x.length; k++) x[k] = r() < 0.2 || k < cols ? NEG : (2 * r() - 1) * 8;
      const P = this.params({n_q_heads: 1, n_kv_heads: 1, n_q: rows, n_kv: cols, d: 4});
      const u = this.uniform(P), buf = this.buffer(x);
      try {
        const pipe = await this.pipeline('akunu', 'softmax_rows', {}, !!this.subgroups && this.subgroups.min === this.subgroups.max);
        await this.submit([{pipeline: pipe, bind: [[0, u], [5, buf]], groups: [rows, 1, 1]}]);
        const y = await this.read(buf, rows * cols);
        let worst = 0;
        for (let i = 0; i < rows; i++) {
          let m = -Infinity, l = 0;
          for (let j = 0; j < cols; j++) if (x[i * cols + j] !== NEG) m = Math.max(m, x[i * cols + j]);
          for (let j = 0; j < cols; j++) if (x[i * cols + j] !== NEG) l += Math.exp(x[i * cols + j] - m);
          for (let j = 0; j < cols; j++) {
            const want = x[i * cols + j] === NEG ? 0 : Math.exp(x[i * cols + j] - m) / l;
            const e = Math.abs(y[i * cols + j] - want);
            if (!(e <= worst)) worst = e;
          }
        }
        return {ok: worst <= tol, worst, tol};
      } finally {
        u.destroy();
        buf.destroy();
      }
    }

    // Median time of one launch (ms), resident buffers: timestamp queries where offered, else the
    // wall clock around `batch` launches per submit. opt: {reps, warmup, minMs}.
    async time(name, p, opt = {}, prepared = null) {
      const r = prepared || await this.prepare(name, p);
      try {
        return await this.timeSteps(r.steps, opt);
      } finally {
        if (!prepared) r.destroy();
      }
    }

    // Median time of one launch of `steps` (ms). Each measured interval holds `batch` launches
    // back to back, batch chosen from a first launch so that an interval lasts about targetMs:
    // timestamps can be coarse (Dawn rounds them to 2^16 ns unless told not to, and browsers
    // round them too), and a wall clock around one short launch measures the submit more than
    // the kernel. Timestamp queries where offered (the first pass writes the start, the last the
    // end), else the wall clock to the queue's completion.
    // warmMs: the GPU is kept busy that long first, with batches of launches back to back (after
    // `warmup` single launches): a GPU that was idle, as it is while the host checks a result in
    // float64, runs at a fraction of its clock until its power management raises it (seen: 345
    // MHz against 1980 on an H200), and single launches with the host waiting between them did
    // not always raise it: on an H100 a decode then ran 2.9× slow for three or four 20 ms
    // intervals before its full speed (2026-11-27 run 2; docs/webgpu.md).
    // settleMs: the intervals go on (up to that long) until the last `reps` of them agree within
    // 10 %, and the median is of those. Every interval is kept in `intervals`, in order;
    // `settled` says whether they came to agree.
    async timeSteps(steps, {reps = 10, warmup = 2, targetMs = 20, maxBatch = 256, warmMs = 300, settleMs = 3000} = {}) {
      const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());
      for (let w = 0; w < warmup; w++) {
        await this.submit(steps);
        await this.device.queue.onSubmittedWorkDone();
      }
      let qs = null, qb = null, rb = null;
      if (this.timestamps) {
        qs = this.device.createQuerySet({type: 'timestamp', count: 2});
        qb = this.device.createBuffer({size: 16, usage: this.U.QUERY_RESOLVE | this.U.COPY_SRC});
        rb = this.device.createBuffer({size: 16, usage: this.U.MAP_READ | this.U.COPY_DST});
      }
      const interval = async batch => {
        const all = [];
        for (let b = 0; b < batch; b++) all.push(...steps);
        const enc = this.device.createCommandEncoder();
        const t0 = now();
        if (qs) {
          this.encode(enc, all, qs);
          enc.resolveQuerySet(qs, 0, 2, qb, 0);
          enc.copyBufferToBuffer(qb, 0, rb, 0, 16);
        } else this.encode(enc, all, null);
        this.device.queue.submit([enc.finish()]);
        await this.device.queue.onSubmittedWorkDone();
        const wall = now() - t0;
        if (!qs) return wall / batch;
        await rb.mapAsync(this.M.READ);
        const t = new BigInt64Array(rb.getMappedRange().slice(0));
        rb.unmap();
        const ms = Number(t[1] - t[0]) / 1e6;
        return ms > 0 ? ms / batch : wall / batch;
      };
      const all = [];
      let batch = 1, first = 0, settled = false;
      const agree = () => {
        const last = all.slice(-reps);
        return last.length === reps && Math.max(...last) <= 1.1 * Math.min(...last);
      };
      try {
        first = await interval(1);
        batch = Math.max(1, Math.min(maxBatch, Math.ceil(targetMs / Math.max(first, 1e-3))));
        const w0 = now();
        while (now() - w0 < warmMs) await interval(batch);   // busy back to back: the clocks rise
        const t0 = now();
        for (let k = 0; k < reps; k++) all.push(await interval(batch));
        while (!(settled = agree()) && now() - t0 < settleMs) all.push(await interval(batch));
      } finally {
        if (qs) { qs.destroy(); qb.destroy(); rb.destroy(); }
      }
      if (this.lost) throw new Error(`the GPU device was lost: ${this.lost}`);
      const times = all.slice(-reps).sort((a, b) => a - b);
      return {ms: times[Math.floor(times.length / 2)], min: times[0], max: times[times.length - 1], reps: times.length, batch,
              first, intervals: all, settled, clock: qs ? 'timestamp-query' : 'queue completion'};
    }

    // This device's limits, measured: copy bandwidth (bytes read + written a second), the
    // float32 FMA rate (FLOP a second) and, where prefill version 7 has a subgroup matrix
    // configuration, the matrix units' rate through it; the best of a few runs each.
    // mib: the size of the copy (read, and as much written); groups, steps: the FMA loop's size;
    // mma: the matrix probes' size (null: not run); fma: false leaves the FMA probe out (a probe
    // of the memory alone, as bench.js's --probe-sizes makes at each size).
    async probe({mib = 256, reps = 5, groups = 4096, steps = 2048, warmMs = 300, mma = {groups: 4096, steps: 256}, fma: withFma = true} = {}) {
      const n = Math.min(mib * 262144, Math.floor(this.limits.maxStorageBufferBindingSize / 16) * 4);
      const a = this.buffer(n * 4), b = this.buffer(n * 4);
      try {
        const copy = await this.pipeline('probes', 'copy', {}, false);
        const cg = Math.min(65535, Math.ceil(n / 4 / 256 / 4));   // four vec4s an invocation
        const tc = await this.timeSteps([{pipeline: copy, bind: [[0, a], [1, b]], groups: [cg, 1, 1]}], {reps, warmup: 2, warmMs});
        const read = await this.pipeline('probes', 'read_rate', {}, false);
        const tr = await this.timeSteps([{pipeline: read, bind: [[0, a], [1, b]], groups: [cg, 1, 1]}], {reps, warmup: 2, warmMs});
        const fma = withFma ? await this.pipeline('probes', 'fma_rate', {STEPS: steps}, false) : null;
        const tf = fma && await this.timeSteps([{pipeline: fma, bind: [[0, a], [1, b]], groups: [groups, 1, 1]}], {reps, warmup: 1, warmMs});
        // a dispatch's own cost: 256 workgroups that write one number each, alone and two in a row
        // (the second waits for the first, as a decode's merge pass waits for its split pass)
        const touch = await this.pipeline('probes', 'touch', {}, false);
        const step = {pipeline: touch, bind: [[1, b]], groups: [256, 1, 1]};
        const t1 = await this.timeSteps([step], {reps, warmup: 2, warmMs}), t2 = await this.timeSteps([step, step], {reps, warmup: 2, warmMs});
        // an invocation: 4 vec4 FMAs a step = 16 FMAs = 32 FLOP
        const out = {copy_gbps: 2 * n * 4 / (tc.min * 1e6), copy_bytes: 2 * n * 4, copy_ms: tc.min,
                     read_gbps: n * 4 / (tr.min * 1e6), read_ms: tr.min, clock: tc.clock,
                     dispatch_us: t1.min * 1e3, two_dispatches_us: t2.min * 1e3};
        if (tf) Object.assign(out, {fma_tflops: groups * 256 * steps * 32 / (tf.min * 1e9), fma_ms: tf.min});
        // the matrix units through subgroup matrices (probes_sgmat.wgsl), where prefill version 7 has
        // a configuration: a subgroup's eight products a step, 2 · M · N · K FLOP each, 4 subgroups
        // a workgroup; in registers, and with the right matrix loaded a product from storage (its
        // LOAD form) and from workgroup memory (WLOAD)
        const c = this.info.subgroup_matrix_kernel;
        if (c && mma) {
          const h = this.buffer(new Uint16Array(32768).fill(0x3c00));   // 1.0 in float16
          try {
            for (const form of ['', 'LOAD', 'WLOAD']) {
              const pl = await this.pipeline('probes_sgmat', 'mma', {STEPS: mma.steps}, true, {SM: c.M, SN: c.N, SK: c.K, LOAD: form === 'LOAD', WLOAD: form === 'WLOAD'});
              const t = await this.timeSteps([{pipeline: pl, bind: [[0, h], [1, b]], groups: [mma.groups, 1, 1]}], {reps, warmup: 1, warmMs});
              out[{'': 'mma_tflops', LOAD: 'mma_load_tflops', WLOAD: 'mma_wload_tflops'}[form]] = mma.groups * (128 / this.subgroups.max) * mma.steps * 8 * 2 * c.M * c.N * c.K / (t.min * 1e9);
            }
            out.mma_config = `${c.component}x${c.component}->${c.result} ${c.M}x${c.N}x${c.K}`;
          } catch (e) {
            out.mma_error = e.message.split('\n')[0];
          } finally { h.destroy(); }
        }
        return out;
      } finally {
        a.destroy();
        b.destroy();
      }
    }

    destroy() { this.device.destroy(); }
  }

  // ---- float64 reference (the checker's; the engine is the spec and the tests compare the two) ----

  function visible(p, i, j) {
    const m = p.mask || {kind: 0};
    const pos = i + (m.offset !== undefined ? m.offset : p.n_kv - p.n_q);
    switch (m.kind || 0) {
      case 1: return j <= pos;
      case 2: return j <= pos && j > pos - m.window;
      case 3: return ((m.bits[i * m.words + (j >>> 5)] >>> (j & 31)) & 1) !== 0;
      default: return true;
    }
  }

  // One row's o, ℓ and lse = m + ln ℓ in float64 (natural units).
  function referenceRow(p, h, i) {
    const d = p.d, kvh = Math.floor(h / (p.n_q_heads / p.n_kv_heads));
    const scale = p.scale !== undefined ? p.scale : 1 / Math.sqrt(d);
    const q = p.q.subarray((h * p.n_q + i) * d, (h * p.n_q + i + 1) * d);
    const s = new Float64Array(p.n_kv);
    let m = -Infinity;
    for (let j = 0; j < p.n_kv; j++) {
      if (!visible(p, i, j)) { s[j] = -Infinity; continue; }
      const kb = (kvh * p.n_kv + j) * d;
      let dot = 0;
      for (let c = 0; c < d; c++) dot += q[c] * p.k[kb + c];
      let x = dot * scale;
      if (p.softcap > 0) x = p.softcap * Math.tanh(x / p.softcap);
      s[j] = x;
      if (x > m) m = x;
    }
    const o = new Float64Array(d);
    let l = 0;
    if (m > -Infinity) {
      for (let j = 0; j < p.n_kv; j++) {
        if (s[j] === -Infinity) continue;
        const w = Math.exp(s[j] - m), vb = (kvh * p.n_kv + j) * d;
        l += w;
        for (let c = 0; c < d; c++) o[c] += w * p.v[vb + c];
      }
      for (let c = 0; c < d; c++) o[c] /= l;
    }
    return {o, l, lse: l > 0 ? m + Math.log(l) : -Infinity};
  }

  // referenceRow(p, h, i) through a memo (a WeakMap the caller keeps: benchmark() makes one a
  // run). The benchmark checks every kernel of a shape on the same problem (and the float16 kernels
  // on the same rounded arrays, half1's), and a decode row's float64 at 131072 keys takes seconds in
  // JavaScript, so each (Q, K, V, mask, scale, softcap, head, row) is computed once a run, not once
  // a kernel. The key is the arrays' identity, so the arrays must not change in place while the memo
  // lives (the benchmark's never do; a problem drawn anew is a new array, computed anew).
  const arrayIds = new WeakMap();
  let nextArrayId = 1;
  const arrayId = x => {
    if (!x || typeof x !== 'object') return 0;
    if (!arrayIds.has(x)) arrayIds.set(x, nextArrayId++);
    return arrayIds.get(x);
  };
  function referenceRowShared(memo, p, h, i) {
    let rows = memo.get(p.k);
    if (!rows) memo.set(p.k, rows = new Map());
    const m = p.mask || {kind: 0};
    const key = [arrayId(p.q), arrayId(p.v), p.n_q_heads, p.n_kv_heads, p.n_q, p.n_kv, p.d, p.scale, p.softcap,
                 m.kind || 0, m.offset, m.window, m.words, arrayId(m.bits), h, i].join('|');
    let ref = rows.get(key);
    if (!ref) rows.set(key, ref = referenceRow(p, h, i));
    return ref;
  }

  // ---- float16 storage and the paged layout (decode version 4's inputs) ----

  // The bits of float32 x as float16, rounded to nearest, ties to even (what pack2x16float does).
  const f32box = new Float32Array(1), u32box = new Uint32Array(f32box.buffer);
  function halfBits(x) {
    f32box[0] = x;
    const u = u32box[0], sign = (u >>> 16) & 0x8000, m = u & 0x7fffff;
    const e = ((u >>> 23) & 0xff) - 127 + 15;
    if (e >= 31) return sign | 0x7c00 | (((u >>> 23) & 0xff) === 0xff && m ? 0x200 : 0);   // ±inf, NaN
    if (e <= 0) {                                     // a subnormal half (or zero)
      if (e < -10) return sign;
      const mm = m | 0x800000, shift = 14 - e, half = 1 << (shift - 1), rest = mm & ((1 << shift) - 1);
      let h = mm >>> shift;
      if (rest > half || (rest === half && (h & 1))) h++;
      return sign | h;
    }
    let h = (e << 10) | (m >>> 13);
    const rest = m & 0x1fff;
    if (rest > 0x1000 || (rest === 0x1000 && (h & 1))) h++;   // a carry into the exponent is right
    return sign | h;
  }

  let HALF = null;   // float16 bits → its value, all 65536
  function halfValue(h) {
    if (!HALF) {
      HALF = new Float32Array(65536);
      for (let b = 0; b < 65536; b++) {
        const s = b & 0x8000 ? -1 : 1, e = (b >>> 10) & 31, m = b & 1023;
        HALF[b] = e === 0 ? s * m * 2 ** -24 : e === 31 ? (m ? NaN : s * Infinity) : s * (1 + m / 1024) * 2 ** (e - 15);
      }
    }
    return HALF[h];
  }

  // p's K and V rounded to float16: {k, v} as float32 numbers (the check's inputs) and
  // {packed_k, packed_v} two halves a u32, the lower half first (the kernel's): half1 of each.
  function halves(p) {
    const k = half1(p.k), v = half1(p.v);
    return {packed_k: k.packed, packed_v: v.packed, k: k.r, v: v.r};
  }

  // One array x rounded to float16: {packed: two halves a u32, the lower half first (the bytes of
  // an array<f16>), r: the rounded numbers as float32}. Made once for the same array.
  const half1Cache = new WeakMap();
  function half1(x) {
    let h = half1Cache.get(x);
    if (h) return h;
    const packed = new Uint32Array(Math.ceil(x.length / 2)), r = new Float32Array(x.length);
    for (let k = 0; k < x.length; k += 2) {
      const a = halfBits(x[k]), b = k + 1 < x.length ? halfBits(x[k + 1]) : 0;
      packed[k >> 1] = (a | (b << 16)) >>> 0;
      r[k] = halfValue(a);
      if (k + 1 < x.length) r[k + 1] = halfValue(b);
    }
    h = {packed, r};
    half1Cache.set(x, h);
    return h;
  }

  // K and V (n_kv_heads, n_kv, row) moved into pools of pages (n_pages, ps, n_kv_heads, row), as
  // the engine's paged cache keeps them (src/engine/paged.h), logical block b in page table[b]:
  // a shuffled table (p.table when given), so that no two neighbouring blocks are neighbours.
  // The pools of a paged cache from contiguous K and V (rows of `row` numbers): (n_pages, ps,
  // n_kv_heads, row) as the engine keeps them, or with headMajor (n_pages, n_kv_heads, ps, row), a
  // head's slots of a page together (FlashInfer's "HND", the CUDA decode's head_major); key j of
  // every head in page table[j / ps], slot j % ps. A shuffled block table unless p has one.
  function pagedLayout(p, ps, k, v, headMajor = false) {
    const nb = Math.ceil(p.n_kv / ps), row = k.length / (p.n_kv_heads * p.n_kv);
    let table = p.table;
    if (!table && p.pages_in_order) table = new Uint32Array(nb).map((_, b) => b);   // bench.js --sweep's measure
    if (!table) {
      const r = rng((p.n_kv * 2654435761 + ps + (k[0] | 0)) >>> 0);
      table = new Uint32Array(nb).map((_, b) => b);
      for (let b = nb - 1; b > 0; b--) { const a = Math.floor(r() * (b + 1)); [table[a], table[b]] = [table[b], table[a]]; }
    }
    const pool = x => {
      const out = new x.constructor(nb * ps * p.n_kv_heads * row);
      for (let h = 0; h < p.n_kv_heads; h++)
        for (let j = 0; j < p.n_kv; j++) {
          const src = (h * p.n_kv + j) * row;
          const pg = table[Math.floor(j / ps)];
          out.set(x.subarray(src, src + row), (headMajor ? (pg * p.n_kv_heads + h) * ps + j % ps : (pg * ps + j % ps) * p.n_kv_heads + h) * row);
        }
      return out;
    };
    return {k: pool(k), v: pool(v), table};
  }

  // ---- random problems (seeded, so a failure can be replayed) ----

  function rng(seed) {   // splitmix32
    let s = seed >>> 0;
    return () => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return ((z ^ (z >>> 16)) >>> 0) / 4294967296;
    };
  }

  // A problem of the given sizes with entries uniform in [−1, 1) (q scaled by `spread`), a mask
  // by name ('none', 'causal', 'window', 'tree': a random tree over the rows when n_q = n_kv).
  // ramp: key j's row of K scaled by 1 + ramp · j / n_kv, so that later keys score higher and a
  // row's running maximum keeps moving (prefill version 7's rescaling path).
  function randomProblem(seed, {n_q_heads = 1, n_kv_heads = 1, n_q, n_kv, d, mask = 'none', window = 0, softcap = 0, spread = 1, ramp = 0}) {
    const r = rng(seed);
    const fill = (n, a) => { const x = new Float32Array(n); for (let k = 0; k < n; k++) x[k] = (2 * r() - 1) * a; return x; };
    const p = {n_q_heads, n_kv_heads, n_q, n_kv, d, softcap, scale: 1 / Math.sqrt(d),
               q: fill(n_q_heads * n_q * d, spread), k: fill(n_kv_heads * n_kv * d, 1), v: fill(n_kv_heads * n_kv * d, 1),
               mask: {kind: MASK[mask === 'tree' ? 'bits' : mask], offset: n_kv - n_q, window: window || Math.max(1, n_kv >> 2)}};
    if (ramp) for (let x = 0; x < p.k.length; x++) p.k[x] *= 1 + ramp * (Math.floor(x / d) % n_kv) / n_kv;
    if (mask === 'tree') {
      const words = 2 * Math.ceil(n_kv / 64), bits = new Uint32Array(n_q * words);
      const parent = [-1];
      for (let i = 1; i < n_kv; i++) parent.push(Math.floor(r() * i));
      for (let i = 0; i < n_q; i++) {
        for (let a = i + (n_kv - n_q); a >= 0; a = parent[a]) bits[i * words + (a >>> 5)] |= 1 << (a & 31);
      }
      p.mask = {kind: 3, words, bits, offset: n_kv - n_q};
    }
    return p;
  }

  // ---- the benchmark: the same plan in the page and in Node (bench/webgpu) ----

  // Sizes: 'full' (a discrete GPU), 'quick' (a laptop's GPU, the page's default), 'tiny' (the
  // tests, on a CPU's WebGPU). Prefill: 16 heads (GQA off), float32 (versions 6, 7 and 8: float16
  // inputs). Decode: one query a head, GQA 32/8, d = 128. A kernel the device does not offer
  // (shader-f16, subgroup matrices: its `absent()`) has no rows there.
  // every plan times every prefill version, the slow textbook ones too (version 1 up to v1_max)
  const PREFILL = ['prefill-v1', 'prefill-v2', 'prefill-v3', 'prefill-v4', 'prefill-v5', 'prefill-v6', 'prefill-v7', 'prefill-v8', 'prefill-v9', 'prefill-v10', 'prefill-v11', 'prefill-v13', 'prefill-v14', 'prefill-v16', 'prefill-v17', 'prefill-v18', 'prefill-v19', 'prefill-v20', 'akunu-prefill-v1'];
  const PLANS = {
    full: {prefill: {n: [1024, 4096, 16384], d: [64, 128], heads: 16, kernels: PREFILL, v1_max: 4096},
           decode: {n: [4096, 32768, 131072], kernels: ['decode-v1', 'decode-v2', 'decode-v2-f16', 'decode-v2-paged', 'decode-v2-paged-f16', 'decode-v5', 'decode-v5-f16', 'decode-v5-paged', 'decode-v5-paged-f16', 'decode-v7', 'decode-v7-f16', 'decode-v7-paged', 'decode-v7-paged-f16', 'decode-v6', 'decode-v3', 'decode-v9', 'decode-v9-f16', 'decode-v9-paged', 'decode-v9-paged-f16', 'decode-v9-paged-hnd', 'decode-v9-paged-hnd-f16', 'decode-v10', 'decode-v10-f16', 'decode-v10-paged', 'decode-v10-paged-f16', 'decode-v11-paged', 'decode-v11-paged-f16', 'decode-v14-paged', 'decode-v14-paged-f16', 'decode-v4', 'decode-v4-f16', 'decode-paged-f16', 'akunu-parallel', 'akunu-fast', 'akunu-standard'], slow_max: 32768}},
    quick: {prefill: {n: [1024, 4096], d: [64, 128], heads: 8, kernels: PREFILL, v1_max: 1024},
            decode: {n: [4096, 32768], kernels: ['decode-v1', 'decode-v2', 'decode-v2-f16', 'decode-v2-paged', 'decode-v2-paged-f16', 'decode-v5', 'decode-v5-f16', 'decode-v5-paged', 'decode-v5-paged-f16', 'decode-v7', 'decode-v7-f16', 'decode-v7-paged', 'decode-v7-paged-f16', 'decode-v6', 'decode-v3', 'decode-v9', 'decode-v9-f16', 'decode-v9-paged', 'decode-v9-paged-f16', 'decode-v10', 'decode-v10-f16', 'decode-v10-paged', 'decode-v10-paged-f16', 'decode-v11-paged', 'decode-v11-paged-f16', 'decode-v14-paged', 'decode-v14-paged-f16', 'decode-v4', 'decode-v4-f16', 'decode-paged-f16', 'akunu-parallel', 'akunu-fast', 'akunu-standard'], slow_max: 4096}},
    tiny: {prefill: {n: [128], d: [64], heads: 2, kernels: PREFILL, v1_max: 128},
           decode: {n: [512], kernels: ['decode-v1', 'decode-v2', 'decode-v2-f16', 'decode-v2-paged', 'decode-v2-paged-f16', 'decode-v5', 'decode-v5-f16', 'decode-v5-paged', 'decode-v5-paged-f16', 'decode-v7', 'decode-v7-f16', 'decode-v7-paged', 'decode-v7-paged-f16', 'decode-v6', 'decode-v3', 'decode-v9', 'decode-v9-f16', 'decode-v9-paged', 'decode-v9-paged-f16', 'decode-v10', 'decode-v10-f16', 'decode-v10-paged', 'decode-v10-paged-f16', 'decode-v11-paged', 'decode-v11-paged-f16', 'decode-v14-paged', 'decode-v14-paged-f16', 'decode-v4', 'decode-v4-f16', 'decode-paged-f16', 'akunu-parallel', 'akunu-fast', 'akunu-standard'], slow_max: 512, d: 32}},
  };

  // The configurations of a plan, in order; each row says what it is before it runs.
  function benchPlan(name) {
    const P = PLANS[name];
    if (!P) throw new Error(`no benchmark plan '${name}' (full, quick, tiny)`);
    const rows = [];
    for (const d of P.prefill.d)
      for (const n of P.prefill.n)
        for (const causal of [false, true])
          for (const kernel of P.prefill.kernels) {
            if ((kernel === 'prefill-v1' || kernel === 'akunu-prefill-v1') && n > P.prefill.v1_max) continue;
            rows.push({kind: 'prefill', kernel, n_q: n, n_kv: n, d, heads: P.prefill.heads, kv_heads: P.prefill.heads, causal});
          }
    for (const n of P.decode.n)
      for (const kernel of P.decode.kernels) {
        if (!kernel.startsWith('decode-') && kernel !== 'akunu-parallel' && n > P.decode.slow_max) continue;
        rows.push({kind: 'decode', kernel, n_q: 1, n_kv: n, d: P.decode.d || 128, heads: 32, kv_heads: 8, causal: false});
      }
    return rows;
  }

  // Runs a plan: each row's kernel on a random problem of its shape, one launch checked
  // against float64 on sampled rows, then timed. A wrong result is reported as an error and no
  // time is kept for it. progress(k, n, row) is called before each row, done(row) after it;
  // `stop()` true ends early. kinds: only the rows of these kinds ('prefill', 'decode');
  // kernels: only the rows of these kernels; first: these kernels' rows before the others (in
  // plan order each). The rows of one shape share one problem (its Q, K, V drawn once, with the
  // seed of its first row; causal or not is the mask only). d: every row at this head size where
  // its kernel takes it, else at the plan's (the tests pass the size their other checks used, so
  // that the rows reuse those pipelines: each costs seconds to make on a CPU's WebGPU).
  async function benchmark(dev, {plan = 'quick', seed = 1, progress = null, done = null, probe = null, stop = null, kinds = null, kernels = null, first = null, d = null} = {}) {
    const absent = name => (dev.kernels[name] && dev.kernels[name].absent ? dev.kernels[name].absent() : null);
    const takes = (r, dd) => dev.kernels[r.kernel] && !dev.kernels[r.kernel].ok({n_q_heads: r.heads, n_kv_heads: r.kv_heads, n_q: r.n_q, n_kv: r.n_kv, d: dd});
    let rows = benchPlan(plan).map((r, k) => Object.assign({}, r, {k}, d && takes(r, d) ? {d} : {}))
      .filter(r => (!kinds || kinds.includes(r.kind)) && (!kernels || kernels.includes(r.kernel)));
    const out = {plan, seed, device: dev.info, when: new Date().toISOString(), probe: null, rows: [], not_offered: {}};
    for (const r of rows) if (absent(r.kernel)) out.not_offered[r.kernel] = absent(r.kernel);
    rows = rows.filter(r => !absent(r.kernel));
    if (first) rows = rows.filter(r => first.includes(r.kernel)).concat(rows.filter(r => !first.includes(r.kernel)));
    const shared = new Map();   // shape → its problem's data
    const memo = new WeakMap();   // the float64 rows the checks have computed (referenceRowShared)
    out.probe = probe || await dev.probe(plan === 'tiny' ? {mib: 4, groups: 64, steps: 256, reps: 3, warmMs: 0} : {});
    for (const [k, r] of rows.entries()) {
      if (stop && stop()) break;
      if (progress) progress(k, rows.length, r);
      const row = Object.assign({}, r);
      delete row.k;
      out.rows.push(row);
      const shape = `${r.heads}/${r.kv_heads}/${r.n_q}/${r.n_kv}/${r.d}`;
      if (!shared.has(shape)) {
        if (shared.size) shared.clear();   // one shape's arrays at a time (16k × 128 × 16 heads: 3 × 128 MiB)
        shared.set(shape, randomProblem(seed + r.k, {n_q_heads: r.heads, n_kv_heads: r.kv_heads, n_q: r.n_q, n_kv: r.n_kv, d: r.d}));
      }
      const p = Object.assign({}, shared.get(shape), {mask: {kind: r.causal ? MASK.causal : MASK.none, offset: r.n_kv - r.n_q}});
      const bytes = Math.max(p.q.byteLength, p.k.byteLength);
      if (bytes > dev.limits.maxStorageBufferBindingSize) {
        row.error = `needs a ${bytes}-byte buffer; this device binds at most ${dev.limits.maxStorageBufferBindingSize}`;
        continue;
      }
      let prep = null;
      try {
        // one set of buffers for the check and the timing (half the allocations and uploads of 1 GB)
        const clock = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());
        const t0 = clock();
        prep = await dev.prepare(r.kernel, p);
        const t1 = clock();
        const c = await dev.check(r.kernel, p, {sample: r.kind === 'decode' ? 32 : 16, prepared: prep, memo});
        const t2 = clock();
        // the host's seconds on this row: its pipelines and buffers, its check, its timing
        row.host_s = {prepare: +((t1 - t0) / 1e3).toFixed(3), check: +((t2 - t1) / 1e3).toFixed(3)};
        row.check = {ok: c.ok, worst: c.worst, rows: c.rows};
        row.subgroups = c.subgroups;
        if (!c.ok) { row.error = `wrong result: ${JSON.stringify(c.where)}`; continue; }
        const t = await dev.time(r.kernel, p, plan === 'tiny' ? {reps: 3, warmup: 1, targetMs: 5, maxBatch: 4, warmMs: 0, settleMs: 0} : {reps: 7, warmup: 1}, prep);
        row.host_s.time = +((clock() - t2) / 1e3).toFixed(3);
        Object.assign(row, {ms: t.ms, ms_min: t.min, ms_max: t.max, reps: t.reps, batch: t.batch, clock: t.clock,
                            intervals: t.intervals, settled: t.settled});
        // work: 4 d FLOP a visible (query, key) pair (Q Kᵀ and P V); bytes: what a decode must read
        const pairs = r.causal ? r.n_q * (r.n_q + 1) / 2 + r.n_q * (r.n_kv - r.n_q) : r.n_q * r.n_kv;
        row.tflops = 4 * r.d * pairs * r.heads / (t.ms * 1e9);
        const K = dev.kernels[r.kernel];
        row.bytes = 4 * (p.q.length + p.q.length) + (K.kvBytes ? K.kvBytes(p) : 4 * (p.k.length + p.v.length));
        if (K.storage) row.storage = K.storage;
        row.gbps = row.bytes / (t.ms * 1e6);
        if (out.probe) {
          row.of_copy = row.gbps / out.probe.copy_gbps;
          row.of_fma = row.tflops / out.probe.fma_tflops;
        }
      } catch (e) {
        row.error = e.message;
      } finally {
        if (prep) prep.destroy();
      }
      if (done) done(row);
    }
    // a paged row beside its contiguous twin (same storage, same keys): time paged / time contiguous
    for (const row of out.rows) {
      const twin = dev.kernels[row.kernel] && dev.kernels[row.kernel].contiguous;
      const c = twin && out.rows.find(x => x.kernel === twin && x.n_kv === row.n_kv && x.d === row.d && x.ms);
      if (c && row.ms) row.paged_over_contiguous = row.ms / c.ms;
    }
    return out;
  }

  // The kernels on the matrix units (prefill versions 7 to 10, 13, 14: fwd_sgmat*.wgsl), in the
  // table's order: the ones with ablation forms and a configuration of their own.
  const sgmatKernels = kernels => Object.keys(kernels).filter(k => /^fwd_sgmat/.test(kernels[k].file || ''));

  return {open: Device.open, Device, preprocess, sgmatKernels, referenceRow, referenceRowShared, randomProblem, rng, halves, half1, pagedLayout, benchPlan, benchmark, NEG, LOG2E, MASK};
});
