// probes.wgsl: what this device can do at best, measured the way the kernels are, for the
// benchmark's "share of the limit" columns.
//   copy: b = a, four numbers an invocation a step (a grid-stride loop): the bandwidth a
//         memory-bound kernel (decode) can hope for, counting bytes read plus bytes written
//   read_rate: a read only (the sum kept): the rate of a kernel that writes next to nothing (decode)
//   fma:  fused multiply-adds in registers, four independent vec4 chains an invocation:
//         the float32 rate a compute-bound kernel (prefill without matrix units) can hope for
//   touch: next to nothing (one number a workgroup written): timed alone and two in a row, the
//         time a dispatch costs whatever it does, which a short kernel (decode at 32k keys, whose
//         merge is a second dispatch) cannot go below

@group(0) @binding(0) var<storage, read> a: array<vec4f>;
@group(0) @binding(1) var<storage, read_write> b: array<vec4f>;

override STEPS: u32 = 1024u;   // fma: steps of each chain

@compute @workgroup_size(256)
fn copy(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = arrayLength(&a);
  let stride = nwg.x * 256u;
  for (var x = gid.x; x < n; x += stride) { b[x] = a[x]; }
}

@compute @workgroup_size(256)
fn fma_rate(@builtin(global_invocation_id) gid: vec3u) {
  var x0 = a[gid.x % arrayLength(&a)];
  var x1 = x0 + vec4f(1.0);
  var x2 = x0 + vec4f(2.0);
  var x3 = x0 + vec4f(3.0);
  let m = vec4f(0.999);
  let c = vec4f(0.001);
  for (var s = 0u; s < STEPS; s++) {
    x0 = fma(x0, m, c); x1 = fma(x1, m, c); x2 = fma(x2, m, c); x3 = fma(x3, m, c);
  }
  let r = x0 + x1 + x2 + x3;
  if (r.x == 12345.678) { b[gid.x % arrayLength(&b)] = r; }   // keeps the chains alive
}

// read_rate: only reads, four numbers an invocation a step, summed (the sum kept alive as fma's
// chains are): the rate of a kernel that reads and writes next to nothing, as decode does
@compute @workgroup_size(256)
fn read_rate(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let n = arrayLength(&a);
  let stride = nwg.x * 256u;
  var s = vec4f(0.0);
  for (var x = gid.x; x < n; x += stride) { s += a[x]; }
  if (s.x == 12345.678) { b[gid.x % arrayLength(&b)] = s; }
}

@compute @workgroup_size(256)
fn touch(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  if (t == 0u) { b[wg.x % arrayLength(&b)] = vec4f(f32(wg.x)); }
}
