# module.mk for src/check: judging a kernel's output (`flashstep check`), and its command-line test.
LIB_SRC    += $(wildcard src/check/*.c)
# rows.c, the verdict's passes: -O3 so that its loops over keys vectorize, and never a fused
# multiply-add (its results must equal the engine's and version 1's bit for bit)
$(call obj,src/check/rows.c): EXTRA_CFLAGS += -O3 -ffp-contract=off
TEST_EXTRA += test-check-cli
.PHONY: test-check-cli
# The Python entry's test needs NumPy: Debian's python3-numpy serves /usr/bin/python3, which may
# not be the python3 first on PATH.
PY_NUMPY = $(firstword $(foreach p,python3 /usr/bin/python3,$(shell $(p) -c 'import numpy' >/dev/null 2>&1 && echo $(p))))
test-check-cli:
	python3 tests/cli/check_check_cli.py $(FLASHSTEP)
	bash tests/cli/check_terminal.sh $(FLASHSTEP)
	@if [ -n "$(PY_NUMPY)" ]; then $(PY_NUMPY) tests/python/check_entry.py $(FLASHSTEP); \
	 else echo "python entry: skipped (no python3 with NumPy: apt-get install python3-numpy)"; fi
