#!/bin/bash
# bpe-bench.sh CSHOST OUT.json: GPT-2 BPE encoding speed on one core (`make bench`): every
# UTF-8 file of the fortunes corpus concatenated, encoded once by a fresh tokenizer (its
# cache of pieces starts empty), best of 5; the byte tokenizer alongside.
set -eu
cshost=$1
out=$2
mkdir -p "$(dirname "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in /usr/share/games/fortunes/*; do
	[ -f "$f" ] && [ ! -L "$f" ] || continue
	case $f in *.dat) continue ;; esac
	iconv -f UTF-8 -t UTF-8 "$f" >/dev/null 2>&1 && cat "$f"
done >"$tmp/corpus.txt"
best() { # tokenizer: the fastest of 5 runs' JSON lines
	for i in 1 2 3 4 5; do "$cshost" tokenize --stats --tokenizer "$1" "$tmp/corpus.txt" || return 1; done |
		awk '{ v = $0; sub(/.*"mb_per_s": /, "", v); sub(/}.*/, "", v);
		       if (NR == 1 || v + 0 > b) { b = v + 0; l = $0 } } END { print l }'
}
if ! gpt2=$(best gpt2 2>"$tmp/err"); then
	echo "bpe-bench: skipped: $(cat "$tmp/err")"
	gpt2='{"skipped": true}'
fi
bytes=$(best bytes)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
printf '{"cpu": "%s", "gpt2": %s, "bytes": %s}\n' "$cpu" "$gpt2" "$bytes" >"$out"
echo "bpe-bench: $cpu"
echo "bpe-bench: gpt2  $gpt2"
echo "bpe-bench: bytes $bytes"
