#!/bin/bash
# sim-report.sh - `make sim`: the Verilated mesh runs the forward kernel on random sparse
# layers through the real host protocol (cshost spmm --device sim:RxC, which loads the task
# programs and activations through the host port, streams only nonzeros, reads the results
# back and checks every output bit-exactly against the C model). Prints a table and writes
# build/sim/report.json. The sparsity-0 run is the dense baseline: the same RTL fed every
# weight.
#
# Measured by the Verilated model (host/driver/sim_harness.cpp), nothing estimated:
#   cycles           end to end (activation upload, streaming, result read-back)
#   stream_cycles    the streaming phases: the host port's stream_o, from the first wavelet
#                    a RUN/INJECT injects until the SYNC that closes the stream sees the
#                    mesh idle (docs/architecture.md section 6)
#   util             MAC-busy PE-cycles / (PEs * stream_cycles); e2e_util the same over
#                    every cycle
#   weight bytes     the RUN words (headers + nonzeros); overhead = weight bytes / (4 nnz) - 1
#
# TRACE=1 (env): run on the --trace-fst build and write OUTDIR/wave_s<S>.fst per sparsity
# (the first TRACE_CYCLES cycles, 0: all).
#
# Usage: sim-report.sh CSHOST OUTDIR MESH TOKENS K N "SPARSITIES"
set -euo pipefail
cshost=$1 outdir=$2 mesh=$3 tokens=$4 k=$5 n=$6
sparsities=${7:-"0 0.5 0.8 0.9 0.95"}
mkdir -p "$outdir"
pes=$(awk -F'x' '{print $1 * $2}' <<<"$mesh")

field() { sed -n "s/.*\"$2\": \\([^,}]*\\).*/\\1/p" <<<"$1" | tr -d '"'; }

rows=()
dense_cycles=""
fail=0
printf '%-8s %7s %10s %10s %7s %7s %8s %10s %10s %7s %6s %10s\n' sparsity nnz cycles \
	stream_cyc util e2e_util speedup link_bytes weight_B w_ovh exact "PE-cyc/s"
for s in $sparsities; do
	if [ "${TRACE:-0}" = 1 ]; then
		export CSD_SIM_FST="$outdir/wave_s$s.fst" CSD_SIM_FST_CYCLES="${TRACE_CYCLES:-0}"
	fi
	out=$("$cshost" spmm --device "sim:$mesh" --kernel fwd --tokens "$tokens" --k "$k" --n "$n" \
		--sparsity "$s" --seed 1 --json) || { echo "sim: spmm at sparsity $s failed" >&2; fail=1; continue; }
	nnz=$(field "$out" nnz)
	cyc=$(field "$out" cycles)
	scyc=$(field "$out" stream_cycles)
	util=$(field "$out" compute_utilization)
	e2e=$(field "$out" end_to_end_utilization)
	bytes=$(field "$out" link_bytes)
	wbytes=$(field "$out" weight_bytes)
	nzs=$(field "$out" nnz_streamed)
	exact=$(field "$out" bit_exact)
	secs=$(field "$out" seconds)
	[ "$exact" = true ] || fail=1
	[ -z "$dense_cycles" ] && [ "$(awk -v s="$s" 'BEGIN{print (s == 0)}')" = 1 ] && dense_cycles=$cyc
	speedup=$(awk -v d="${dense_cycles:-0}" -v c="$cyc" 'BEGIN { if (d > 0) printf "%.2f", d / c; else print "null" }')
	rate=$(awk -v c="$cyc" -v p="$pes" -v t="$secs" 'BEGIN { printf "%.0f", c * p / t }')
	ovh=$(awk -v w="$wbytes" -v z="$nzs" 'BEGIN { if (z > 0) printf "%.4f", w / (4 * z) - 1; else print "null" }')
	printf '%-8s %7s %10s %10s %7.4f %7.4f %8s %10s %10s %7s %6s %10s\n' "$s" "$nnz" "$cyc" "$scyc" \
		"$util" "$e2e" "$speedup" "$bytes" "$wbytes" "$ovh" "$exact" "$rate"
	rows+=("{\"sparsity\": $s, \"nnz\": $nnz, \"cycles\": $cyc, \"end_to_end_cycles\": $cyc, \"stream_cycles\": $scyc, \"streaming_phase_measured\": true, \"compute_utilization\": $util, \"end_to_end_utilization\": $e2e, \"speedup_vs_dense\": $speedup, \"link_bytes\": $bytes, \"weight_stream_bytes\": $wbytes, \"nnz_streamed\": $nzs, \"weight_bytes_4nnz\": $((4 * nzs)), \"weight_control_overhead\": $ovh, \"bit_exact\": $exact, \"seconds\": $secs, \"sim_cycles_per_s\": $(awk -v c="$cyc" -v t="$secs" 'BEGIN{printf "%.0f", c / t}'), \"sim_pe_cycles_per_s\": $rate}")
done

{
	printf '{"mesh": "%s", "kernel": "fwd", "tokens": %s, "k": %s, "n": %s, "runs": [\n' "$mesh" "$tokens" "$k" "$n"
	for i in "${!rows[@]}"; do
		[ "$i" -gt 0 ] && printf ',\n'
		printf '  %s' "${rows[$i]}"
	done
	printf '\n]}\n'
} >"$outdir/report.json.tmp"
mv "$outdir/report.json.tmp" "$outdir/report.json"
echo "sim: wrote $outdir/report.json"
[ "${TRACE:-0}" = 1 ] && echo "sim: waveforms: $outdir/wave_s*.fst (first ${TRACE_CYCLES:-0} cycles; 0 = all)"
echo "sim: util is over the streaming phases (host port stream_o), e2e_util over every cycle;"
echo "     w_ovh = weight-stream bytes / (4 * nonzeros streamed) - 1"
exit $fail
