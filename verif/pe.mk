# verif/pe.mk - the PE and SRAM benches (rtl/pe, rtl/sram), their lint and formal checks.
#
# Each bench is a Verilated model plus a C++ harness, built with `verilator --build` into its
# own object directory under $(BUILD)/verif/pe/ (kept between runs: Verilator's make rebuilds
# only what the RTL or the harness changed). C models (host/common/numerics.c,
# verif/models/*.c) are compiled by the top Makefile's C rule and linked in, and so is the
# shared Verilator runtime ($(VLT_RT)). The recipes start with + so that the C++ compiles
# take their jobs from make's jobserver (-jN bounds them all; make -n runs them too).

PE_BUILD := $(BUILD)/verif/pe
PE_RTL := $(sort $(wildcard rtl/pe/*.v))
SRAM_RTL := $(sort $(wildcard rtl/sram/*.v))
PE_TB_HDRS := $(wildcard verif/pe/*.h verif/models/*.h) host/common/numerics.h
PE_COBJS := $(BUILD)/obj/host/common/numerics.o
PE_MODEL_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(sort $(wildcard verif/models/pe_*.c)))
PE_WAIVERS := verif/lint_waivers.vlt

PE_VFLAGS := --cc --exe --build -Wall -Wno-fatal --x-assign fast --x-initial fast -Irtl/pe -Irtl/sram \
	-MAKEFLAGS OPT_FAST=-O2 -MAKEFLAGS OPT_GLOBAL=-O2 \
	-CFLAGS "-O2 -std=c++17 -I$(abspath host) -I$(abspath verif/pe) -I$(abspath verif/models)"
# SAN=1: the C models linked in are sanitized, so the bench links the sanitizer runtimes
# (Verilator's generated C++ itself is not instrumented: UBSan flags its idioms).
ifneq ($(SAN_FLAGS),)
PE_VFLAGS += -LDFLAGS "$(SAN_FLAGS)"
endif

# $(1) bench name, $(2) top module, $(3) the top's file (Verilator finds the modules it
# instantiates in rtl/pe and rtl/sram; the bench depends on what it read: vlt_deps),
# $(4) extra objects, $(5) extra verilator flags (parameters)
define pe_bench
$(PE_BUILD)/$(1): verif/$(if $(filter tb_sram%,$(1)),sram,pe)/$(1).cpp $(3) $(4) $(PE_TB_HDRS) \
		$(wildcard $(PE_WAIVERS)) $(VLT_RT) \
		$(call vlt_deps,$(PE_BUILD)/$(1).obj,$(2),$(PE_RTL) $(SRAM_RTL) $(wildcard rtl/pe/*.vh))
	@mkdir -p $(PE_BUILD)
	@rm -f $$@ # relinked every time: Verilator's make does not see the runtime objects change
	+$$(DRY_SKIP)verilator $(PE_VFLAGS) $(5) --top-module $(2) -Mdir $(PE_BUILD)/$(1).obj \
		$(wildcard $(PE_WAIVERS)) $(3) $$(abspath $$<) $(abspath $(4)) $(VLT_RT_ARGS) \
		-o $$(abspath $$@) \
		> $(PE_BUILD)/$(1).build.log 2>&1 || { tail -n 40 $(PE_BUILD)/$(1).build.log; exit 1; }
endef

$(eval $(call pe_bench,tb_sram_1r1w,sram_1r1w,rtl/sram/sram_1r1w.v,,-GDepth=256 -GWidth=32))
$(eval $(call pe_bench,tb_sram_sp,sram_sp,rtl/sram/sram_sp.v,,-GDepth=8192 -GWidth=32))
$(eval $(call pe_bench,tb_pe_fmac,pe_fmac,rtl/pe/pe_fmac.v,$(PE_COBJS)))

$(eval $(call pe_bench,tb_pe_queue,pe_queue,rtl/pe/pe_queue.v,))
$(eval $(call pe_bench,tb_pe_tasktab,pe_tasktab,rtl/pe/pe_tasktab.v,))
# pe with its assertions (B's sub-banks: one engine read and one write each a cycle)
$(eval $(call pe_bench,tb_pe,pe,rtl/pe/pe.v,$(PE_COBJS) $(PE_MODEL_OBJS),--assert -DFORMAL))
# pe_lite (the area-minimal PE): its multi-cycle FMAC, and tb_pe's harness with pe_lite as
# the DUT (TB_PE_LITE: model class Vpe_lite, no zero-dead-cycle assertion: that is the fast
# PE's timing; verif/pe/tb_pe_lite.cpp defines it and includes tb_pe.cpp)
$(eval $(call pe_bench,tb_pe_lite_fmac,pe_lite_fmac,rtl/pe/pe_lite_fmac.v,$(PE_COBJS)))
$(eval $(call pe_bench,tb_pe_lite,pe_lite,rtl/pe/pe_lite.v,$(PE_COBJS) $(PE_MODEL_OBJS),\
	--assert -DFORMAL))
# the bit-serial FMAC (a smaller drop-in for pe_lite_fmac), tb_pe_lite_fmac's harness
$(eval $(call pe_bench,tb_pe_tiny_fmac,pe_tiny_fmac,rtl/pe/pe_tiny_fmac.v,$(PE_COBJS)))
# PE 0 of a pe_micro_mt (one micro-machine for three PEs), tb_pe's harness, with
# pe_micro_mt's assertions (its registered ready); verif/pe/tb_pe_micro_mt.vlt keeps M's
# array readable for the harness's compare
$(eval $(call pe_bench,tb_pe_micro_mt,pe_micro_mt_solo,verif/pe/pe_micro_mt_solo.v,\
	$(PE_COBJS) $(PE_MODEL_OBJS),\
	--assert -DFORMAL verif/pe/tb_pe_micro_mt.vlt))
$(PE_BUILD)/tb_pe_lite $(PE_BUILD)/tb_pe_micro_mt: verif/pe/tb_pe.cpp
$(PE_BUILD)/tb_pe_micro_mt: verif/pe/tb_pe_micro_mt.vlt
$(PE_BUILD)/tb_pe_tiny_fmac: verif/pe/tb_pe_lite_fmac.cpp

PE_BENCHES := $(PE_BUILD)/tb_sram_1r1w $(PE_BUILD)/tb_sram_sp $(PE_BUILD)/tb_pe_fmac \
	$(PE_BUILD)/tb_pe_queue $(PE_BUILD)/tb_pe_tasktab $(PE_BUILD)/tb_pe \
	$(PE_BUILD)/tb_pe_lite_fmac $(PE_BUILD)/tb_pe_lite $(PE_BUILD)/tb_pe_tiny_fmac \
	$(PE_BUILD)/tb_pe_micro_mt
TEST_DEPS += $(PE_BENCHES)
# tb_pe_micro_mt: make test runs its util scenario (a fixed shape, 8.5 M cycles) first only,
# make regress also its 18 repeats at every 16th (docs/verification.md)
TEST_ENTRIES += $(PE_BUILD)/tb_sram_1r1w@--seed=1 $(PE_BUILD)/tb_sram_sp@--seed=1 \
	$(PE_BUILD)/tb_pe_fmac@--seed=1,--n=5000000 $(PE_BUILD)/tb_pe_queue@--seed=1 \
	$(PE_BUILD)/tb_pe_tasktab@--seed=1 $(PE_BUILD)/tb_pe@--seed=1,--n=600 \
	$(PE_BUILD)/tb_pe_lite_fmac@--seed=1,--n=1000000 $(PE_BUILD)/tb_pe_lite@--seed=1,--n=600 \
	$(PE_BUILD)/tb_pe_tiny_fmac@--seed=1,--n=1000000 \
	$(PE_BUILD)/tb_pe_micro_mt@--seed=1,--n=300,--util-once \
	$(PE_BUILD)/tb_pe@--seed=1,--fw=$(BUILD)/fw,--n=36 \
	$(PE_BUILD)/tb_pe_lite@--seed=1,--fw=$(BUILD)/fw,--n=14
REGRESS_ENTRIES += $(PE_BUILD)/tb_sram_1r1w@--seed=2,--n=5000000 \
	$(PE_BUILD)/tb_sram_sp@--seed=2,--n=5000000 \
	$(PE_BUILD)/tb_pe_fmac@--seed=2,--n=100000000 \
	$(PE_BUILD)/tb_pe_fmac@--seed=3,--n=100000000 \
	$(PE_BUILD)/tb_pe_queue@--seed=2,--n=20000000 $(PE_BUILD)/tb_pe_tasktab@--seed=2,--n=20000000 \
	$(foreach s,11 12 13 14 15 16 17 18,$(PE_BUILD)/tb_pe@--seed=$(s),--n=2000) \
	$(PE_BUILD)/tb_pe_lite_fmac@--seed=2,--n=20000000 \
	$(foreach s,11 12 13 14,$(PE_BUILD)/tb_pe_lite@--seed=$(s),--n=2000) \
	$(PE_BUILD)/tb_pe_tiny_fmac@--seed=2,--n=20000000 \
	$(PE_BUILD)/tb_pe_micro_mt@--seed=1,--n=300 \
	$(foreach s,11 12 13 14,$(PE_BUILD)/tb_pe_micro_mt@--seed=$(s),--n=2000)

# pe_micro_mt's micro-program: verif/ucode/uasm assembles rtl/pe/pe_micro.us into the committed
# rtl/pe/pe_micro_rom.v (every RTL flow reads it like any other source); `make ucode`
# rewrites it, and `make test` fails when it is not the assembly of the source.
UASM := $(BUILD)/ucode/uasm
$(UASM): verif/ucode/uasm.c
	@mkdir -p $(@D)
	$(CC) -O2 -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE $< -o $@
.PHONY: ucode
ucode: $(UASM)
	$(UASM) rtl/pe/pe_micro.us -o rtl/pe/pe_micro_rom.v
TEST_DEPS += $(UASM)
TEST_ENTRIES += $(UASM)@rtl/pe/pe_micro.us,--check,rtl/pe/pe_micro_rom.v

# the rsqrt ROM: verif/ucode/rsqrt_rom writes rtl/pe/pe_rsqrt_rom.v (committed, read by every
# RTL flow) from host/common/numerics.c's nm_rsqrt_table; `make rsqrt-rom` rewrites it, and
# `make test` fails when it is not that table.
RSQRT_ROM := $(BUILD)/ucode/rsqrt_rom
$(RSQRT_ROM): verif/ucode/rsqrt_rom.c $(BUILD)/obj/host/common/numerics.o host/common/numerics.h
	@mkdir -p $(@D)
	$(CC) -O2 -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -Ihost $< \
		$(BUILD)/obj/host/common/numerics.o $(SAN_FLAGS) -lm -o $@
.PHONY: rsqrt-rom
rsqrt-rom: $(RSQRT_ROM)
	$(RSQRT_ROM) -o rtl/pe/pe_rsqrt_rom.v
TEST_DEPS += $(RSQRT_ROM)
TEST_ENTRIES += $(RSQRT_ROM)@--check,rtl/pe/pe_rsqrt_rom.v

.PHONY: pe-benches
pe-benches: $(PE_BENCHES)

# --- lint: every module of rtl/pe and rtl/sram as its own top, -Wall, waivers from one file
PE_LINT_MODS := $(basename $(notdir $(SRAM_RTL) $(PE_RTL)))
.PHONY: lint-pe
lint-pe:
	@set -e; for m in $(PE_LINT_MODS); do \
		verilator --lint-only -Wall -Irtl/pe -Irtl/sram $(PE_WAIVERS) --top-module $$m \
			$$(ls rtl/pe/$$m.v rtl/sram/$$m.v 2>/dev/null); \
	done; echo "lint-pe: $(words $(PE_LINT_MODS)) modules clean"
lint: lint-pe

# --- synthesis estimate of one PE (iCE40 UP5K cells; A, one read and one write port, takes
# EBR, not SPRAM)
.PHONY: synth-pe
synth-pe:
	@mkdir -p $(BUILD)/synth
	yosys -q -l $(BUILD)/synth/pe.log -p "read_verilog -sv $(PE_RTL) $(SRAM_RTL); \
		synth_ice40 -dsp -spram -top pe; stat" >/dev/null
	@sed -n '/=== pe ===/,/SB_SPRAM/p' $(BUILD)/synth/pe.log | grep -E 'cells|SB_'
