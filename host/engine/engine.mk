# host/engine/engine.mk - the native sparse engine's build rules.
#
# Each ISA's kernels are compiled for that ISA alone; eng.c calls them only when the CPU
# has it (eng_isa), so the library still runs on any x86-64. -O3 for the unrolled blocks.
$(BUILD)/obj/host/engine/eng_avx512.o: CFLAGS += -O3 -mavx512f -mfma
$(BUILD)/obj/host/engine/eng_avx2.o: CFLAGS += -O3 -mavx2 -mfma
$(BUILD)/obj/host/engine/eng_portable.o: CFLAGS += -O3
$(BUILD)/obj/host/engine/eng_avx512.o $(BUILD)/obj/host/engine/eng_avx2.o \
	$(BUILD)/obj/host/engine/eng_portable.o: host/engine/engine.mk

# make bench: the three kernels against dense OpenBLAS sgemm, 1 and 2 threads.
ENGINE_BENCH := $(BUILD)/bench/bench_engine
$(ENGINE_BENCH): $(BUILD)/obj/host/engine/bench/bench_engine.o $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

.PHONY: bench-engine
bench-engine: $(ENGINE_BENCH)
	$(ENGINE_BENCH) $(BUILD)/bench/engine.json

BENCH_TARGETS += bench-engine

# The products and the weight gradient at the training step's shapes (T 512, one thread).
.PHONY: bench-engine-step
bench-engine-step: $(ENGINE_BENCH)
	$(ENGINE_BENCH) $(BUILD)/bench/engine_step.json step

BENCH_TARGETS += bench-engine-step
