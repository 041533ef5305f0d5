# module.mk for src/kernels/cpu: the kernels are built at -O3 (the project's warnings and flags
# otherwise unchanged); the materializing baseline links OpenBLAS; `make test` runs a bench smoke
# step (a second or two): tiny sizes end to end in CSV, and bad arguments exit 2 before any work.
$(call obj,$(CPU_SRC)): EXTRA_CFLAGS += -O3
EXTRA_LDLIBS += -lopenblas
TEST_EXTRA += test-bench-smoke

.PHONY: test-bench-smoke
test-bench-smoke:
	@out=$$($(FLASHSTEP) bench --smoke --format csv) || { echo "bench smoke: failed"; exit 1; }; \
	 echo "$$out" | head -1 | grep -qx 'kernel,N,d,causal,threads,ms,gflops,peak_fraction,gbps,rss_mb' \
	   || { echo "bench smoke: wrong CSV header"; exit 1; }; \
	 for k in flash-v6 baseline-blas flash-bwd-v1 baseline-bwd decode-v3; do \
	   echo "$$out" | grep -q "^$$k,[0-9]*,[0-9]*,[01],[0-9]*,[0-9.]*,[0-9.]*," \
	     || { echo "bench smoke: no measured $$k row"; exit 1; }; done; \
	 for bad in "--threads 0" "--heads 8 --kv-heads 3" "--n 1048576 --d 256" "--format xml" "--n 0"; do \
	   $(FLASHSTEP) bench $$bad >/dev/null 2>&1; rc=$$?; \
	   [ $$rc -eq 2 ] || { echo "bench smoke: 'bench $$bad' exited $$rc, not 2"; exit 1; }; done; \
	 echo "bench smoke: ok"
