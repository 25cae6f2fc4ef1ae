#!/bin/bash
# mesh_formal.sh OUTDIR: the proofs of `make formal` (yosys 0.23 and yosys-abc; one entry of
# `make test`). Every model is cut from one elaborated design per configuration (OUTDIR/
# <name>.il) and written as AIGER for ABC: bmc3 (bounded, from power-up), ind (k-induction),
# pdr (unbounded), covers by bmc3 -a. The proofs run in jobs, FORMAL_JOBS (2) at a time,
# each job's verdicts printed together at the end. About 2 minutes of wall time on an idle
# 2-core machine, ~3.5 minutes of CPU (the router's 2-induction and the FifoDepth 2 router's
# bmc3 are the longest steps, ~25 s each); docs/measurements.md has the figures.
#   fifo:     mesh_fifo, Width 2: Depth 2 bypass (the router's input FIFO), Depth 3
#             registered (the config chain's), Depth 1 registered loading while empty (the
#             lean router's input FIFO), block-RAM storage (UseRam, Depth 4): no loss /
#             duplication / corruption / reordering of a tagged beat, bmc3 20 frames + PDR
#             (unbounded), the covers (12 frames); fifo_broken (FORMAL_BROKEN) must FAIL
#   router:   mesh_router FifoDepth 1, PayloadW 1, the full 16-color route table:
#             no loss / duplication / misrouting of a wavelet (mesh_router_formal.vh),
#             unbounded: bmc3 from power-up (6 frames) + 2-induction (ind), which the
#             strengthening invariants in mesh_router_formal.vh make inductive.
#             Assumes route writes only while the router is idle with no input valid.
#             router_arb: the three mesh_arbiter assertions after reset, PDR (<1 s).
#             router_fair: bounded waiting (mesh_router_fair.vh), PDR.
#             router_broken: the deliberately false router property alone must FAIL
#             (ABC finds a 4-frame counterexample; the .cex is left in OUTDIR).
#   router_d2: mesh_router FifoDepth 2 (mesh_top's default, the sim mesh): no loss /
#             duplication / misrouting by bmc3 from power-up (FORMAL_ROUTER_D2_BMC frames),
#             bounded waiting by PDR, the covers.
#   router_lean, router_lean_boards (1x1, 2x2, 2x2_10), router_lean_mt (mt_00, mt_10):
#             mesh_router_lean (the board's shared-bus router), PayloadW 1, all links
#             unregistered (Ports 4'b1111) and no FIFO on the local input, the board's 1x1
#             (4'b1000, only W, registered: the absent outputs are the sink; LocalFifo), the
#             2x2 board's tile (0, 0) (4'b1110, W registered, E and S not; LocalFifo) and its
#             tile (1, 0) (4'b0011, no local FIFO, as tiles (0, 1) and (1, 1)), and the
#             pe_micro_mt board's two: the same no loss / duplication / misrouting, with
#             err_unrouted as a virtual output (mesh_router_lean_formal.vh), bmc3 (6 frames)
#             + 2- or 3-induction, bounded waiting by PDR, the covers. Same route-write
#             assumption; nothing arrives on an absent input; without LocalFifo the local
#             source holds a wavelet until ready. The arbiter's pointer range (mesh_arbiter.v)
#             is kept as an invariant: a pointer out of range would put a stale word on the
#             bus. router_lean_broken must FAIL. FORMAL_LEAN_ALL=1 adds the other 14 Ports
#             (mesh edges; ~1 minute).
#   cfgchain: the config chain's stages, mesh_cfgchain and mesh_cfgchain_lean, at their ports
#             (verif/formal/mesh_cfgchain_check.v): every beat answered exactly once and in
#             order (passed on, its read's response, or consumed), no answer without a
#             request, answers owed bounded (the read-room condition), each access performed
#             once; PDR (unbounded), the covers (16 frames), a broken property must FAIL.
#   hostport: mesh_hostport's framing (rtl/mesh/mesh_hostport_formal.vh): a command word is
#             taken as a header exactly when the opcodes' word counts say, a header at every
#             response frame boundary, nothing before the first command, offered words held
#             under back-pressure; 2 PEs, small buffers; unbounded: bmc3 from power-up
#             (FORMAL_HOSTPORT_BMC, 5 frames) + 2-induction (ind), which the strengthening
#             invariants in the .vh make inductive; the covers (10 frames); a broken
#             property must FAIL.
#   hostport_lean: the same framing on mesh_hostport_lean (mesh_hostport_lean_formal.vh),
#             HoldWrite 0 and 1 (the 1x1 and 2x2 boards); unbounded the same way (with the
#             walker's assertions in mesh_hostport_lean.v as invariants).
#   cfgbus:   the 2x2 pe_micro_mt board's config bus (verif/formal/mesh_cfgbus_check.v):
#             every read answered once with its word, in order; each access once (a PE
#             write taken once every PE it names has granted it); PDR, the covers (12
#             frames), a broken property must FAIL.
#   link_counters: the board link receiver's error counters saturate, never wrap
#             (verif/formal/board_frame_rx_check.v, ErrW 2); PDR, the covers (40 frames).
#   miters:   mesh_route's LUT4-shaped muxes equal the array read (route_miter_*), mesh_bus
#             (the lean router's bus) equals the array read (bus_check_*): SAT, <1 s each.
#   *.cov:    every proof's cover statements reached from power-up (for ABC each cover is an
#             assertion of its negation, verif/formal/cover2assert.v, that bmc3 -a must
#             violate): an unreachable cover fails.
# docs/verification.md says what each check proves.
# Data widths are shrunk (the properties are data-independent). Exit status 0 iff every
# proof passes and every broken property fails; a timeout or an inconclusive result is a
# failure. FORMAL_ONLY="job ..." runs those jobs alone (development; mutation runs).
set -u
out=$1
mkdir -p "$out"
R=rtl/mesh
T=${FORMAL_TIMEOUT:-600}
J=${FORMAL_JOBS:-2}

