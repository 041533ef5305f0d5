# src/io/module.mk: the array readers' fuzzer (.npy, text matrices, parent lists), as
# `flashstep check` reads its files.
#
#   make fuzz-arrays     build the libFuzzer target (clang) and run it FUZZ_SECONDS (default 20)
#                        on the seeds in tests/fuzz/array-seeds (tests/fuzz/make_array_seeds.py)

TEST_FG += fuzz-arrays
.PHONY: fuzz-arrays fuzz-arrays-run

FUZZ_IO_DIR   = $(BUILD)/fuzz-arrays
FUZZ_IO_BIN   = $(FUZZ_IO_DIR)/fuzz_array
FUZZ_IO_SRC   = tests/fuzz/fuzz_array.c $(IO_SRC) src/engine/fp8.c

$(FUZZ_IO_BIN): $(FUZZ_IO_SRC) $(wildcard src/io/*.h) src/engine/fp8.h
	@mkdir -p $(FUZZ_IO_DIR)
	$(FUZZ_CC) $(FUZZ_BASE_FLAGS) $(FUZZ_IO_SRC) -o $@ -lm

# Without clang's libFuzzer runtime the step says so and is skipped (tests/fuzz/fuzz.mk).
fuzz-arrays:
	$(call fuzz_or_skip,fuzz-arrays,fuzz-arrays-run)

fuzz-arrays-run: $(FUZZ_IO_BIN)
	@mkdir -p $(FUZZ_IO_DIR)/corpus
	@echo "fuzz-arrays: $(FUZZ_SECONDS) s of libFuzzer on the .npy, text and parent-list readers"
	@$(FUZZ_IO_BIN) -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
	  -dict=tests/fuzz/array.dict -print_final_stats=1 $(FUZZ_IO_DIR)/corpus tests/fuzz/array-seeds \
	  > $(FUZZ_IO_DIR)/fuzz.log 2>&1 || { tail -60 $(FUZZ_IO_DIR)/fuzz.log; exit 1; }
	@grep -E "stat::number_of_executed_units|Done" $(FUZZ_IO_DIR)/fuzz.log | tail -2
