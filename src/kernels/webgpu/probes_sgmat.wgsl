// probes_sgmat.wgsl: what this device's matrix units give a WGSL kernel through subgroup
// matrices (f16 × f16 → f32, the configuration prefill versions 7-9 use), for the benchmark's
// "share of the limit" of those kernels. The host sets SM, SN, SK (the configuration) and STEPS.
//   mma: each subgroup multiplies one left and one right matrix, loaded once, into eight
//        independent result matrices STEPS times: the products alone, in registers, the rate no
//        kernel built from them can pass (fsgpu.js's mma_tflops);
//        its LOAD form: the same, with the right matrix loaded from storage before every product
//        (K's and V's way in prefill versions 8 to 10; a small buffer, so the loads hit the cache;
//        mma_load_tflops);
//        its WLOAD form: the same with the right matrix loaded from workgroup memory before every
//        product (16 KiB of the same, copied there first: K's and V's way in the STAGE form of
//        fwd_sgmat8.wgsl; mma_wload_tflops)

enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
diagnostic(off, chromium_experimental.subgroup_matrix_uniformity);

alias Left = subgroup_matrix_left<f16, SK, SM>;
alias Right = subgroup_matrix_right<f16, SN, SK>;
alias Res = subgroup_matrix_result<f32, SN, SM>;

override STEPS: u32 = 256u;   // products a result matrix a run

@group(0) @binding(0) var<storage, read> a: array<f16>;        // 64 KiB of small numbers
@group(0) @binding(1) var<storage, read_write> b: array<f32>;  // written only if a[0] is 12345

//#if WLOAD
var<workgroup> W: array<f16, 8192>;   // (WLOAD) the first 16 KiB of a
//#endif

@compute @workgroup_size(128)
fn mma(@builtin(subgroup_id) sg: u32, @builtin(local_invocation_index) t: u32) {
  let l = subgroupMatrixLoad<Left, row_major>(&a, 0u, SK);
//#if WLOAD
  for (var x = t; x < 8192u; x += 128u) { W[x] = a[x]; }
  workgroupBarrier();
//#elif !LOAD
  let r = subgroupMatrixLoad<Right, row_major>(&a, SM * SK, SN);
//#endif
  var c0 = Res(); var c1 = Res(); var c2 = Res(); var c3 = Res();
  var c4 = Res(); var c5 = Res(); var c6 = Res(); var c7 = Res();
  for (var s = 0u; s < STEPS; s++) {
//#if WLOAD
    let o = (s % 32u) * 256u;   // 32 of the same blocks, from workgroup memory
    c0 = subgroupMatrixMultiplyAccumulate(l, subgroupMatrixLoad<Right, row_major>(&W, o, SN), c0);
    c1 = subgroupMatrixMultiplyAccumulate(l, subgroupMatrixLoad<Right, row_major>(&W, o + 16u, SN), c1);
    c2 = subgroupMatrixMultiplyAccumulate(l, subgroupMatrixLoad<Right, row_major>(&W, o + 32u, SN), c2);
    c3 = subgroupMatrixMultiplyAccumulate(l, subgroupMatrixLoad<Right, row_major>(&W, o + 48u, SN), c3);
    c4 = subgroupMatrixMultiplyAccumulate(l, subgroupMatrixLoad<Right, row_major>(&W, o + 64u, SN), c4);
    c5 = subgroupMatrixMultiplyAccumulate(l, subgroupMatrixLoad<Right, row_major>(&W, o + 80u, SN), c5);
    c6 = subgroupMatrixMultiplyAccumulate(l, subgroupMatrixLoad<Right, row_major>(&W, o + 96u, SN), c6);
    c7 = subgroupMatrixMultiplyAccumulate(l, subgroupMatrixLoad<Right, row_major>(&W, o + 112u, SN), c7);
//#elif LOAD
    let o = (s % 64u) * 256u;   // 64 different 16 × 16 blocks of halves, 32 KiB, in turn
    c0 = subgroupMatrixMultiplyAccumulate(l, subgroupMatrixLoad<Right, row_major>(&a, o, SN), c0);
    c1 = subgroupMatrixMultiplyAccumulate(l, subgroupMatrixLoad<Right, row_major>(&a, o + 16u, SN), c1);
    c2 = subgroupMatrixMultiplyAccumulate(l, subgroupMatrixLoad<Right, row_major>(&a, o + 32u, SN), c2);
    c3 = subgroupMatrixMultiplyAccumulate(l, subgroupMatrixLoad<Right, row_major>(&a, o + 48u, SN), c3);
    c4 = subgroupMatrixMultiplyAccumulate(l, subgroupMatrixLoad<Right, row_major>(&a, o + 64u, SN), c4);
    c5 = subgroupMatrixMultiplyAccumulate(l, subgroupMatrixLoad<Right, row_major>(&a, o + 80u, SN), c5);
    c6 = subgroupMatrixMultiplyAccumulate(l, subgroupMatrixLoad<Right, row_major>(&a, o + 96u, SN), c6);
    c7 = subgroupMatrixMultiplyAccumulate(l, subgroupMatrixLoad<Right, row_major>(&a, o + 112u, SN), c7);
//#else
    c0 = subgroupMatrixMultiplyAccumulate(l, r, c0);
    c1 = subgroupMatrixMultiplyAccumulate(l, r, c1);
    c2 = subgroupMatrixMultiplyAccumulate(l, r, c2);
    c3 = subgroupMatrixMultiplyAccumulate(l, r, c3);
    c4 = subgroupMatrixMultiplyAccumulate(l, r, c4);
    c5 = subgroupMatrixMultiplyAccumulate(l, r, c5);
    c6 = subgroupMatrixMultiplyAccumulate(l, r, c6);
    c7 = subgroupMatrixMultiplyAccumulate(l, r, c7);
//#endif
  }
  if (f32(a[0]) == 12345.0) {   // never (a[0] is not 12345), which the compiler cannot know: no product is left out
    let o = sg * 8u * SM * SN;
    subgroupMatrixStore<row_major>(&b, o, c0, SN); subgroupMatrixStore<row_major>(&b, o + SM * SN, c1, SN);
    subgroupMatrixStore<row_major>(&b, o + 2u * SM * SN, c2, SN); subgroupMatrixStore<row_major>(&b, o + 3u * SM * SN, c3, SN);
    subgroupMatrixStore<row_major>(&b, o + 4u * SM * SN, c4, SN); subgroupMatrixStore<row_major>(&b, o + 5u * SM * SN, c5, SN);
    subgroupMatrixStore<row_major>(&b, o + 6u * SM * SN, c6, SN); subgroupMatrixStore<row_major>(&b, o + 7u * SM * SN, c7, SN);
  }
}
