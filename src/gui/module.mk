# src/gui/module.mk: the window's build flags, libraries and test steps.
# SDL2 and SDL2_ttf come from the Makefile; fontconfig finds the font, zlib compresses PNG files.
GUI_PKGS = fontconfig zlib
$(call obj,$(GUI_SRC)): EXTRA_CFLAGS += $(shell $(PKG_CONFIG) --cflags $(GUI_PKGS) 2>/dev/null)
EXTRA_LDLIBS += $(shell $(PKG_CONFIG) --libs $(GUI_PKGS) 2>/dev/null || echo -lfontconfig -lz)
