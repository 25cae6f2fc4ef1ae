#!/bin/bash
# equiv.sh - prove an RTL module equivalent to its version at an earlier commit (a rewrite
# that must not change behaviour: a dialect conversion, a restructured block).
#
# Usage: verif/formal/equiv.sh [-r REV] [-w REV] [-g Name=Value]... [-b module]...
#                              [-n old=new]... [-i] [-d DIR] TOP FILE...
#   TOP      the module compared (same name in both versions)
#   FILE     the RTL files that make it, as paths in the tree; each is read from the work tree
#            (gate) and from REV (gold, default HEAD; a file missing at REV is left out)
#   -w REV   the gate side from REV too, instead of the work tree
#   -g       a parameter of TOP (chparam), as the shipping configuration sets it
#   -b       a module cut out on both sides (read as its port list only): what its
#            instances drive becomes inputs shared by both sides, what they read is proved
#            equal (u_sram.raddr_i, ...). For the SRAMs, whose contents would not fit, and
#            submodules proved on their own
#   -n       a signal renamed by the rewrite (a register that became a _q): the gold side's
#            old name is renamed to new before the signals are paired
#   -i       induction only (no equiv_simple pass first): faster on large flattened modules
#   -d       where the log goes (default build/equiv)
# Both sides are elaborated, flattened (black boxes aside), their memories mapped to
# flip-flops; equiv_make pairs signals by name, equiv_simple proves each pair from its input
# cone, equiv_induct the rest by induction over all pairs; the verdict is equiv_status
# -assert. Exit 0: every output and matched register proved equal. A register without a
# partner (renamed without -n) leaves the induction without a hypothesis on it: the check
# then fails rather than passes.
set -eu
rev=HEAD
out=build/equiv
gparams=()
bbox=()
renames=()
simple="equiv_simple;"
gaterev=""
while getopts "r:w:g:b:n:id:" o; do
	case $o in
	r) rev=$OPTARG ;;
	w) gaterev=$OPTARG ;;
	g) gparams+=("$OPTARG") ;;
	b) bbox+=("$OPTARG") ;;
	n) renames+=("$OPTARG") ;;
	i) simple="" ;;
	d) out=$OPTARG ;;
	*) echo "usage: $0 [-r REV] [-g Name=Value]... [-b module]... [-n old=new]... TOP FILE..." >&2
		exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || { echo "usage: $0 [-r REV] [-g Name=Value]... [-b module]... TOP FILE..." >&2; exit 2; }
top=$1
shift
root=$(git rev-parse --show-toplevel)
cd "$root"
mkdir -p "$out"
tag=$top
for g in ${gparams[@]+"${gparams[@]}"}; do tag="$tag-${g//=/}"; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# a file that defines a -b module is read as its header only (a stub with undriven outputs)
stub() {
	local m
	for m in ${bbox[@]+"${bbox[@]}"}; do
		if grep -q "^module $m\b" "$1"; then
			mkdir -p "$(dirname "$2")"
			# inputs kept: what the instance reads survives opt_clean and is compared
			sed -n "/^module $m\b/,/^);/p" "$1" | sed 's/^\( *\)input\b/\1(* keep *) input/' >"$2"
			printf "  wire equiv_stub = 1'b0;  // a body: flattened, not a black box\nendmodule\n" >>"$2"
			echo "$2"
			return
		fi
	done
	echo "$1"
}
gold=()
gate=()
for f in "$@"; do
	mkdir -p "$tmp/gold/$(dirname "$f")"
	if git show "$rev:$f" >"$tmp/gold/$f" 2>/dev/null; then
		gold+=("$(stub "$tmp/gold/$f" "$tmp/gold-stub/$f")")
	fi
	g=$f
	if [ -n "$gaterev" ]; then
		mkdir -p "$tmp/gate/$(dirname "$f")"
		git show "$gaterev:$f" >"$tmp/gate/$f"
		g=$tmp/gate/$f
	fi
	gate+=("$(stub "$g" "$tmp/gate-stub/$f")")
done
# include files (pe_ports.vh) come from the same side as the modules
for d in rtl/pe rtl/mesh; do
	mkdir -p "$tmp/gold/$d"
	for h in $(git ls-tree --name-only "$rev" "$d/" | grep '\.vh$' || true); do
		git show "$rev:$h" >"$tmp/gold/$h"
	done
done

chp=""
for g in ${gparams[@]+"${gparams[@]}"}; do chp="$chp chparam -set ${g%%=*} ${g#*=} $top;"; done
ren=""
for n in ${renames[@]+"${renames[@]}"}; do ren="$ren rename ${n%%=*} ${n#*=};"; done

# $1 files, $2 include dirs root, $3 name of the elaborated copy
elab() {
	local inc="-I$2/rtl/pe -I$2/rtl/mesh"
	echo "read_verilog -sv $inc $1;"
	# a stub's outputs are undriven after flattening: inputs shared by both sides; the
	# stub's input ports stay as wires (u_sram.raddr_i, ...) proved equal like any other
	echo "$chp hierarchy -check -top $top; rename -top $top; proc; flatten; setundef -undriven -expose;"
	echo "opt_clean; memory -nomap; memory_map;"
	[ "$3" = gold ] && [ -n "$ren" ] && echo "cd $top; $ren cd ..;"
	echo "opt_clean; rename $top $3; design -stash $3;"
}
script="$(elab "${gold[*]}" "$tmp/gold" gold) $(elab "${gate[*]}" . gate)
design -copy-from gold -as gold gold; design -copy-from gate -as gate gate;
equiv_make gold gate equiv; hierarchy -top equiv; async2sync;
$simple equiv_induct; equiv_status -assert"
log="$out/$tag.log"
if yosys -q -l "$log" -p "$script" >/dev/null 2>&1; then
	echo "equiv $tag: $(grep -a 'Found [0-9]* \$equiv cells' "$log" | tail -n 1 | sed 's/^ *//'), all proved ($log)"
else
	echo "equiv $tag: NOT proved ($log)"
	grep -a -A12 'equiv_status' "$log" | grep -a -E 'Found|Unproven|unproven' | head -n 20
	exit 1
fi
