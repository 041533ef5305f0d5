# src/gui/module.mk: the window's build flags, libraries and test steps.
# SDL2 and SDL2_ttf come from the Makefile; fontconfig finds the font, zlib compresses PNG files.
GUI_PKGS = fontconfig zlib
ifneq ($(NO_GUI),1)
$(call obj,$(GUI_SRC)): EXTRA_CFLAGS += $(shell $(PKG_CONFIG) --cflags $(GUI_PKGS) 2>/dev/null)
EXTRA_LDLIBS += $(shell $(PKG_CONFIG) --libs $(GUI_PKGS) 2>/dev/null || echo -lfontconfig -lz)
# Animations (anim.c), each optional and detected here at build time: GIF through giflib (no
# pkg-config file: the compiler finds gif_lib.h or not), video through FFmpeg's libraries. A
# build without one says so when asked for that format (exit 2).
# Homebrew's giflib lives under its prefix, which Apple's clang does not search by itself.
GIF_CFLAGS := $(addprefix -I,$(wildcard /opt/homebrew/opt/giflib/include /usr/local/opt/giflib/include))
GIF_LIBDIR := $(addprefix -L,$(wildcard /opt/homebrew/opt/giflib/lib /usr/local/opt/giflib/lib))
HAVE_GIF := $(shell $(CC) $(GIF_CFLAGS) -E -include gif_lib.h -x c /dev/null >/dev/null 2>&1 && echo 1)
VIDEO_PKGS = libavcodec libavformat libswscale libavutil
HAVE_VIDEO := $(shell $(PKG_CONFIG) --exists $(VIDEO_PKGS) 2>/dev/null && echo 1)
ifeq ($(HAVE_GIF),1)
$(call obj,src/gui/anim.c): EXTRA_CFLAGS += -DFS_HAVE_GIF $(GIF_CFLAGS)
EXTRA_LDLIBS += $(GIF_LIBDIR) -lgif
endif
ifeq ($(HAVE_VIDEO),1)
$(call obj,src/gui/anim.c): EXTRA_CFLAGS += -DFS_HAVE_VIDEO $(shell $(PKG_CONFIG) --cflags $(VIDEO_PKGS))
EXTRA_LDLIBS += $(shell $(PKG_CONFIG) --libs $(VIDEO_PKGS))
endif
endif

# make test-gui: the window under Xvfb (every lesson played to the end, scripted key and mouse
# input with expectations, a saved PNG, error messages), then a third of the lessons again (a
# different third each run) in the ASan+UBSan build with leak checking (tests/gui/run.sh).
# Reference frames are compared in tests/check_gui.c, which runs with the unit tests.
TEST_EXTRA += test-render-cli
# the window under Xvfb plays the sanitized build too: in the background lane, after it is built
TEST_BG += test-gui
.PHONY: test-gui test-render-cli
# make test-render-cli: render and play with one's own problem (trace's options and messages), a
# saved JSONL trace (and damaged ones), GIF and MP4 output; no display needed.
test-render-cli:
	python3 tests/cli/check_render_cli.py $(or $(FLASHSTEP),$(BUILD)/flashstep)

test-gui:
	@$(MAKE) --no-print-directory $(or $(FLASHSTEP),$(BUILD)/flashstep)
	@$(MAKE) --no-print-directory SAN=1 all
	xvfb-run -a -s "-screen 0 1920x1080x24" bash tests/gui/run.sh $(or $(FLASHSTEP),$(BUILD)/flashstep) build/san/flashstep
