#!/bin/bash
# sim_build.sh OUT.so ROWS COLS AWORDS BWORDS PE fst|plain [-GName=Value ...] - Verilate
# rtl/mesh/mesh_top for one mesh shape, SRAM size and PE implementation (PE: full, lite,
# micro_mt: mesh_top's Impl; the -G arguments are that implementation's other mesh_top
# parameters, which host/driver/sim.mk takes from the board configuration) and link it with
# host/driver/sim_harness.cpp and the shared Verilator runtime (VLT_RT: the objects' paths,
# from the top Makefile) into a shared object the sim backend dlopens. Run from the
# repository root, by make only (sim.mk), whose jobserver the C++ compiles share; C++ at
# -O2, no --threads (docs: shared/reference/toolchain-notes.md), but -O1 for the code
# Verilator marks slow (construction, initial blocks, settling: run once; it is half the
# C++ and builds in half the time at -O1, at no measurable cost to simulation speed).
# `fst`: a separate build with --trace-fst whose harness writes a waveform when
# CSD_SIM_FST names a file (TRACE=1 make sim); the plain build carries no tracing code.
set -euo pipefail
out=$1 rows=$2 cols=$3 aw=$4 bw=$5 pe=$6 trace=$7
shift 7
gparams=("$@")
case $pe in full | lite | micro_mt) ;; *) echo "sim_build.sh: unknown PE '$pe'" >&2; exit 2;; esac
read -r -a rtobjs <<<"${VLT_RT:-}"
[ ${#rtobjs[@]} -gt 0 ] || { echo "sim_build.sh: VLT_RT (the Verilator runtime objects) is not set" >&2; exit 2; }
vtrace=() htrace=() tobjs=() tlibs=()
if [ "$trace" = fst ]; then
	vtrace=(--trace-fst)
	htrace=(-DSIMH_FST)
fi
obj=${out%.so}.obj
mkdir -p "$(dirname "$out")"
log=${out%.so}.build.log
rtl=(rtl/mesh/*.v rtl/pe/*.v rtl/sram/*.v)
start=$SECONDS
build() {
	rm -rf "$obj"
	verilator --cc --build -Wno-fatal --x-assign fast --x-initial fast \
		-MAKEFLAGS OPT_FAST=-O2 -MAKEFLAGS OPT_SLOW=-O1 -CFLAGS -fPIC \
		-CFLAGS -std=c++17 "${vtrace[@]}" --top-module mesh_top \
		-GRows="$rows" -GCols="$cols" -GAWords="$aw" -GBWords="$bw" -GImpl="\"$pe\"" \
		"${gparams[@]}" \
		-Irtl/mesh -Irtl/pe -Irtl/sram --Mdir "$obj" "${rtl[@]}" || return 1
	if [ "$trace" = fst ]; then
		make -s -C "$obj" -f Vmesh_top.mk OPT_FAST=-O2 OPT_GLOBAL=-O2 VM_USER_CFLAGS=-fPIC \
			CXXFLAGS="-O2 -fPIC -std=c++17" verilated_fst_c.o || return 1
		tobjs=("$obj/verilated_fst_c.o")
		tlibs=(-lz)
	fi
	g++ -std=c++17 -O2 -fPIC -shared -Wall -Wextra -Werror \
		-I"$obj" -isystem /usr/share/verilator/include \
		-isystem /usr/share/verilator/include/vltstd \
		-Ihost/driver -DSIMH_ROWS="$rows" -DSIMH_COLS="$cols" -DSIMH_AWORDS="$aw" \
		-DSIMH_BWORDS="$bw" -DSIMH_PE="\"$pe\"" "${htrace[@]}" -o "$out.tmp" host/driver/sim_harness.cpp \
		"$obj/Vmesh_top__ALL.a" "${rtobjs[@]}" \
		"${tobjs[@]}" -lpthread "${tlibs[@]}" || return 1
	mv -f "$out.tmp" "$out"
}
build >"$log" 2>&1 || { tail -n 30 "$log" >&2; exit 1; }
echo "sim_build.sh: $out ($((SECONDS - start)) s, log $log)"