# base name top params defines files...: the design read, parameterised, flattened, its
# memories mapped to registers (write_aiger takes no $mem; CUT: yosys commands before that,
# e.g. deleting a memory whose contents a proof does not need) and its assumptions made early,
# kept as RTLIL ($out/name.il) so that every model of one configuration is cut from it
# instead of being read and elaborated again
base() {
	local name=$1 top=$2 params=$3 defs=$4
	shift 4
	yosys -q -l "$out/$name.base.log" -p "read_verilog -sv -formal $defs -I$R $*; \
		chparam $params $top; prep -top $top; flatten; ${CUT:-} memory_map; opt -fast; \
		async2sync; chformal -assume -early; write_rtlil $out/$name.il" \
		>/dev/null 2>&1 || { echo "formal $name: yosys failed (see $out/$name.base.log)"; return 1; }
}
# gen_aig name base assert-src-globs: an AIGER model for yosys-abc of that base with only the
# assertions whose source matches one of the globs (space-separated; a glob after a "!"
# takes away what it matches, e.g. "!*|*" the cells of the modules below the top, whose
# source names their instance too; the formal files load
# their free constants from an $anyseq in cycle 0, since write_aiger takes no $anyconst).
# -zinit: registers without an init value start arbitrary (extra inputs), as at power-up.
gen_aig() {
	local name=$1 b=$2 keep=$3 g globs sel=""
	read -r -a globs <<<"$keep"   # split on spaces, no file globbing
	for g in "${globs[@]}"; do
		case "$g" in !*) sel="$sel a:src=${g#!} %d";; *) sel="$sel a:src=$g${sel:+ %u}";; esac
	done
	yosys -q -l "$out/$name.yosys.log" -p "read_rtlil $out/$b.il; \
		chformal -assert -remove t:\$assert $sel %i %n; chformal -cover -remove; \
		setundef -undriven -anyseq; delete -output; setattr -unset keep; opt_clean; \
		dffunmap; techmap; opt -fast -nodffe -nosdff; abc -g AND; opt_clean; \
		select -assert-min 1 t:\$assert; write_aiger -zinit -I -B $out/$name.aig" \
		>/dev/null 2>&1 || { echo "formal $name: yosys failed (see $out/$name.yosys.log)"; return 1; }
}
# gen_cov name base cover-src-globs: as gen_aig, but the model's outputs are the covers whose
# source matches a glob, each turned into an assertion of its negation
# (verif/formal/cover2assert.v): an output asserted in some frame is a cover reached
gen_cov() {
	local name=$1 b=$2 keep=$3 g globs sel=""
	read -r -a globs <<<"$keep"
	for g in "${globs[@]}"; do
		case "$g" in !*) sel="$sel a:src=${g#!} %d";; *) sel="$sel a:src=$g${sel:+ %u}";; esac
	done
	yosys -q -l "$out/$name.yosys.log" -p "read_rtlil $out/$b.il; \
		chformal -assert -remove; chformal -cover -remove t:\$cover $sel %i %n; \
		techmap -map verif/formal/cover2assert.v t:\$cover; \
		setundef -undriven -anyseq; delete -output; setattr -unset keep; opt_clean; \
		dffunmap; techmap; opt -fast -nodffe -nosdff; abc -g AND; opt_clean; \
		select -assert-min 1 t:\$assert; tee -q -o $out/$name.ncov select -count t:\$assert; \
		write_aiger -zinit -I -B $out/$name.aig" \
		>/dev/null 2>&1 || { echo "formal $name: yosys failed (see $out/$name.yosys.log)"; return 1; }
}
# cov_run name model frames: every cover of the model reached within that many frames from
# power-up (ABC bmc3 -a goes on after each one it reaches); an unreached cover fails.
# yosys-abc's bmc3 -a crashes on some models (a segmentation fault, seen on the router's
# and the config chain's covers): then each cover is run alone (cone -O), one process each.
cov_run() {
	local name=$1 model=$2 nf=$3 t0=$SECONDS want got=fail rc n=0 i
	want=$(sed -n 's/^\([0-9]*\) objects.*/\1/p' "$out/$model.ncov" 2>/dev/null | tail -n 1)
	# (in a subshell whose stderr takes the shell's own crash report)
	(timeout "$T" nice yosys-abc -c "read_aiger $out/$model.aig; fold; strash; scleanup; \
		bmc3 -a -F $nf" >"$out/$name.log" 2>&1; exit $?) 2>/dev/null
	rc=$?
	if [ $rc -ge 128 ] && [ $rc -ne 124 ] && [ -n "$want" ]; then
		echo "  $name: bmc3 -a exited with $rc; each cover alone" >>"$out/$name.log"
		for ((i = 0; i < want; i++)); do
			(timeout "$T" nice yosys-abc -c "read_aiger $out/$model.aig; fold; strash; \
				scleanup; cone -O $i -s; bmc3 -F $nf" >"$out/$name.$i.log" 2>&1; exit $?) 2>/dev/null
			rc=$?
			[ $rc -eq 124 ] && break
			if grep -aq "was asserted in frame" "$out/$name.$i.log"; then n=$((n + 1))
			else echo "  $name: cover $i not reached (exit $rc)" >>"$out/$name.log"; fi
		done
	else
		n=$(grep -aoE "Output +[0-9]+ was asserted in frame" "$out/$name.log" \
			| awk '{print $2}' | sort -u | wc -l)
	fi
	[ -n "$want" ] && [ "$n" -eq "$want" ] && got=pass
	[ $rc -eq 124 ] && got=timeout
	[ "$got" = pass ] || echo "  $name: $n of ${want:-?} covers reached in $nf frames" >>"$out/$name.log"
	verdict "$name" pass "$got" "$t0"
}
# verdict name expect got t0: one PASS/FAIL line; a FAIL sets fail=1
verdict() {
	if [ "$3" = "$2" ]; then
		printf 'PASS formal %-22s (%s as expected, %ds)\n' "$1" "$3" $((SECONDS - $4))
	else
		printf 'FAIL formal %-22s (expected %s, got %s; %s)\n' "$1" "$2" "$3" "$out/$1.log"
		fail=1
	fi
}
# abc_run name expect(pass|fail) model abc-commands: bmc3 passes when no property fails in
# its frames, ind and pdr when the property is proved; a failing property leaves
# $out/name.cex
abc_run() {
	local name=$1 expect=$2 model=$3 cmds=$4
	local t0=$SECONDS
	timeout "$T" nice yosys-abc -c "read_aiger $out/$model.aig; fold; strash; scleanup; \
		$cmds; write_cex -n $out/$name.cex" >"$out/$name.log" 2>&1
	local rc=$?
	local got=unknown
	local nf
	nf=$(sed -n 's/.*bmc3 -F \([0-9]*\).*/\1/p' <<<"$cmds")   # bmc3 must reach every frame
	# (bmc3 on a small model may stop early having visited every reachable state: a proof)
	grep -aq "No output asserted in ${nf:-[0-9]*} frames\|Networks are equivalent\|^Property proved\|Explored all reachable states" "$out/$name.log" && got=pass
	grep -aq "was asserted in frame\|Networks are NOT EQUIVALENT" "$out/$name.log" && got=fail
	[ $rc -eq 124 ] && got=timeout
	verdict "$name" "$expect" "$got" "$t0"
}
# broken_line file: the line of the deliberately false assertion (the first `assert` after
# the file's FORMAL_BROKEN), so that its model keeps that assertion alone and a real property
# failing cannot pass for it
broken_line() {
	awk '/FORMAL_BROKEN/ { b = 1 } b && /assert/ { print NR; exit }' "$1"
}

