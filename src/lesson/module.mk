# src/lesson/module.mk: the lessons' test steps and the lesson-parser fuzzer.
#
#   make test-lessons    every lesson verifies; docs/errata.md is current; every lesson plays in
#                        the terminal; malformed lessons give one file:line:col line and exit 2
#   make fuzz-lessons    build the libFuzzer target (clang) and run it FUZZ_SECONDS (default 20)
#   make errata          regenerate docs/errata.md from `flashstep verify --markdown`

TEST_FG += test-lessons fuzz-lessons
.PHONY: test-lessons fuzz-lessons errata

FUZZ_DIR      = $(BUILD)/fuzz
FUZZ_BIN      = $(FUZZ_DIR)/fuzz_lesson
FUZZ_SRC      = tests/fuzz/fuzz_lesson.c $(ENGINE_SRC) $(IO_SRC) $(LESSON_SRC)
FUZZ_FLAGS    = $(FUZZ_BASE_FLAGS) -DFS_LESSON_NO_FILES -DFS_LESSON_MAX_ELEMS=4096 -DFS_LESSON_MAX_SCORES=16384 \
                -DFS_LESSON_MAX_EVENTS=16384

test-lessons:
	@echo "test-lessons: verify every lesson"
	@$(FLASHSTEP) verify > $(BUILD)/verify.txt || { cat $(BUILD)/verify.txt; exit 1; }
	@tail -2 $(BUILD)/verify.txt
	@$(FLASHSTEP) verify --format jsonl > $(BUILD)/verify.jsonl
	@$(FLASHSTEP) verify --markdown > $(BUILD)/errata.md
	@diff -q docs/errata.md $(BUILD)/errata.md > /dev/null || \
	  { diff -u docs/errata.md $(BUILD)/errata.md | head -40; \
	    echo "test-lessons: docs/errata.md is stale; run 'make errata'"; exit 1; }
	@$(FLASHSTEP) lessons > /dev/null
	@for f in $$($(FLASHSTEP) lessons --paths); do \
	  $(FLASHSTEP) play "$$f" --terminal --all < /dev/null > $(BUILD)/play.txt || \
	    { echo "test-lessons: $$f does not play"; exit 1; }; done
	@bash tests/lessons/run.sh $(FLASHSTEP)

$(FUZZ_BIN): $(FUZZ_SRC) $(wildcard src/*/*.h)
	@mkdir -p $(FUZZ_DIR)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(FUZZ_SRC) -o $@ -lm

# Without clang's libFuzzer runtime the step says so and is skipped (tests/fuzz/fuzz.mk).
fuzz-lessons:
	$(call fuzz_or_skip,fuzz-lessons,fuzz-lessons-run)

.PHONY: fuzz-lessons-run
fuzz-lessons-run: $(FUZZ_BIN)
	@mkdir -p $(FUZZ_DIR)/corpus
	@echo "fuzz-lessons: $(FUZZ_SECONDS) s of libFuzzer on the lesson parser"
	@$(FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
	  -print_final_stats=1 $(FUZZ_DIR)/corpus lessons tests/lessons tests/fuzz/seeds \
	  > $(FUZZ_DIR)/fuzz.log 2>&1 || { tail -60 $(FUZZ_DIR)/fuzz.log; exit 1; }
	@grep -E "stat::number_of_executed_units|Done" $(FUZZ_DIR)/fuzz.log | tail -2

errata: $(BUILD)/flashstep
	$(BUILD)/flashstep verify --markdown > docs/errata.md; test -s docs/errata.md
