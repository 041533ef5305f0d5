# module.mk for src/kernels/cpu: the kernels are built at -O3 (the project's warnings and flags
# otherwise unchanged; the sanitized build keeps its -O1); the materializing baseline links
# OpenBLAS; `make test` runs a bench smoke step (a second or two): tiny sizes end to end in CSV,
# prefill and backward rows paired with an FMA probe (JSONL), and bad arguments exit 2 before
# any work.
#
# OpenBLAS's header and library come from OpenBLAS's own pkg-config file (or, without one, from
# the directory holding its openblas_config.h), never from whichever cblas.h the alternatives
# system prefers: Debian's reference BLAS installs a cblas.h of its own, which lacks
# openblas_set_num_threads. Homebrew's OpenBLAS is keg-only, so its pkg-config directory is added.
BREW_OPENBLAS_PC := $(wildcard /opt/homebrew/opt/openblas/lib/pkgconfig /usr/local/opt/openblas/lib/pkgconfig)
OPENBLAS_PKG = PKG_CONFIG_PATH="$(BREW_OPENBLAS_PC)$${PKG_CONFIG_PATH:+:$$PKG_CONFIG_PATH}" $(PKG_CONFIG)
OPENBLAS_HDR_DIR = $(firstword $(patsubst %/openblas_config.h,%,$(wildcard /usr/include/*/openblas*/openblas_config.h /usr/include/openblas/openblas_config.h)))
OPENBLAS_CFLAGS = $(or $(shell $(OPENBLAS_PKG) --cflags openblas 2>/dev/null),$(addprefix -I,$(OPENBLAS_HDR_DIR)))
OPENBLAS_LIBS   = $(or $(shell $(OPENBLAS_PKG) --libs openblas 2>/dev/null),-lopenblas)
# (-O3, except in the sanitized build, which keeps the Makefile's -O1: with ASan, -O3 took
# minutes a file; make test's clang and no-window builds, which only show that the sources
# build, pass CPU_OPT= and keep their -O0)
CPU_OPT ?= $(if $(filter 1,$(SAN)),,-O3)
$(call obj,$(CPU_SRC)): EXTRA_CFLAGS += $(CPU_OPT) $(OPENBLAS_CFLAGS)
EXTRA_LDLIBS += $(OPENBLAS_LIBS)
TEST_EXTRA += test-blas-header test-install-deps
TEST_EXTRA += test-bench-smoke

.PHONY: test-bench-smoke
# `make test` passes FLASHSTEP; run alone, the target uses this build's binary. The oversized
# prefill names its --mem-limit: under the default (half of the available memory) its 48 GiB of
# inputs pass on a machine with 128 GiB, and the bench would start a prefill of a million tokens.
test-bench-smoke: FLASHSTEP ?= $(BUILD)/flashstep
test-bench-smoke:
	@out=$$($(FLASHSTEP) bench --smoke --format csv) || { echo "bench smoke: failed"; exit 1; }; \
	 echo "$$out" | head -1 | grep -qx 'kernel,N,d,causal,threads,ms,gflops,peak_fraction,gbps,rss_mb' \
	   || { echo "bench smoke: wrong CSV header"; exit 1; }; \
	 for k in flash-v7 baseline-blas flash-bwd-v2 baseline-bwd decode-v4 decode-v4-p16 decode-v5 decode-v5-p16; do \
	   echo "$$out" | grep -q "^$$k,[0-9]*,[0-9]*,[01],[0-9]*,[0-9.]*,[0-9.]*," \
	     || { echo "bench smoke: no measured $$k row"; exit 1; }; done; \
	 jl=$$($(FLASHSTEP) bench --smoke --no-decode --no-baseline --format jsonl 2>/dev/null) || { echo "bench smoke: jsonl failed"; exit 1; }; \
	 for k in flash-v7 flash-bwd-v2; do \
	   echo "$$jl" | grep "\"kernel\":\"$$k\"" | grep -q '"peak_gflops":[0-9]*[1-9][0-9.]*,"pairs":[1-9]' \
	     || { echo "bench smoke: $$k rows lack their paired FMA probe (peak_gflops, pairs)"; exit 1; }; done; \
	 for bad in "--threads 0" "--heads 8 --kv-heads 3" "--n 1048576 --d 256 --mem-limit 1" "--format xml" "--n 0" "--decode-page -1" "--decode-version 6" "--version 8" "--backward-version 3" "--block 9x9"; do \
	   $(FLASHSTEP) bench $$bad >/dev/null 2>&1; rc=$$?; \
	   [ $$rc -eq 2 ] || { echo "bench smoke: 'bench $$bad' exited $$rc, not 2"; exit 1; }; done; \
	 echo "bench smoke: ok"

# A machine with both Debian's reference BLAS and OpenBLAS: the alternatives system may point
# cblas.h at the reference header. Put a stand-in for that header on the system include path
# (where /usr/include sits) and build the baseline with the flags above: OpenBLAS's own
# directory must win, or the stand-in's #error stops the build.
.PHONY: test-blas-header
test-blas-header:
	@$(CC) $(ALL_CFLAGS) -O3 $(OPENBLAS_CFLAGS) -isystem tests/fixtures/refblas \
	   -c src/kernels/cpu/cpu_baseline.c -o /dev/null \
	   || { echo "blas header: the baseline did not build against OpenBLAS's own cblas.h"; exit 1; }
	@echo "blas header: OpenBLAS's cblas.h is taken over a reference cblas.h: ok"

# scripts/install-deps.sh decides on OpenBLAS by OpenBLAS itself, in every state a new machine
# can be in (reference BLAS only, nothing, OpenBLAS with or without its pkg-config file).
.PHONY: test-install-deps
test-install-deps:
	@bash tests/setup/install-deps.sh