# ---- the proofs, in jobs of one configuration each (a job's steps run in order, the jobs
# FORMAL_JOBS at a time; each prints its verdicts to $out/job_<name>.out)

# mesh_fifo: one tagged beat (its FORMAL block): no loss, duplication, corruption or
# reordering, BMC from power-up + PDR (unbounded), and its covers
fifo() { # name params
	base "$1" mesh_fifo "$2" "" $R/mesh_fifo.v || { fail=1; return; }
	gen_aig "$1" "$1" "*mesh_fifo.v*" || fail=1
	abc_run "$1.bmc" pass "$1" "bmc3 -F 20"
	abc_run "$1.pdr" pass "$1" "pdr"
	gen_cov "$1_cov" "$1" "*mesh_fifo.v*" || fail=1
	cov_run "$1.cov" "$1_cov" 12
}
job_fifo() {
	fifo fifo_d2 "-set Width 2 -set Depth 2 -set Bypass 1"
	fifo fifo_d3 "-set Width 2 -set Depth 3 -set Bypass 0"
	# one registered entry (the lean router's input FIFO and the config chain's stage): its
	# storage loads in every empty cycle (LoadEmpty)
	fifo fifo_d1 "-set Width 2 -set Depth 1 -set Bypass 0"
	# the block-RAM storage (UseRam, forced at a small depth)
	fifo fifo_ram "-set Width 2 -set Depth 4 -set Bypass 0 -set UseRam 1"
	local bl
	bl=$(broken_line $R/mesh_fifo.v)
	base fifo_broken mesh_fifo "-set Width 2 -set Depth 2 -set Bypass 1" "-DFORMAL_BROKEN" \
		$R/mesh_fifo.v || { fail=1; return; }
	gen_aig fifo_broken fifo_broken "*mesh_fifo.v:$bl.*" || fail=1
	abc_run fifo_broken.bmc fail fifo_broken "bmc3 -F 20"
}

