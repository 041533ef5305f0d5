# flashstep: build, run and test.
#
#   make            build build/flashstep
#   make run        install what is missing, build, run the main job (scripts/run.sh)
#   make test       install what is missing, build, run every test (plain, then ASan+UBSan)
#   make SAN=1      a sanitized build (in build/san)
#   make CC=clang   any C11 compiler; gcc and clang are both kept warning-free
#   make NO_GUI=1   without the window, for machines without SDL2 (play uses the terminal)
#
# Each module may add to the build in its own src/<module>/module.mk (flags, libraries, extra
# test steps), so this file stays about the structure.

CC      ?= cc
SAN     ?= 0
NO_GUI  ?= 0
ifeq ($(SAN),1)
BUILD   ?= build/san
else
BUILD   ?= build
endif

PKG_CONFIG ?= pkg-config
# Recursively expanded: pkg-config runs only when a recipe needs it, after `make deps`.
SDL_CFLAGS = $(shell $(PKG_CONFIG) --cflags sdl2 SDL2_ttf 2>/dev/null)
SDL_LIBS   = $(if $(filter 1,$(NO_GUI)),,$(shell $(PKG_CONFIG) --libs sdl2 SDL2_ttf 2>/dev/null))
CHECK_CFLAGS = $(shell $(PKG_CONFIG) --cflags check 2>/dev/null)
CHECK_LIBS   = $(shell $(PKG_CONFIG) --libs check 2>/dev/null)

WARN    = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
# The sanitized build is for finding errors, not speed: -O1 (ASan's advice) with line tables only,
# which compiles the SIMD kernels four to five times faster than -O3 -g and still gives every
# report its file and line.
ifeq ($(SAN),1)
CFLAGS  ?= -O1 -g1
else
CFLAGS  ?= -O2 -g
endif
ALL_CFLAGS = -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L $(WARN) $(CFLAGS) -Isrc -MMD -MP
LDLIBS  = -lm -lpthread
ifeq ($(SAN),1)
ALL_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=address,undefined
endif

