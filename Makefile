# Top-level Makefile: the one entry point. `make help` lists every target.
#
# Layout of the build (everything generated goes under $(BUILD), never into the sources):
#   build/lib/libcshost.a   the host library (host/common, driver, train, sparsity, ...)
#   build/bin/cshost        the command-line tool
#   build/tests/...         host unit tests (cmocka), one binary per tests/<area>/test_*.c
#   build/verif/...         Verilator benches (rules in verif/verif.mk)
#   build/sim/...           the Verilated mesh used by `make sim` and the sim backend
#
# Areas add their own rules in fragments (verif/verif.mk, host/driver/driver.mk, ...), which
# append to LIB_EXTRA_OBJS, LIB_LDLIBS, BIN_EXTRA, TEST_ENTRIES, REGRESS_ENTRIES, BENCH_TARGETS,
# TEST_DEPS and HOST_TEST_DEPS.
#
# SAN=1 builds everything host-side with AddressSanitizer + UBSan into build/san.

SHELL := /bin/bash
.DEFAULT_GOAL := all

SAN ?= 0
ifeq ($(SAN),1)
BUILD ?= build/san
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
OPT ?= -O1
else
BUILD ?= build
SAN_FLAGS :=
OPT ?= -O2
endif
PREFIX ?= /usr/local
# Jobs at a time, for every compile of the tree: the Verilator builds' own makes take their
# jobs from make's jobserver (their recipes start with +), so they share these JOBS with
# everything else. A -j on the command line wins; make clean alone runs serially, and a
# sub-make takes its jobs from its parent's.
JOBS ?= 2
ifeq ($(MAKELEVEL)$(filter clean,$(MAKECMDGOALS)),0)
MAKEFLAGS += -j$(JOBS)
endif
# A recipe line that starts with + runs even under make -n, -q and -t (make runs it to let a
# sub-make show what it would do); $(DRY_SKIP) in front of the Verilator builds' commands
# skips them there.
DRY_SKIP = $(if $(findstring n,$(firstword -$(MAKEFLAGS)))$(findstring q,$(firstword \
	-$(MAKEFLAGS)))$(findstring t,$(firstword -$(MAKEFLAGS))),true || )

CC := gcc
CXX := g++
PKGS := openblas yaml-0.1 libusb-1.0
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

CPPFLAGS := -Ihost -D_GNU_SOURCE
CFLAGS := -std=c11 $(OPT) -g -Wall -Wextra -Werror -MMD -MP $(SAN_FLAGS)
CXXFLAGS := -std=c++17 $(OPT) -g -Wall -Wextra -Werror -MMD -MP $(SAN_FLAGS)
LDFLAGS := $(SAN_FLAGS)
LDLIBS = $(LIB_LDLIBS) $(PKG_LIBS) -lm -lpthread