# The router: no loss / duplication (rtl/mesh/mesh_router_formal.vh): bmc3 for the base case
# from reset, then k-induction (ind) on the OR of the router's properties. Only the router's
# own properties are kept (the FIFO's are proved above; its tag tracker is not 2-inductive).
RF="$R/mesh_router.v $R/mesh_fifo.v $R/mesh_arbiter.v $R/mesh_route.v $R/mesh_xbar.v"
RP="-set FifoDepth 1 -set PayloadW 1"
RB=${FORMAL_ROUTER_BMC:-6}   # base case depth (frames from power-up)
RK=${FORMAL_ROUTER_K:-2}     # induction depth; RB > RK
[ "$RB" -gt "$RK" ] || { echo "FAIL formal router: base case depth $RB must exceed induction depth $RK"; exit 1; }
job_router() {
	base router mesh_router "$RP" "" $RF || { fail=1; return; }
	gen_aig router router "*mesh_router_formal.vh*" || fail=1
	abc_run router.bmc pass router "bmc3 -F $RB"
	abc_run router.ind pass router "orpos; ind -F $RK"
	# its covers (mesh_router_formal.vh, mesh_router_fair.vh) reached from power-up
	gen_cov router_cov router "*mesh_router_formal.vh* *mesh_router_fair.vh*" || fail=1
	cov_run router.cov router_cov 12
	# bounded waiting (mesh_router_fair.vh): no input passed over by more than 4 others while
	# it requests an output; PDR finds the pointer invariant itself (a few seconds)
	gen_aig router_fair router "*mesh_router_fair.vh*" || fail=1
	abc_run router_fair.pdr pass router_fair "pdr"
	# the arbiters' own properties (one grant, only to a requester, work conserving) in the
	# router, after a reset: PDR (they need the pointer range, which PDR finds itself)
	gen_aig router_arb router "*mesh_arbiter.v*" || fail=1
	abc_run router_arb.pdr pass router_arb "pdr"
	# the deliberately false property alone
	local bl
	bl=$(broken_line $R/mesh_router_formal.vh)
	base router_broken mesh_router "$RP" "-DFORMAL_BROKEN" $RF || { fail=1; return; }
	gen_aig router_broken router_broken "*mesh_router_formal.vh:$bl.*" || fail=1
	abc_run router_broken.bmc fail router_broken "bmc3 -F $RB"
}
# FifoDepth 2, the router of mesh_top's default configuration (make sim, make train, the
# sim backend: Impl "full", so Ports 4'b1111): the same no loss / duplication /
# misrouting, bounded from power-up (bmc3, FORMAL_ROUTER_D2_BMC frames; the strengthening
# invariants are FifoDepth 1's, so no induction), bounded waiting by PDR, and the covers
job_router_d2() {
	base router_d2 mesh_router "-set FifoDepth 2 -set PayloadW 1" "" $RF || { fail=1; return; }
	gen_aig router_d2 router_d2 "*mesh_router_formal.vh*" || fail=1
	abc_run router_d2.bmc pass router_d2 "bmc3 -F ${FORMAL_ROUTER_D2_BMC:-6}"
	gen_aig router_d2_fair router_d2 "*mesh_router_fair.vh*" || fail=1
	abc_run router_d2_fair.pdr pass router_d2_fair "pdr"
	gen_cov router_d2_cov router_d2 "*mesh_router_formal.vh* *mesh_router_fair.vh*" || fail=1
	cov_run router_d2.cov router_d2_cov 12
}