# Sources by module. main.c is the program; everything else also links into the tests.
ENGINE_SRC = $(wildcard src/engine/*.c)
IO_SRC     = $(wildcard src/io/*.c)
LESSON_SRC = $(wildcard src/lesson/*.c)
# cmd_nogui.c stands in for cmd_play.c and cmd_render.c in a NO_GUI=1 build.
ifeq ($(NO_GUI),1)
CLI_SRC    = $(filter-out src/cli/main.c src/cli/cmd_play.c src/cli/cmd_render.c,$(wildcard src/cli/*.c))
GUI_SRC    =
else
CLI_SRC    = $(filter-out src/cli/main.c src/cli/cmd_nogui.c,$(wildcard src/cli/*.c))
GUI_SRC    = $(wildcard src/gui/*.c)
endif
CPU_SRC    = $(wildcard src/kernels/cpu/*.c)
LIB_SRC    = $(ENGINE_SRC) $(IO_SRC) $(LESSON_SRC) $(CPU_SRC) $(CLI_SRC) $(GUI_SRC)
# tests/check_*.c: one Check suite each; tests/test_*.c: helpers the suites share.
TEST_SRC   = $(filter-out $(if $(filter 1,$(NO_GUI)),tests/check_gui.c tests/check_equations_gui.c),$(wildcard tests/check_*.c)) \
             $(wildcard tests/test_*.c)
# The steps of `make test` beside the unit tests, as the modules register them (see below):
# TEST_BROWSER the browser tests, first in the foreground lane (the longest step); TEST_FG after
# them; TEST_EXTRA in the background lane after the sanitized unit tests; TEST_BG after those.
TEST_BROWSER =
TEST_FG    =
TEST_EXTRA =
TEST_BG    =
EXTRA_OBJ  =

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
LIB_OBJ  = $(call obj,$(LIB_SRC))
MAIN_OBJ = $(call obj,src/cli/main.c)
TEST_OBJ = $(call obj,$(TEST_SRC))

.PHONY: all deps run test test-run test-units test-san check clean fuzz
all: $(BUILD)/flashstep

include tests/fuzz/fuzz.mk
include tests/docs/docs.mk
-include src/*/module.mk src/kernels/*/module.mk bench/module.mk

# GUI sources are the only ones that see SDL.
$(call obj,$(GUI_SRC)): EXTRA_CFLAGS += $(SDL_CFLAGS)
$(TEST_OBJ): EXTRA_CFLAGS += $(CHECK_CFLAGS) -I$(BUILD)/gen -Itests

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(EXTRA_CFLAGS) -c $< -o $@

$(BUILD)/flashstep: $(MAIN_OBJ) $(LIB_OBJ) $(EXTRA_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(SDL_LIBS) $(LDLIBS) $(EXTRA_LDLIBS)

# The test runner finds every `Suite *x_suite(void)` in tests/check_*.c by itself.
$(BUILD)/gen/suites.h: $(TEST_SRC)
	@mkdir -p $(dir $@)
	sed -n 's/^Suite \*\([a-z0-9_]*_suite\)(void).*/X(\1)/p' $(TEST_SRC) > $@
$(call obj,tests/check_main.c): $(BUILD)/gen/suites.h

$(BUILD)/check_all: $(TEST_OBJ) $(LIB_OBJ) $(EXTRA_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(SDL_LIBS) $(LDLIBS) $(EXTRA_LDLIBS)

deps:
	@bash scripts/install-deps.sh

run: deps
	@$(MAKE) --no-print-directory all
	@bash scripts/run.sh

# `make test`: dependencies, then every test. Nearly every step runs on one core, so after the
# plain build (on every core) the steps go in two lanes:
#   background (log: $(BUILD)/units.log, printed at the end): the sanitized build and unit tests,
#     the clang and no-window builds, the TEST_EXTRA steps (command line, set-up, benchmark
#     smoke), then the TEST_BG ones (the window under Xvfb, which plays the sanitized build too;
#     the CUDA compile check);
#   foreground: the plain unit tests, the TEST_BROWSER steps (the web build and the browser
#     tests, the longest step, which runs two browsers), then the TEST_FG ones (the lessons,
#     the fuzzers).
# Each lane goes on past a failing step (make -k), so one run names every failure; make test
# waits for both, prints the background lane's log and each lane's minutes, and fails when
# either did. `make test-units` runs the unit tests alone (plain and sanitized, and the builds).
# The tests' time limits are there to catch a hang; with the lanes sharing the cores they are
# tripled (CK_TIMEOUT_MULTIPLIER, Check's own setting), and a test case that sets none gets 10 s
# instead of Check's 4 before that.
JOBS ?= $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all $(BUILD)/check_all
	@$(MAKE) --no-print-directory test-run

test-run test-units test-san: export CK_TIMEOUT_MULTIPLIER := $(or $(CK_TIMEOUT_MULTIPLIER),3)
test-run test-units test-san: export CK_DEFAULT_TIMEOUT := $(or $(CK_DEFAULT_TIMEOUT),10)
test-run: all $(BUILD)/check_all
	@echo "in the background: the sanitized build and tests, the clang and no-window builds, $(TEST_EXTRA) $(TEST_BG) (log: $(BUILD)/units.log)"
	@echo "here: the plain unit tests, $(TEST_BROWSER) $(TEST_FG)"
	@t0=$$(date +%s); \
	  { $(MAKE) --no-print-directory -k test-san $(TEST_EXTRA) $(TEST_BG) FLASHSTEP=$(BUILD)/flashstep > $(BUILD)/units.log 2>&1; \
	    echo $$? > $(BUILD)/units.rc; echo $$(( $$(date +%s) - t0 )) > $(BUILD)/units.s; } & \
	  { $(BUILD)/check_all; a=$$?; $(MAKE) --no-print-directory -k $(TEST_BROWSER) $(TEST_FG) FLASHSTEP=$(BUILD)/flashstep && [ $$a = 0 ]; }; fore=$$?; \
	  t1=$$(date +%s); wait; units=$$(cat $(BUILD)/units.rc 2>/dev/null || echo 1); \
	  echo "---- the background lane (log: $(BUILD)/units.log) ----"; cat $(BUILD)/units.log; \
	  echo "make test: foreground $$(( (t1 - t0 + 30) / 60 )) min, background $$(( ($$(cat $(BUILD)/units.s 2>/dev/null || echo 0) + 30) / 60 )) min"; \
	  [ "$$units" = 0 ] || echo "make test: a background step failed (its log above)"; \
	  [ "$$fore" = 0 ] || echo "make test: a foreground step failed (above the background lane's log)"; \
	  [ "$$units" = 0 ] && [ "$$fore" = 0 ]
	@echo "make test: all steps passed"

test-units: all $(BUILD)/check_all
	$(BUILD)/check_all
	@$(MAKE) --no-print-directory test-san

# The sanitized build and its unit tests; the clang and no-window builds are there to see that
# the sources build (clang warning-free, and without SDL), so they compile without the
# optimizer, the SIMD kernels too (CPU_OPT=, src/kernels/cpu/module.mk), which takes a third of
# the time.
# The sanitized unit tests run in one process (CK_FORK=no): forked, each of its thousand tests
# paid a fork and a leak check at its exit, 0.1-0.4 s apiece (the text suite's 302 tests: 129 s
# forked, 1 s in one process). The leak check then runs once, at the end, over every test; with
# no fork there is no per-test time limit, so `timeout` stands in for one against a hang (where
# there is one: macOS has it as gtimeout from Homebrew's coreutils, or not at all).
SAN_TIMEOUT ?= 1800
test-san:
	@echo "ASan+UBSan: the sanitized build (build/san)"
	@$(MAKE) --no-print-directory -s -j$(JOBS) SAN=1 build/san/check_all build/san/flashstep
	@echo "ASan+UBSan: the unit tests in one process, leaks checked at its end"
	@t=$$(command -v timeout || command -v gtimeout); CK_FORK=no $${t:+$$t $(SAN_TIMEOUT)} build/san/check_all; rc=$$?; \
	  if [ $$rc = 124 ]; then echo "make test: the sanitized unit tests ran past $(SAN_TIMEOUT) s (a hang?); CK_FORK=yes build/san/check_all times each test"; fi; \
	  exit $$rc
	@if command -v clang >/dev/null 2>&1; then \
	  echo "clang: the same sources build warning-free"; \
	  $(MAKE) --no-print-directory -s -j$(JOBS) CC=clang CFLAGS="-O0 -g0" CPU_OPT= BUILD=build/clang all; \
	fi
	@echo "NO_GUI=1: the program builds without the window"
	@$(MAKE) --no-print-directory -s -j$(JOBS) NO_GUI=1 CFLAGS="-O0 -g0" CPU_OPT= BUILD=build/nogui all
	@build/nogui/flashstep render 000_04 --out /dev/null 2>&1 | grep -q 'no window'

check: $(BUILD)/check_all $(BUILD)/flashstep
	$(BUILD)/check_all

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