# --- host library ------------------------------------------------------------------------
LIB_DIRS := host/common host/driver host/engine host/interop host/train host/sparsity host/fwasm
LIB_SRCS := $(sort $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c)))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
LIB := $(BUILD)/lib/libcshost.a
CLI_SRCS := $(sort $(wildcard host/cli/*.c))
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/obj/%.o)
CSHOST := $(BUILD)/bin/cshost

# --- host tests ---------------------------------------------------------------------------
TEST_SRCS := $(sort $(wildcard tests/*/test_*.c))
TEST_BINS := $(TEST_SRCS:%.c=$(BUILD)/%)
TEST_SUPPORT_SRCS := $(sort $(wildcard tests/support/*.c))
TEST_SUPPORT_OBJS := $(TEST_SUPPORT_SRCS:%.c=$(BUILD)/obj/%.o)

# Fragments append to these.
LIB_EXTRA_OBJS :=
LIB_LDLIBS :=
BIN_EXTRA :=
TEST_ENTRIES :=
REGRESS_ENTRIES :=
BENCH_TARGETS :=
TEST_DEPS :=
# what the host unit tests ($(TEST_BINS)) need besides the library (make test-host)
HOST_TEST_DEPS :=
# Missing Debian packages are installed while the Makefile is read, before any rule runs:
# a `deps` prerequisite alone does not order it before every rule of the fragments under -j
# (a Verilator build once started before verilator was installed). deps.sh is idempotent
# and takes one dpkg-query when everything is present.
ifneq ($(filter-out help clean deps,$(or $(MAKECMDGOALS),all)),)
$(shell ./scripts/deps.sh >&2)
ifneq ($(.SHELLSTATUS),0)
$(error make deps failed (scripts/deps.sh, see above))
endif
endif

# --- Verilator runtime -------------------------------------------------------------------
# Every Verilated model of the tree (benches, the sim backend's shared objects) links one
# copy of Verilator's runtime, compiled here once with the flags verilated.mk gives it
# (no tracing or coverage in it; -fPIC for the shared objects) rather than once per model.
# Not under $(BUILD): SAN=1 links the same objects (Verilated code is never instrumented).
VLT_ROOT := $(or $(shell verilator --getenv VERILATOR_ROOT 2>/dev/null),/usr/share/verilator)
VLT_RT_DIR := build/verilator
VLT_RT := $(VLT_RT_DIR)/verilated.o $(VLT_RT_DIR)/verilated_threads.o
VLT_RT_CXXFLAGS := -I$(VLT_ROOT)/include -I$(VLT_ROOT)/include/vltstd -DVM_COVERAGE=0 -DVM_SC=0 \
	-DVM_TRACE=0 -DVM_TRACE_FST=0 -DVM_TRACE_VCD=0 -faligned-new -fcf-protection=none \
	-std=c++17 -O2 -fPIC
# verilator arguments: the model's make links $(VLT_RT) and compiles no runtime of its own
VLT_RT_ARGS = -MAKEFLAGS VM_GLOBAL_FAST= -MAKEFLAGS VM_GLOBAL_SLOW= $(abspath $(VLT_RT))
# (no | deps: the packages are checked while the Makefile is read, and make -q stays usable)
$(VLT_RT_DIR)/%.o: $(VLT_ROOT)/include/%.cpp
	@mkdir -p $(@D)
	$(CXX) $(VLT_RT_CXXFLAGS) -MMD -MP -c $< -o $@
-include $(wildcard $(VLT_RT_DIR)/*.d)
# $(call vlt_deps,Mdir,top,fallback): the sources a Verilated model was built from, by
# Verilator's own record of what it read (<Mdir>/V<top>__ver.d: every Verilog file and
# include it opened, and verilator_bin), so that a change rebuilds only the models that
# read it; before the first build, the fallback. A file it read that is gone rebuilds it.
# A model finds its modules through -I search paths (one module per file, named after it),
# so it reads only what it instantiates.
vlt_deps = $(if $(wildcard $(1)/V$(2)__ver.d),$(call vlt_deps_of,$(sort $(filter-out \
	$(1)/% :,$(file <$(1)/V$(2)__ver.d)))),$(3))
vlt_deps_of = $(wildcard $(1)) $(if $(filter-out $(wildcard $(1)),$(1)),FORCE)

FRAGMENTS := $(sort $(wildcard rtl/*.mk verif/*.mk host/*/*.mk fw/*.mk configs/*.mk tests/*/*.mk))
include $(FRAGMENTS)

# Keep intermediate objects (tests are built through a pattern chain).
.SECONDARY:

.PHONY: all help deps lib cshost test test-host regress bench sim lint formal train bitstream \
	synth-estimate experiment install clean FORCE

all: deps $(CSHOST) $(BIN_EXTRA)