# The board's lean router (mesh_router_lean_formal.vh): its own properties plus the
# arbiter's (whose pointer range the induction needs), by bmc3 from power-up and
# 2-induction.
LF="$R/mesh_router_lean.v $R/mesh_fifo.v $R/mesh_arbiter.v $R/mesh_route.v $R/mesh_bus.v"
LK="*mesh_router_lean_formal.vh* *mesh_arbiter.v*"
LC="*mesh_router_lean_formal.vh* *mesh_router_lean_fair.vh*"
# lean name params [k]: the lean router with these parameters, bmc3 + k-induction (k: RK)
# + bounded waiting on the bus (mesh_router_lean_fair.vh) by PDR, and the covers reached
lean() {
	base "$1" mesh_router_lean "-set PayloadW 1 $2" "" $LF || { fail=1; return; }
	gen_aig "$1" "$1" "$LK" || fail=1
	abc_run "$1.bmc" pass "$1" "bmc3 -F $RB"
	abc_run "$1.ind" pass "$1" "orpos; ind -F ${3:-$RK}"
	gen_aig "$1_fair" "$1" "*mesh_router_lean_fair.vh*" || fail=1
	abc_run "$1_fair.pdr" pass "$1_fair" "pdr"
	gen_cov "$1_cov" "$1" "$LC" || fail=1
	cov_run "$1.cov" "$1_cov" 12
}
job_router_lean() {
	lean router_lean "-set Ports 4'b1111"
	local bl
	bl=$(broken_line $R/mesh_router_lean_formal.vh)
	base router_lean_broken mesh_router_lean "-set PayloadW 1 -set Ports 4'b1111" \
		"-DFORMAL_BROKEN" $LF || { fail=1; return; }
	gen_aig router_lean_broken router_lean_broken "*mesh_router_lean_formal.vh:$bl.*" || fail=1
	abc_run router_lean_broken.bmc fail router_lean_broken "bmc3 -F $RB"
}
job_router_lean_boards() {
	lean router_lean_1x1 "-set Ports 4'b1000 -set RegOut 4'b1000 -set LocalFifo 1"
	# the 2x2 board's tile (0, 0): W (the host port's link) registered, E and S not, a FIFO on
	# the local input; and its tile (1, 0): N and E, no FIFO on the local input
	lean router_lean_2x2 "-set Ports 4'b1110 -set RegOut 4'b1000 -set LocalFifo 1"
	lean router_lean_2x2_10 "-set Ports 4'b0011"
}
# the 2x2 pe_micro_mt board's routers (mesh_top Impl "micro_mt"): one ready bit for the bus head,
# err_unrouted a cycle late, the registered FIFO grant and the route read on the bus, the
# host link's register loading only when empty; tile (0, 0) as above, tile (1, 0) with a
# LocalFirst PE on its local input (valid in the PE's turns only); 3-induction
MT="-set LocalReadyBus 1 -set ErrLate 1 -set RegOutEmpty 1 -set RegGnt 1"
job_router_lean_mt() {
	lean router_lean_mt_00 "-set Ports 4'b1110 -set RegOut 4'b1000 -set LocalFifo 1 $MT" 3
	lean router_lean_mt_10 "-set Ports 4'b0011 -set LocalFirst 1 $MT" 3
}
# FORMAL_LEAN_ALL=1: also every other Ports (the routers on a mesh's edges), ~5 s each
job_router_lean_all() {
	for P in 0000 0001 0010 0011 0100 0101 0110 0111 1001 1010 1011 1100 1101 1110; do
		lean router_lean_$P "-set Ports 4'b$P"
	done
}
# mesh_route's lookup (4:1 muxes in the form of two LUT4) equals the plain array read
# (verif/formal/mesh_route_ref.v), for every table and color: a SAT miter, for the full Used
# and a folded one (an edge router's); mesh_bus (the lean router's bus, 4:1 muxes in the
# form of two LUT4) equals the plain array read (verif/formal/mesh_bus_check.v) for every
# input and select: SAT, 3 to 5 inputs
job_miters() {
	local U N t0 got
	for U in 11111 11001; do
		t0=$SECONDS
		if yosys -q -l "$out/route_miter_$U.log" -p "read_verilog -sv $R/mesh_route.v \
			verif/formal/mesh_route_ref.v; chparam -set Used 5'b$U mesh_route mesh_route_ref; \
			prep; miter -equiv -flatten -make_assert mesh_route_ref mesh_route miter; \
			sat -verify -prove-asserts miter" >/dev/null 2>&1; then got=pass; else got=fail; fi
		verdict route_miter_$U pass $got $t0
	done
	for N in 3 4 5; do
		t0=$SECONDS
		if yosys -q -l "$out/bus_check_$N.log" -p "read_verilog -sv -formal $R/mesh_bus.v \
			verif/formal/mesh_bus_check.v; chparam -set NIn $N mesh_bus_check; \
			prep -top mesh_bus_check; flatten; sat -verify -prove-asserts" >/dev/null 2>&1
		then got=pass; else got=fail; fi
		verdict bus_check_$N pass $got $t0
	done
}

