#!/bin/bash
# smoke.sh BIN TARGET - a few seconds of one fuzz target for `make test` (FUZZ_SMOKE_S),
# new inputs kept under build/, never in the tree's seed corpus.
set -eu
bin=$1
target=$2
scratch=$(dirname "$bin")/smoke-$target
mkdir -p "$scratch"
dirs=("$scratch" "tests/fuzz/corpus/$target")
[ -d "tests/fuzz/regress/$target" ] && dirs+=("tests/fuzz/regress/$target")
exec "$bin" -max_total_time="${FUZZ_SMOKE_S:-5}" -timeout=10 -rss_limit_mb=2048 \
	-malloc_limit_mb=2048 -max_len=65536 -artifact_prefix="$scratch/" "${dirs[@]}"
