# configs/experiment.mk - `make experiment`: dense against every sparsity workflow on the
# same tiny GPT (configs/experiment/*.yaml) at 80% and 90%, 3 seeds each, results in
# docs/results.md and docs/results-loss-{80,90}.svg. About 90 minutes on 2 cores.
# QUICK=1 checks the pipeline in a few minutes with 200-step runs, writing under
# build/experiment-quick (never docs/). EXPERIMENT_ARGS passes options and dotted overrides
# to scripts/experiment.sh (e.g. EXPERIMENT_ARGS='--arms "dense rigl-80" --seeds 1').
EXPERIMENT_ARGS ?=
QUICK ?= 0

experiment: deps $(CSHOST)
	./scripts/experiment.sh --cshost $(CSHOST) \
		$(if $(filter 1,$(QUICK)),--quick --out $(BUILD)/experiment-quick,--out $(BUILD)/experiment) \
		$(EXPERIMENT_ARGS)

# make test: the driver end to end on three arms x 5 steps x 2 seeds (a few seconds),
# outside docs/.
TEST_ENTRIES += scripts/experiment.sh@--cshost,$(CSHOST),--out,$(BUILD)/experiment-smoke,--docs,$(BUILD)/experiment-smoke/docs,--arms,static-random-80:rigl-80:dense,--seeds,1:2,train.steps=5,train.eval_every=0,train.eval_batches=1,train.sample_tokens=0
