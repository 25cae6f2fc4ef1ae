#!/bin/bash
# safetensors_torch.sh CSHOST: a trained model exported with `cshost export --format
# safetensors` generates the same text in PyTorch (tests/interop/torch_gpt2.py, which reads
# the file with json + torch.frombuffer and runs GPT-2 on the Hugging Face names and
# layouts) as `cshost sample --temperature 0` does from the checkpoint. Exit 77 (skipped,
# with the reason) when $TORCH_PYTHON (default /usr/bin/python3) has no torch.
set -u
cshost=$1
py=${TORCH_PYTHON:-/usr/bin/python3}
here=$(dirname "$0")
if ! "$py" -c "import torch" >/dev/null 2>&1; then
	echo "skipped: $py has no torch (Debian: python3-torch)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cshost" train configs/tiny.yaml --force --no-progress run.out_dir="$tmp" device.kind=native \
	train.steps=600 train.eval_every=0 train.sample_tokens=0 train.ckpt_every=600 \
	>"$tmp/train.log" 2>&1 || { cat "$tmp/train.log"; exit 1; }
ck=$tmp/tiny/ckpt-00000600.bin
"$cshost" export --format safetensors "$ck" "$tmp/m.safetensors" >/dev/null || exit 1
pass=0 fail=0
for prompt in "The " "Q: What is" "A man and his "; do
	"$cshost" sample "$ck" --prompt "$prompt" --tokens 48 --temperature 0 >"$tmp/c.txt" || exit 1
	{ printf '%s' "$prompt"; "$py" "$here/torch_gpt2.py" "$tmp/m.safetensors" "$prompt" 48; echo; } >"$tmp/t.txt" || exit 1
	if cmp -s "$tmp/c.txt" "$tmp/t.txt"; then
		pass=$((pass + 1))
	else
		echo "FAIL prompt '$prompt':"; echo "  cshost:  $(head -c 120 "$tmp/c.txt" | tr '\n' ' ')"
		echo "  PyTorch: $(head -c 120 "$tmp/t.txt" | tr '\n' ' ')"
		fail=$((fail + 1))
	fi
done
echo "RESULT: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