# The config chain's stages (verif/formal/mesh_cfgchain_check.v): every beat answered exactly
# once and in order (passed on, turned into its read's response, or consumed), no answer
# without a request, each access performed once; mesh_cfgchain (the sim mesh's) and
# mesh_cfgchain_lean (the board's): PDR (unbounded, from power-up), the covers, and a
# deliberately false property that must fail
CF="verif/formal/mesh_cfgchain_check.v $R/mesh_cfgchain.v $R/mesh_cfgchain_lean.v $R/mesh_cfg_dec.v $R/mesh_fifo.v"
chain() { # name lean
	base "$1" mesh_cfgchain_check "-set Lean $2" "" $CF || { fail=1; return; }
	gen_aig "$1" "$1" "*mesh_cfgchain_check.v* !*|*" || fail=1
	abc_run "$1.pdr" pass "$1" "pdr"
	gen_cov "$1_cov" "$1" "*mesh_cfgchain_check.v* !*|*" || fail=1
	cov_run "$1.cov" "$1_cov" 16
	local bl
	bl=$(broken_line verif/formal/mesh_cfgchain_check.v)
	base "$1_broken" mesh_cfgchain_check "-set Lean $2" "-DFORMAL_BROKEN" $CF || { fail=1; return; }
	gen_aig "$1_broken" "$1_broken" "*mesh_cfgchain_check.v:$bl.*" || fail=1
	abc_run "$1_broken.bmc" fail "$1_broken" "bmc3 -F 20"
}
job_cfgchain() {
	chain cfgchain 0
	chain cfgchain_lean 1
}
# The 2x2 pe_micro_mt board's config bus (verif/formal/mesh_cfgbus_check.v): every read
# answered once with its word, in order, nothing else answered; each access performed once
# (a PE write taken only when every PE it names has granted it); PDR, the covers, and a
# deliberately false property that must fail
BF="verif/formal/mesh_cfgbus_check.v $R/mesh_cfgbus_lean.v $R/mesh_cfg_dec.v"
job_cfgbus() {
	base cfgbus mesh_cfgbus_check "-set P 4" "" $BF || { fail=1; return; }
	gen_aig cfgbus cfgbus "*mesh_cfgbus_check.v* !*|*" || fail=1
	abc_run cfgbus.pdr pass cfgbus "pdr"
	gen_cov cfgbus_cov cfgbus "*mesh_cfgbus_check.v* !*|*" || fail=1
	cov_run cfgbus.cov cfgbus_cov 12
	local bl
	bl=$(broken_line verif/formal/mesh_cfgbus_check.v)
	base cfgbus_broken mesh_cfgbus_check "-set P 4" "-DFORMAL_BROKEN" $BF || { fail=1; return; }
	gen_aig cfgbus_broken cfgbus_broken "*mesh_cfgbus_check.v:$bl.*" || fail=1
	abc_run cfgbus_broken.bmc fail cfgbus_broken "bmc3 -F 12"
}

