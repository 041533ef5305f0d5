# module.mk for src/cli: the command line's own test step (the `trace` contract from outside).
TEST_EXTRA += test-cli
.PHONY: test-cli
test-cli:
	python3 tests/cli/check_trace_cli.py $(FLASHSTEP)
