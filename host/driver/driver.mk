# host/driver: the driver's benchmark (make bench).
DRIVER_BENCH := $(BUILD)/bench/bench_driver

$(DRIVER_BENCH): $(BUILD)/obj/host/driver/bench/bench_driver.o $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

.PHONY: bench-driver
bench-driver: $(DRIVER_BENCH)
	$(DRIVER_BENCH) $(BUILD)/bench/driver.json

BENCH_TARGETS += bench-driver

# cshost spmm end to end: exits 0 only when the device matches the C model bit for bit.
TEST_ENTRIES += $(CSHOST)@spmm,--device,cpu,--mesh,3x2,--tokens,70,--k,90,--n,50,--sparsity,0.8,--kernel,wgrad,--json
TEST_ENTRIES += $(CSHOST)@spmm,--device,cpu:1x3,--tokens,33,--k,40,--n,70,--sparsity,0.5,--kernel,fwd
