#!/bin/bash
# gpt2-bench.sh CSHOST OUT.json: GPT-2 small (124M parameters) through the interop path, for
# `make bench`: a safetensors file of the model (written from a one-step dense run), a
# 90%-sparse run that starts from it (model.init_from, static topk masks, GPT-2 tokens on
# the fortunes corpus, configs/bench-gpt2.yaml), and its export back. Reports the sparse
# run's ms/step, tokens/s and peak RSS. Skips, saying why, without the GPT-2 tokenizer files.
set -u
cshost=$1
out=$2
dir=$(dirname "$out")/gpt2
mkdir -p "$dir"
cfg=configs/bench-gpt2.yaml
log=$dir/log.txt
if ! "$cshost" tokenize --stats /dev/null >/dev/null 2>"$log"; then
	echo "gpt2-bench: skipped: $(cat "$log")"
	printf '{"skipped": true}\n' >"$out"
	exit 0
fi
run() { "$cshost" train "$cfg" --force --no-progress run.out_dir="$dir" "$@" >>"$log" 2>&1 ||
	{ echo "gpt2-bench: failed, see $log"; tail -n 5 "$log"; exit 1; }; }
run run.name=init train.steps=1
"$cshost" export --format safetensors "$dir/init/ckpt-00000001.bin" "$dir/init.safetensors" >>"$log" || exit 1
run run.name=sparse90 model.init_from="$dir/init.safetensors" sparsity.algorithm=static \
	sparsity.init_method=topk sparsity.sparsity=0.9 train.ckpt_every=4
"$cshost" export --format safetensors "$dir/sparse90/ckpt-00000004.bin" "$dir/sparse90.safetensors" >>"$log" || exit 1
s=$dir/sparse90/summary.json
num() { sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p" "$s"; }
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
params=$(sed -n 's/.* \([0-9]*\) parameters.*/\1/p' "$log" | head -n 1)
printf '{"cpu": "%s", "params": %s, "sparsity": %s, "ms_per_step": %s, "tokens_per_s": %s, "peak_rss_mb": %.1f, "safetensors_in_mb": %.1f, "safetensors_out_mb": %.1f}\n' \
	"$cpu" "${params:-0}" "$(num sparsity)" "$(num ms_per_step)" "$(num tokens_per_s)" \
	"$(awk -v k="$(num peak_rss_kb)" 'BEGIN { print k / 1024 }')" \
	"$(stat -c %s "$dir/init.safetensors" | awk '{ print $1 / 1048576 }')" \
	"$(stat -c %s "$dir/sparse90.safetensors" | awk '{ print $1 / 1048576 }')" >"$out"
echo "gpt2-bench: $(cat "$out")"