# The host port's framing (rtl/mesh/mesh_hostport_formal.vh): every command's words taken
# exactly (a header where the opcode's word count says), a header at every response frame
# boundary, nothing before the first command, offered words held under back-pressure.
# Small sizes (2 PEs, 2-word COLLECT buffer, SRAM of 8 and 4 words). Unbounded: bmc3 from
# power-up (FORMAL_HOSTPORT_BMC frames, 5) for the base case, then 2-induction (ind), which
# the strengthening invariants in mesh_hostport_formal.vh make inductive, with the COLLECT
# buffer's own range invariants (mesh_fifo.v's first three assertions, proved with the
# rest; PDR had not finished in 4 minutes without them); the covers, and a deliberately
# false property that must fail.
HF="$R/mesh_hostport.v $R/mesh_hostport_dec.v $R/mesh_fifo.v $R/mesh_route.v"
HP="-set NumPes 2 -set AWords 8 -set BWords 4 -set CollectDepth 2"
HK=${FORMAL_HOSTPORT_K:-2}   # induction depth (mesh_hostport_lean: HK + 1); the base case is deeper
[ "${FORMAL_HOSTPORT_BMC:-5}" -gt $((HK + 1)) ] || { echo "FAIL formal hostport: base case depth must exceed $((HK + 1))"; exit 1; }
# fifo_range: globs for mesh_fifo.v's count and pointer range assertions (the source range
# of a flattened assertion ends on its statement's last line)
fifo_range() {
	local p st en
	for p in "assert (cnt_q <= Full)" "assert (rd_q <= LastPtr)" "assert (wr_q =="; do
		st=$(grep -nF "$p" $R/mesh_fifo.v | cut -d: -f1)
		en=$(awk -v s="$st" 'NR >= s && /\);/ { print NR; exit }' $R/mesh_fifo.v)
		printf '*mesh_fifo.v:*-%s.* ' "$en"
	done
}
job_hostport() {
	base hostport mesh_hostport "$HP" "" $HF || { fail=1; return; }
	gen_aig hostport hostport "*mesh_hostport_formal.vh* $(fifo_range)" || fail=1
	abc_run hostport.bmc pass hostport "bmc3 -F ${FORMAL_HOSTPORT_BMC:-5}"
	abc_run hostport.ind pass hostport "orpos; ind -F $HK"
	gen_cov hostport_cov hostport "*mesh_hostport_formal.vh* !*|*" || fail=1
	cov_run hostport.cov hostport_cov 10
	local bl
	bl=$(broken_line $R/mesh_hostport_formal.vh)
	base hostport_broken mesh_hostport "$HP" "-DFORMAL_BROKEN" $HF || { fail=1; return; }
	gen_aig hostport_broken hostport_broken "*mesh_hostport_formal.vh:$bl.*" || fail=1
	abc_run hostport_broken.bmc fail hostport_broken "bmc3 -F 12"
}

