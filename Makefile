# attnlab — build, test, bench.  `make help` lists the targets.
CC       ?= gcc
OPENMP   ?= 1
PORTABLE ?= 0
BLAS     ?= openblas
SAN      ?= 0
BUILD    ?= build
WERROR   ?= 0

CFLAGS_BASE = -std=c11 -O3 -Wall -Wextra -MMD -MP -Iinclude -Isrc -D_GNU_SOURCE -fno-math-errno
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
ifeq ($(SAN),1)
  SANFLAGS = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g
endif
LIBS = -lpng -lz -lm
ifeq ($(BLAS),openblas)
  CFLAGS_BASE += -DAL_USE_CBLAS -I/usr/include/x86_64-linux-gnu/openblas-pthread
  LIBS := -lopenblas $(LIBS)
endif
CFLAGS  += $(CFLAGS_BASE) $(ARCH) $(OMPFLAGS) $(SANFLAGS)
LDFLAGS += $(OMPFLAGS) $(SANFLAGS)

LIB_SRC  = $(wildcard src/*/*.c)
LIB_OBJ  = $(LIB_SRC:src/%.c=$(BUILD)/src/%.o)
APP_SRC  = $(wildcard apps/*.c)
APP_OBJ  = $(APP_SRC:apps/%.c=$(BUILD)/apps/%.o)
TEST_SRC = $(filter-out tests/testutil.c,$(wildcard tests/test_*.c))
TEST_BIN = $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
LIBA     = $(BUILD)/libattnlab.a
DEPSTAMP = .deps-ok
ifeq ($(BUILD),build)
  BIN = bin/attnlab
else
  BIN = $(BUILD)/bin/attnlab
endif
export ATTNLAB_BIN = $(abspath $(BIN))

.PHONY: all test asan bench deps clean help plots demo
all: $(LIBA) $(BIN)

help:
	@echo "make            build $(LIBA) and bin/attnlab (host CPU, OpenMP)"
	@echo "make test       build and run the cmocka test suite"
	@echo "make asan       the same suite under AddressSanitizer + UBSan"
	@echo "make bench      benchmarks (and the PyTorch peer when torch is importable)"
	@echo "make demo       the README's main job: demo sweep, summary table, plot"
	@echo "options: PORTABLE=1 OPENMP=0 BLAS=none WERROR=1 CC=clang"

# Missing system packages are installed once by scripts/install-deps.sh.
$(DEPSTAMP): scripts/install-deps.sh
	@scripts/install-deps.sh --check >/dev/null 2>&1 || scripts/install-deps.sh
	@touch $@

$(BUILD)/src/%.o: src/%.c | $(DEPSTAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@
$(BUILD)/apps/%.o: apps/%.c | $(DEPSTAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@
$(LIBA): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(APP_OBJ) $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(APP_OBJ) $(LIBA) $(LIBS)

$(BUILD)/tests/testutil.o: tests/testutil.c | $(DEPSTAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@
$(BUILD)/tests/%: tests/%.c $(BUILD)/tests/testutil.o $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/tests/testutil.o $(LIBA) -lcmocka $(LIBS)

test: $(TEST_BIN) $(BIN)
	@scripts/run-tests.sh $(TEST_BIN)

asan:
	ASAN_OPTIONS=detect_leaks=1 $(MAKE) BUILD=build-asan SAN=1 test

bench: all
	@scripts/bench.sh

demo: all
	bin/attnlab sweep --preset demo

clean:
	rm -rf build build-asan bin $(DEPSTAMP)

-include $(LIB_OBJ:.o=.d) $(APP_OBJ:.o=.d) $(TEST_BIN:=.d)
