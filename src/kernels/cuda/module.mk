# module.mk for src/kernels/cuda: the optional CUDA backend.
#
#   make                 the "absent" backend only (cuda_none.c): nvcc is never needed
#   make CUDA=1          the CUDA backend: src/kernels/cuda/*.cu built by nvcc for sm_80 and sm_90,
#                        and hopper_*.cu for sm_90a only (wgmma, setmaxnreg); cudart linked
#                        statically (the program runs where only the driver is)
#   make CUDA=1 cuda-bench cuda-tests
#                        build/.../cuda/bench_cuda (check + time, bench/cuda) and
#                        build/.../cuda/test_cuda (trace vs engine, tests/cuda); both need a GPU
#                        to run, except test_cuda --host (the backward's trace kernels emulated on
#                        the CPU); bench/cuda/run.sh does everything in one call on a GPU machine
#   make CUDA=1 NCCL=1 cuda-ring
#                        build/.../cuda/bench_ring: ring attention over the GPUs of one host
#                        (ring.cu, NCCL between the GPUs; bench/cuda/bench_ring.cu checks and
#                        times it, bench/cuda/ring_run.sh runs it on a GPU machine). NCCL is
#                        looked for in NCCL_HOME, then /usr/include (the system's), then
#                        CUDA_HOME, then PyTorch's nvidia-nccl package; ring.cu is never part of
#                        the flashstep program, which needs no NCCL
#   make cuda-compile-check
#                        compile-only check of every CUDA source (a `make test` step when nvcc
#                        is found; no GPU needed; each file bounded by CUDA_CHECK_TIMEOUT seconds;
#                        37 s on 2 cores, 60 s of CPU in all, on a 2-core Xeon; 440 s beside the
#                        other tests on 2026-11-30's 2-core EPYC). A source that passed before,
#                        unchanged with its headers, flags and nvcc, is skipped: its key is kept
#                        outside the tree (scripts/cuda-compile-check.sh)
CUDA ?= 0
CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(firstword $(wildcard $(CUDA_HOME)/bin/nvcc) $(shell command -v nvcc 2>/dev/null))
NVCC_ARCH  = -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
NVCC_ARCH_HOPPER = -gencode arch=compute_90a,code=sm_90a
NVCC_BASE  = -std=c++17 -O3 -lineinfo -Isrc -Xcompiler -Wall,-Wextra
NVCC_FLAGS = $(NVCC_BASE) $(NVCC_ARCH)
# the flags of one source: hopper_*.cu are built for sm_90a alone
nvcc_flags_of = $(if $(filter hopper_%,$(notdir $(1))),$(NVCC_BASE) $(NVCC_ARCH_HOPPER),$(NVCC_FLAGS))
RING_CU    = src/kernels/cuda/ring.cu
CUDA_CU    = $(filter-out $(RING_CU),$(wildcard src/kernels/cuda/*.cu))
CUDA_DEPS  = $(wildcard src/kernels/cuda/*.cuh src/kernels/cuda/*.h src/engine/*.h src/kernels/records/*.h)
CUDA_OBJ   = $(patsubst %.cu,$(BUILD)/obj/%.cu.o,$(CUDA_CU))
CUDA_CHECK_TIMEOUT ?= 150
# The compile-only check skips the optimizers: cicc's (-O1: all files one after another in 71 s
# instead of 177 s on a 2-core Xeon) and ptxas's. Every source is still parsed and type-checked, and ptxas still
# assembles every instruction for every target, so a bad inline-asm operand still fails.
CUDA_CHECK_FLAGS = -Xptxas -O0 -Xcicc -O1

ifeq ($(CUDA),1)
ifeq ($(NVCC),)
$(error CUDA=1 but nvcc was not found (looked in $(CUDA_HOME)/bin and PATH); set CUDA_HOME or NVCC)
endif
EXTRA_OBJ    += $(CUDA_OBJ)
EXTRA_LDLIBS += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lpthread -lstdc++
else
LIB_SRC += src/kernels/cuda/cuda_none.c
endif

# A one-line generated source that changes when CUDA=0/1 changes, so that switching relinks
# the program and the test runner in the same build folder.
CUDA_MODE_C = $(BUILD)/gen/cuda_mode_c/cuda_mode.c
$(shell mkdir -p $(dir $(CUDA_MODE_C)) && \
  echo 'const int fs_cuda_built_with_cuda = $(if $(filter 1,$(CUDA)),1,0); /* generated */' > $(CUDA_MODE_C).tmp && \
  (cmp -s $(CUDA_MODE_C).tmp $(CUDA_MODE_C) || mv $(CUDA_MODE_C).tmp $(CUDA_MODE_C)); rm -f $(CUDA_MODE_C).tmp)
EXTRA_OBJ += $(call obj,$(CUDA_MODE_C))

$(BUILD)/obj/%.cu.o: %.cu $(CUDA_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) $(call nvcc_flags_of,$<) -c $< -o $@

# ---- GPU programs (run on a GPU machine; never part of `make test`) ------------------------
CUDA_ENGINE_OBJ = $(call obj,$(ENGINE_SRC))
# the plain C that cuda_trace.cu calls beside the engine: the records into events, shared with
# the WebGPU trace (src/kernels/records)
CUDA_C_OBJ = $(call obj,src/kernels/records/records.c)
.PHONY: cuda-bench cuda-tests cuda-compile-check
cuda-bench: $(BUILD)/cuda/bench_cuda
cuda-tests: $(BUILD)/cuda/test_cuda

$(BUILD)/cuda/bench_cuda: bench/cuda/bench_cuda.cu $(CUDA_OBJ) $(CUDA_ENGINE_OBJ) $(CUDA_C_OBJ) $(CUDA_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -o $@ bench/cuda/bench_cuda.cu $(CUDA_OBJ) $(CUDA_ENGINE_OBJ) $(CUDA_C_OBJ) -lm

CUDA_LESSON_OBJ = $(call obj,$(LESSON_SRC) $(IO_SRC))
$(BUILD)/cuda/test_cuda: tests/cuda/test_cuda_trace.c $(CUDA_OBJ) $(CUDA_ENGINE_OBJ) $(CUDA_C_OBJ) $(CUDA_LESSON_OBJ) $(CUDA_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests -c tests/cuda/test_cuda_trace.c -o $(BUILD)/cuda/test_cuda_trace.o
	$(CC) $(LDFLAGS) -o $@ $(BUILD)/cuda/test_cuda_trace.o $(CUDA_OBJ) $(CUDA_ENGINE_OBJ) $(CUDA_C_OBJ) $(CUDA_LESSON_OBJ) \
	    -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lpthread -lstdc++ -lm

# ---- ring attention over several GPUs (NCCL=1) ----------------------------------------------
NCCL ?= 0
NCCL_HOME ?=
nccl_py = $(shell python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)
NCCL_DIR = $(or $(NCCL_HOME),$(if $(wildcard /usr/include/nccl.h),/usr,$(if $(wildcard $(CUDA_HOME)/include/nccl.h),$(CUDA_HOME),$(nccl_py))))
NCCL_INC = $(if $(wildcard $(NCCL_DIR)/include/nccl.h),-I$(NCCL_DIR)/include)
# the library by its path (some installs have libnccl.so.2 and no libnccl.so)
NCCL_LIB = $(firstword $(wildcard $(NCCL_DIR)/lib/libnccl.so $(NCCL_DIR)/lib64/libnccl.so \
             $(NCCL_DIR)/lib/x86_64-linux-gnu/libnccl.so $(NCCL_DIR)/lib/libnccl.so.2 \
             $(NCCL_DIR)/lib64/libnccl.so.2 $(NCCL_DIR)/lib/x86_64-linux-gnu/libnccl.so.2))
RING_OBJ = $(patsubst %.cu,$(BUILD)/obj/%.cu.o,$(RING_CU) src/kernels/cuda/attn_prefill.cu src/kernels/cuda/hopper_prefill.cu \
             src/kernels/cuda/attn_backward.cu src/kernels/cuda/hopper_backward.cu)
.PHONY: cuda-ring
cuda-ring: $(BUILD)/cuda/bench_ring

ifeq ($(NCCL),1)
ifeq ($(CUDA),1)
$(BUILD)/obj/$(RING_CU:.cu=.cu.o): $(RING_CU) $(CUDA_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) $(NCCL_INC) -c $< -o $@

$(BUILD)/cuda/bench_ring: bench/cuda/bench_ring.cu $(RING_OBJ) $(CUDA_ENGINE_OBJ) $(CUDA_DEPS)
	@[ -n "$(NCCL_LIB)" ] || { echo "NCCL=1 but libnccl was not found (looked in $(NCCL_DIR)); set NCCL_HOME"; exit 1; }
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) $(NCCL_INC) -o $@ bench/cuda/bench_ring.cu $(RING_OBJ) $(CUDA_ENGINE_OBJ) \
	    $(NCCL_LIB) -Xlinker -rpath=$(dir $(NCCL_LIB)) -lm
else
$(BUILD)/cuda/bench_ring:
	@echo "cuda-ring needs CUDA=1 NCCL=1"; exit 1
endif
else
$(BUILD)/cuda/bench_ring:
	@echo "cuda-ring needs CUDA=1 NCCL=1"; exit 1
endif

# Compile-only check: every CUDA source for sm_80 and sm_90 (hopper_*.cu for sm_90a), objects
# thrown away, two files at a time (one nvcc each: ptxas is single-threaded); ptxas's "info"
# lines (at -O0 it reports the wgmma waits it inserts, which the -O3 build does not need) are
# left out of the log, warnings and errors are shown, one file after another. Skipped (with a
# line saying so) where nvcc is absent; a run past the time bound is reported, not failed.
CUDA_CHECK_JOBS ?= 2
# the ring's two files where nccl.h is found (they need no NCCL library to compile)
CUDA_CHECK_CU = $(CUDA_CU) bench/cuda/bench_cuda.cu $(if $(NCCL_INC),$(RING_CU) bench/cuda/bench_ring.cu)
cuda-compile-check:
ifeq ($(NVCC),)
	@echo "cuda-compile-check: ✗ nvcc not found, CUDA sources not compiled (install CUDA or set CUDA_HOME)"
else
	@$(if $(NCCL_INC),,echo "cuda-compile-check: nccl.h not found, ring.cu and bench_ring.cu not compiled";) \
	  NVCC="$(NVCC)" FLAGS="$(NVCC_FLAGS) $(NCCL_INC) $(CUDA_CHECK_FLAGS)" \
	  FLAGS_HOPPER="$(NVCC_BASE) $(NVCC_ARCH_HOPPER) $(CUDA_CHECK_FLAGS)" OUT=$(BUILD)/cuda-check \
	  JOBS=$(CUDA_CHECK_JOBS) TIMEOUT=$(CUDA_CHECK_TIMEOUT) bash scripts/cuda-compile-check.sh $(CUDA_CHECK_CU)
endif
TEST_BG += cuda-compile-check