# The board's host port (rtl/mesh/mesh_hostport_lean_formal.vh): the same framing, unbounded
# the same way (bmc3 FORMAL_HOSTPORT_BMC frames, then 3-induction with the invariants in the
# .vh and the walker's in mesh_hostport_lean.v), with HoldWrite 0 (the 1x1 board) and 1 (the
# 2x2 pe_micro_mt board: a WRITE's word stays on cmd_* until its beat has left mesh_top's
# slice)
LHF="$R/mesh_hostport_lean.v $R/mesh_hostport_dec.v"
job_hostport_lean() {
	local hw
	for hw in 0 1; do
		base hostport_lean_w$hw mesh_hostport_lean "$HP -set HoldWrite $hw" "" $LHF \
			|| { fail=1; return; }
		gen_aig hostport_lean_w$hw hostport_lean_w$hw \
			"*mesh_hostport_lean_formal.vh* *mesh_hostport_lean.v:* !*|*" || fail=1
		abc_run hostport_lean_w$hw.bmc pass hostport_lean_w$hw \
			"bmc3 -F ${FORMAL_HOSTPORT_BMC:-5}"
		abc_run hostport_lean_w$hw.ind pass hostport_lean_w$hw "orpos; ind -F $((HK + 1))"
		gen_cov hostport_lean_w${hw}_cov hostport_lean_w$hw \
			"*mesh_hostport_lean_formal.vh* !*|*" || fail=1
		cov_run hostport_lean_w$hw.cov hostport_lean_w${hw}_cov 10
	done
	local bl
	bl=$(broken_line $R/mesh_hostport_lean_formal.vh)
	base hostport_lean_broken mesh_hostport_lean "$HP" "-DFORMAL_BROKEN" $LHF \
		|| { fail=1; return; }
	gen_aig hostport_lean_broken hostport_lean_broken "*mesh_hostport_lean_formal.vh:$bl.*" \
		|| fail=1
	abc_run hostport_lean_broken.bmc fail hostport_lean_broken "bmc3 -F 12"
}

# The board's host link receiver (verif/formal/board_frame_rx_check.v): its error counters
# (2 bits here) saturate and never wrap; each reaches its maximum. Its receive buffer is cut
# out (the read data become free inputs). PDR, the covers.
job_link_counters() {
	CUT="delete t:\$mem* t:\$mem_v2*;" base link_counters board_frame_rx_check "" "" \
		verif/formal/board_frame_rx_check.v rtl/board/board_frame_rx.v rtl/board/board_fifo.v rtl/board/board_crc16.v \
		|| { fail=1; return; }
	gen_aig link_counters link_counters "*board_frame_rx_check.v* !*|*" || fail=1
	abc_run link_counters.pdr pass link_counters "pdr"
	gen_cov link_counters_cov link_counters "*board_frame_rx_check.v* !*|*" || fail=1
	cov_run link_counters.cov link_counters_cov 40
}

# the jobs, longest first so that two workers finish close together
JOBS="router router_d2 router_lean_mt router_lean_boards router_lean cfgchain hostport hostport_lean link_counters cfgbus fifo miters"
[ "${FORMAL_LEAN_ALL:-0}" = 1 ] && JOBS="$JOBS router_lean_all"
[ -n "${FORMAL_ONLY:-}" ] && JOBS=$FORMAL_ONLY   # a subset by job name (development)
t_all=$SECONDS
running=0
for j in $JOBS; do
	declare -F "job_$j" >/dev/null || { echo "FAIL formal: no job $j"; exit 1; }
	rm -f "$out/job_$j.rc"
	( fail=0; "job_$j"; echo $fail >"$out/job_$j.rc" ) >"$out/job_$j.out" 2>&1 &
	running=$((running + 1))
	if [ "$running" -ge "$J" ]; then wait -n; running=$((running - 1)); fi
done
wait
fail=0
for j in $JOBS; do
	cat "$out/job_$j.out"
	[ "$(cat "$out/job_$j.rc" 2>/dev/null)" = 0 ] || { echo "FAIL formal job $j (see $out/job_$j.out)"; fail=1; }
done
echo "formal: $((SECONDS - t_all)) s, $J at a time"
exit $fail
