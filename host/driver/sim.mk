# host/driver/sim.mk: the sim backend (backend_sim.c) and its Verilated mesh builds.
#
# The mesh shape, SRAM sizes and PE implementation are Verilog parameters, so each (shape,
# sizes, implementation) is its own shared object $(SIM_DIR)/libmesh_RxC.so (pe=full,
# default sizes 16384/8192) or libmesh_RxC_aA_bB[_lite|_micro_mt].so, made by
# host/driver/sim_build.sh (Verilator + sim_harness.cpp + the shared Verilator runtime; the
# recipe starts with + so that its compiles take their jobs from make's jobserver) and
# dlopened by the backend. Only make builds them: `make sim-model
# MESH=RxC PE=full|lite|micro_mt AWORDS=N BWORDS=N`, and every target that runs one lists
# it as a prerequisite; the backend reports a missing or stale one with that command.
# Rebuilt only when the RTL, the harness or the implementation's parameters change.
# The word-level C model of the device (verif/models/mesh_model.c, pe_model.c) is the
# backend's "model" engine (sim:RxC,model) and goes into the library.

# Shared by the SAN build: the Verilated model is not host code and is compiled the same way
# either way, so SAN=1 loads the same objects (no second set of Verilator builds). Under
# SAN=1 the driver, the harness's callers and the device model are instrumented; the
# Verilated C++ inside the shared objects is not (its allocations are still tracked by
# LSan through the interposed operator new). test_sim and the cshost sim runs pass clean.
SIM_DIR ?= build/sim
SIM_RTL := $(sort $(wildcard rtl/mesh/*.v rtl/pe/*.v rtl/sram/*.v))
SIM_SO_DEPS := $(SIM_RTL) $(wildcard rtl/*/*.vh) host/driver/sim_harness.cpp \
	host/driver/sim_harness.h host/driver/sim_build.sh

LIB_EXTRA_OBJS += $(BUILD)/obj/verif/models/pe_model.o $(BUILD)/obj/verif/models/mesh_model.o
LIB_LDLIBS += -ldl

$(BUILD)/obj/host/driver/backend_sim.o: CPPFLAGS += -DCSD_SIM_ROOT='"$(CURDIR)"' \
	-DCSD_SIM_BUILD='"$(abspath $(SIM_DIR))"'

# The PE implementations that ship (csd.h pe=), each mesh_top's Impl of the same name
# (sim_build.sh passes it), and their other mesh_top parameters. full is mesh_top's
# defaults (pe with mesh_router; it fits no board). lite (pe_lite: the default 1x1
# bitstream) and micro_mt (pe_micro_mt: the 2x2 one) take the queue parameters
# verif/board.mk gives board_top for the bitstreams (FPGA_QPARAMS, read from there, so the
# simulated mesh and the bitstream cannot drift apart). FifoDepth and CollectDepth are
# mesh_top's defaults in both. Default SRAM sizes: the bitstreams' (csd.c csd_pe_impls).
SIM_PES := full lite micro_mt
SIM_GPARAMS_full :=
SIM_GPARAMS_lite = $(FPGA_QPARAMS)
SIM_GPARAMS_micro_mt = $(FPGA_QPARAMS)
SIM_AWORDS_full := 16384
SIM_BWORDS_full := 8192
SIM_AWORDS_lite := 32768
SIM_BWORDS_lite := 512
SIM_AWORDS_micro_mt := 8192
SIM_BWORDS_micro_mt := 4096

# $(call sim_so,RxC,PE,AWORDS,BWORDS[,fst]): the path of a model (backend_sim.c model_path)
sim_so = $(SIM_DIR)/libmesh_$(1)$(if $(and $(filter full,$(2)),$(filter 16384,$(3)),$(filter \
	8192,$(4))),,_a$(3)_b$(4))$(if $(filter-out full,$(2)),_$(2))$(if $(5),_fst).so

# Each implementation's parameters, rewritten only when they change (a changed board
# configuration rebuilds its models). A static pattern rule: the files are explicit targets,
# so the model rules below that need one apply even before it exists (an implicit
# prerequisite that does not exist yet would let the full rule take every model).
$(foreach pe,$(SIM_PES),$(SIM_DIR)/params_$(pe).txt): $(SIM_DIR)/params_%.txt: FORCE
	@mkdir -p $(@D)
	@echo "$(SIM_GPARAMS_$*)" >$@.new
	@cmp -s $@.new $@ && rm $@.new || mv $@.new $@

# libmesh_<R>x<C>[_a<A>_b<B>][_<pe>][_fst].so; _fst: the same with --trace-fst (a separate
# cached build, made only when a waveform is asked for: TRACE=1). The longer patterns win
# (make picks the shortest stem), so each file has one rule.
sim_dims = $(subst _, ,$(subst x, ,$(1)))
sim_build_args = $(word 1,$(call sim_dims,$(1))) $(word 2,$(call sim_dims,$(1))) \
	$(or $(patsubst a%,%,$(word 3,$(call sim_dims,$(1)))),$(SIM_AWORDS_$(2))) \
	$(or $(patsubst b%,%,$(word 4,$(call sim_dims,$(1)))),$(SIM_BWORDS_$(2)))
# $(call sim_so_rule,file suffix,pe,fst|plain)
define sim_so_rule
$(SIM_DIR)/libmesh_%$(1).so: $(SIM_SO_DEPS) $(SIM_DIR)/params_$(2).txt $(VLT_RT) | deps
	@mkdir -p $$(@D)
	+$$(DRY_SKIP)VLT_RT="$(abspath $(VLT_RT))" ./host/driver/sim_build.sh $$@ $$(call sim_build_args,$$*,$(2)) $(2) $(3) $$(SIM_GPARAMS_$(2))
endef
$(eval $(call sim_so_rule,,full,plain))
$(eval $(call sim_so_rule,_fst,full,fst))
$(foreach pe,lite micro_mt,$(eval $(call sim_so_rule,_$(pe),$(pe),plain)) \
	$(eval $(call sim_so_rule,_$(pe)_fst,$(pe),fst)))

# make sim-model MESH=RxC PE=full|lite|micro_mt [AWORDS=N BWORDS=N] [TRACE=1]: build one
# model (the command the sim backend names when one is missing or stale). The sizes
# default to the implementation's: `make sim-model MESH=1x1 PE=lite` is the default
# bitstream's mesh, `make sim-model MESH=2x2 PE=micro_mt` the 2x2 board's.
MESH ?= 4x4
PE ?= full
AWORDS ?= $(SIM_AWORDS_$(PE))
BWORDS ?= $(SIM_BWORDS_$(PE))
TRACE ?= 0
ifneq ($(filter sim sim-model,$(MAKECMDGOALS)),)
ifeq ($(filter $(PE),$(SIM_PES)),)
$(error PE=$(PE): want one of $(SIM_PES))
endif
endif
SIM_MODEL := $(call sim_so,$(MESH),$(PE),$(AWORDS),$(BWORDS),$(filter 1,$(TRACE)))
.PHONY: sim-model
sim-model: $(SIM_MODEL)
	@echo "sim-model: $(SIM_MODEL) (sim:$(MESH),pe=$(PE),awords=$(AWORDS),bwords=$(BWORDS))"

# the default set; tests use small SRAMs (fast to simulate, and they force tiling)
SIM_DEFAULT_SHAPES := 1x1 2x2 2x3 4x4
SIM_TEST_SOS := $(foreach s,1x1 2x3,$(SIM_DIR)/libmesh_$(s)_a512_b256.so)
SIM_REGRESS_SOS := $(SIM_DIR)/libmesh_2x2_a512_b256.so
SIM_SOS := $(foreach s,$(SIM_DEFAULT_SHAPES),$(SIM_DIR)/libmesh_$(s).so)

.PHONY: sim-libs
sim-libs: $(SIM_SOS) $(SIM_TEST_SOS) $(SIM_REGRESS_SOS)

# tests/driver/test_sim.c: cpu vs sim (model engine, and the Verilated builds above)
$(BUILD)/obj/tests/driver/test_sim.o: CPPFLAGS += -DSIM_TEST_DIR='"$(abspath $(SIM_DIR))"'
TEST_DEPS += $(SIM_TEST_SOS)
# The shipping board implementations in their bitstreams' configurations: the default 1x1
# pe_lite bitstream and the 2x2 pe_micro_mt one (test_sim's kernels, test_train_device's
# cpu-vs-sim training steps). test_sim checks that the backend's pe=lite default is the
# model make builds for verif/board.mk's default board configuration (FPGA_*: read when the
# recipe runs, after board.mk) and pe=micro_mt's the 2x2 board's.
SIM_BOARD_SOS := $(call sim_so,1x1,lite,32768,512) $(call sim_so,2x2,micro_mt,8192,4096)
TEST_DEPS += $(SIM_BOARD_SOS)
$(BUILD)/obj/tests/driver/test_sim.o: CPPFLAGS += -DSIM_BOARD_LITE_SO='"$(abspath $(call \
	sim_so,$(FPGA_ROWS)x$(FPGA_COLS),lite,$(FPGA_AWORDS),$(FPGA_BWORDS)))"' \
	-DSIM_BOARD_MT_SO='"$(abspath $(call sim_so,2x2,micro_mt,8192,4096))"'
$(BUILD)/obj/tests/driver/test_sim.o: host/driver/sim.mk
# the 2x2 default build: make train's mesh, and test_train_device's cpu-vs-sim training steps
TEST_DEPS += $(SIM_DIR)/libmesh_2x2.so
# the resident training step on pe_lite (test_train_resident): the default bitstream's A
# and the least B a power of two that holds a step of its tiny model (its 512 words hold none)
SIM_RESIDENT_LITE_SO := $(call sim_so,1x1,lite,32768,2048)
TEST_DEPS += $(SIM_RESIDENT_LITE_SO)
# the models the host unit tests load (test_sim, test_estimate, test_train_device, the
# resident tests): make test-host
HOST_TEST_DEPS += $(SIM_TEST_SOS) $(SIM_BOARD_SOS) $(SIM_DIR)/libmesh_2x2.so \
	$(SIM_DIR)/libmesh_4x4.so $(SIM_RESIDENT_LITE_SO)
ifneq ($(filter regress,$(MAKECMDGOALS)),)
TEST_DEPS += $(SIM_REGRESS_SOS)
endif

# cshost spmm on the Verilated mesh (default SRAM sizes: run-tests.sh splits arguments at
# commas, so these use --mesh), checked bit for bit against the cpu model
TEST_DEPS += $(SIM_DIR)/libmesh_4x4.so
TEST_ENTRIES += $(CSHOST)@spmm,--device,sim,--mesh,4x4,--tokens,45,--k,70,--n,90,--sparsity,0.8,--kernel,fwd,--json
TEST_ENTRIES += $(CSHOST)@spmm,--device,sim,--mesh,4x4,--tokens,33,--k,50,--n,40,--sparsity,0.5,--kernel,bwd,--json
TEST_ENTRIES += $(CSHOST)@spmm,--device,sim,--mesh,4x4,--tokens,20,--k,30,--n,300,--sparsity,0.9,--kernel,wgrad,--json
TEST_ENTRIES += $(CSHOST)@spmm,--device,sim,--mesh,4x4,--tokens,45,--k,70,--n,90,--sparsity,0.9,--kernel,bwg,--json

# make bench: backend overhead over the raw Verilated model, simulated PE-cycles per second
SIM_BENCH := $(BUILD)/bench/bench_sim
$(BUILD)/obj/host/driver/bench/bench_sim.o: CPPFLAGS += -DBENCH_SIM_DIR='"$(abspath $(SIM_DIR))"'
$(SIM_BENCH): $(BUILD)/obj/host/driver/bench/bench_sim.o $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

.PHONY: bench-sim
bench-sim: $(SIM_BENCH) $(SIM_DIR)/libmesh_4x4.so
	$(SIM_BENCH) $(BUILD)/bench/sim.json

BENCH_TARGETS += bench-sim

# make regress: test_sim runs its long sweeps (REGRESS=1: ~8,400 cpu-vs-sim cases), plus
# larger layers on the 4x4 default build
REGRESS_ENTRIES += $(foreach k,fwd bwd wgrad,$(CSHOST)@spmm,--device,sim,--mesh,4x4,--tokens,200,--k,160,--n,300,--sparsity,0.9,--kernel,$(k),--seed,7,--json)

# make sim: the Verilated mesh (MESH=RxC, default 4x4; PE=lite|micro_mt [AWORDS, BWORDS]:
# that implementation's mesh, as make sim-model) runs the forward kernel on random
# sparse layers (SIM_TOKENS x SIM_K -> SIM_N) at several sparsities, every output checked
# bit-exactly against the C model; table + $(BUILD)/sim/report.json.
# TRACE=1 make sim: the same on the --trace-fst build, writing $(BUILD)/sim/wave_s<S>.fst
# per sparsity: the first TRACE_CYCLES cycles of each run (0: all of it; a full dense run
# is about 8.5M cycles and several GB of FST).
SIM_TOKENS ?= 512
SIM_K ?= 256
SIM_N ?= 1024
SIM_SPARSITIES ?= 0 0.5 0.8 0.9 0.95

TRACE_CYCLES ?= 200000
# PE=lite|micro_mt (and AWORDS/BWORDS): the same on that implementation's mesh
comma := ,
SIM_DEVICE := $(MESH)$(if $(filter-out $(SIM_DIR)/libmesh_.so,$(call sim_so,,$(PE),$(AWORDS),$(BWORDS))),$(comma)pe=$(PE)$(comma)awords=$(AWORDS)$(comma)bwords=$(BWORDS))
# Then (SIM_MODE=all, the default; fwd: the kernel only, step: the step only) the
# training-step mode (scripts/sim-step.py): one full training step of a small GPT
# (SIM_STEP_MODEL, cshost trainstep options) on the same mesh at SIM_SPARSITIES, bit-exact
# against the cpu backend, the same for the resident step (device.resident; skipped with
# the config error on a mesh that cannot run it), plus the cpu estimate of the issue-sized
# model on the 4x4 and the 2x2 board configuration; merged into report.json as "train_step".
SIM_MODE ?= all
SIM_STEP_MODEL ?= --layers 2 --embd 64 --heads 4 --batch 4 --ctx 64
sim: deps $(CSHOST) $(SIM_MODEL)
	$(if $(filter all fwd,$(SIM_MODE)),TRACE=$(TRACE) TRACE_CYCLES=$(TRACE_CYCLES) ./scripts/sim-report.sh $(CSHOST) $(BUILD)/sim $(SIM_DEVICE) $(SIM_TOKENS) $(SIM_K) $(SIM_N) \
		"$(SIM_SPARSITIES)")
	$(if $(filter all step,$(SIM_MODE)),nice python3 ./scripts/sim-step.py $(CSHOST) $(BUILD)/sim $(SIM_DEVICE) \
		"$(SIM_SPARSITIES)" "$(SIM_STEP_MODEL)")
