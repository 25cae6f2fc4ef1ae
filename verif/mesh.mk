# verif/mesh.mk: the mesh fabric's benches, lint and formal (rtl/mesh, verif/mesh,
# verif/formal). Included by the top Makefile.
#
# Each bench is a Verilator C++ harness built into $(BUILD)/verif/mesh/<bench>; the model
# objects live in $(BUILD)/verif/mesh/<bench>.obj and are rebuilt only when an RTL file or
# the harness changes. The recipes start with + so that the C++ compiles take their jobs
# from make's jobserver (-jN bounds them all; make -n runs them too). Single-threaded model,
# linked with the shared Verilator runtime ($(VLT_RT)); its C++ at -O1: make test runs them
# for about 1.5 s in all, so the build is the cost (about a third less CPU than -O2).

MESH_RTL := $(sort $(wildcard rtl/mesh/*.v))
MESH_PE_RTL := $(sort $(wildcard rtl/pe/*.v rtl/sram/*.v))
MESH_VDIR := $(BUILD)/verif/mesh
# Each bench names only its top's file: Verilator finds the modules it instantiates in
# rtl/mesh and rtl/pe (-I), and the bench depends on what it read ($(call mesh_deps,bench,top),
# the top Makefile's vlt_deps; before the first build, every RTL file).
mesh_deps = $(call vlt_deps,$(MESH_VDIR)/$(1).obj,$(2),$(MESH_RTL) $(MESH_PE_RTL) \
	$(wildcard rtl/*/*.vh))
MESH_VFLAGS := --cc --exe --build -Wno-fatal --x-assign fast --x-initial fast --assert -DMESH_FAIRNESS \
	-MAKEFLAGS OPT_FAST=-O1 -MAKEFLAGS OPT_SLOW=-O1 -CFLAGS -std=c++17 \
	-Irtl/mesh -Irtl/pe -Iverif/mesh $(VLT_RT_ARGS)

# $(call mesh_bench,bench,top,extra verilator args,extra sources)
define mesh_bench
$(MESH_VDIR)/$(1): verif/mesh/$(1).cpp verif/mesh/tb_common.h rtl/mesh/$(2).v $(4) $(call mesh_deps,$(1),$(2)) | deps
	@mkdir -p $(MESH_VDIR)
	@rm -f $$@ # relinked every time: Verilator's make does not see the runtime objects change
	+$$(DRY_SKIP)verilator $(MESH_VFLAGS) --top-module $(2) $(3) \
		--Mdir $(MESH_VDIR)/$(1).obj -o ../$(1) \
		$(abspath verif/mesh/$(1).cpp) rtl/mesh/$(2).v $(4) >$(MESH_VDIR)/$(1).build.log 2>&1 \
		|| { tail -n 40 $(MESH_VDIR)/$(1).build.log; exit 1; }
MESH_BENCHES += $(MESH_VDIR)/$(1)
endef

# $(call mesh_bench_fabric,RxC): tb_mesh_fabric built for one shape
define mesh_bench_fabric
$(MESH_VDIR)/tb_mesh_fabric_$(1): verif/mesh/tb_mesh_fabric.cpp verif/mesh/tb_common.h rtl/mesh/mesh_fabric.v \
		$(call mesh_deps,tb_mesh_fabric_$(1),mesh_fabric) | deps
	@mkdir -p $(MESH_VDIR)
	@rm -f $$@
	+$$(DRY_SKIP)verilator $(MESH_VFLAGS) --top-module mesh_fabric \
		-GRows=$(word 1,$(subst x, ,$(1))) -GCols=$(word 2,$(subst x, ,$(1))) \
		-CFLAGS -DROWS=$(word 1,$(subst x, ,$(1))) -CFLAGS -DCOLS=$(word 2,$(subst x, ,$(1))) \
		--Mdir $(MESH_VDIR)/tb_mesh_fabric_$(1).obj -o ../tb_mesh_fabric_$(1) \
		$(abspath verif/mesh/tb_mesh_fabric.cpp) rtl/mesh/mesh_fabric.v >$(MESH_VDIR)/tb_mesh_fabric_$(1).build.log 2>&1 \
		|| { tail -n 40 $(MESH_VDIR)/tb_mesh_fabric_$(1).build.log; exit 1; }
MESH_BENCHES += $(MESH_VDIR)/tb_mesh_fabric_$(1)
endef

