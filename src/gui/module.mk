# src/gui/module.mk: the window's build flags, libraries and test steps.
# SDL2 and SDL2_ttf come from the Makefile; fontconfig finds the font, zlib compresses PNG files.
GUI_PKGS = fontconfig zlib
ifneq ($(NO_GUI),1)
$(call obj,$(GUI_SRC)): EXTRA_CFLAGS += $(shell $(PKG_CONFIG) --cflags $(GUI_PKGS) 2>/dev/null)
EXTRA_LDLIBS += $(shell $(PKG_CONFIG) --libs $(GUI_PKGS) 2>/dev/null || echo -lfontconfig -lz)
endif

# make test-gui: the window under Xvfb (every lesson played to the end, scripted key and mouse
# input with expectations, a saved PNG, error messages), then every lesson again in the
# ASan+UBSan build with leak checking (tests/gui/run.sh). Reference frames are compared in
# tests/check_gui.c, which runs with the unit tests.
TEST_EXTRA += test-gui
.PHONY: test-gui
test-gui:
	@$(MAKE) --no-print-directory $(or $(FLASHSTEP),$(BUILD)/flashstep)
	@$(MAKE) --no-print-directory SAN=1 all
	xvfb-run -a -s "-screen 0 1920x1080x24" bash tests/gui/run.sh $(or $(FLASHSTEP),$(BUILD)/flashstep) build/san/flashstep
