# module.mk for src/cli: the command line's own test step (the `trace` contract from outside,
# forward and backward, with dropout; `fp8` and `trace --fp8`; the decode through a paged KV cache;
# ring attention; `quiz`).
TEST_EXTRA += test-cli
.PHONY: test-cli
test-cli:
	python3 tests/cli/check_trace_cli.py $(FLASHSTEP)
	python3 tests/cli/check_backward_cli.py $(FLASHSTEP)
	python3 tests/cli/check_dropout_cli.py $(FLASHSTEP)
	python3 tests/cli/check_fp8_cli.py $(FLASHSTEP)
	python3 tests/cli/check_paged_cli.py $(FLASHSTEP)
	python3 tests/cli/check_ring_cli.py $(FLASHSTEP)
	python3 tests/cli/check_quiz_cli.py $(FLASHSTEP)