# $(call mesh_bench_fifo,name,depth,bypass): tb_mesh_fifo built for another configuration
# (depths >= 16 use the block-RAM storage of mesh_fifo, UseRam)
define mesh_bench_fifo
$(MESH_VDIR)/$(1): verif/mesh/tb_mesh_fifo.cpp verif/mesh/tb_common.h rtl/mesh/mesh_fifo.v \
		$(call mesh_deps,$(1),mesh_fifo) | deps
	@mkdir -p $(MESH_VDIR)
	@rm -f $$@
	+$$(DRY_SKIP)verilator $(MESH_VFLAGS) --top-module mesh_fifo -GDepth=$(2) -GBypass=$(3) \
		-CFLAGS -DFIFO_DEPTH=$(2) -CFLAGS -DFIFO_BYPASS=$(3) \
		--Mdir $(MESH_VDIR)/$(1).obj -o ../$(1) \
		$(abspath verif/mesh/tb_mesh_fifo.cpp) rtl/mesh/mesh_fifo.v >$(MESH_VDIR)/$(1).build.log 2>&1 \
		|| { tail -n 40 $(MESH_VDIR)/$(1).build.log; exit 1; }
MESH_BENCHES += $(MESH_VDIR)/$(1)
endef

# the router bench on the board's lean router (mesh_router_lean; tb_mesh_router.cpp TB_LEAN)
define mesh_bench_router_lean
$(MESH_VDIR)/tb_mesh_router_lean: verif/mesh/tb_mesh_router.cpp verif/mesh/tb_common.h rtl/mesh/mesh_router_lean.v \
		$(call mesh_deps,tb_mesh_router_lean,mesh_router_lean) | deps
	@mkdir -p $(MESH_VDIR)
	@rm -f $$@
	+$$(DRY_SKIP)verilator $(MESH_VFLAGS) --top-module mesh_router_lean -CFLAGS -DTB_LEAN \
		--Mdir $(MESH_VDIR)/tb_mesh_router_lean.obj -o ../tb_mesh_router_lean \
		$(abspath verif/mesh/tb_mesh_router.cpp) rtl/mesh/mesh_router_lean.v >$(MESH_VDIR)/tb_mesh_router_lean.build.log 2>&1 \
		|| { tail -n 40 $(MESH_VDIR)/tb_mesh_router_lean.build.log; exit 1; }
MESH_BENCHES += $(MESH_VDIR)/tb_mesh_router_lean
endef

MESH_BENCHES :=
$(eval $(call mesh_bench,tb_mesh_fifo,mesh_fifo,,))
$(eval $(call mesh_bench_fifo,tb_mesh_fifo_ram,16,0))
$(eval $(call mesh_bench_fifo,tb_mesh_fifo_ram_bypass,32,1))
$(eval $(call mesh_bench,tb_mesh_arbiter,mesh_arbiter,,))
$(eval $(call mesh_bench,tb_mesh_router,mesh_router,,))
$(eval $(call mesh_bench_router_lean))
# mesh_top with the PE test double (verif/mesh/pe_stub.v): the host-port bench checks
# command decoding and error paths with a PE whose replies it controls; the real PE behind
# the host port is covered by tests/driver/test_sim.c and verif/board (tb_board_mesh)
$(eval $(call mesh_bench,tb_mesh_hostport,mesh_top,-GRows=2 -GCols=2 -Wno-DECLFILENAME,verif/mesh/pe_stub.v))
# the same bench on mesh_top Impl "lite" (the board's host port mesh_hostport_lean and router
# mesh_router_lean), the PE test double under pe_lite's name (verif/mesh/pe_lite_stub.v)
define mesh_bench_hostport_lean
$(MESH_VDIR)/tb_mesh_hostport_lean: verif/mesh/tb_mesh_hostport.cpp verif/mesh/tb_common.h rtl/mesh/mesh_top.v \
		$(call mesh_deps,tb_mesh_hostport_lean,mesh_top) \
		verif/mesh/pe_stub.v verif/mesh/pe_lite_stub.v | deps
	@mkdir -p $(MESH_VDIR)
	@rm -f $$@
	+$$(DRY_SKIP)verilator $(MESH_VFLAGS) --top-module mesh_top -GRows=2 -GCols=2 -GImpl='"lite"' \
		-Wno-DECLFILENAME -CFLAGS -DTB_LEAN --Mdir $(MESH_VDIR)/tb_mesh_hostport_lean.obj \
		-o ../tb_mesh_hostport_lean $(abspath verif/mesh/tb_mesh_hostport.cpp) rtl/mesh/mesh_top.v \
		verif/mesh/pe_stub.v verif/mesh/pe_lite_stub.v \
		>$(MESH_VDIR)/tb_mesh_hostport_lean.build.log 2>&1 \
		|| { tail -n 40 $(MESH_VDIR)/tb_mesh_hostport_lean.build.log; exit 1; }
