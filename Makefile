# attnlab — build, test, bench, install.  `make help` lists the targets.
# Installing packages is scripts/install-deps.sh's job: make never runs apt-get.
CC       ?= gcc
OPENMP   ?= 1
PORTABLE ?= 0
SAN      ?= 0
BUILD    ?= build
WERROR   ?= 0
MPI      ?= 0
PREFIX   ?= /usr/local
DESTDIR  ?=
BINDIR    = $(PREFIX)/bin
LIBDIR    = $(PREFIX)/lib
INCDIR    = $(PREFIX)/include
MANDIR    = $(PREFIX)/share/man
DATADIR   = $(PREFIX)/share/attnlab
VERSION  := $(shell sed -n 's/^\#define AL_VERSION_STRING "\(.*\)"/\1/p' include/attnlab/version.h)
SOMAJOR  := $(firstword $(subst ., ,$(VERSION)))

# -fno-math-errno / -fno-trapping-math change no computed value (no FP traps are ever enabled); the
# second lets gcc if-convert the branch-free selects of al__expf, GELU and the GRU gates into blends,
# which AVX2 and SSE builds need to vectorise those loops (AVX-512 has masked operations instead).
CFLAGS_BASE = -std=c11 -O3 -Wall -Wextra -MMD -MP -Iinclude -Isrc -D_GNU_SOURCE -fno-math-errno -fno-trapping-math \
              -DAL_DATADIR='"$(DATADIR)/datasets"' -DAL_PRESETDIR='"$(DATADIR)/presets"'
ifeq ($(PORTABLE),1)
  ARCH = -march=x86-64 -mtune=generic
else
  ARCH = -march=native
endif
ifeq ($(OPENMP),1)
  OMPFLAGS = -fopenmp
else
  # `#pragma omp` lines are meant to be ignored in a serial build: keep -Wall quiet about them.
  CFLAGS_BASE += -Wno-unknown-pragmas
endif
ifeq ($(WERROR),1)
  CFLAGS_BASE += -Werror
endif
# MPI=1: Open MPI's compiler wrapper and AL_MPI (apps/mpi_*.c; docs/scale-out.md). Without it no MPI
# header is read and no MPI symbol is linked.
ifeq ($(MPI),1)
  CC := mpicc
  CFLAGS_BASE += -DAL_MPI
endif
ifeq ($(SAN),1)
  SANFLAGS = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g
endif
# The speech libraries through pkg-config (their .pc files come with the -dev packages install-deps.sh
# installs); scripts/attnlab.pc.in lists the same names under Requires.private.
SPEECH_PKGS = sndfile samplerate fftw3f espeak-ng
# ARPACK (Lanczos) and LAPACKE (dsyevd): the Laplacian eigenvectors of the graph transformer's
# positional encodings (src/data/graph_lappe.c).
LINALG_PKGS = arpack lapacke
CFLAGS_BASE += $(shell pkg-config --cflags $(SPEECH_PKGS) $(LINALG_PKGS))
LIBS = -lpng -lz $(shell pkg-config --libs $(SPEECH_PKGS) $(LINALG_PKGS)) -lm
CFLAGS  += $(CFLAGS_BASE) $(ARCH) $(OMPFLAGS) $(SANFLAGS)
LDFLAGS += $(OMPFLAGS) $(SANFLAGS)

