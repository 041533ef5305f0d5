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
CFLAGS  ?= -O2 -g
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
TEST_SRC   = $(filter-out $(if $(filter 1,$(NO_GUI)),tests/check_gui.c),$(wildcard tests/check_*.c)) \
             $(wildcard tests/test_*.c)
TEST_EXTRA =
EXTRA_OBJ  =

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
LIB_OBJ  = $(call obj,$(LIB_SRC))
MAIN_OBJ = $(call obj,src/cli/main.c)
TEST_OBJ = $(call obj,$(TEST_SRC))

.PHONY: all deps run test test-run check clean fuzz
all: $(BUILD)/flashstep

include tests/fuzz/fuzz.mk
-include src/*/module.mk src/kernels/*/module.mk

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

# `make test`: dependencies, then the unit tests plain and sanitized, then every extra step
# the modules registered (lesson verification, command-line tests, window tests). The four
# builds (plain, sanitized, clang, no window) compile on every core; the steps run one by one.
JOBS ?= $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all $(BUILD)/check_all
	@$(MAKE) --no-print-directory test-run

test-run: all $(BUILD)/check_all
	$(BUILD)/check_all
	@$(MAKE) --no-print-directory -j$(JOBS) SAN=1 check
	@$(MAKE) --no-print-directory $(TEST_EXTRA) FLASHSTEP=$(BUILD)/flashstep
	@if command -v clang >/dev/null 2>&1; then \
	  echo "clang: the same sources must build warning-free"; \
	  $(MAKE) --no-print-directory -s -j$(JOBS) CC=clang BUILD=build/clang all; \
	fi
	@echo "NO_GUI=1: the program must also build without the window"
	@$(MAKE) --no-print-directory -s -j$(JOBS) NO_GUI=1 BUILD=build/nogui all
	@build/nogui/flashstep render 000_04 --out /dev/null 2>&1 | grep -q 'no window' 
	@echo "make test: all steps passed"

check: $(BUILD)/check_all $(BUILD)/flashstep
	$(BUILD)/check_all

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