help:
	@echo "cshost - open sparse dataflow accelerator. Targets:"
	@echo "  make deps       check for and install the Debian packages the project needs"
	@echo "  make            build the host library and build/bin/cshost"
	@echo "  make train      train the default tiny sparse GPT on the simulated mesh"
	@echo "  make test       host tests, RTL unit regressions and integration tests"
	@echo "                  (make test SAN=1: the same under ASan+UBSan); builds run"
	@echo "                  JOBS=2 jobs at a time (-jN wins), the tests TEST_JOBS at a time"
	@echo "  make test-host  the host unit tests only (tests/*/test_*.c); CI also runs"
	@echo "                  make SAN=1 test-host: them under ASan+UBSan+LeakSanitizer"
	@echo "  make regress    long sweeps: many seeds and shapes, pass/fail table"
	@echo "  make fuzz       libFuzzer targets (clang), FUZZ_S seconds each (default 180)"
	@echo "                  (make fuzz-resp-seeds: fuzz_resp's seeds from the mesh model)"
	@echo "  make bench      speed, utilization and memory measurements"
	@echo "                  parts (each a target): $(BENCH_TARGETS)" | fold -s -w 72 | sed "2,\$$s/^/                  /"
	@echo "  make experiment dense vs every sparsity workflow, 3 seeds -> docs/results.md"
	@echo "                  (QUICK=1: a few minutes, written under build/, not docs/)"
	@echo "  make sim        Verilated mesh (MESH=4x4): the forward kernel on sparse layers, then a"
	@echo "                  full training step of a small GPT (SIM_MODE=all|fwd|step) -> report.json"
	@echo "  make sim-model  build one Verilated mesh for the sim device: MESH=RxC"
	@echo "                  PE=full|lite|micro_mt [AWORDS=N BWORDS=N] (default: the PE's board)"
	@echo "  make lint       verilator --lint-only -Wall on every RTL module"
	@echo "                  (parts: lint-pe lint-mesh board-lint board-lint-mesh)"
	@echo "  make formal     proofs (ABC): FIFO, routers, config chain and host port framing, covers"
	@echo "  make pe-benches, make mesh-benches  build the RTL unit benches (run by make test)"
	@echo "  make sim-libs   build the Verilated meshes that make test's sim entries load"
	@echo "  make synth-pe   yosys iCE40 cell counts of one full-rate pe"
	@echo "  make mutate     mutation testing of the RTL checks -> build/mutate/report.md"
	@echo "                  (MUTATE_ONLY=id,id MUTATE_SEED=n MUTATE_BUDGET=s; hours, not in test)"
	@echo "  make bitstream  iCE40 UP5K bitstream (yosys + nextpnr-ice40 + icepack):"
	@echo "                  FPGA_PE=lite (default, 1x1) | micro_mt (2x2)"
	@echo "  make synth-estimate  yosys resource counts for ECP5 and Xilinx 7-series"
	@echo "  make gatesim    link bench on the yosys iCE40 netlist, compared with the RTL"
	@echo "  make gatesim-mesh  forward kernel on the bitstream's netlist, compared with the RTL"
	@echo "  make ucode      assemble rtl/pe/pe_micro.us into rtl/pe/pe_micro_rom.v"
	@echo "  make rsqrt-rom  write rtl/pe/pe_rsqrt_rom.v from nm_rsqrt_table (host/common/numerics.c)"
	@echo "  make config-doc the key tables of docs/config.md and docs/sparsity.md from the schema"
	@echo "  make lib, make cshost  the host library, the command-line tool (make builds both)"
	@echo "  make install    install cshost under PREFIX (default /usr/local)"
	@echo "  make clean      remove build/"

deps:
	@./scripts/deps.sh

lib: $(LIB)
cshost: $(CSHOST)

$(BUILD)/obj/%.o: %.c | deps
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS) $(LIB_EXTRA_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

$(CSHOST): $(CLI_OBJS) $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) -o $@ $(CLI_OBJS) $(LIB) $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TEST_SUPPORT_OBJS) $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) -o $@ $< $(TEST_SUPPORT_OBJS) $(LIB) $(LDLIBS) -lcmocka

# Host tests first, then what the fragments registered (RTL benches, integration tests).
test: deps $(TEST_BINS) $(CSHOST) $(TEST_DEPS)
	@./scripts/run-tests.sh $(BUILD)/test-logs $(TEST_BINS) $(TEST_ENTRIES)

# The host unit tests alone: what CI runs a second time under SAN=1 (the Verilated models
# they load are the plain build's, see host/driver/sim.mk).
test-host: deps $(TEST_BINS) $(CSHOST) $(HOST_TEST_DEPS)
	@./scripts/run-tests.sh $(BUILD)/test-host-logs $(TEST_BINS)

regress: deps $(TEST_BINS) $(CSHOST) $(TEST_DEPS)
	@REGRESS=1 TEST_TIMEOUT=7200 ./scripts/run-tests.sh $(BUILD)/regress-logs \
		$(TEST_BINS) $(TEST_ENTRIES) $(REGRESS_ENTRIES)

# The measurements one after another (make runs JOBS jobs: two benches side by side would
# measure each other); each part builds what it needs with the jobs as usual.
bench: deps $(CSHOST)
	@set -e; for t in $(BENCH_TARGETS); do $(MAKE) --no-print-directory $$t; done

install: $(CSHOST)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(CSHOST) $(DESTDIR)$(PREFIX)/bin/cshost

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
