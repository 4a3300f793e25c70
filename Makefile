# arkgen: one non-recursive Makefile. `make` builds build/arkgen and build/libarkrt.a;
# `make run` runs the main job on the default model; `make test` runs every test through prove.

# ---- knobs -----------------------------------------------------------------------------------
CC        ?= gcc
CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(CUDA_HOME)/bin/nvcc
ARCH      ?= sm_90a
# The virtual architecture that matches ARCH: sm_90 -> compute_90, sm_90a -> compute_90a.
GENCODE   := -gencode arch=compute_$(patsubst sm_%,%,$(ARCH)),code=$(ARCH)
PREFIX    ?= /usr/local
MODEL     ?= models/mlp8.cfg
SANITIZE  ?= 0
FUZZ_SECONDS ?= 60
SKIP_DEPS ?= 0
VERSION   := 0.1.0

ifeq ($(SANITIZE),1)
B        ?= build/asan
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
B        ?= build
SANFLAGS :=
endif

CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wshadow -MMD -MP $(SANFLAGS)
# Include paths, one per folder of headers: abi/ (the contract between arkgen and the binaries it
# generates), runtime/, templates/ and dma/. Only the two files that call CUDA see its headers.
INC      := -I. -Iabi -Iruntime -Itemplates -Idma
CPPFLAGS += $(INC) -DARKGEN_VERSION='"$(VERSION)"' -DARKGEN_PREFIX='"$(PREFIX)"' \
            -DARKGEN_GENCODE='"$(GENCODE)"'
LDFLAGS  += $(SANFLAGS)
HOST_LIBS := -lconfig -lmetis -lcjson -lm -lpthread
NVCCFLAGS ?= -O3 $(GENCODE) -std=c++17 -lineinfo

