# verif/board.mk - the board top (rtl/board): link and kernel benches on the RTL and on the
# yosys iCE40 netlist, and the FPGA flow (make bitstream, make synth-estimate, make gatesim,
# make gatesim-mesh).
#
# The bench drives board_top with the host's framing code (host/driver/frame.c) over a
# bit-level UART model: with the echo test double verif/board/board_echo_double.v
# (BOARD_ECHO_DOUBLE: tb_board_link, and the link-loopback bitstream FPGA_PORT=echo), or with
# the mesh (tb_board_mesh, tb_board_lean, tb_board_lean_gl: the driver's planner runs the
# forward kernel through the link). make bitstream builds the mesh in the board
# configuration (FPGA_* below).

BOARD_RTL := $(sort $(wildcard rtl/board/*.v))
BOARD_DOUBLE := verif/board/board_echo_double.v
BOARD_OUT := $(BUILD)/verif/board
BOARD_CLK_HZ ?= 21000000
BOARD_BAUD ?= 3000000
BOARD_TB := verif/board/tb_board_link.cpp
BOARD_TB_CFLAGS := -std=c++17 -I$(abspath host) -DTB_CLK_HZ=$(BOARD_CLK_HZ) -DTB_BAUD=$(BOARD_BAUD)
# Verilator C++ at -O2 (toolchain notes: faster than the default -Os), -O1 for the code it
# marks slow (run once: half the C++, half the build time at -O1), no threads, linked
# with the shared Verilator runtime ($(VLT_RT)). The RTL's `ifdef FORMAL assertions are
# checked during the bench too (--assert -DFORMAL). The RTL benches' recipes start with + so
# that the C++ compiles take their jobs from make's jobserver (make -n runs them too).
BOARD_VFLAGS := --cc --exe --build -Wno-fatal --top-module board_top -Irtl/pe \
	-MAKEFLAGS OPT_FAST=-O2 -MAKEFLAGS OPT_SLOW=-O1 \
	-GClkHz=$(BOARD_CLK_HZ) -GBaud=$(BOARD_BAUD) $(VLT_RT_ARGS)
ICE40_CELLS := $(shell yosys-config --datdir 2>/dev/null || echo /usr/share/yosys)/ice40/cells_sim.v

# The mesh replaces the echo double as soon as it is in the tree (FPGA_PORT=echo still builds
# the link-loopback bitstream, useful to bring up a board).
MESH_SRCS := $(sort $(wildcard rtl/mesh/*.v rtl/pe/*.v rtl/sram/*.v))
# The board configuration (docs/implementations.md, "Boards"): what fits the UP5K. FPGA_PE is
# mesh_top's Impl: lite (pe_lite, the default 1x1 bitstream) or micro_mt (one pe_micro_mt
# for the PEs of the 2x2 bitstream; AWords must be 2 * BWords); the shape and SRAM sizes
# default to that implementation's board. The ISA, the numerics and the host protocol are
# those of every implementation.
FPGA := build/fpga
FPGA_PE ?= lite
# rows cols AWords BWords of each implementation's board
FPGA_BOARD_lite := 1 1 32768 512
FPGA_BOARD_micro_mt := 2 2 8192 4096
ifeq ($(FPGA_BOARD_$(FPGA_PE)),)
$(error FPGA_PE=$(FPGA_PE): want lite or micro_mt)
endif
FPGA_ROWS ?= $(word 1,$(FPGA_BOARD_$(FPGA_PE)))
FPGA_COLS ?= $(word 2,$(FPGA_BOARD_$(FPGA_PE)))
FPGA_AWORDS ?= $(word 3,$(FPGA_BOARD_$(FPGA_PE)))
FPGA_BWORDS ?= $(word 4,$(FPGA_BOARD_$(FPGA_PE)))
FPGA_QUEUES ?= 4
FPGA_QDEPTH ?= 2
# the board's queue parameters, then with the implementation (-G arguments of board_top)
FPGA_QPARAMS := -GNumQueues=$(FPGA_QUEUES) -GQueueDepth=$(FPGA_QDEPTH)
FPGA_GPARAMS := $(FPGA_QPARAMS) -GImpl='"$(FPGA_PE)"'
FPGA_PORT ?= mesh
ifeq ($(FPGA_PORT),mesh)
FPGA_SRCS := $(BOARD_RTL) $(MESH_SRCS)
FPGA_DEFS :=
FPGA_PES := $(shell echo $$(( $(FPGA_ROWS) * $(FPGA_COLS) )))
else
FPGA_SRCS := $(BOARD_RTL) $(BOARD_DOUBLE)
FPGA_DEFS := -DBOARD_ECHO_DOUBLE
FPGA_PES := 0
endif

$(BOARD_OUT)/frame.o: host/driver/frame.c host/driver/frame.h
	@mkdir -p $(@D)
	gcc -std=c11 -O2 -Wall -Wextra -Werror -Ihost -c $< -o $@

# RTL bench (Verilator keeps its objects in $(BOARD_OUT)/rtl; rebuilt only when inputs change)
$(BOARD_OUT)/tb_board_link: $(BOARD_RTL) $(BOARD_DOUBLE) $(BOARD_TB) $(BOARD_OUT)/frame.o $(VLT_RT) \
		| deps
	@mkdir -p $(BOARD_OUT)/rtl
	@rm -f $@ # relinked: Verilator's make does not see $(VLT_RT) or frame.o change
	+$(DRY_SKIP)verilator $(BOARD_VFLAGS) --assert -DFORMAL -DBOARD_ECHO_DOUBLE -Mdir $(BOARD_OUT)/rtl \
		-CFLAGS "$(BOARD_TB_CFLAGS)" -o $(abspath $@) \
		$(abspath $(BOARD_TB)) $(abspath $(BOARD_OUT)/frame.o) $(BOARD_RTL) $(BOARD_DOUBLE) \
		>$(BOARD_OUT)/rtl-build.log 2>&1 || { tail -30 $(BOARD_OUT)/rtl-build.log; exit 1; }

# Gate level: the netlist yosys synthesizes for the iCE40 (same script as the bitstream), on
# yosys's cell models; the PLL cell gets a pass-through model (board_gl_pll_model.v).
$(BOARD_OUT)/gl/board_top_gl.v: $(BOARD_RTL) $(BOARD_DOUBLE) | deps
	@mkdir -p $(@D)
	yosys -q -l $(BOARD_OUT)/gl/yosys.log -p "read_verilog -sv -DBOARD_ECHO_DOUBLE \
		$(BOARD_RTL) $(BOARD_DOUBLE); synth_ice40 -dsp -top board_top; \
		write_verilog -noattr $@"
$(BOARD_OUT)/gl/cells_sim_nopll.v: $(ICE40_CELLS)
	@mkdir -p $(@D)
	sed '/^module SB_PLL40_PAD (/,/^endmodule/d' $< >$@
$(BOARD_OUT)/tb_board_link_gl: $(BOARD_OUT)/gl/board_top_gl.v $(BOARD_OUT)/gl/cells_sim_nopll.v \
		verif/board/board_gl_pll_model.v $(BOARD_TB) $(BOARD_OUT)/frame.o
	@mkdir -p $(BOARD_OUT)/gl/obj
	@rm -f $@
	verilator --cc --exe --build -j 2 -Wno-fatal -Wno-lint -Wno-style --top-module board_top \
		-MAKEFLAGS OPT_FAST=-O2 -MAKEFLAGS OPT_GLOBAL=-O2 \
		-DNO_ICE40_DEFAULT_ASSIGNMENTS -DICE40_U --no-timing \
		-Mdir $(BOARD_OUT)/gl/obj -CFLAGS "$(BOARD_TB_CFLAGS) -O2 -DTB_GATE" -o $(abspath $@) \
		$(abspath $(BOARD_TB)) $(abspath $(BOARD_OUT)/frame.o) \
		$(BOARD_OUT)/gl/board_top_gl.v $(BOARD_OUT)/gl/cells_sim_nopll.v \
		verif/board/board_gl_pll_model.v \
		>$(BOARD_OUT)/gl/build.log 2>&1 || { tail -30 $(BOARD_OUT)/gl/build.log; exit 1; }

.PHONY: gatesim board-lint
# Runs the link bench on the netlist and on the RTL and compares the device's transcript
# (every byte it sent, with its cycle).
gatesim: $(BOARD_OUT)/tb_board_link_gl $(BOARD_OUT)/tb_board_link
	$(BOARD_OUT)/tb_board_link_gl --words=4096 | tee $(BOARD_OUT)/gatesim-gl.log
	$(BOARD_OUT)/tb_board_link --words=4096 >$(BOARD_OUT)/gatesim-rtl.log
	@a=$$(grep '^device transcript' $(BOARD_OUT)/gatesim-gl.log); \
	b=$$(grep '^device transcript' $(BOARD_OUT)/gatesim-rtl.log); \
	if [ -n "$$a" ] && [ "$$a" = "$$b" ]; then echo "gatesim: netlist matches RTL ($$a)"; \
	else echo "gatesim: MISMATCH netlist '$$a' rtl '$$b'"; exit 1; fi

board-lint:
	verilator --lint-only -Wall -DBOARD_ECHO_DOUBLE --top-module board_top $(BOARD_RTL) $(BOARD_DOUBLE)

# make lint: each area adds its lint target as a prerequisite (no recipe here, so fragments
# do not override each other).
lint: board-lint

# The board top with the mesh in the board configuration (trimmed routers), 1x1 and 2x2.
.PHONY: board-lint-mesh
board-lint-mesh:
	for cfg in "1 1 32768 512 lite" "2 2 16384 512 lite" "2 2 8192 4096 micro_mt"; do \
	set -- $$cfg; \
	verilator --lint-only -Wall --top-module board_top -Irtl/pe -GRows=$$1 -GCols=$$2 \
		-GAWords=$$3 -GBWords=$$4 $(FPGA_QPARAMS) -GImpl="\"$$5\"" \
		verif/lint_waivers.vlt $(BOARD_RTL) $(MESH_SRCS) || exit 1; done
lint: board-lint-mesh

# The link bench on board_top with the real mesh: the link phases, SRAM A written and read
# back on every PE, then the forward kernel on a small sparse layer, planned by the host
# driver (host/driver/plan.c, linked from the host library) and checked bit for bit against
# the cpu backend. tb_board_mesh: 2x2 in the default (simulation) PE configuration;
# tb_board_lean: the board configuration that `make bitstream` builds (FPGA_* below).
# Each bench links straight to its path (-o by absolute name): a copy of Verilator's
# executable next to its object directory would be found by that make's VPATH (..) and
# taken as up to date after a change to the host library only.
# $(call board_mesh_bench,name,rows,cols,awords,bwords,extra -G parameters)
define board_mesh_bench
$(BOARD_OUT)/$(1): $(BOARD_RTL) $(MESH_SRCS) $(BOARD_TB) $(LIB) $(VLT_RT) | deps
	@mkdir -p $(BOARD_OUT)/$(1).obj
	@rm -f $$@ # relinked: Verilator's make does not see $(LIB) or $(VLT_RT) change
	+$$(DRY_SKIP)verilator $(BOARD_VFLAGS) -GRows=$(2) -GCols=$(3) -GAWords=$(4) -GBWords=$(5) $(6) \
		-Mdir $(BOARD_OUT)/$(1).obj -CFLAGS "$(BOARD_TB_CFLAGS) -DTB_REAL_PORT \
		-DTB_PES=$(2)*$(3) -DTB_ROWS=$(2) -DTB_COLS=$(3) -DTB_AWORDS=$(4) \
		-DTB_BWORDS=$(5)" -LDFLAGS "$(abspath $(LIB)) $$(LDLIBS)" \
		-o $$(abspath $$@) $(abspath $(BOARD_TB)) verif/lint_waivers.vlt $(BOARD_RTL) $(MESH_SRCS) \
		>$(BOARD_OUT)/$(1).build.log 2>&1 || { tail -30 $(BOARD_OUT)/$(1).build.log; exit 1; }
endef
$(eval $(call board_mesh_bench,tb_board_mesh,2,2,1024,256,))
$(eval $(call board_mesh_bench,tb_board_lean,$(FPGA_ROWS),$(FPGA_COLS),$(FPGA_AWORDS),$(FPGA_BWORDS),$(FPGA_GPARAMS)))
# lite at 2x2 (A 16K elements): the lean routers' unregistered links, edge routes and a
# 4-stage lean config chain with real PEs
$(eval $(call board_mesh_bench,tb_board_lean_2x2,2,2,16384,512,$(FPGA_QPARAMS) -GImpl='"lite"'))
# the 2x2 board: one pe_micro_mt runs the four PEs, A + B in one 16K x 16 memory per PE
# (AWords 8192, BWords 4096: one UP5K SPRAM each)
$(eval $(call board_mesh_bench,tb_board_mt_2x2,2,2,8192,4096,$(FPGA_QPARAMS) -GImpl='"micro_mt"'))
# the included files (PE port list, router assertions)
$(BOARD_OUT)/tb_board_mesh $(BOARD_OUT)/tb_board_lean $(BOARD_OUT)/tb_board_lean_2x2 \
	$(BOARD_OUT)/tb_board_mt_2x2 $(FPGA)/board_top.json: $(wildcard rtl/pe/*.vh rtl/mesh/*.vh)
# rebuilt when the board configuration changes ($(FPGA)/config.txt is rewritten only then)
$(BOARD_OUT)/tb_board_lean $(BOARD_OUT)/tb_board_lean_2x2 $(BOARD_OUT)/tb_board_mt_2x2: \
	$(FPGA)/config.txt
TEST_DEPS += $(BOARD_OUT)/tb_board_mesh $(BOARD_OUT)/tb_board_lean $(BOARD_OUT)/tb_board_lean_2x2 \
	$(BOARD_OUT)/tb_board_mt_2x2
TEST_ENTRIES += $(BOARD_OUT)/tb_board_mesh $(BOARD_OUT)/tb_board_lean $(BOARD_OUT)/tb_board_lean_2x2 \
	$(BOARD_OUT)/tb_board_mt_2x2

# Gate level of what `make bitstream` builds: the very netlist nextpnr places
# ($(FPGA)/board_top.json, yosys synth_ice40 -dsp of the board configuration) written back
# as Verilog and simulated on yosys's iCE40 cell models (SB_LUT4, SB_CARRY, SB_DFF*,
# SB_RAM40_4K, SB_MAC16), running the same forward kernel as tb_board_lean (--kernel-only:
# STAT, then plan_load + plan_exec through the link, compared with the cpu backend).
# Verilating the netlist takes minutes: make regress and make gatesim-mesh, not make test.
$(BOARD_OUT)/gl/board_lean_gl.v: $(FPGA)/board_top.json
	@mkdir -p $(@D)
	yosys -q -p "read_json $<; write_verilog -noattr $@"
$(BOARD_OUT)/tb_board_lean_gl: $(BOARD_OUT)/gl/board_lean_gl.v $(BOARD_OUT)/gl/cells_sim_nopll.v \
		verif/board/board_gl_pll_model.v $(BOARD_TB) $(LIB)
	@mkdir -p $(BOARD_OUT)/gl/lean
	@rm -f $@
	nice verilator --cc --exe --build -j 2 -Wno-fatal -Wno-lint -Wno-style --top-module board_top \
		-MAKEFLAGS OPT_FAST=-O1 -MAKEFLAGS OPT_GLOBAL=-O1 \
		-DNO_ICE40_DEFAULT_ASSIGNMENTS -DICE40_U --no-timing \
		-Mdir $(BOARD_OUT)/gl/lean -CFLAGS "$(BOARD_TB_CFLAGS) -O2 -DTB_GATE -DTB_REAL_PORT \
		-DTB_PES=$(FPGA_ROWS)*$(FPGA_COLS) -DTB_ROWS=$(FPGA_ROWS) -DTB_COLS=$(FPGA_COLS) \
		-DTB_AWORDS=$(FPGA_AWORDS) -DTB_BWORDS=$(FPGA_BWORDS)" \
		-LDFLAGS "$(abspath $(LIB)) $(LDLIBS)" -o $(abspath $@) $(abspath $(BOARD_TB)) \
		$(BOARD_OUT)/gl/board_lean_gl.v $(BOARD_OUT)/gl/cells_sim_nopll.v \
		verif/board/board_gl_pll_model.v \
		>$(BOARD_OUT)/gl/lean-build.log 2>&1 || { tail -30 $(BOARD_OUT)/gl/lean-build.log; exit 1; }
.PHONY: gatesim-mesh
# Both check the kernel against the C model; the device's transcript (every byte it sent,
# with its cycle) must also be the same on the netlist and on the RTL.
gatesim-mesh: $(BOARD_OUT)/tb_board_lean_gl $(BOARD_OUT)/tb_board_lean
	$(BOARD_OUT)/tb_board_lean_gl --kernel-only | tee $(BOARD_OUT)/gatesim-mesh-gl.log
	$(BOARD_OUT)/tb_board_lean --kernel-only >$(BOARD_OUT)/gatesim-mesh-rtl.log
	@a=$$(grep '^device transcript' $(BOARD_OUT)/gatesim-mesh-gl.log); \
	b=$$(grep '^device transcript' $(BOARD_OUT)/gatesim-mesh-rtl.log); \
	if [ -n "$$a" ] && [ "$$a" = "$$b" ]; then echo "gatesim-mesh: netlist matches RTL ($$a)"; \
	else echo "gatesim-mesh: MISMATCH netlist '$$a' rtl '$$b'"; exit 1; fi
regress: $(BOARD_OUT)/tb_board_lean_gl
REGRESS_ENTRIES += $(BOARD_OUT)/tb_board_lean_gl@--kernel-only

TEST_DEPS += $(BOARD_OUT)/tb_board_link
# the link at 0 and at -2 % / +2 % host clock error (under 1 s each): the receiver must
# sample near the middle of each bit (one that samples 2 clocks late, or at the first clock,
# still passes at 0 ppm and fails one of the two)
TEST_ENTRIES += $(BOARD_OUT)/tb_board_link@--words=4096 \
	$(BOARD_OUT)/tb_board_link@--ppm=-20000,--seed=2,--words=4096 \
	$(BOARD_OUT)/tb_board_link@--ppm=20000,--seed=3,--words=4096
REGRESS_ENTRIES += $(BOARD_OUT)/tb_board_link@--words=65536 \
	$(BOARD_OUT)/tb_board_link@--ppm=-25000,--seed=2 \
	$(BOARD_OUT)/tb_board_link@--ppm=25000,--seed=3 \
	$(BOARD_OUT)/tb_board_link@--random=150,--seed=4,--words=20000 \
	$(BOARD_OUT)/tb_board_link@--random=300,--seed=5,--words=20000 \
	$(BOARD_OUT)/tb_board_link_gl@--words=4096

# `make regress` builds the gate-level bench too (yosys runs once, then it is cached).
regress: $(BOARD_OUT)/tb_board_link_gl

# --- FPGA flow: make bitstream / make synth-estimate --------------------------------------
FPGA_MHZ ?= 21
# -abc9 aborts inside ABC (&mfs assertion) on this design with yosys 0.23: off by default.
FPGA_ABC9 ?=
# nextpnr's placement seeds, tried in turn until one meets FPGA_MHZ (the flow is deterministic:
# the same netlist and seed give the same result, so a seed that met once always does with
# the same tools); FPGA_SEED=n tries only n
FPGA_SEED ?=
FPGA_SEEDS ?= $(if $(FPGA_SEED),$(FPGA_SEED),1 2 3 4)
# -spram: yosys 0.23 maps sram_sp's 16K x 16 slices to SB_SPRAM256KA only when asked
FPGA_SYNTH := synth_ice40 -dsp -spram
FPGA_PARAMS := chparam -set Rows $(FPGA_ROWS) -set Cols $(FPGA_COLS) -set AWords $(FPGA_AWORDS) \
	-set BWords $(FPGA_BWORDS) -set NumQueues $(FPGA_QUEUES) -set QueueDepth $(FPGA_QDEPTH) \
	-set Impl \"$(FPGA_PE)\" board_top;


bitstream: deps $(FPGA)/icebreaker.bin
	@python3 rtl/board/fpga_report.py show $(FPGA)/report.json

# The flow's settings, rewritten only when they change, so a new FPGA_MHZ reruns nextpnr
# and new mesh settings rerun yosys.
$(FPGA)/config.txt: FORCE
	@mkdir -p $(@D)
	@echo "port=$(FPGA_PORT) rows=$(FPGA_ROWS) cols=$(FPGA_COLS) a=$(FPGA_AWORDS) b=$(FPGA_BWORDS) q=$(FPGA_QUEUES)x$(FPGA_QDEPTH) pe=$(FPGA_PE) abc9=$(FPGA_ABC9) synth=$(FPGA_SYNTH)" >$@.new
	@cmp -s $@.new $@ && rm $@.new || mv $@.new $@
$(FPGA)/pnr-config.txt: FORCE
	@mkdir -p $(@D)
	@echo "mhz=$(FPGA_MHZ) seeds=$(FPGA_SEEDS)" >$@.new
	@cmp -s $@.new $@ && rm $@.new || mv $@.new $@

$(FPGA)/board_top.json: $(FPGA_SRCS) $(FPGA)/config.txt | deps
	@mkdir -p $(@D)
	yosys -q -l $(FPGA)/yosys.log -p "read_verilog -sv $(FPGA_DEFS) $(FPGA_SRCS); \
		$(FPGA_PARAMS) $(FPGA_SYNTH) $(FPGA_ABC9) -top board_top \
		-json $@; tee -o $(FPGA)/yosys-stat.txt stat"

# --timing-allow-fail keeps the report; fpga_report.py fails a seed when the achieved
# frequency is below FPGA_MHZ, and the target when no seed of FPGA_SEEDS meets it (the .bin
# is deleted, so a failing build cannot be flashed). The report names the seed that met it
# and what the seeds before it gave.
$(FPGA)/icebreaker.bin: $(FPGA)/board_top.json rtl/board/icebreaker.pcf rtl/board/fpga_report.py \
		$(FPGA)/pnr-config.txt
	rm -f $@ $@.tmp
	@earlier=""; for seed in $(FPGA_SEEDS); do \
		rm -f $(FPGA)/nextpnr-report.json; \
		echo "nextpnr-ice40 --up5k --seed $$seed --freq $(FPGA_MHZ) ($(FPGA)/nextpnr.log)"; \
		nextpnr-ice40 --up5k --package sg48 --pcf rtl/board/icebreaker.pcf --json $< \
			--asc $(FPGA)/icebreaker.asc --freq $(FPGA_MHZ) --seed $$seed \
			--timing-allow-fail --report $(FPGA)/nextpnr-report.json \
			-l $(FPGA)/nextpnr.log -q || true; \
		if python3 rtl/board/fpga_report.py ice40 --yosys-json $< \
			--pnr-report $(FPGA)/nextpnr-report.json --pnr-log $(FPGA)/nextpnr.log \
			--target-mhz $(FPGA_MHZ) --pes $(FPGA_PES) --port $(FPGA_PORT) \
			--seed $$seed --earlier "$$earlier" --out $(FPGA)/report.json; then \
			icepack $(FPGA)/icebreaker.asc $@.tmp && mv $@.tmp $@ && exit 0; exit 1; \
		fi; \
		earlier="$$earlier $$seed:$$(python3 rtl/board/fpga_report.py outcome $(FPGA)/report.json)"; \
	done; echo "bitstream: no seed of '$(FPGA_SEEDS)' met $(FPGA_MHZ) MHz:$$earlier" >&2; exit 1

# synth-estimate: yosys resource counts for larger parts (no place and route for them here).
# With the mesh: one tile (PE + router, default SRAM sizes; synth_* flattens it) and the
# host port are synthesized per family; an R x C mesh (4x4, 8x8) is R*C tiles plus the host
# port: mesh_top adds only wiring with Impl "full" (routers keep their off-mesh links), so nothing
# is optimized across tiles. A whole 2x2 mesh_top is synthesized flattened too, and the
# report compares it with 4 tiles + the host port, which checks that composition.
# Synthesizing whole 8x8 meshes would take hours on these machines.
EST := $(FPGA)/estimate
ifeq ($(FPGA_PORT),mesh)
EST_PARTS := tile hostport4 hostport16 hostport64 mesh2x2
EST_SRCS := $(MESH_SRCS)
else
EST_PARTS := link
EST_SRCS := $(FPGA_SRCS)
endif
EST_JSONS := $(foreach f,ecp5 xilinx,$(foreach p,$(EST_PARTS),$(EST)/$(f)-$(p).json))

synth-estimate: deps $(EST_JSONS)
	python3 rtl/board/fpga_report.py estimate --out $(FPGA)/estimate.json --port $(FPGA_PORT) \
		$(EST_JSONS)

$(EST)/%.json: $(EST_SRCS) | deps
	@mkdir -p $(@D)
	fam=$$(echo $* | cut -d- -f1); part=$$(echo $* | cut -d- -f2); \
	case $$part in \
	link) top=board_top; par="";; \
	tile) top=mesh_tile; par="";; \
	mesh2x2) top=mesh_top; par="chparam -set Rows 2 -set Cols 2 mesh_top;";; \
	hostport*) top=mesh_hostport; par="chparam -set NumPes $${part#hostport} mesh_hostport;";; \
	esac; \
	yosys -q -l $(EST)/$*.log -p "read_verilog -sv $(FPGA_DEFS) -DBOARD_NO_ICE40_PLL $(EST_SRCS); \
		$$par synth_$$fam -top $$top; write_json $@"

# make bench: one training step of the default tiny GPT (configs/tiny.yaml's sparse
# projections: 2 layers, n_embd 32, 128 tokens, 80 % sparse; 24 kernel calls, each checked
# bit for bit against the cpu backend) on the board configuration that `make bitstream`
# builds, through the bit-level UART and the framing, with the driver's planner: the
# step's device time a board would see, measured in simulation (about 20 s of CPU).
.PHONY: board-bench
board-bench: $(BOARD_OUT)/tb_board_lean
	@mkdir -p $(BUILD)/bench
	$(BOARD_OUT)/tb_board_lean --gpt-step --json=$(BUILD)/bench/board_step.json | grep -E "gpt step|RESULT"
	@cat $(BUILD)/bench/board_step.json
BENCH_TARGETS += board-bench
# board_step_bench target bench json: the same step on another board configuration
define board_step_bench
.PHONY: $(1)
$(1): $(BOARD_OUT)/$(2)
	@mkdir -p $(BUILD)/bench
	$(BOARD_OUT)/$(2) --gpt-step --json=$(BUILD)/bench/$(3) | grep -E "gpt step|RESULT"
	@cat $(BUILD)/bench/$(3)
BENCH_TARGETS += $(1)
endef
# the 2x2 pe_micro_mt board (one micro-machine for the four PEs: what `make bitstream
# FPGA_PE=micro_mt` places on the UP5K): about 10 minutes of CPU
$(eval $(call board_step_bench,board-bench-mt,tb_board_mt_2x2,board_step_mt_2x2.json))