LIB_SRC  = $(wildcard src/*/*.c)
LIB_OBJ  = $(LIB_SRC:src/%.c=$(BUILD)/src/%.o)
APP_SRC  = $(wildcard apps/*.c)
APP_OBJ  = $(APP_SRC:apps/%.c=$(BUILD)/apps/%.o)
TEST_SRC = $(filter-out tests/testutil.c,$(wildcard tests/test_*.c))
TEST_BIN = $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
LIBA     = $(BUILD)/libattnlab.a
LIBSO    = $(BUILD)/libattnlab.so.$(VERSION)
PIC_OBJ  = $(LIB_SRC:src/%.c=$(BUILD)/pic/%.o)
ifeq ($(BUILD),build)
  BIN = bin/attnlab
else
  BIN = $(BUILD)/bin/attnlab
endif
export ATTNLAB_BIN = $(abspath $(BIN))
# Which MPI setting the objects of $(BUILD) were compiled with: switching (make, then make MPI=1 in one
# BUILD) rebuilds them all instead of linking a mix.
MODE = $(BUILD)/.mode-mpi$(MPI)

.PHONY: test-mpi all test check asan bench clean help plots demo shared install uninstall examples fuzz
all: $(LIBA) $(BIN)

help:
	@echo "make            build $(LIBA) and bin/attnlab (host CPU, OpenMP)"
	@echo "make test       build and run the fast tier of the cmocka suite (unit, gradient, kernel tests)"
	@echo "make check      the end-to-end tier (CLI paths, bad inputs, README commands, resume kills, sweeps)"
	@echo "make asan       both tiers under AddressSanitizer + UBSan"
	@echo "make bench      benchmarks (and the PyTorch peer when torch is importable)"
	@echo "make demo       the README's main job: demo sweep, summary table, plot"
	@echo "make plots      redraw results/*.png from the committed CSVs"
	@echo "make test-mpi   build with MPI=1 in build-mpi and run tests/mpi.sh (mpirun, 2 and 3 ranks)"
	@echo "make fuzz       the libFuzzer harnesses of tests/fuzz/, FUZZ_SECONDS each (default 30; clang)"
	@echo "make install    bin, libattnlab.a/.so, headers, attnlab.pc, man page, datasets, sweep presets under PREFIX"
	@echo "                (PREFIX=$(PREFIX), DESTDIR= for staging); make uninstall removes them"
	@echo "make examples   build examples/*.c against the installed copy through pkg-config"
	@echo "options: PORTABLE=1 OPENMP=0 WERROR=1 CC=clang PREFIX=DIR MPI=1 (mpicc: mpirun -np N attnlab train|sweep)"
	@echo "packages: scripts/install-deps.sh installs what is missing (make never runs apt-get)"

$(MODE):
	@mkdir -p $(dir $@)
	@rm -f $(BUILD)/.mode-mpi*
	@touch $@
$(BUILD)/src/%.o: src/%.c $(MODE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@
$(BUILD)/pic/%.o: src/%.c $(MODE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -c $< -o $@
$(BUILD)/apps/%.o: apps/%.c $(MODE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@
$(LIBA): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(APP_OBJ) $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(APP_OBJ) $(LIBA) $(LIBS)

$(BUILD)/tests/testutil.o: tests/testutil.c $(MODE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@
$(BUILD)/tests/%: tests/%.c $(BUILD)/tests/testutil.o $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/tests/testutil.o $(LIBA) -lcmocka $(LIBS)

# Two tiers. make check: the end-to-end tests, which drive bin/attnlab as a user would (the README's
# commands, every command path, the bad-input corpus, flag refusals, kill -9 and --resume, sweeps) or
# train real models to a stated accuracy; make test: the rest (unit, gradient, kernel and library
# tests, a few minutes). The README's test command runs both.
CHECK_NAMES = test_cli_scripts test_cli_flags test_graph_cli test_seq_cli test_reliability_cli test_resume \
              test_sweep test_sweep_presets test_train_image
CHECK_BIN   = $(addprefix $(BUILD)/tests/,$(CHECK_NAMES))
FAST_BIN    = $(filter-out $(CHECK_BIN),$(TEST_BIN))
test: $(FAST_BIN) $(BIN)
	@scripts/run-tests.sh $(FAST_BIN)
check: $(CHECK_BIN) $(BIN)
	@scripts/run-tests.sh $(CHECK_BIN)

asan:
	ASAN_OPTIONS=detect_leaks=1 $(MAKE) BUILD=build-asan SAN=1 test check

# The MPI build in its own directory, then the multi-rank checks (tests/mpi.sh: about 2 minutes).
test-mpi:
	$(MAKE) MPI=1 BUILD=build-mpi all
	ATTNLAB_BIN=$(abspath build-mpi/bin/attnlab) tests/mpi.sh

bench: all
	@scripts/bench.sh

demo: all
	bin/attnlab sweep --preset demo

# Redraws the committed plots of results/ from their committed CSVs (no training).
plots: all
	bin/attnlab plot results/image-tradeoff.csv --out results/image-tradeoff.png
	bin/attnlab plot results/image-tradeoff.csv --kind curves --size 500 --out results/image-curves-500.png
	bin/attnlab plot results/image-tradeoff.csv --kind curves --size 10000 --out results/image-curves-10000.png
	bin/attnlab plot results/graph-tradeoff.csv.gz --out results/graph-tradeoff.png
	bin/attnlab plot results/graph-fair.csv.gz --by model --out results/graph-fair.png
	bin/attnlab plot results/graph_attention_cora_gat_node24.csv --kind graph-attention --node 24 \
	  --out results/graph_attention_cora_gat_node24.png
	bin/attnlab plot results/graph_attention_cora_gat_node1358.csv --kind graph-attention --node 1358 \
	  --out results/graph_attention_cora_gat_node1358.png

# The shared library: the same objects built position-independent, soname libattnlab.so.MAJOR.
shared: $(LIBSO)
$(LIBSO): $(PIC_OBJ)
	$(CC) -shared -Wl,-soname,libattnlab.so.$(SOMAJOR) $(LDFLAGS) -o $@ $^ $(LIBS)

# attnlab.pc is written by every install, for that install's PREFIX (a file kept in BUILD would keep
# the PREFIX of the first install).
install: all $(LIBSO)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCDIR)/attnlab \
	        $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(DATADIR)/datasets $(DESTDIR)$(DATADIR)/presets
	install -m 755 $(BIN) $(DESTDIR)$(BINDIR)/attnlab
	install -m 644 $(LIBA) $(DESTDIR)$(LIBDIR)/libattnlab.a
	install -m 755 $(LIBSO) $(DESTDIR)$(LIBDIR)/libattnlab.so.$(VERSION)
	ln -sf libattnlab.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libattnlab.so.$(SOMAJOR)
	ln -sf libattnlab.so.$(SOMAJOR) $(DESTDIR)$(LIBDIR)/libattnlab.so
	install -m 644 include/attnlab/*.h $(DESTDIR)$(INCDIR)/attnlab/
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@VERSION@|$(VERSION)|; s|@OMPFLAGS@|$(OMPFLAGS)|' scripts/attnlab.pc.in \
	    > $(DESTDIR)$(LIBDIR)/pkgconfig/attnlab.pc
	chmod 644 $(DESTDIR)$(LIBDIR)/pkgconfig/attnlab.pc
	install -m 644 docs/attnlab.1 $(DESTDIR)$(MANDIR)/man1/attnlab.1
	cp -R datasets/. $(DESTDIR)$(DATADIR)/datasets/
	install -m 644 results/presets/*.preset $(DESTDIR)$(DATADIR)/presets/
	@echo "installed attnlab $(VERSION) under $(DESTDIR)$(PREFIX)"

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/attnlab $(DESTDIR)$(LIBDIR)/libattnlab.a $(DESTDIR)$(LIBDIR)/libattnlab.so* \
	      $(DESTDIR)$(LIBDIR)/pkgconfig/attnlab.pc $(DESTDIR)$(MANDIR)/man1/attnlab.1
	rm -rf $(DESTDIR)$(INCDIR)/attnlab $(DESTDIR)$(DATADIR)

# The examples build against an installed copy (make install PREFIX=...) through pkg-config, as a
# user's program would; they are run once to show that they work.
EXAMPLES = $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
examples: $(EXAMPLES)
	@for e in $(EXAMPLES); do echo "== $$e"; $$e || exit 1; done
$(BUILD)/examples/%: examples/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) -o $@ $< \
	  $$(PKG_CONFIG_PATH=$(DESTDIR)$(LIBDIR)/pkgconfig pkg-config --cflags --libs attnlab) -lm -Wl,-rpath,$(DESTDIR)$(LIBDIR)

# libFuzzer harnesses of every loader (tests/fuzz/README.md), one after another.
FUZZ_SECONDS ?= 30
fuzz:
	tests/fuzz/run.sh $(FUZZ_SECONDS)

clean:
	rm -rf build build-asan build-fuzz build-mpi bin

-include $(LIB_OBJ:.o=.d) $(PIC_OBJ:.o=.d) $(APP_OBJ:.o=.d) $(TEST_BIN:=.d) $(BUILD)/tests/testutil.d
