# fuzz.mk: what the libFuzzer steps of `make test` share (fuzz-lessons in src/lesson/module.mk,
# fuzz-arrays in src/io/module.mk): the compiler, the flags, the run time, and the probe that
# skips a step loudly where clang's libFuzzer runtime is missing (Debian: libclang-rt-NN-dev, a
# "Recommends" of clang) rather than failing the whole test run.

FUZZ_CC         ?= clang
FUZZ_SECONDS    ?= 20
FUZZ_BASE_FLAGS  = -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -g -O1 -Isrc \
                   -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined

# $(call fuzz_or_skip,STEP,RUN_TARGET): make RUN_TARGET if FUZZ_CC links -fsanitize=fuzzer,
# else say that STEP is skipped and why.
define fuzz_or_skip
	@mkdir -p $(BUILD)/fuzz-probe
	@if ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { (void)d; (void)n; return 0; }' | \
	    $(FUZZ_CC) -x c -fsanitize=fuzzer - -o $(BUILD)/fuzz-probe/probe > /dev/null 2>&1; then \
	  echo "$(1): SKIPPED: $(FUZZ_CC) cannot link -fsanitize=fuzzer (install clang and its"; \
	  echo "  runtime: apt-get install clang libclang-rt-NN-dev, NN = clang's major version)"; \
	else $(MAKE) --no-print-directory $(2); fi
endef
