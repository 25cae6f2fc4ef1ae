#!/bin/bash
# test_dp.sh - data-parallel `cshost train` under mpirun (host/train/dp.c, train.c) on one
# machine:
#  - 2 ranks against 1 process with grad_accum 2 (and 3 ranks against grad_accum 3): the
#    checkpoints (weights, AdamW moments, masks and sparsity state) are the same bytes, for
#    dense, static, GMP, SET, RigL, GraNet and iterative pruning with weight rewinding, on
#    the native engine and the mesh model;
#  - the sharded optimizer step (ZeRO-1, train.shard_optimizer) against the unsharded one:
#    the same bytes;
#  - a 2-rank run resumed by 1 process, and the reverse, ends as the uninterrupted run;
#  - one rank killed mid-run: every rank is gone, mpirun exits non-zero within 10 s, and
#    the last checkpoint loads;
#  - a grad_accum the ranks cannot share ends every rank with one message, no hang.
# Every mpirun runs under a timeout, so a hang is a failure, not a stuck test.
#
# usage: test_dp.sh CSHOST
set -u
cshost=$(realpath "$1")
if ! command -v mpirun >/dev/null; then
	echo "mpirun not found (make deps installs openmpi-bin)"
	exit 77
fi
# as root (CI containers) Open MPI wants consent; more ranks than cores needs
# oversubscription; shared memory without the ptrace-based single copy (containers often
# forbid it)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_btl=self,vader
# under SAN=1: Open MPI keeps its start-up allocations to the end; the leak check of the
# one-process runs is other tests' business
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
work=$(mktemp -d /tmp/cshost-test-dp.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
pass=0
fail=0
ok() { echo "ok: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

cat >cfg.yaml <<EOF
run:    {name: r, out_dir: $work/runs, seed: 7}
device: {kind: native}
model:  {n_layer: 2, n_head: 2, n_embd: 32, block_size: 32, vocab_size: 256}
data:   {path: /usr/share/games/fortunes, val_fraction: 0.05, cache_dir: $work/cache}
train:  {steps: 6, batch_size: 2, grad_accum: 2, lr: 3.0e-3, min_lr: 3.0e-4, threads: 1,
         warmup_steps: 2, eval_every: 3, eval_batches: 3, ckpt_every: 3, keep_ckpts: 2,
         sample_tokens: 16, log_every: 1}
EOF

mpi() { # NP ARGS...: cshost train under mpirun
	local np=$1
	shift
	timeout 120 mpirun -np "$np" "$cshost" train cfg.yaml "$@"
}

# the reference: one process, the run kept as runs/ref
one() {
	rm -rf runs
	"$cshost" train cfg.yaml "$@" >one.log 2>&1 || { cat one.log; return 1; }
	mv runs/r runs/ref
}

same_run() { # NAME: runs/r ends as runs/ref
	if cmp -s runs/r/ckpt-00000006.bin runs/ref/ckpt-00000006.bin &&
		cmp -s runs/r/sample.txt runs/ref/sample.txt &&
		diff <(sed 's/"tokens_per_s.*//' runs/r/metrics.jsonl) \
			<(sed 's/"tokens_per_s.*//' runs/ref/metrics.jsonl) >/dev/null; then
		ok "$1"
	else
		bad "$1: checkpoint, sample or losses differ"
		grep '"loss"' runs/r/metrics.jsonl | cut -c1-60
		grep '"loss"' runs/ref/metrics.jsonl | cut -c1-60
	fi
}

# the same, but the checkpoints from their first tensor record on: runs whose resolved
# config (the "config" record) differs by a key that must not change the results
ck_tail() { # FILE: the bytes from the first "param/" record name on
	local off
	off=$(grep -boa -m1 'param/' "$1" | head -1 | cut -d: -f1)
	tail -c +$((off + 1)) "$1"
}
same_state() { # NAME
	if [ -f runs/r/ckpt-00000006.bin ] &&
		cmp -s <(ck_tail runs/r/ckpt-00000006.bin) <(ck_tail runs/ref/ckpt-00000006.bin) &&
		cmp -s runs/r/sample.txt runs/ref/sample.txt &&
		diff <(sed 's/"tokens_per_s.*//' runs/r/metrics.jsonl) \
			<(sed 's/"tokens_per_s.*//' runs/ref/metrics.jsonl) >/dev/null; then
		ok "$1"
	else
		bad "$1: weights, moments, masks, sample or losses differ"
		grep '"loss"' runs/r/metrics.jsonl | cut -c1-60
		grep '"loss"' runs/ref/metrics.jsonl | cut -c1-60
	fi
}

declare -A algs=(
	[dense]=""
	[static]="sparsity.algorithm=static sparsity.sparsity=0.9"
	[static-all]="sparsity.algorithm=static sparsity.sparsity=0.9 sparsity.param_filter=*.weight"
	[gmp]="sparsity.algorithm=gmp sparsity.sparsity.type=cubic sparsity.sparsity.initial=0.0 sparsity.sparsity.final=0.9 sparsity.sparsity.begin=0 sparsity.sparsity.end=5 sparsity.update.freq=1"
	[set]="sparsity.algorithm=set sparsity.sparsity=0.8 sparsity.update.freq=2"
	[rigl]="sparsity.algorithm=rigl sparsity.sparsity=0.9 sparsity.update.freq=2"
	[granet]="sparsity.algorithm=granet sparsity.final_density=0.1 sparsity.prune_end=4 sparsity.update.freq=2"
	[rigl-model]="device.kind=model sparsity.algorithm=rigl sparsity.sparsity=0.8 sparsity.update.freq=2"
	[imp]="sparsity.algorithm=static sparsity.sparsity=0.0 imp.rounds=1 imp.fraction=0.5 imp.steps_per_round=4 imp.rewind_step=2 imp.rewind=weights"
)
for name in dense static gmp set rigl granet rigl-model imp; do
	# shellcheck disable=SC2086
	one ${algs[$name]} || { bad "$name: the 1-process run failed"; continue; }
	# shellcheck disable=SC2086
	if mpi 2 ${algs[$name]} >two.log 2>&1; then
		same_run "$name: 2 ranks = 1 process with grad_accum 2"
		if [ "$name" = imp ]; then
			if cmp -s runs/r/round-00.bin runs/ref/round-00.bin &&
				cmp -s runs/r/rounds.jsonl runs/ref/rounds.jsonl; then
				ok "imp: 2 ranks write the same round checkpoint and rounds.jsonl"
			else
				bad "imp: round-00.bin or rounds.jsonl differ"
			fi
		fi
	else
		bad "$name: 2 ranks failed"
		tail -5 two.log
	fi
done

# the sharded optimizer step (train.shard_optimizer: each rank sums, clips and updates its
# shard, then the weights are gathered) against the unsharded one (every
# rank sums the whole gradient and repeats the whole AdamW): the same bytes, on the flat
# dense gradient, the engine's packed dW, host-masked tensors (the embeddings with
# param_filter *.weight, the mesh model's projections), masks that
# change their counts (GMP), RigL's dense-gradient steps, and 3 ranks' uneven shards
for name in dense static static-all gmp set rigl rigl-model granet imp; do
	rm -rf runs
	# shellcheck disable=SC2086
	if ! mpi 2 ${algs[$name]} train.shard_optimizer=false >unsharded.log 2>&1; then
		bad "$name: 2 unsharded ranks failed"
		tail -5 unsharded.log
		continue
	fi
	mv runs/r runs/ref
	# shellcheck disable=SC2086
	if mpi 2 ${algs[$name]} train.shard_optimizer=true >sharded.log 2>&1 &&
		grep -q "optimizer sharded" sharded.log; then
		same_state "$name: the sharded optimizer step = the unsharded one (2 ranks)"
	else
		bad "$name: 2 sharded ranks failed (or did not shard)"
		tail -5 sharded.log
	fi
done
rm -rf runs
# shellcheck disable=SC2086
if mpi 3 train.grad_accum=3 ${algs[static]} train.shard_optimizer=false >unsharded.log 2>&1; then
	mv runs/r runs/ref
	# shellcheck disable=SC2086
	if mpi 3 train.grad_accum=3 ${algs[static]} train.shard_optimizer=true >sharded.log 2>&1; then
		same_state "static: the sharded optimizer step = the unsharded one (3 ranks)"
	else
		bad "static: 3 sharded ranks failed"
		tail -5 sharded.log
	fi
else
	bad "static: 3 unsharded ranks failed"
	tail -5 unsharded.log
fi

# three ranks: uneven chunks of the ordered sum
one train.grad_accum=3 sparsity.algorithm=rigl sparsity.sparsity=0.9 sparsity.update.freq=2
if mpi 3 train.grad_accum=3 sparsity.algorithm=rigl sparsity.sparsity=0.9 \
	sparsity.update.freq=2 >three.log 2>&1; then
	same_run "rigl: 3 ranks = 1 process with grad_accum 3"
else
	bad "3 ranks failed"
	tail -5 three.log
fi

# the sum is what it claims: a fast (MPI_Allreduce) run trains too
rm -rf runs/r
if mpi 2 train.reduce=fast >fast.log 2>&1 && [ -f runs/r/ckpt-00000006.bin ]; then
	ok "train.reduce=fast runs"
else
	bad "train.reduce=fast failed"
	tail -5 fast.log
fi

# resume across rank counts: drop the last checkpoint, continue from step 3 (the 2-rank
# runs with the sharded optimizer: its moments gathered for rank 0's checkpoint, whole
# again after a load)
R="sparsity.algorithm=rigl sparsity.sparsity=0.9 sparsity.update.freq=2 train.shard_optimizer=true"
# shellcheck disable=SC2086
one $R
rm -rf runs/r
cp -r runs/ref runs/r
rm runs/r/ckpt-00000006.bin
# shellcheck disable=SC2086
if mpi 2 $R --resume >resume2.log 2>&1; then
	same_run "resume: 1 process to step 3, then 2 ranks"
else
	bad "resume with 2 ranks failed"
	tail -5 resume2.log
fi
rm -rf runs/r
# shellcheck disable=SC2086
mpi 2 $R >two.log 2>&1
rm -f runs/r/ckpt-00000006.bin
# shellcheck disable=SC2086
if "$cshost" train cfg.yaml $R --resume >resume1.log 2>&1; then
	same_run "resume: 2 ranks to step 3, then 1 process"
else
	bad "resume with 1 process failed"
	tail -5 resume1.log
fi

# a config the ranks cannot share: every rank ends, one message, no hang
rm -rf runs
mpi 2 train.grad_accum=1 >ga.log 2>&1
rc=$?
n=$(grep -c "is not a multiple of the 2 MPI ranks" ga.log)
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$n" -eq 1 ]; then
	ok "grad_accum 1 on 2 ranks: refused with one message (exit $rc)"
else
	bad "grad_accum 1 on 2 ranks: exit $rc, $n messages"
	cat ga.log
fi

# rank 0 fails while starting (a checkpoint past train.steps): one message, no hang
rm -rf runs
mpi 2 >/dev/null 2>&1
mpi 2 --resume train.steps=2 >past.log 2>&1
rc=$?
n=$(grep -c "past train.steps 2" past.log)
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$n" -eq 1 ]; then
	ok "resume past train.steps on 2 ranks: refused with one message"
else
	bad "resume past train.steps on 2 ranks: exit $rc, $n messages"
	cat past.log
fi

# ranks started with different configs (mpirun's colon syntax): refused, one message
rm -rf runs
timeout 120 mpirun -np 1 "$cshost" train cfg.yaml : -np 1 "$cshost" train cfg.yaml \
	train.lr=0.01 >differ.log 2>&1
rc=$?
n=$(grep -c "differs from rank 0's" differ.log)
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$n" -eq 1 ] && [ ! -e runs/r/ckpt-00000003.bin ]; then
	ok "a rank with another config: refused with one message"
else
	bad "a rank with another config: exit $rc, $n messages"
	cat differ.log
fi

# two ranks on one node cannot share one board
mpi 2 device.kind=usb sparsity.algorithm=static sparsity.sparsity=0.9 >usb.log 2>&1
rc=$?
n=$(grep -c "device.serials: 0 boards listed for the 2 ranks" usb.log)
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$n" -eq 1 ]; then
	ok "usb on 2 ranks without device.serials: refused with one message"
else
	bad "usb on 2 ranks without device.serials: exit $rc, $n messages"
	cat usb.log
fi

# kill rank 1 mid-run
rm -rf runs
timeout 120 mpirun -np 2 "$cshost" train cfg.yaml train.steps=100000 train.ckpt_every=10 \
	train.eval_every=0 >kill.log 2>&1 &
job=$!
victim=""
for _ in $(seq 1 200); do
	if ls runs/r/ckpt-*.bin >/dev/null 2>&1; then
		for p in $(pgrep -f "$cshost train cfg.yaml train.steps=100000"); do
			if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
				grep -qx OMPI_COMM_WORLD_RANK=1; then
				victim=$p
			fi
		done
		[ -n "$victim" ] && break
	fi
	sleep 0.1
done
if [ -z "$victim" ]; then
	bad "kill: no rank 1 found running"
	kill "$job" 2>/dev/null
	wait "$job"
else
	# the other ranks (not mpirun or timeout, whose command lines match too)
	others=""
	for p in $(pgrep -f "$cshost train cfg.yaml train.steps=100000"); do
		[ "$p" != "$victim" ] && grep -qz '^OMPI_COMM_WORLD_RANK=' "/proc/$p/environ" \
			2>/dev/null && others="$others $p"
	done
	start=$EPOCHREALTIME
	kill -9 "$victim"
	wait "$job"
	rc=$?
	# every rank gone (a zombie waiting for its parent counts as gone), within 10 s
	alive=""
	for _ in $(seq 1 100); do
		alive=""
		for p in $others; do
			st=$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null)
			[ -n "$st" ] && [ "$st" != Z ] && alive="$alive $p"
		done
		[ -z "$alive" ] && break
		sleep 0.1
	done
	secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	last=$(ls runs/r/ckpt-*.bin | sort | tail -n 1)
	if [ -n "$others" ] && [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ -z "$alive" ] &&
		awk -v s="$secs" 'BEGIN { exit !(s <= 10) }' &&
		"$cshost" eval "$last" train.eval_batches=1 >eval.log 2>&1; then
		ok "kill rank 1: job ended in $secs s (exit $rc), $(basename "$last") loads"
	else
		bad "kill rank 1: exit $rc after $secs s, other ranks:${others:- none found}, still alive:${alive:- none}"
		tail -5 kill.log
		cat eval.log 2>/dev/null
	fi
fi

echo "RESULT: $pass passed, $fail failed"
[ $fail -eq 0 ]
