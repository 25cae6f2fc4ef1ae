# host/interop/interop.mk - GPT-2 tokenization, safetensors and the other formats shared
# with the ML world: the reference check in `make test`, the tokenizer's speed in `make bench`.

# cshost tokenize against the npm package's JavaScript encoder (skipped without node or
# the package, which `make deps` fetches when the npm registry is reachable)
TEST_ENTRIES += tests/interop/bpe_reference.sh@$(CSHOST)
# a safetensors export generates the same text in PyTorch (skipped without torch)
TEST_ENTRIES += tests/interop/safetensors_torch.sh@$(CSHOST)
# cshost plot: SVG, PNG and PDF well formed; its errors
TEST_ENTRIES += tests/interop/plot_check.sh@$(CSHOST)

# make bench: GPT-2 BPE encoding speed, one core, on the fortunes corpus (MB/s)
.PHONY: bpe-bench
bpe-bench: $(CSHOST)
	@./scripts/bpe-bench.sh $(CSHOST) $(BUILD)/bench/bpe.json
BENCH_TARGETS += bpe-bench

# make bench: GPT-2 small (124M) from a safetensors file, 90% sparse, GPT-2 tokens, exported
# back (configs/bench-gpt2.yaml): ms/step, tokens/s, peak RSS
.PHONY: gpt2-bench
gpt2-bench: $(CSHOST)
	@./scripts/gpt2-bench.sh $(CSHOST) $(BUILD)/bench/gpt2.json
BENCH_TARGETS += gpt2-bench
