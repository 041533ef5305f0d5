# module.mk for src/check: judging a kernel's output (`flashstep check`), and its command-line test.
LIB_SRC    += $(wildcard src/check/*.c)
# rows.c, the verdict's passes: -O3 so that its loops over keys vectorize, and never a fused
# multiply-add (its results must equal the engine's and version 1's bit for bit)
$(call obj,src/check/rows.c): EXTRA_CFLAGS += -O3 -ffp-contract=off
TEST_EXTRA += test-check-cli
.PHONY: test-check-cli
test-check-cli:
	python3 tests/cli/check_check_cli.py $(FLASHSTEP)
