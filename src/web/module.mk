# module.mk for src/web: the same lessons and scenes in a web browser (docs/web.md).
#
#   make web          build/web/: index.html, page.js, page.css, flashstep.js + .wasm (the
#                     engine, lessons and window compiled by Emscripten), flashstep.data and
#                     webgpu/ (the WGSL kernels and their host, fsgpu.js: "Run on this GPU")
#                     (the lessons, their assets and the two DejaVu faces), and what makes it
#                     work offline and install to a phone (offline.js, manifest.webmanifest,
#                     icon-*.png drawn by src/web/icon.py, and sw.js, stamped last by
#                     src/web/stamp.py with the build's version); installs Emscripten
#                     if missing and builds SDL2, SDL2_ttf, FreeType and zlib for it once
#                     (scripts/web-libs.sh, cached outside the tree)
#   make web-serve    serve build/web on localhost and print the URL
#   make test-web     the page in headless Chromium (tests/web/run.sh); a `make test` step
#                     where emcc and chromium are both installed
#
# The web build compiles the window's own sources (src/gui), the engine, the lessons and the
# commands the page runs (trace, lessons, verify); the CPU kernels, the benchmark and the CUDA
# path stay native. src/web/web.c is the page's program in place of src/cli/main.c.
EMCC     ?= emcc
WEB      ?= build/web
WEB_PORT ?= 8765
export NODE_PATH ?= /usr/share/nodejs
WEB_C_SRC = $(ENGINE_SRC) $(IO_SRC) $(LESSON_SRC) $(wildcard src/gui/*.c) src/web/web.c \
            src/cli/args.c src/cli/problem.c src/cli/cmd_trace.c src/cli/cmd_lessons.c \
            src/cli/cmd_verify.c src/cli/cmd_play.c src/cli/cmd_play_terminal.c src/cli/cmd_render.c \
            src/kernels/cuda/cuda_none.c src/kernels/webgpu/webgpu_trace.c \
            src/kernels/records/records.c
# objects beside the page, not in it: build/web is what gets published
WEB_OBJ_DIR = $(WEB)-obj
WEB_OBJ   = $(patsubst %.c,$(WEB_OBJ_DIR)/%.o,$(WEB_C_SRC))
WEB_PAGE  = $(WEB)/index.html $(WEB)/page.js $(WEB)/page.css \
            $(patsubst src/kernels/webgpu/%,$(WEB)/webgpu/%,$(wildcard src/kernels/webgpu/*.wgsl) src/kernels/webgpu/fsgpu.js)
# Offline use and the home screen (docs/web.md): the worker's registration, the manifest and the
# icons (192 and 512 for the manifest, 180 for iOS's home screen). sw.js comes last: stamp.py lists
# every other file of $(WEB) with its SHA-256 and names the version after all of them.
WEB_ICONS   = $(foreach s,180 192 512,$(WEB)/icon-$(s).png)
WEB_OFFLINE = $(WEB)/offline.js $(WEB)/manifest.webmanifest $(WEB_ICONS)
# Every file of the build but sw.js: a new one goes here, so that sw.js is stamped after it.
WEB_FILES   = $(WEB)/flashstep.js $(WEB_PAGE) $(WEB_OFFLINE)
WEB_FONTS = /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
# The JavaScript the page calls (web.c) and the runtime pieces it uses.
comma := ,
WEB_EXPORTS = $(subst $() ,$(comma),_main _malloc _free _web_start _web_open _web_seek _web_key _web_state \
              _web_lessons _web_problem _web_trace_file _web_save_trace _web_save_png _web_cli \
              _web_gpu_job _web_gpu_compare _web_gpu_save_trace _web_fit_height _web_course_next \
              _web_describe _web_answer _web_answer_room _web_ending_room _web_quiz _web_quiz_judge \
              _web_wake)
WEB_STD     = -std=c11
WEB_CFLAGS  = $(WEB_STD) -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L $(WARN) -O2 -Isrc -MMD -MP
WEB_LDFLAGS = -O2 -sALLOW_MEMORY_GROWTH=1 -sINITIAL_MEMORY=64MB -sENVIRONMENT=web -sEXIT_RUNTIME=0 \
              -sEXPORTED_FUNCTIONS=$(WEB_EXPORTS) -sEXPORTED_RUNTIME_METHODS=ccall,UTF8ToString,FS,HEAPU8 \
              --preload-file lessons@/flashstep/lessons --preload-file assets@/flashstep/assets \
              $(foreach f,$(WEB_FONTS),--preload-file $(f)@/flashstep/fonts/$(notdir $(f)))

.PHONY: web web-deps web-build web-serve test-web test-web-if-present
# make test runs the browser test where both Emscripten and Chromium are installed (.ci/run
# installs them, so CI always does) and says so where they are not.
TEST_BROWSER += test-web-if-present
# scripts/web-libs.sh against apt stand-ins: its sources found when the newest version cannot be
# fetched, apt's error when none can (no build, no network; a second)
TEST_EXTRA += test-web-libs
.PHONY: test-web-libs
test-web-libs:
	@bash tests/setup/web-libs.sh
test-web-if-present:
	@if command -v $(EMCC) >/dev/null 2>&1 && command -v chromium >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory test-web; \
	else \
	  echo "test-web: skipped (needs emcc and chromium: bash scripts/install-deps.sh --web)"; \
	fi

web: web-deps
	@$(MAKE) --no-print-directory web-build WEB_LIBS="$$(bash scripts/web-libs.sh)"

web-deps:
	@bash scripts/install-deps.sh --web

# WEB_LIBS: the prefix scripts/web-libs.sh built the libraries into (make web passes it).
web-build: $(WEB)/sw.js

# What the build makes: WEB_FILES, emcc's two files beside flashstep.js, and sw.js. A file of $(WEB)
# that is none of these (a kernel since removed from src/kernels/webgpu, say) is deleted before
# stamping, so that the worker does not cache it; the source folders are prerequisites so that a
# removal there remakes sw.js.
WEB_MADE = $(WEB_FILES) $(WEB)/flashstep.wasm $(WEB)/flashstep.data $(WEB)/sw.js
$(WEB)/sw.js: src/web/sw.js src/web/stamp.py $(WEB_FILES) src/web src/kernels/webgpu
	@for f in $$(find $(WEB) -type f); do case " $(WEB_MADE) " in *" $$f "*) ;; \
	  *) echo "removing $$f: no longer part of the page"; rm -f "$$f" ;; esac; done
	python3 src/web/stamp.py $(WEB)

$(WEB)/icon-%.png: src/web/icon.py
	@mkdir -p $(dir $@)
	python3 src/web/icon.py $* $@

# EM_ASM (JavaScript inside web.c) needs the GNU dialect; the shared sources stay C11.
$(WEB_OBJ_DIR)/src/web/web.o: WEB_STD = -std=gnu11
$(WEB_OBJ_DIR)/%.o: %.c
	@test -n "$(WEB_LIBS)" || { echo "make web-build needs WEB_LIBS (use make web)"; exit 2; }
	@mkdir -p $(dir $@)
	$(EMCC) $(WEB_CFLAGS) -I$(WEB_LIBS)/include -I$(WEB_LIBS)/include/SDL2 -c $< -o $@

$(WEB)/flashstep.js: $(WEB_OBJ) $(wildcard lessons/*.lesson) $(shell find assets -type f) $(WEB_FONTS)
	@mkdir -p $(WEB)
	$(EMCC) $(WEB_LDFLAGS) -o $@ $(WEB_OBJ) -L$(WEB_LIBS)/lib -lSDL2_ttf -lfreetype -lSDL2 -lz

$(WEB)/webgpu/%: src/kernels/webgpu/%
	@mkdir -p $(dir $@)
	cp $< $@

$(WEB)/%: src/web/%
	@mkdir -p $(dir $@)
	cp $< $@

web-serve:
	@test -f $(WEB)/index.html || { echo "no $(WEB)/index.html: run make web first"; exit 2; }
	python3 tests/web/serve.py $(WEB) $(WEB_PORT)

# The page in a real browser: built, served on loopback, driven through the DevTools protocol.
test-web: web
	bash tests/web/run.sh $(WEB) $(or $(FLASHSTEP),$(BUILD)/flashstep)

-include $(shell find $(WEB_OBJ_DIR) -name '*.d' 2>/dev/null)
