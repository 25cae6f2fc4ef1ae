#!/bin/bash
# plot_check.sh CSHOST: `cshost plot` renders two runs (one with mask updates, one with
# validation points) into SVG, PNG and PDF files that are complete and well formed, and
# names what is wrong with a missing run, a malformed metrics line or an unknown format.
set -u
cshost=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() { # description, then a command that must succeed
	local what=$1
	shift
	if "$@"; then pass=$((pass + 1)); else echo "FAIL: $what"; fail=$((fail + 1)); fi
}
mkdir -p "$tmp/a" "$tmp/b"
for s in $(seq 1 60); do
	ch=0; [ $((s % 20)) -eq 0 ] && ch=1
	printf '{"step": %d, "loss": %s, "lr": %s, "grad_norm": 1.0, "sparsity": 0.8, "sparsity_all_params": 0.6, "layer_sparsity": {"h.0.attn.qkv.weight": %s, "h.0.mlp.fc.weight": 0.8}, "tokens_per_s": 1.0, "ms_per_step": 1.0, "device_cycles": 0, "device_utilization": 0.0, "link_bytes_out": 0, "link_bytes_in": 0, "masks_changed": %d, "mask_churn": %s}\n' \
		"$s" "$(awk -v s="$s" 'BEGIN { print 5 / (1 + s / 10) }')" "$(awk -v s="$s" 'BEGIN { print 0.001 * s / 60 }')" \
		"$(awk -v s="$s" 'BEGIN { print 0.5 + 0.3 * s / 60 }')" "$ch" "$(awk -v c="$ch" 'BEGIN { print c * 0.05 }')" >>"$tmp/a/metrics.jsonl"
	printf '{"step": %d, "loss": %s, "lr": 0.001, "sparsity": 0.0, "masks_changed": 0}\n' \
		"$s" "$(awk -v s="$s" 'BEGIN { print 4 / (1 + s / 20) }')" >>"$tmp/b/metrics.jsonl"
	[ $((s % 20)) -eq 0 ] && printf '{"step": %d, "val_loss": %s, "val_ppl": 1.0}\n' "$s" \
		"$(awk -v s="$s" 'BEGIN { print 4.2 / (1 + s / 20) }')" >>"$tmp/b/metrics.jsonl"
done
"$cshost" plot "$tmp/a" "$tmp/b" -o "$tmp/p.svg" --title "check" >"$tmp/log" 2>&1
check "svg written" test -s "$tmp/p.svg"
check "svg well formed" bash -c "head -c 200 '$tmp/p.svg' | grep -q '<svg' && tail -c 20 '$tmp/p.svg' | grep -q '</svg>' &&
	[ \$(grep -o '<g[ >]' '$tmp/p.svg' | wc -l) -eq \$(grep -o '</g>' '$tmp/p.svg' | wc -l) ]"
check "svg has the four panels" bash -c "for t in 'loss (nats per token)' 'learning rate' 'sparsity' 'mask churn'; do grep -q \"\$t\" '$tmp/p.svg' || exit 1; done"
check "svg names the layers" grep -q "h.0.attn.qkv.weight" "$tmp/p.svg"
if command -v xmllint >/dev/null 2>&1; then
	check "svg parses as XML" xmllint --noout "$tmp/p.svg"
fi
"$cshost" plot "$tmp/a" -o "$tmp/p.png" >/dev/null 2>&1
check "png complete" bash -c "head -c 8 '$tmp/p.png' | od -An -tx1 | grep -q '89 50 4e 47 0d 0a 1a 0a' &&
	tail -c 12 '$tmp/p.png' | od -An -tx1 | tr -d ' \n' | grep -q '49454e44ae426082'"
"$cshost" plot "$tmp/b" -o "$tmp/p.pdf" >/dev/null 2>&1
check "pdf complete" bash -c "head -c 5 '$tmp/p.pdf' | grep -q '%PDF' && tail -c 8 '$tmp/p.pdf' | grep -q '%%EOF'"
"$cshost" plot "$tmp/a" >/dev/null 2>&1
check "default output RUN/plot.svg" test -s "$tmp/a/plot.svg"
# errors: named, non-zero, nothing left behind
"$cshost" plot "$tmp/none" -o "$tmp/x.svg" >"$tmp/log" 2>&1
rc=$?
check "missing run is an error" bash -c "[ $rc -eq 1 ] && grep -q 'none/metrics.jsonl' '$tmp/log' && [ ! -e '$tmp/x.svg' ]"
echo "garbage" >>"$tmp/b/metrics.jsonl"
"$cshost" plot "$tmp/b" -o "$tmp/y.svg" >"$tmp/log" 2>&1
rc=$?
check "malformed line is an error naming file:line" bash -c "[ $rc -eq 1 ] && grep -q 'metrics.jsonl:64: not a metrics line' '$tmp/log' && [ ! -e '$tmp/y.svg' ]"
"$cshost" plot "$tmp/a" -o "$tmp/z.gif" >"$tmp/log" 2>&1
rc=$?
check "unknown format is a usage error" bash -c "[ $rc -eq 2 ] && grep -q '.svg, .png or .pdf' '$tmp/log'"
echo "RESULT: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
