# pn - predict deep-learning training time on GPUs.
#
#   make              build every tool into bin/ (CUDA parts when found)
#   make NO_CUDA=1    build without CUDA even when nvcc is present
#   make NO_ONNX=1    build pn-onnx without protobuf-c even when present
#   make check        run the bats suite (t/; CHECK_JOBS files at a time)
#   make run          the main job on the shipped data (pipelines/predict),
#                     with the shipped model set (samples/models)
#   make run-refit    the same, refitting the model set first
#   make models       refit the shipped model set from the shipped data
#   make deps         install the Debian packages pn and its benchmarks'
#                     peers need (root; .ci/deps without --bench: pn's only)
#   make install PREFIX=/usr/local
#   make V=1          show full commands
#   make SANITIZE=1   build with AddressSanitizer and UBSan
#   make fuzz FUZZ_SECONDS=N   run each libFuzzer harness (fuzz/) N seconds

VERSION  := 0.1.0
PREFIX   ?= /usr/local
BINDIR   := $(PREFIX)/bin
MANDIR   := $(PREFIX)/share/man/man1
DATADIR  := $(PREFIX)/share/pn

CC       ?= cc
CFLAGS   ?= -O2 -g
WERROR   ?=
WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wformat=2 -Wpointer-arith \
            -Wno-format-nonliteral $(if $(WERROR),-Werror)
CPPFLAGS += -std=c11 -D_GNU_SOURCE -Isrc/lib \
            -DPN_VERSION='"$(VERSION)"' -DPN_DATADIR='"$(DATADIR)"'
LDLIBS   += -lz -lm

ifeq ($(SANITIZE),1)
CFLAGS   := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
            -fno-sanitize-recover=undefined
LDFLAGS  += -fsanitize=address,undefined
endif

ifneq ($(V),1)
Q := @
E := @printf '  %-6s %s\n'
else
Q :=
E := @:
endif

# ---- optional CUDA ---------------------------------------------------------
CUDA_HOME ?= /usr/local/cuda
NVCC      := $(shell command -v nvcc 2>/dev/null || \
               { [ -x $(CUDA_HOME)/bin/nvcc ] && echo $(CUDA_HOME)/bin/nvcc; })
CUDNN_H   := $(firstword $(wildcard $(CUDA_HOME)/include/cudnn.h \
               /usr/include/cudnn.h /usr/include/x86_64-linux-gnu/cudnn.h))
ifeq ($(NO_CUDA),1)
HAVE_CUDA := 0
else ifneq ($(and $(NVCC),$(CUDNN_H)),)
HAVE_CUDA := 1
else
HAVE_CUDA := 0
endif

# GPU generations the CUDA code is compiled for (CUDA 13: Turing and newer),
# plus PTX for newer ones
CUDA_ARCH ?= -gencode arch=compute_75,code=sm_75 \
             -gencode arch=compute_80,code=sm_80 \
             -gencode arch=compute_90,code=sm_90 \
             -gencode arch=compute_90,code=compute_90
ifeq ($(HAVE_CUDA),1)
CUDA_OBJ  := build/cuda/detect.o
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart
NVFLAGS   ?= -O2 -std=c++17
# pn-time's CUDA backend: every src/cuda/*.cu in one library
CUDA_TIME := build/libpncuda.a
CUDA_TIME_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 \
                  -lcudnn -lcublas -lcudart -lstdc++
