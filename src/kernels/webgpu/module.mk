# module.mk for src/kernels/webgpu: the WebGPU path (docs/webgpu.md).
#
# The WGSL kernels and their host (fsgpu.js) run in the page (make web copies them to
# build/web/webgpu/) and from Node (bench/webgpu/). What is C here, webgpu_trace.c (a traced
# kernel's job from an engine run, its records back into the engine's events, the comparison
# of two traces), builds into the program and the tests natively and into the page's
# WebAssembly.
LIB_SRC += src/kernels/webgpu/webgpu_trace.c

