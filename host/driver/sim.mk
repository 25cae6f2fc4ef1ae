# host/driver/sim.mk: the sim backend (backend_sim.c) and its Verilated mesh builds.
#
# The mesh shape and SRAM sizes are Verilog parameters, so each (shape, sizes) is its own
# shared object $(BUILD)/sim/libmesh_RxC.so (default sizes 16384/8192) or
# libmesh_RxC_aA_bB.so, made by host/driver/sim_build.sh (Verilator + sim_harness.cpp,
# one build at a time under the verilator lock) and dlopened by the backend, which also
# builds a missing or stale one on demand. Rebuilt only when the RTL or the harness changes.
# The word-level C model of the device (verif/models/mesh_model.c, pe_model.c) is the
# backend's "model" engine (sim:RxC,model) and goes into the library.

# Shared by the SAN build: the Verilated model is not host code and is compiled the same way
# either way, so SAN=1 loads the same objects (no second set of Verilator builds). Under
# SAN=1 the driver, the harness's callers and the device model are instrumented; the
# Verilated C++ inside the shared objects is not (its allocations are still tracked by
# LSan through the interposed operator new). test_sim and the cshost sim runs pass clean.
SIM_DIR ?= build/sim
SIM_RTL := $(sort $(wildcard rtl/mesh/*.v rtl/pe/*.v rtl/sram/*.v))
SIM_SO_DEPS := $(SIM_RTL) host/driver/sim_harness.cpp host/driver/sim_harness.h \
	host/driver/sim_build.sh

LIB_EXTRA_OBJS += $(BUILD)/obj/verif/models/pe_model.o $(BUILD)/obj/verif/models/mesh_model.o
LIB_LDLIBS += -ldl

$(BUILD)/obj/host/driver/backend_sim.o: CPPFLAGS += -DCSD_SIM_ROOT='"$(CURDIR)"' \
	-DCSD_SIM_BUILD='"$(abspath $(SIM_DIR))"'

# libmesh_<R>x<C>[_a<A>_b<B>].so, and libmesh_<...>_fst.so: the same with --trace-fst (a
# separate cached build, made only when a waveform is asked for: TRACE=1 make sim)
sim_dims = $(subst _, ,$(subst x, ,$(1)))
$(SIM_DIR)/libmesh_%_fst.so: $(SIM_SO_DEPS) | deps
	@mkdir -p $(@D)
	./host/driver/sim_build.sh $@ $(word 1,$(call sim_dims,$*)) $(word 2,$(call sim_dims,$*)) \
		$(if $(word 3,$(call sim_dims,$*)),$(patsubst a%,%,$(word 3,$(call sim_dims,$*))),16384) \
		$(if $(word 4,$(call sim_dims,$*)),$(patsubst b%,%,$(word 4,$(call sim_dims,$*))),8192) fst

$(SIM_DIR)/libmesh_%.so: $(SIM_SO_DEPS) | deps
	@mkdir -p $(@D)
	./host/driver/sim_build.sh $@ $(word 1,$(call sim_dims,$*)) $(word 2,$(call sim_dims,$*)) \
		$(if $(word 3,$(call sim_dims,$*)),$(patsubst a%,%,$(word 3,$(call sim_dims,$*))),16384) \
		$(if $(word 4,$(call sim_dims,$*)),$(patsubst b%,%,$(word 4,$(call sim_dims,$*))),8192)

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
# the 2x2 default build: make train's mesh, and test_train_device's cpu-vs-sim training steps
TEST_DEPS += $(SIM_DIR)/libmesh_2x2.so
ifneq ($(filter regress,$(MAKECMDGOALS)),)
TEST_DEPS += $(SIM_REGRESS_SOS)
endif

# cshost spmm on the Verilated mesh (default SRAM sizes: run-tests.sh splits arguments at
# commas, so these use --mesh), checked bit for bit against the cpu model
TEST_DEPS += $(SIM_DIR)/libmesh_4x4.so
TEST_ENTRIES += $(CSHOST)@spmm,--device,sim,--mesh,4x4,--tokens,45,--k,70,--n,90,--sparsity,0.8,--kernel,fwd,--json
TEST_ENTRIES += $(CSHOST)@spmm,--device,sim,--mesh,4x4,--tokens,33,--k,50,--n,40,--sparsity,0.5,--kernel,bwd,--json
TEST_ENTRIES += $(CSHOST)@spmm,--device,sim,--mesh,4x4,--tokens,20,--k,30,--n,300,--sparsity,0.9,--kernel,wgrad,--json

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

# make sim: the Verilated mesh (MESH=RxC, default 4x4) runs the forward kernel on random
# sparse layers (SIM_TOKENS x SIM_K -> SIM_N) at several sparsities, every output checked
# bit-exactly against the C model; table + $(BUILD)/sim/report.json.
# TRACE=1 make sim: the same on the --trace-fst build, writing $(BUILD)/sim/wave_s<S>.fst
# per sparsity: the first TRACE_CYCLES cycles of each run (0: all of it; a full dense run
# is about 8.5M cycles and several GB of FST).
MESH ?= 4x4
SIM_TOKENS ?= 512
SIM_K ?= 256
SIM_N ?= 1024
SIM_SPARSITIES ?= 0 0.5 0.8 0.9 0.95
.PHONY: sim-impl
TRACE ?= 0
TRACE_CYCLES ?= 200000
sim-impl: $(CSHOST) $(if $(filter 1,$(TRACE)),$(SIM_DIR)/libmesh_$(MESH)_fst.so)
	TRACE=$(TRACE) TRACE_CYCLES=$(TRACE_CYCLES) ./scripts/sim-report.sh $(CSHOST) $(BUILD)/sim $(MESH) $(SIM_TOKENS) $(SIM_K) $(SIM_N) \
		"$(SIM_SPARSITIES)"