# ---- sources ---------------------------------------------------------------------------------
CODEGEN_SRC := $(filter-out codegen/main.c,$(wildcard codegen/*.c))
PART_SRC    := $(wildcard partition/*.c)
RT_SRC      := $(wildcard runtime/*.c) $(wildcard dma/*.c)
# The part of the runtime that needs no GPU (CPU reference, safetensors, DMA ring and dispatcher):
# arkgen's tests link it alone, so nothing on the CPU side links a CUDA library.
RT_CUDA_SRC := runtime/session.c runtime/streams.c runtime/driver.c runtime/trace.c dma/cuda_backend.c
RT_HOST_SRC := $(filter-out $(RT_CUDA_SRC),$(RT_SRC))
TEST_SRC    := $(wildcard tests/test_*.c)
# What the tests share: the harness on the compile API and the emulator of the emitted tables.
TEST_LIB_SRC := tests/harness.c tests/emu.c
GPU_TEST_SRC := $(wildcard tests/gpu_*.cu)
BENCH_SRC   := $(wildcard bench/*.c)

obj = $(patsubst %.c,$(B)/obj/%.o,$(1))
# The calibration tables built into arkgen (codegen/calib.c): bench/calib/NAME.txt as C strings.
CALIB_TABLES := $(sort $(wildcard bench/calib/*.txt))
CALIB_GEN   := $(B)/gen/calib_tables.c
CODEGEN_OBJ := $(call obj,$(CODEGEN_SRC) $(CALIB_GEN))
PART_OBJ    := $(call obj,$(PART_SRC))
RT_OBJ      := $(call obj,$(RT_SRC))
RT_HOST_OBJ := $(call obj,$(RT_HOST_SRC))
TESTS       := $(patsubst tests/%.c,$(B)/tests/%,$(TEST_SRC))
# tests/gpu_tiles.cu is built once a float dtype (its kernel holds every template: one build of all
# three takes ~3x as long as the longest of these, which `make -j` runs side by side).
GPU_TILES   := $(B)/tests/gpu_tiles_fp16 $(B)/tests/gpu_tiles_bf16 $(B)/tests/gpu_tiles_fp32
GPU_TESTS   := $(if $(filter 1,$(SANITIZE)),,$(filter-out $(B)/tests/gpu_tiles,$(patsubst tests/%.cu,$(B)/tests/%,$(GPU_TEST_SRC))) $(GPU_TILES))
BENCHES     := $(patsubst bench/%.c,$(B)/bench/%,$(BENCH_SRC))

.PHONY: all deps run test fuzz install clean golden bench

all: $(B)/arkgen $(B)/libarkrt.a

# Missing Debian packages are installed by one script, shared with .ci/run.
deps:
ifneq ($(SKIP_DEPS),1)
	@scripts/install-deps.sh
endif

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(call obj,runtime/session.c runtime/streams.c dma/cuda_backend.c): CPPFLAGS += -I$(CUDA_HOME)/include

$(CALIB_GEN): $(CALIB_TABLES) scripts/embed-calib.sh
	@mkdir -p $(dir $@)
	scripts/embed-calib.sh $(CALIB_TABLES) > $@.tmp && mv $@.tmp $@

$(B)/libcodegen.a: $(CODEGEN_OBJ)
	@rm -f $@; ar rcs $@ $^
$(B)/libpart.a: $(PART_OBJ)
	@rm -f $@; ar rcs $@ $^
$(B)/libarkrt.a: $(RT_OBJ)
	@rm -f $@; ar rcs $@ $^
$(B)/libarkhost.a: $(RT_HOST_OBJ)
	@rm -f $@; ar rcs $@ $^
$(B)/libtest.a: $(call obj,$(TEST_LIB_SRC))
	@rm -f $@; ar rcs $@ $^

ALL_LIBS := $(B)/libcodegen.a $(B)/libpart.a $(B)/libarkhost.a

$(B)/arkgen: $(B)/obj/codegen/main.o $(B)/libcodegen.a $(B)/libpart.a
	$(CC) $(LDFLAGS) $^ $(HOST_LIBS) -o $@

$(B)/tests/%: tests/%.c $(B)/libtest.a $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< $(B)/libtest.a $(ALL_LIBS) $(LDFLAGS) -lcmocka $(HOST_LIBS) -o $@

$(B)/tests/%: tests/%.cu $(B)/libarkrt.a $(wildcard templates/*.cuh abi/*.h abi/*.cuh tests/*.cuh)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $(INC) $< $(B)/libarkrt.a -lcjson -o $@

GPU_TILES_OFF_fp16 := -DARK_TILES_BF16=0 -DARK_TILES_FP32=0
GPU_TILES_OFF_bf16 := -DARK_TILES_FP16=0 -DARK_TILES_FP32=0
GPU_TILES_OFF_fp32 := -DARK_TILES_FP16=0 -DARK_TILES_BF16=0
$(GPU_TILES): $(B)/tests/gpu_tiles_%: tests/gpu_tiles.cu $(B)/libarkrt.a $(wildcard templates/*.cuh abi/*.h abi/*.cuh tests/*.cuh)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $(INC) $(GPU_TILES_OFF_$*) $< $(B)/libarkrt.a -lcjson -o $@

# tests/gpu_generate.cu runs the file arkgen generates for tests/models/tokens.cfg
$(B)/gen/tokens_model.cu: tests/models/tokens.cfg $(B)/arkgen
	@mkdir -p $(dir $@)
	$(B)/arkgen $< -o $@ > /dev/null
$(B)/tests/gpu_generate: $(B)/gen/tokens_model.cu
$(B)/tests/gpu_generate: INC += -I$(B)/gen

$(B)/bench/%: bench/%.c $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< $(ALL_LIBS) $(LDFLAGS) $(HOST_LIBS) -o $@

# The main job on the default model.
run: deps all
	@B=$(B) NVCC=$(NVCC) scripts/run-default.sh $(MODEL)

test: deps all $(TESTS) $(GPU_TESTS)
	@B=$(B) ARKGEN=$(B)/arkgen NVCC=$(NVCC) ARK_SKIP_NVCC=$(SANITIZE) prove -f $(TESTS) $(GPU_TESTS) $(wildcard tests/*.sh)

bench: deps all $(BENCHES)

# Golden files of the emitter, regenerated only on request; with the analytic costs, so that a new
# calibration table changes no golden file (tests/models.sh and tests/tables.sh compare the same way).
GOLDEN := mlp chain64 comm2
golden: $(B)/arkgen
	@for m in $(GOLDEN); do $(B)/arkgen --gpu analytic models/$$m.cfg -o tests/golden/$$m.cu > /dev/null || exit 1; done

# Coverage-guided fuzzing (libFuzzer), FUZZ_SECONDS for each target: the front end, seeded with
# models/, then the safetensors reader, which seeds its own corpus folder. Undefined behaviour stops it.
FUZZ_SRC := codegen/cfg.c codegen/graph.c codegen/diag.c codegen/optab.c codegen/strmap.c codegen/source.c tests/fuzz_frontend.c
FUZZ_ST_SRC := runtime/safetensors.c runtime/error.c runtime/dtype.c tests/fuzz_safetensors.c
FUZZ_CC := clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined $(INC)
fuzz: deps
	@mkdir -p build/fuzz/corpus build/fuzz/st_corpus
	$(FUZZ_CC) $(FUZZ_SRC) -lconfig -lm -o build/fuzz/fuzz_frontend
	$(FUZZ_CC) $(FUZZ_ST_SRC) -lcjson -lm -o build/fuzz/fuzz_safetensors
	cp models/*.cfg build/fuzz/corpus/
	build/fuzz/fuzz_frontend -max_total_time=$(FUZZ_SECONDS) -timeout=10 -max_len=8192 build/fuzz/corpus
	build/fuzz/fuzz_safetensors -max_total_time=$(FUZZ_SECONDS) -timeout=10 -max_len=65536 build/fuzz/st_corpus

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/arkgen
	install -m 755 $(B)/arkgen $(DESTDIR)$(PREFIX)/bin/arkgen
	install -m 644 $(B)/libarkrt.a $(DESTDIR)$(PREFIX)/lib/libarkrt.a
	install -m 644 abi/*.h abi/*.cuh runtime/*.h templates/*.cuh dma/dma_device.cuh $(DESTDIR)$(PREFIX)/include/arkgen/

clean:
	rm -rf build

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)

# Benchmarks with their own rules (CUDA programs, multi-GPU): bench/*.mk.
-include $(wildcard bench/*.mk)
