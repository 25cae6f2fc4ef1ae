# host/train/train.mk - build rules of the training loop: `make train`, its `make bench` part.

# The elementwise kernels of gpt.c must vectorize (GELU's tanh was a third of a step);
# -fno-trapping-math lets GCC if-convert the clamps in GELU (results are unchanged).
$(BUILD)/obj/host/train/gpt.o: CFLAGS += -O3 -fno-trapping-math
# -fno-math-errno lets sqrtf vectorize (sqrt is correctly rounded either way).
$(BUILD)/obj/host/train/optim.o: CFLAGS += -O3 -fno-trapping-math -fno-math-errno
$(BUILD)/obj/host/train/gpt.o $(BUILD)/obj/host/train/optim.o: host/train/train.mk

# Data parallelism (host/train/dp.c) links Open MPI into the library; only dp.c includes
# mpi.h, and a process not started by mpirun never calls MPI_Init.
MPI_CFLAGS = $(shell pkg-config --cflags ompi-c 2>/dev/null)
$(BUILD)/obj/host/train/dp.o: CPPFLAGS += $(MPI_CFLAGS)
LIB_LDLIBS += $(shell pkg-config --libs ompi-c 2>/dev/null)
# mpirun -np 2 and 3 on this machine against one process (tests/train/test_dp.sh)
TEST_ENTRIES += tests/train/test_dp.sh@$(CSHOST)

# make train: the default run (configs/tiny.yaml) in $(BUILD)/runs/<name>, started over
# each time. TRAIN_CONFIG and TRAIN_ARGS (dotted overrides) change it.
TRAIN_CONFIG ?= configs/tiny.yaml
TRAIN_ARGS ?=
.PHONY: train-bench
# A run on the sim device needs its Verilated model (the default config: the 2x2 mesh), which
# the library never builds: cshost names it (--sim-model: the make arguments, from the
# config and the overrides) and make builds it first when missing or stale.
train: deps $(CSHOST)
	@args=$$($(CSHOST) train $(TRAIN_CONFIG) --sim-model $(TRAIN_ARGS)) || exit 1; \
	if [ -n "$$args" ]; then $(MAKE) --no-print-directory sim-model $$args || exit 1; fi
	$(CSHOST) train $(TRAIN_CONFIG) --force run.out_dir=$(BUILD)/runs $(TRAIN_ARGS)

# make bench: ms/step, tokens/s and peak RSS of the benchmark model: dense on the host and on
# the native engine at 80/90/95% sparsity, each at 1 and 2 host threads (train.threads;
# OpenBLAS itself one thread per call), the mesh model at 90%; the larger shape
# (configs/bench-large.yaml) dense and at 90%; then the same model in PyTorch when it is
# installed.
TRAIN_BENCH := $(BUILD)/bench/train_bench
$(TRAIN_BENCH): $(BUILD)/obj/host/train/bench/train_bench.o $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

train-bench: $(TRAIN_BENCH)
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(TRAIN_BENCH) configs/bench-dense.yaml \
		$(BUILD)/bench/train.json 3 12

BENCH_TARGETS += train-bench

.PHONY: train-bench-large
train-bench-large: $(TRAIN_BENCH)
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(TRAIN_BENCH) configs/bench-large.yaml \
		$(BUILD)/bench/train_large.json 1 3 large

BENCH_TARGETS += train-bench-large

# Debian's python3-torch belongs to the system interpreter, which a user's PATH may shadow.
TORCH_PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)
.PHONY: train-torch-bench
train-torch-bench:
	@mkdir -p $(BUILD)/bench
	$(TORCH_PYTHON) host/train/bench/torch_bench.py $(BUILD)/bench/train_torch.json

BENCH_TARGETS += train-torch-bench


# make bench: make train's run itself (configs/tiny.yaml, the Verilated 2x2 mesh), start to
# end: its summary.json (wall_s, ms_per_step, val_loss vs unigram_entropy, peak_rss_kb)
# becomes build/bench/train_sim.json. About 5 minutes on a quiet machine.
.PHONY: train-sim-bench
train-sim-bench: $(CSHOST) $(SIM_DIR)/libmesh_2x2.so
	$(CSHOST) train configs/tiny.yaml --force run.out_dir=$(BUILD)/bench/runs run.name=tiny-sim
	@mkdir -p $(BUILD)/bench
	cp $(BUILD)/bench/runs/tiny-sim/summary.json $(BUILD)/bench/train_sim.json
	@cat $(BUILD)/bench/train_sim.json

BENCH_TARGETS += train-sim-bench


# make bench: data parallelism, 1 process against mpirun -np 2 (one thread each, the same
# global batch), dense and at 90%: tokens/s, CPU, reduction bytes and time per step
# (host/train/bench/dp_bench.py) -> build/bench/dp.json.
.PHONY: dp-bench
dp-bench: $(CSHOST)
	@mkdir -p $(BUILD)/bench
	python3 host/train/bench/dp_bench.py $(CSHOST) $(BUILD)/bench/dp.json 12 2

BENCH_TARGETS += dp-bench

# make config-doc: the key tables of docs/config.md (host/train/config.c's schema) and
# docs/sparsity.md (host/sparsity/config.c's), each between its BEGIN/END generated
# markers; tests/train/test_config.c and tests/sparsity/test_config.c fail while they differ.
# $(call config_doc,doc file,cshost config doc arguments)
define config_doc
	$(CSHOST) config doc $(2) > $(BUILD)/config-keys.md
	awk -v gen=$(BUILD)/config-keys.md \
		'/^<!-- END generated/ { skip = 0 } !skip { print } \
		 /^<!-- BEGIN generated/ { while ((getline l < gen) > 0) print l; skip = 1 }' \
		$(1) > $(BUILD)/config-doc.new
	mv $(BUILD)/config-doc.new $(1)
endef
.PHONY: config-doc
config-doc: deps $(CSHOST)
	$(call config_doc,docs/config.md,)
	$(call config_doc,docs/sparsity.md,sparsity)
