// decode_merge.wgsl: the merge of the split decodes, shared by decode_v2.wgsl (versions 2, 5 and 7;
// the merge pass of versions 3, 4 and 9) and decode_v9.wgsl (version 10), which include it
// (`//#include decode_merge`). The includer declares D, D4 and MWG, the invocations of the
// workgroup that calls merge_row.
//
// Each split s of a row left a partial in `part`: its maximum m_s, its sum ℓ_s and its unnormalised
// output o_s (D numbers), 2 + D floats at ((row · n_split) + s) · (2 + D). The merge is the
// FlashDecoding merge: O = Σ 2^(m_s − M) o_s / Σ 2^(m_s − M) ℓ_s with M = max m_s.
//
// The FUSED form (decode versions 7 and 10) merges in the split's own dispatch: after a split
// workgroup has written its partials it counts itself in its KV head's counter `arrived` (one
// atomic<u32> a KV head, zeroed by the host once, when the buffer is made), and the workgroup whose
// add returns n_split − 1 is the head's last: it sets the counter back to 0 (the next dispatch
// starts from 0 with no clear by the host) and merges the head's rows with merge_row.
//
// What WGSL promises here, and what it does not. Its atomics are relaxed (they order no other
// memory), and its barriers (storageBarrier, workgroupBarrier) order memory only among the
// invocations of one workgroup. Promised: the counter's adds are atomic, so exactly one workgroup
// of a head sees n_split − 1, and only once every other split of that head has added; its reset
// comes after every add; a dispatch sees everything the previous one wrote. Not promised: that
// the partials another workgroup stored before its add are visible to the workgroup that saw the
// add. WGSL has no fence across workgroups (CUDA's __threadfence, which CUDA's own "last block
// merges" pattern needs). We do the strongest WGSL offers: a storageBarrier() between a
// workgroup's stores and its count (every invocation's stores issued before invocation 0 adds)
// and between the count and the merge's loads, and the partials stored and read as atomics
// (atomicStore and atomicLoad of their bits). The atomics buy something in practice, not a
// promise: a GPU serves them where every workgroup sees the same copy, not from one compute
// unit's cache; WGSL still does not order them after the count. What stands behind the result on
// a real GPU is the float64 check: bench.js checks every row it times against float64, and the
// fused kernels first, bit for bit against their two-pass twins (version 5, version 9), with the
// counters back at 0 after each dispatch.

@group(0) @binding(5) var<storage, read_write> o_out: array<vec4f>;
//#if FUSED
@group(0) @binding(6) var<storage, read_write> part: array<atomic<u32>>;   // the partials' f32 bits
@group(0) @binding(8) var<storage, read_write> arrived: array<atomic<u32>>; // splits done, a KV head
//#else
@group(0) @binding(6) var<storage, read_write> part: array<f32>;
//#endif

// Number i of `part`, written and read (FUSED: as its bits, through atomics).
fn part_put(i: u32, x: f32) {
//#if FUSED
  atomicStore(&part[i], bitcast<u32>(x));
//#else
  part[i] = x;
//#endif
}

fn part_at(i: u32) -> f32 {
//#if FUSED
  return bitcast<f32>(atomicLoad(&part[i]));
//#else
  return part[i];
//#endif
}

//#if FUSED
var<workgroup> seen: u32;               // the counter before this workgroup's add

// Called by every invocation of a split workgroup of KV head kvh once its partials are stored, in
// uniform control flow: count this split in the head's counter (one add, by invocation 0, after
// every invocation's stores); the last of the head's splits merges the head's R rows,
// g = h0 · n_q + r (query head h0 + r / n_q, row r % n_q), and sets the counter back to 0.
fn last_split_merges(kvh: u32, h0: u32, R: u32, t: u32) {
  storageBarrier();
  if (t == 0u) { seen = atomicAdd(&arrived[kvh], 1u); }
  if (workgroupUniformLoad(&seen) + 1u == P.n_split) {
    if (t == 0u) { atomicStore(&arrived[kvh], 0u); }
    storageBarrier();
    for (var r = 0u; r < R; r++) { merge_row(h0 * P.n_q + r, P.n_split, t); }
  }
}
//#endif

var<workgroup> red: array<f32, MWG>;
var<workgroup> redv: array<vec4f, MWG>;

// Row g (query head g / n_q, row g % n_q) of O from its first ns partials (m_s, ℓ_s, o_s): every
// caller passes ns = n_split, all of them (ns is a parameter so that a test can plant a merger that
// skips one). By the workgroup's MWG invocations (t: this one's index; all of them call it, in
// uniform control flow): O = Σ 2^(m_s − M) o_s / Σ 2^(m_s − M) ℓ_s with M = max m_s. The merge
// pass calls it for its one row; the fused forms' last split workgroup of a KV head
// calls it for each of the head's rows.
fn merge_row(g: u32, ns: u32, t: u32) {
  let stride = 2u + D;
  let b0 = g * P.n_split;                  // row g's partials: n_split of them
  // M = max m_s
  var M = NEG;
  for (var s = t; s < ns; s += MWG) { M = max(M, part_at((b0 + s) * stride)); }
  red[t] = M;
  workgroupBarrier();
  for (var k = MWG / 2u; k > 0u; k >>= 1u) {
    if (t < k) { red[t] = max(red[t], red[t + k]); }
    workgroupBarrier();
  }
  M = red[0];
  workgroupBarrier();
  // ℓ = Σ 2^(m_s − M) ℓ_s
  var l = 0.0;
  for (var s = t; s < ns; s += MWG) {
    let m_s = part_at((b0 + s) * stride);
    if (m_s != NEG) { l += exp2(m_s - M) * part_at((b0 + s) * stride + 1u); }
  }
  red[t] = l;
  workgroupBarrier();
  for (var k = MWG / 2u; k > 0u; k >>= 1u) {
    if (t < k) { red[t] += red[t + k]; }
    workgroupBarrier();
  }
  let inv = select(0.0, 1.0 / red[0], red[0] > 0.0);
  // o: invocation t takes column vec4 t % D4 of the splits s ≡ t / D4 (mod MWG / D4)
  let y = t % D4;
  let groups = MWG / D4;
  let n = groups * D4;                      // invocations that take part (D4 need not divide MWG)
  var o = vec4f(0.0);
  if (t < n) {
    for (var s = t / D4; s < ns; s += groups) {
      let b = (b0 + s) * stride;
      let m_s = part_at(b);
      if (m_s != NEG) {
        o = fma(vec4f(exp2(m_s - M)), vec4f(part_at(b + 2u + 4u * y), part_at(b + 3u + 4u * y), part_at(b + 4u + 4u * y), part_at(b + 5u + 4u * y)), o);
      }
    }
  }
  redv[t] = o;
  workgroupBarrier();
  var span = 1u;
  while (span < groups) { span <<= 1u; }
  for (var k = span / 2u; k > 0u; k >>= 1u) {
    if (t < k * D4 && t + k * D4 < n) { redv[t] += redv[t + k * D4]; }
    workgroupBarrier();
  }
  if (t < D4) { o_out[g * D4 + t] = redv[t] * inv; }
}

// The merge pass of versions 2, 5 and 6 (versions 3 and 4 borrow it): one workgroup a (row,
// query head), dispatched (n_q, n_q_heads).
@compute @workgroup_size(MWG)
fn merge(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  merge_row(wg.y * P.n_q + wg.x, P.n_split, t);
}
