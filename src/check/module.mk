# module.mk for src/check: judging a kernel's output (`flashstep check`), and its command-line test.
LIB_SRC    += $(wildcard src/check/*.c)
TEST_EXTRA += test-check-cli
.PHONY: test-check-cli
test-check-cli:
	python3 tests/cli/check_check_cli.py $(FLASHSTEP)
