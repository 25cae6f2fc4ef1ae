#!/bin/bash
# run-tests.sh - run test programs and print one summary line "N passed, N failed[, N skipped]".
#
# Usage: run-tests.sh LOGDIR ENTRY...
#   ENTRY is a program path, optionally followed by "@" and comma-separated arguments
#   (build/verif/mesh/tb_mesh_4x4@--seed=3,--cycles=20000).
# Counting: a cmocka program contributes its own "[  PASSED  ] N" / "[  FAILED  ] N" /
# "[  SKIPPED ] N" counts; any other program may print "RESULT: P passed, F failed[, S skipped]";
# otherwise a program counts as one test, passed iff it exits 0. A program that exits
# non-zero never counts as all-passed. Each program gets TEST_TIMEOUT seconds (default 900).
# Programs run TEST_JOBS at a time (default: the number of CPUs), the longest first by the
# durations the last run recorded in LOGDIR/durations, else by scripts/test-durations (a
# make test on an idle 2-core machine: a fresh checkout starts its long entries first too);
# results print in ENTRY order.
# Exit status: 0 iff nothing failed.
set -u
logdir=$1
shift
mkdir -p "$logdir"
timeout_s=${TEST_TIMEOUT:-900}
jobs=${TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
durfile=$logdir/durations
seedfile=$(dirname "$0")/test-durations
entries=("$@")
n=${#entries[@]}
resdir=$(mktemp -d "$logdir/.run.XXXXXX") || exit 1
trap 'rm -rf "$resdir"' EXIT

name_of() {
	local entry=$1 prog=${1%%@*} args=()
	if [[ "$entry" == *@* ]]; then
		IFS=',' read -r -a args <<<"${entry#*@}"
	fi
	local name
	name=$(basename "$prog")
	[ ${#args[@]} -gt 0 ] && name="$name $(printf '%s ' "${args[@]}")"
	printf '%s' "$name"
}

# The entry's log name: its path and arguments (two programs may share a basename).
key_of() {
	local k
	k=$(printf '%s' "$1" | tr ' /=@,' '_____')
	# within a file name's 255 bytes: a long one keeps its start and a checksum of the rest
	[ ${#k} -gt 200 ] && k="${k:0:180}_$(printf '%s' "$1" | cksum | cut -d' ' -f1)"
	printf '%s' "$k"
}

# Run entry i; write "rc secs" to $resdir/i when done.
run_one() {
	local i=$1 entry=${entries[$1]} prog=${entries[$1]%%@*} args=()
	if [[ "$entry" == *@* ]]; then
		IFS=',' read -r -a args <<<"${entry#*@}"
	fi
	local log start rc secs
	log="$logdir/$(key_of "$entry").log"
	start=$EPOCHREALTIME
	timeout "$timeout_s" "$prog" "${args[@]}" >"$log" 2>&1
	rc=$?
	secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	printf '%s %s\n' "$rc" "$secs" >"$resdir/$i.tmp" && mv "$resdir/$i.tmp" "$resdir/$i"
}

# Start order: by the recorded duration, longest first; unknown ones first of all (new
# programs are often the slow builds' tests), then entry order.
order=()
while read -r _ i; do order+=("$i"); done < <(
	for ((i = 0; i < n; i++)); do
		printf '%s\t%d\n' "$(key_of "${entries[$i]}")" "$i"
	done | awk -F'\t' -v dur="$durfile" -v seed="$seedfile" '
		function load(f,   l, a) {
			while ((getline l < f) > 0)
				if (l !~ /^#/ && split(l, a, "\t") == 2 && !(a[2] in d)) d[a[2]] = a[1]
		}
		BEGIN { load(dur); load(seed) }
		{ printf "%s %d\n", ($1 in d) ? d[$1] : 1e9, $2 }' | sort -s -k1,1gr)

tot_pass=0
tot_fail=0
tot_skip=0
failed_names=()
next_print=0
durations=()

# Print the results of entries done, in entry order, up to the first one still running.
flush() {
	while [ "$next_print" -lt "$n" ] && [ -f "$resdir/$next_print" ]; do
		local i=$next_print entry=${entries[$next_print]} name log rc secs p=0 f=0 s=0 line verdict
		read -r rc secs <"$resdir/$i"
		name=$(name_of "$entry")
		log="$logdir/$(key_of "$entry").log"
		durations+=("$secs	$(key_of "$entry")")
		if grep -q '^\[==========\]' "$log"; then
			p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
			f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
			s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
		elif grep -q '^RESULT: [0-9]* passed, [0-9]* failed' "$log"; then
			line=$(grep '^RESULT: ' "$log" | tail -n 1)
			p=$(printf '%s' "$line" | sed -n 's/^RESULT: \([0-9]*\) passed.*/\1/p')
			f=$(printf '%s' "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
			s=$(printf '%s' "$line" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
			s=${s:-0}
		elif [ "$rc" -eq 77 ]; then
			s=1
		elif [ "$rc" -eq 0 ]; then
			p=1
		fi
		if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ "$f" -eq 0 ]; then
			f=1 # crashed, timed out or failed without saying so
		fi
		tot_pass=$((tot_pass + p))
		tot_fail=$((tot_fail + f))
		tot_skip=$((tot_skip + s))
		if [ "$f" -gt 0 ]; then
			verdict=FAIL
			failed_names+=("$name")
		elif [ "$p" -eq 0 ] && [ "$s" -gt 0 ]; then
			verdict=SKIP
		else
			verdict=PASS
		fi
		[ "$rc" -eq 124 ] && verdict="$verdict (timeout ${timeout_s}s)"
		printf '%-4s %-58s %4d passed %3d failed %3d skipped %7.1fs\n' "$verdict" "$name" \
			"$p" "$f" "$s" "$secs"
		if [ "$f" -gt 0 ]; then
			echo "---- last lines of $log ----"
			tail -n 30 "$log"
			echo "----"
		fi
		next_print=$((next_print + 1))
	done
}

running=0
for i in "${order[@]}"; do
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
		flush
	fi
	run_one "$i" &
	running=$((running + 1))
done
wait
flush

{
	printf '%s\n' "${durations[@]}"
	[ -f "$durfile" ] && cat "$durfile"
} | awk -F'\t' '!seen[$2]++' >"$durfile.tmp" && mv "$durfile.tmp" "$durfile"

if [ ${#failed_names[@]} -gt 0 ]; then
	echo "failed: ${failed_names[*]}"
fi
if [ "$tot_skip" -gt 0 ]; then
	echo "$tot_pass passed, $tot_fail failed, $tot_skip skipped"
else
	echo "$tot_pass passed, $tot_fail failed"
fi
[ "$tot_fail" -eq 0 ]
