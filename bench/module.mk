# module.mk for bench/: the figures that README.md and docs/*.md publish between
# <!-- report:NAME --> markers, and the plots docs/img/perf-*.svg, are generated from the run
# records by bench/report.py, which also checks the figures in docs/benchmarks.md's prose against
# their records. `make test` runs `bench/report.py --check` (exit 1, with a diff, when a figure or
# a plot differs from its record; a second or less), then the script's own test on made-up
# records and on a copy of the docs with a wrong figure planted (tests/bench/check_report.py).
# After adding a record folder: `make report` (or `python3 bench/report.py --write`).
TEST_EXTRA += test-report

.PHONY: test-report report
test-report:
	@python3 bench/report.py --check
	@python3 tests/bench/check_report.py
report:
	python3 bench/report.py --write
