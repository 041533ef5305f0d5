# src/io/module.mk: the array readers' fuzzer (.npy, text matrices, parent lists), as
# `flashstep check` reads its files.
#
#   make fuzz-arrays     build the libFuzzer target (clang) and run it FUZZ_SECONDS (default 20)
#                        on the seeds in tests/fuzz/array-seeds (tests/fuzz/make_array_seeds.py)

TEST_EXTRA += fuzz-arrays
.PHONY: fuzz-arrays fuzz-arrays-run

FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 20
FUZZ_IO_DIR   = $(BUILD)/fuzz-arrays
FUZZ_IO_BIN   = $(FUZZ_IO_DIR)/fuzz_array
FUZZ_IO_SRC   = tests/fuzz/fuzz_array.c $(IO_SRC)
FUZZ_IO_FLAGS = -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -g -O1 -Isrc \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined

$(FUZZ_IO_BIN): $(FUZZ_IO_SRC) $(wildcard src/io/*.h)
	@mkdir -p $(FUZZ_IO_DIR)
	$(FUZZ_CC) $(FUZZ_IO_FLAGS) $(FUZZ_IO_SRC) -o $@ -lm

# As fuzz-lessons: without clang's libFuzzer runtime the step says so and is skipped.
fuzz-arrays:
	@mkdir -p $(FUZZ_IO_DIR)
	@if ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { (void)d; (void)n; return 0; }' | \
	    $(FUZZ_CC) -x c -fsanitize=fuzzer - -o $(FUZZ_IO_DIR)/probe > /dev/null 2>&1; then \
	  echo "fuzz-arrays: SKIPPED: $(FUZZ_CC) cannot link -fsanitize=fuzzer (install clang and its"; \
	  echo "  runtime: apt-get install clang libclang-rt-NN-dev, NN = clang's major version)"; \
	else $(MAKE) --no-print-directory fuzz-arrays-run; fi

fuzz-arrays-run: $(FUZZ_IO_BIN)
	@mkdir -p $(FUZZ_IO_DIR)/corpus
	@echo "fuzz-arrays: $(FUZZ_SECONDS) s of libFuzzer on the .npy, text and parent-list readers"
	@$(FUZZ_IO_BIN) -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
	  -dict=tests/fuzz/array.dict -print_final_stats=1 $(FUZZ_IO_DIR)/corpus tests/fuzz/array-seeds \
	  > $(FUZZ_IO_DIR)/fuzz.log 2>&1 || { tail -60 $(FUZZ_IO_DIR)/fuzz.log; exit 1; }
	@grep -E "stat::number_of_executed_units|Done" $(FUZZ_IO_DIR)/fuzz.log | tail -2