else
CUDA_OBJ  := build/cuda/nocuda.o
CUDA_LIBS :=
CUDA_TIME := build/cuda/nocuda_time.o
CUDA_TIME_LIBS :=
endif
CUDA_SRC := $(wildcard src/cuda/*.cu)
CUDA_HDRS := $(wildcard src/cuda/*.h src/cuda/*.cuh)
# pn-time's own parts: what every backend shares (src/time), the CPU
# backend (oneDNN, src/cpu)
TIME_OBJ := $(patsubst src/%.c,build/%.o,$(wildcard src/time/*.c))
TIME_HDRS := $(wildcard src/time/*.h)
# every header of the cpu backend (cpu.h, dnn.h, ...): a change to one
# rebuilds every object that may include it
CPU_HDRS  := $(wildcard src/cpu/*.h)
CPU_OBJ  := $(patsubst src/%.c,build/%.o,$(wildcard src/cpu/*.c))
# tools that talk to the GPU link the CUDA objects
CUDA_TOOLS := bin/pn-specs

# ---- optional ONNX import (pn-onnx): protobuf-c ---------------------------
# protoc-c compiles src/onnx/onnx-subset.proto into build/onnx; without
# protobuf-c pn-onnx is built with src/onnx/noonnx.c and exits 3.
PROTOC_C  := $(shell command -v protoc-c 2>/dev/null)
PBC_FOUND := $(shell pkg-config --exists libprotobuf-c 2>/dev/null && echo yes)
ifeq ($(NO_ONNX),1)
HAVE_ONNX := 0
else ifneq ($(and $(PROTOC_C),$(PBC_FOUND)),)
HAVE_ONNX := 1
else
HAVE_ONNX := 0
endif
ONNX_HDRS := src/onnx/onnx.h
ifeq ($(HAVE_ONNX),1)
ONNX_GEN  := build/onnx/onnx-subset.pb-c.c build/onnx/onnx-subset.pb-c.h
ONNX_OBJ  := build/onnx/onnx.o build/onnx/graph.o build/onnx/map.o \
             build/onnx/onnx-subset.pb-c.o
ONNX_LIBS := $(shell pkg-config --libs libprotobuf-c)
ONNX_INC  := -Ibuild/onnx $(shell pkg-config --cflags libprotobuf-c)
else
ONNX_GEN  :=
ONNX_OBJ  := build/onnx/onnx.o build/onnx/noonnx.o
ONNX_LIBS :=
ONNX_INC  :=
endif

TOOLS := $(patsubst src/%.c,bin/%,$(wildcard src/pn-*.c))
LIBSRC := $(wildcard src/lib/*.c)
LIBOBJ := $(patsubst src/%.c,build/%.o,$(LIBSRC))
HDRS   := $(wildcard src/lib/*.h)

.PHONY: all check test install uninstall clean deps bench run info
all: info $(TOOLS)

info:
	@echo "pn $(VERSION): nvcc: $(or $(NVCC),not found); cuDNN: $(or $(CUDNN_H),not found); CUDA backend: $(if $(filter 1,$(HAVE_CUDA)),yes,no$(if $(filter 1,$(NO_CUDA)), (NO_CUDA=1)))"
	@echo "pn $(VERSION): protoc-c: $(or $(PROTOC_C),not found); libprotobuf-c: $(or $(PBC_FOUND),not found); ONNX import: $(if $(filter 1,$(HAVE_ONNX)),yes,no$(if $(filter 1,$(NO_ONNX)), (NO_ONNX=1)))"

build/%.o: src/%.c $(HDRS) | build/lib
	$(E) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -c -o $@ $<

build/cuda/%.o: src/cuda/%.cu $(CUDA_HDRS) $(TIME_HDRS) $(HDRS) | build/cuda
	$(E) NVCC $@
	$(Q)$(NVCC) $(NVFLAGS) $(CUDA_ARCH) -Isrc/cuda -Isrc/lib -c -o $@ $<

build/libpncuda.a: $(patsubst src/cuda/%.cu,build/cuda/%.o,$(CUDA_SRC))
	$(E) AR $@
	$(Q)rm -f $@ && ar rcs $@ $^

build/cuda/nocuda.o build/cuda/nocuda_time.o: build/cuda/%.o: src/cuda/%.c $(CUDA_HDRS) $(TIME_HDRS) $(HDRS) | build/cuda
	$(E) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -c -o $@ $<

build/cpu/%.o: src/cpu/%.c $(CPU_HDRS) $(TIME_HDRS) $(HDRS) | build/cpu
	$(E) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -c -o $@ $<

build/time/%.o: src/time/%.c $(TIME_HDRS) $(HDRS) | build/time
	$(E) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -c -o $@ $<

build/pn-time.o: $(TIME_HDRS) $(CPU_HDRS) $(CUDA_HDRS)
build/pn-specs.o: $(CUDA_HDRS)

# pn-onnx: src/onnx over the protobuf-c code protoc-c makes (or the stub)
build/onnx/onnx-subset.pb-c.c build/onnx/onnx-subset.pb-c.h &: src/onnx/onnx-subset.proto | build/onnx
	$(E) PROTOC $@
	$(Q)$(PROTOC_C) --proto_path=src/onnx --c_out=build/onnx $<

build/onnx/onnx-subset.pb-c.o: build/onnx/onnx-subset.pb-c.c
	$(E) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(ONNX_INC) $(CFLAGS) -c -o $@ $<

build/onnx/%.o: src/onnx/%.c src/onnx/ox.h $(ONNX_HDRS) $(HDRS) $(ONNX_GEN) | build/onnx
	$(E) CC $@
	$(Q)$(CC) $(CPPFLAGS) -Isrc/onnx $(ONNX_INC) $(CFLAGS) $(WARN) -c -o $@ $<

build/pn-onnx.o: CPPFLAGS += -Isrc/onnx
build/pn-onnx.o: $(ONNX_HDRS)

# relink when HAVE_ONNX changes (make NO_ONNX=1, then make)
build/onnx/have-onnx-$(HAVE_ONNX): | build/onnx
	$(Q)rm -f build/onnx/have-onnx-* && touch $@

bin/pn-onnx: build/pn-onnx.o build/libpn.a $(ONNX_OBJ) build/onnx/have-onnx-$(HAVE_ONNX)
	$(E) LD $@
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(ONNX_OBJ) build/libpn.a $(ONNX_LIBS) $(LDLIBS)

build/lib build/cuda build/cpu build/time build/onnx:
	$(Q)mkdir -p $@ bin

$(CUDA_TOOLS): bin/%: build/%.o build/libpn.a $(CUDA_OBJ)
	$(E) LD $@
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(CUDA_OBJ) build/libpn.a $(LIBS_$*) $(LDLIBS) $(CUDA_LIBS)

# the optimizer and dropout loops are timed: let the compiler vectorize them
build/lib/optim.o $(addprefix build/cpu/,core.o gemm.o conv.o rnn.o vector.o rowwise.o bnorm.o pool.o): CFLAGS += -O3 -fno-math-errno
# ... and the softmax's exp, whose clamps are selects only when a
# comparison may not trap
build/cpu/rowwise.o: CFLAGS += -fno-trapping-math -ffp-contract=fast

# pn-time: the oneDNN backend, and the CUDA backend or its stub
bin/pn-time: build/pn-time.o build/libpn.a $(TIME_OBJ) $(CPU_OBJ) $(CUDA_TIME)
	$(E) LD $@
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(TIME_OBJ) $(CPU_OBJ) $(CUDA_TIME) build/libpn.a $(LIBS_pn-time) $(LDLIBS) $(CUDA_TIME_LIBS)

build/libpn.a: $(LIBOBJ)
	$(E) AR $@
	$(Q)rm -f $@ && ar rcs $@ $^

# extra libraries per tool
ML_LIBS       := -lgsl -lopenblas -lxgboost
LIBS_pn-fit   := $(ML_LIBS)
LIBS_pn-eval  := $(ML_LIBS)
LIBS_pn-sum   := $(ML_LIBS)
LIBS_pn-time  := -ldnnl -lopenblas -lgomp -lpthread

bin/%: build/%.o build/libpn.a
	$(E) LD $@
	$(Q)$(CC) $(LDFLAGS) -o $@ $< build/libpn.a $(LIBS_$*) $(LDLIBS)

# The test files run CHECK_JOBS at a time (default: the CPUs), each
# file's tests in order, where GNU parallel is installed (bats needs it;
# .ci/deps installs it); CHECK_JOBS=1 runs them one by one.
CHECK_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
BATS_JOBS  := $(if $(and $(shell command -v parallel 2>/dev/null),$(filter-out 0 1,$(CHECK_JOBS))),--jobs $(CHECK_JOBS) --no-parallelize-within-files)
check test: all
	bats $(BATS_JOBS) t/

# Benchmarks print numbers; none is a test.  Each can also run alone.
bench: all
	bench/tsv
	bench/predict
	bench/sum

# The main job on the shipped data (see README.md): with the shipped model
# set, or refitting it first.
.PHONY: run-refit models
run: all
	pipelines/predict

run-refit: all
	REFIT=1 pipelines/predict

# The shipped model set, refitted from the shipped data (the same bytes for
# the same data and code; see samples/models/README.md).
models: all
	pipelines/fit-models samples/models/neusight-gpu.models.gz

# The paper's Tables 4 and 5, and Figures 2 and 3 (see pipelines/table4,
# pipelines/unseen-gpu), pn's ablation on unseen GPUs (pipelines/ablation)
# and the whole-model validation (pipelines/e2e): minutes each on 2 cores.
.PHONY: table4 table4-cpu unseen-gpu ablation e2e
table4: all
	pipelines/table4

unseen-gpu: all
	pipelines/unseen-gpu

ablation: all
	pipelines/ablation

# Table 4 on this project's own CPU measurements (samples/cpu, made by
# pipelines/collect-cpu): every layer type, the CPU's measured spec row.
table4-cpu: all
	PN_SAMPLES=samples/cpu LAYERS="dense bmm conv2d attention embedding rnn lstm gru layernorm softmax elementwise posenc" \
		pipelines/table4 out/table4-cpu

e2e: all
	pipelines/e2e

# fp16 per-operator MAPE on a GPU whose fp16 rows no model saw (Vidur's A40
# and A100, each held out in turn; pipelines/fp16): minutes on 2 cores.
.PHONY: fp16
fp16: all
	pipelines/fp16

deps:
	.ci/deps --bench

# ---- fuzzing: libFuzzer harnesses (fuzz/), built apart in build/fuzz ------
# Not part of all: needs clang.  Each harness runs FUZZ_SECONDS on its
# seeds (fuzz/corpus/NAME; new inputs go to build/fuzz/corpus/NAME).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
# extra libFuzzer options for every harness (CI: -seed=1, the same inputs
# on every run)
FUZZ_OPTS    ?=
FUZZ_CFLAGS  := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
                -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION \
                -fno-sanitize-recover=undefined
FUZZ_HARNESS := tsv csv gpuspec num layer network graph model json \
                $(if $(filter 1,$(HAVE_ONNX)),onnx)
FUZZ_BIN     := $(patsubst %,build/fuzz/fuzz_%,$(FUZZ_HARNESS))
FUZZ_LIBOBJ  := $(patsubst src/lib/%.c,build/fuzz/lib/%.o,$(LIBSRC))
# pn's exit and the files it opens, caught (fuzz/fuzz.h)
FUZZ_WRAP    := -Wl,--wrap=exit,--wrap=open,--wrap=close,--wrap=fopen \
                -Wl,--wrap=fdopen,--wrap=fclose,--wrap=free \
                -Wl,--wrap=pn_xmalloc,--wrap=pn_xrealloc
FUZZ_XGB     := build/fuzz/xgbwrap.o -Wl,--wrap=XGBoosterCreate \
                -Wl,--wrap=XGBoosterFree,--wrap=XGBoosterLoadModelFromBuffer \
                -Wl,--wrap=XGBoosterGetNumFeature,--wrap=XGBGetLastError \
                -Wl,--wrap=XGBoosterPredictFromDense $(ML_LIBS)
FUZZ_LIBS_model   := $(FUZZ_XGB)
FUZZ_LIBS_network := $(FUZZ_XGB)

.PHONY: fuzz fuzz-build
fuzz: fuzz-build
	$(Q)for h in $(FUZZ_HARNESS); do \
		fuzz/run $$h $(FUZZ_SECONDS) $(FUZZ_OPTS) || exit 1; done

fuzz-build: $(FUZZ_BIN)

.PRECIOUS: build/fuzz/%.o

build/fuzz/lib/%.o: src/lib/%.c $(HDRS)
	$(Q)mkdir -p $(@D)
	$(E) FUZZCC $@
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link \
		-c -o $@ $<

build/fuzz/%.o: fuzz/%.c fuzz/fuzz.h $(HDRS) $(wildcard src/pn-*.c)
	$(Q)mkdir -p $(@D)
	$(E) FUZZCC $@
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) $(WARN) \
		-fsanitize=fuzzer-no-link -c -o $@ $<

# fuzz_onnx: src/onnx and the protobuf-c code, built with the harness
FUZZ_ONNX_OBJ := build/fuzz/onnx/onnx.o build/fuzz/onnx/graph.o \
                 build/fuzz/onnx/map.o build/fuzz/onnx/onnx-subset.pb-c.o
FUZZ_LIBS_onnx := $(FUZZ_ONNX_OBJ) $(ONNX_LIBS)
build/fuzz/fuzz_onnx.o: CPPFLAGS += -Isrc/onnx
build/fuzz/fuzz_onnx: $(FUZZ_ONNX_OBJ)

build/fuzz/onnx/%.o: src/onnx/%.c src/onnx/ox.h $(ONNX_HDRS) $(HDRS) $(ONNX_GEN)
	$(Q)mkdir -p $(@D)
	$(E) FUZZCC $@
	$(Q)$(FUZZ_CC) $(CPPFLAGS) -Isrc/onnx $(ONNX_INC) $(FUZZ_CFLAGS) \
		-fsanitize=fuzzer-no-link -c -o $@ $<

build/fuzz/onnx/onnx-subset.pb-c.o: build/onnx/onnx-subset.pb-c.c
	$(Q)mkdir -p $(@D)
	$(E) FUZZCC $@
	$(Q)$(FUZZ_CC) $(CPPFLAGS) $(ONNX_INC) $(FUZZ_CFLAGS) \
		-fsanitize=fuzzer-no-link -c -o $@ $<

build/fuzz/libpn.a: $(FUZZ_LIBOBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

build/fuzz/fuzz_%: build/fuzz/fuzz_%.o build/fuzz/common.o \
		   build/fuzz/xgbwrap.o build/fuzz/libpn.a
	$(E) LD $@
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(FUZZ_WRAP) -o $@ \
		$< build/fuzz/common.o build/fuzz/libpn.a $(FUZZ_LIBS_$*) \
		$(LDLIBS)

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR) $(DESTDIR)$(DATADIR)
	install -m 755 $(TOOLS) $(DESTDIR)$(BINDIR)
	install -m 644 man/*.1 $(DESTDIR)$(MANDIR)
	install -m 644 gpuspecs/gpus.tsv $(DESTDIR)$(DATADIR)

uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(TOOLS)))
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/,$(notdir $(wildcard man/*.1)))
	rm -rf $(DESTDIR)$(DATADIR)

clean:
	rm -rf build $(TOOLS) $(CUDA_TOOLS)

.DELETE_ON_ERROR:
