# module.mk for src/kernels/records: the traced tiled forward's records into the engine's events,
# shared by the CUDA trace (cuda_trace.cu) and the WebGPU trace (webgpu_trace.c). Plain C: it
# links into the program and the tests here, into the page's WebAssembly (src/web/module.mk)
# and into the CUDA programs (src/kernels/cuda/module.mk).
RECORDS_SRC = src/kernels/records/records.c
LIB_SRC += $(RECORDS_SRC)