MESH_BENCHES += $(MESH_VDIR)/tb_mesh_hostport_lean
endef
$(eval $(call mesh_bench_hostport_lean))

# the fabric bench is built once per shape
MESH_SHAPES := 1x1 2x2 2x4 4x4 8x8
$(foreach sh,$(MESH_SHAPES),$(eval $(call mesh_bench_fabric,$(sh))))

$(MESH_BENCHES): $(VLT_RT)

# make test builds the small shapes; the 8x8 build (1-3 minutes) only for make regress
MESH_TEST_BENCHES := $(filter-out %_8x8,$(MESH_BENCHES))
TEST_DEPS += $(MESH_TEST_BENCHES)
ifneq ($(filter regress mesh-benches,$(MAKECMDGOALS)),)
TEST_DEPS += $(MESH_BENCHES)
endif
TEST_ENTRIES += $(MESH_VDIR)/tb_mesh_fifo@--seed=1 \
	$(MESH_VDIR)/tb_mesh_fifo_ram@--seed=1 \
	$(MESH_VDIR)/tb_mesh_fifo_ram_bypass@--seed=1 \
	$(MESH_VDIR)/tb_mesh_arbiter@--seed=1 \
	$(MESH_VDIR)/tb_mesh_router@--seed=1,--cycles=40000 \
	$(MESH_VDIR)/tb_mesh_router_lean@--seed=1,--cycles=40000 \
	$(MESH_VDIR)/tb_mesh_hostport@--seed=1,--cycles=60000 \
	$(MESH_VDIR)/tb_mesh_hostport_lean@--seed=1,--cycles=60000 \
	$(foreach sh,1x1 2x2 2x4 4x4,$(MESH_VDIR)/tb_mesh_fabric_$(sh)@--seed=1,--cycles=20000)
REGRESS_ENTRIES += $(foreach s,2 3 4 5 6 7 8 9,$(MESH_VDIR)/tb_mesh_fifo@--seed=$(s),--cycles=200000) \
	$(foreach s,2 3 4 5 6 7 8 9,$(MESH_VDIR)/tb_mesh_arbiter@--seed=$(s),--cycles=200000) \
	$(foreach s,2 3 4 5 6 7 8 9,$(MESH_VDIR)/tb_mesh_router@--seed=$(s),--cycles=400000) \
	$(foreach s,2 3 4 5,$(MESH_VDIR)/tb_mesh_router_lean@--seed=$(s),--cycles=200000) \
	$(foreach sh,$(MESH_SHAPES),$(foreach s,2 3 4 5,$(MESH_VDIR)/tb_mesh_fabric_$(sh)@--seed=$(s),--cycles=200000))

.PHONY: mesh-benches
mesh-benches: $(MESH_BENCHES)

# ---- make lint: verilator --lint-only -Wall on every rtl/mesh module as its own top
# (other areas hang their own lint on lint); mesh_top and mesh_tile with the real PEs.
LINT_MESH_TOPS := $(basename $(notdir $(MESH_RTL)))
.PHONY: lint-mesh
lint: lint-mesh
lint-mesh:
	@mkdir -p $(BUILD); fail=0; for t in $(LINT_MESH_TOPS); do \
		if verilator --lint-only -Wall -Irtl/mesh -Irtl/pe -Irtl/sram verif/lint_waivers.vlt \
			$(MESH_RTL) $(MESH_PE_RTL) --top-module $$t >$(BUILD)/lint-$$t.log 2>&1; then \
			echo "lint ok   $$t"; else echo "lint FAIL $$t"; cat $(BUILD)/lint-$$t.log; fail=1; fi; \
	done; exit $$fail

# ---- make formal: yosys + yosys-abc proofs (verif/formal/mesh_formal.sh)
.PHONY: formal-mesh
formal: formal-mesh
formal-mesh:
	@./verif/formal/mesh_formal.sh $(BUILD)/formal/mesh

# make test runs the proofs too (about 2 minutes on an idle 2-core machine, two jobs at a
# time; one test, passed iff every proof passes and every deliberately broken property fails)
TEST_ENTRIES += verif/formal/mesh_formal.sh@$(BUILD)/formal/mesh
