# tests/fuzz/fuzz.mk - `make fuzz`: libFuzzer targets built with clang, each run for FUZZ_S
# seconds from its seed corpus (tests/fuzz/corpus/<target>) plus what earlier runs found
# (build/fuzz/corpus-<target>). A crash, a hang over 10 s or an allocation over 2 GB stops
# the run and leaves the input in build/fuzz/crashes-<target>/; copy it to
# tests/fuzz/regress/<target>/ with the fix, and test_fuzz_replay replays it in `make test`.
# `make test` also runs each target for FUZZ_SMOKE_S seconds when clang is installed.

FUZZ_S ?= 180
FUZZ_SMOKE_S ?= 5
FUZZ_CC ?= clang
FUZZ_TARGETS := config ckpt spstate fwasm frame data resp
# the units under test are compiled instrumented; the rest comes from the library
FUZZ_SRCS := host/common/cs_crc32.c host/common/cs_yaml.c host/common/cs_config.c host/train/config.c host/sparsity/config.c host/train/ckpt.c \
	host/sparsity/checkpoint.c host/fwasm/fwasm.c host/driver/fw.c host/driver/frame.c \
	host/train/data.c host/driver/proto.c host/driver/plan.c host/driver/usb_rx.c host/driver/ftdi.c
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer -Ihost -D_GNU_SOURCE $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
FUZZ_RUN_FLAGS := -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=65536
FUZZ_BINS := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)

# Each unit is compiled once and linked into every target (the flags are the same for all).
FUZZ_OBJS := $(FUZZ_SRCS:%.c=$(BUILD)/fuzz/obj/%.o)

.PHONY: fuzz
$(BUILD)/fuzz/obj/%.o: %.c | deps
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/fuzz/fuzz_%: $(BUILD)/fuzz/obj/tests/fuzz/fuzz_%.o $(FUZZ_OBJS) $(LIB)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_OBJS) $(LIB) $(LDLIBS) -lstdc++
-include $(wildcard $(BUILD)/fuzz/obj/*/*/*.d)

fuzz: deps $(FUZZ_BINS)
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p $(BUILD)/fuzz/corpus-$$t $(BUILD)/fuzz/crashes-$$t; \
		echo "fuzz $$t: $(FUZZ_S) s"; \
		$(BUILD)/fuzz/fuzz_$$t $(FUZZ_RUN_FLAGS) -max_total_time=$(FUZZ_S) -print_final_stats=1 \
			-artifact_prefix=$(BUILD)/fuzz/crashes-$$t/ $(BUILD)/fuzz/corpus-$$t \
			tests/fuzz/corpus/$$t $$(ls -d tests/fuzz/regress/$$t 2>/dev/null) \
			2>$(BUILD)/fuzz/$$t.log || \
			{ tail -40 $(BUILD)/fuzz/$$t.log; exit 1; }; \
		grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)|cov:' \
			$(BUILD)/fuzz/$$t.log | tail -4; \
	done

# make fuzz-resp-seeds: tests/fuzz/corpus/resp, each host port answer as the word-level
# mesh model gives it (fuzz_resp.c built as its seed writer)
.PHONY: fuzz-resp-seeds
$(BUILD)/fuzz/resp_seeds: tests/fuzz/fuzz_resp.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) -DFUZZ_RESP_SEEDS $(LDFLAGS) -o $@ $< $(LIB) \
		$(LDLIBS) -lstdc++
fuzz-resp-seeds: $(BUILD)/fuzz/resp_seeds
	@mkdir -p tests/fuzz/corpus/resp
	$(BUILD)/fuzz/resp_seeds tests/fuzz/corpus/resp

ifneq ($(shell command -v $(FUZZ_CC) 2>/dev/null),)
TEST_DEPS += $(FUZZ_BINS)
TEST_ENTRIES += $(foreach t,$(FUZZ_TARGETS),tests/fuzz/smoke.sh@$(BUILD)/fuzz/fuzz_$(t),$(t))
endif
