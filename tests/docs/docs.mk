# docs.mk: the links of README.md and docs/*.md. `make test` runs tests/docs/check_links.py
# (every relative link names a file of the repository and, where it names a heading, a heading
# that page has: a renamed heading breaks the links to it), after the checker's own test on
# made-up pages with a missing heading and a missing file planted. Well under a second.
TEST_EXTRA += test-links

.PHONY: test-links
test-links:
	@python3 tests/docs/check_links.py --self-test
	@python3 tests/docs/check_links.py
