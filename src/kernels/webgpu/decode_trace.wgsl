// decode_trace.wgsl: FlashDecoding's split and merge, traced (the engine's fs_decode).
//
// partials: one invocation per (head h, query row i, split p). The split's keys are the
//   contiguous run [p · split_len, …) or, strided (003's parallel decode), p, p + P, p + 2P, …
//   It scores them, takes m = max s, ℓ = Σ exp(s − m), o = Σ exp(s − m) v (divided by ℓ in the
//   normalized form) and writes its record: class, skip reason, visible keys, how many keys,
//   then the scores, and the state (m, ℓ, o) into node p of the row's merge tree.
// merge: one invocation per (head, row). It follows the host's schedule of merges (triples
//   x, y, id: left to right or pairwise, as the engine orders them) and writes each new node
//   (m, ℓ, c_a, c_b, o), then the row's output.
//
// Shapes: rec (rows, n_split, 4 + split_len); node (rows, 2 · n_split, 4 + d_v) holding
// m, ℓ, c_a, c_b, o[d_v]; sched (n_split − 1, 3); O (rows, d_v); rows = n_q_heads · n_q.

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> qs: array<f32>;
@group(0) @binding(2) var<storage, read> k_in: array<f32>;
@group(0) @binding(3) var<storage, read> v_in: array<f32>;
@group(0) @binding(4) var<storage, read> mask_bits: array<u32>;
@group(0) @binding(5) var<storage, read_write> o_out: array<f32>;
@group(0) @binding(6) var<storage, read_write> node: array<f32>;
@group(0) @binding(7) var<storage, read_write> rec: array<f32>;
@group(0) @binding(8) var<storage, read> sched: array<u32>;

fn node_at(g: u32, id: u32) -> u32 { return (g * 2u * P.n_split + id) * (4u + P.d_v); }

@compute @workgroup_size(64)
fn partials(@builtin(global_invocation_id) gid: vec3u) {
  let x = gid.x;
  if (x >= P.n_q_heads * P.n_q * P.n_split) { return; }
  let g = x / P.n_split;
  let p = x % P.n_split;
  let h = g / P.n_q;
  let i = g % P.n_q;
  let kvh = h / (P.n_q_heads / P.n_kv_heads);
  var first = p;
  var end = P.n_kv;
  var cls = vec2u(PARTIAL, 0u);
  if (!has(F_STRIDED)) {
    first = p * P.split_len;
    end = min(first + P.split_len, P.n_kv);
    cls = classify(i, i + 1u, first, end);
  }
  let rb = x * (4u + P.split_len);
  let nb = node_at(g, p);
  var m = NEG;
  var n = 0u;
  var seen = 0u;
  for (var j = first; j < end; j += P.stride) {
    var s = NEG;
    if (cls.x != SKIPPED && (cls.x == FULL || visible(i, j))) {
      var dot = 0.0;
      for (var c = 0u; c < P.d; c++) { dot = fma(qs[g * P.d + c], k_in[(kvh * P.n_kv + j) * P.d + c], dot); }
      s = capped(dot * P.scale);
      seen++;
      m = max(m, s);
    }
    rec[rb + 4u + n] = s;
    n++;
  }
  var l = 0.0;
  for (var c = 0u; c < P.d_v; c++) { node[nb + 4u + c] = 0.0; }
  if (m != NEG) {
    var k = 0u;
    for (var j = first; j < end; j += P.stride) {
      let s = rec[rb + 4u + k];
      k++;
      if (s == NEG) { continue; }
      let w = exp(s - m);
      l += w;
      for (var c = 0u; c < P.d_v; c++) { node[nb + 4u + c] += w * v_in[(kvh * P.n_kv + j) * P.d_v + c]; }
    }
    if (has(F_NORMALIZED)) {
      for (var c = 0u; c < P.d_v; c++) { node[nb + 4u + c] /= l; }
    }
  }
  rec[rb] = f32(cls.x);
  rec[rb + 1u] = f32(cls.y);
  rec[rb + 2u] = f32(seen);
  rec[rb + 3u] = f32(n);
  node[nb] = m;
  node[nb + 1u] = l;
}

@compute @workgroup_size(64)
fn merge(@builtin(global_invocation_id) gid: vec3u) {
  let g = gid.x;
  if (g >= P.n_q_heads * P.n_q) { return; }
  var root = 0u;
  for (var t = 0u; t + 1u < P.n_split; t++) {
    let a = node_at(g, sched[3u * t]);
    let b = node_at(g, sched[3u * t + 1u]);
    root = sched[3u * t + 2u];
    let r = node_at(g, root);
    let ma = node[a];
    let mb = node[b];
    let mm = max(ma, mb);
    if (mm == NEG) {   // two states that saw nothing: the identity, with c_a = 1, c_b = 0
      node[r] = NEG; node[r + 1u] = 0.0; node[r + 2u] = 1.0; node[r + 3u] = 0.0;
      for (var c = 0u; c < P.d_v; c++) { node[r + 4u + c] = 0.0; }
      continue;
    }
    let ca = select(exp(ma - mm), 0.0, ma == NEG);
    let cb = select(exp(mb - mm), 0.0, mb == NEG);
    let la = node[a + 1u];
    let lb = node[b + 1u];
    let ll = ca * la + cb * lb;
    for (var c = 0u; c < P.d_v; c++) {
      let oa = node[a + 4u + c];
      let ob = node[b + 4u + c];
      if (has(F_NORMALIZED)) { node[r + 4u + c] = (ca * la * oa + cb * lb * ob) / ll; }
      else { node[r + 4u + c] = ca * oa + cb * ob; }
    }
    node[r] = mm; node[r + 1u] = ll; node[r + 2u] = ca; node[r + 3u] = cb;
  }
  let r = node_at(g, root);
  let l = node[r + 1u];
  for (var c = 0u; c < P.d_v; c++) {
    let o = node[r + 4u + c];
    o_out[g * P.d_v + c] = select(select(0.0, o / l, l > 0.0), o, has(F_NORMALIZED));
  }
}
