# host/engine/engine.mk - the native sparse engine's build rules.
#
# Each ISA's kernels are compiled for that ISA alone; eng.c calls them only when the CPU
# has it (eng_isa), so the library still runs on any x86-64. -O3 for the unrolled blocks.
$(BUILD)/obj/host/engine/eng_avx512.o: CFLAGS += -O3 -mavx512f -mfma
$(BUILD)/obj/host/engine/eng_avx2.o: CFLAGS += -O3 -mavx2 -mfma
$(BUILD)/obj/host/engine/eng_portable.o: CFLAGS += -O3
$(BUILD)/obj/host/engine/eng_avx512.o $(BUILD)/obj/host/engine/eng_avx2.o \
	$(BUILD)/obj/host/engine/eng_portable.o: host/engine/engine.mk
