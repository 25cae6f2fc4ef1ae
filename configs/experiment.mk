# configs/experiment.mk - `make experiment`: every sparsity algorithm against dense on the
# same tiny GPT (configs/experiment/*.yaml), results in docs/results.md and
# docs/results-loss.svg. About 20-30 minutes on 2 cores; EXPERIMENT_ARGS passes options and
# dotted overrides to scripts/experiment.sh (e.g. EXPERIMENT_ARGS='--arms "dense rigl"').
EXPERIMENT_ARGS ?=
.PHONY: experiment-impl
experiment-impl: $(CSHOST)
	./scripts/experiment.sh --cshost $(CSHOST) --out $(BUILD)/experiment $(EXPERIMENT_ARGS)

# make test: the driver end to end on two arms x 5 steps (a few seconds), outside docs/.
TEST_ENTRIES += scripts/experiment.sh@--cshost,$(CSHOST),--out,$(BUILD)/experiment-smoke,--docs,$(BUILD)/experiment-smoke/docs,--arms,static-random:rigl,train.steps=5,train.eval_every=0,train.eval_batches=1,train.sample_tokens=0
