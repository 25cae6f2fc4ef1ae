# host/driver: the driver's benchmark (make bench).
DRIVER_BENCH := $(BUILD)/bench/bench_driver

$(DRIVER_BENCH): $(BUILD)/obj/host/driver/bench/bench_driver.o $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

.PHONY: bench-driver
bench-driver: $(DRIVER_BENCH)
	$(DRIVER_BENCH) $(BUILD)/bench/driver.json

BENCH_TARGETS += bench-driver
