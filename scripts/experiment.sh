#!/bin/bash
# experiment.sh - `make experiment`: the same tiny GPT trained dense and with every sparsity
# workflow (configs/experiment/<arm>.yaml) at 80% and 90% sparsity, 3 seeds per arm, then
# the results table (mean and standard deviation over seeds), the published claims checked
# against it, and the loss curves written to docs/results.md and docs/results-loss-*.svg.
#
# Arms: dense; static-random, static-topk, gmp, set, rigl, granet, imp at -80 and -90;
# spdf (spdf-pre: sparse pre-training at 75%, then spdf-ft: dense fine-tuning of its
# weights with model.init_from, one lane, one result). Every run is `cshost train` on the
# native engine, one thread each, --jobs runs at a time.
#
# Bash and awk only (CI machines may lack python). Every number in the outputs comes from
# the run directories: summary.json (final validation loss), metrics.jsonl (curves),
# sparsity_flops.json (nonzeros, training FLOPs; written by the trainer for sparse runs).
# Dense runs have no sparsity_flops.json, so their training FLOPs are counted here with the
# formula of host/sparsity/flops.c (Chinchilla appendix F), which is checked against the
# dense-equivalent count that every sparse run reports.
#
# Usage: scripts/experiment.sh [--cshost PATH] [--out DIR] [--docs DIR] [--jobs N]
#                              [--arms "a b ..."] [--seeds "1 2 3"] [--quick]
#                              [--report-only] [section.key=value ...]
#   --out    run directories and logs (default build/experiment; --quick: build/experiment-quick)
#   --docs   where results.md and the plots go (default docs; --quick: <out>/docs, so a
#            quick run never replaces the real results)
#   --jobs   training processes at once, 1 or 2 (default 2; the budget is 2 cores)
#   --arms   subset of arms, separated by spaces or colons (default: all)
#   --seeds  run.seed values (default "1 2 3"; --quick: "1 2")
#   --quick  (or QUICK=1) 200-step runs with every schedule scaled down: checks the
#            pipeline end to end in a few minutes; its numbers mean nothing
#   --report-only  do not train: rewrite the docs from the runs of the last experiment
#   overrides are passed to every run (e.g. train.steps=5 for a smoke run)
# Exit status: 0 iff every run trained and the outputs were written.
set -euo pipefail

ALL_ARMS="dense static-random-80 static-topk-80 gmp-80 set-80 rigl-80 granet-80 imp-80
static-random-90 static-topk-90 gmp-90 set-90 rigl-90 granet-90 imp-90 spdf"
# Run order: the slowest arms first so that the two lanes finish together.
RUN_ORDER="dense spdf gmp-80 gmp-90 imp-80 imp-90 granet-80 granet-90 rigl-80 rigl-90
set-80 set-90 static-topk-80 static-random-80 static-topk-90 static-random-90"

cshost=build/bin/cshost
out=""
docs=""
jobs=2
arms=""
seeds=""
quick=${QUICK:-0}
report_only=0
overrides=()
while [ $# -gt 0 ]; do
	case $1 in
	--cshost) cshost=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--docs) docs=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	--arms) arms=${2//[:,]/ }; shift 2 ;;
	--seeds) seeds=${2//[:,]/ }; shift 2 ;;
	--quick) quick=1; shift ;;
	--report-only) report_only=1; shift ;;
	-h|--help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*=*) overrides+=("$1"); shift ;;
	*) echo "experiment.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
[ "$quick" = 1 ] || quick=0
if [ $quick = 1 ]; then
	out=${out:-build/experiment-quick}
	seeds=${seeds:-1 2}
else
	out=${out:-build/experiment}
	seeds=${seeds:-1 2 3}
fi
docs=${docs:-$([ $quick = 1 ] && echo "$out/docs" || echo docs)}
case $jobs in 1|2) ;; *) echo "experiment.sh: --jobs $jobs: must be 1 or 2" >&2; exit 2 ;; esac
[ -x "$cshost" ] || { echo "experiment.sh: $cshost: not built (run make)" >&2; exit 2; }
arms=${arms:-$RUN_ORDER}
arms=$(echo $arms)
cfg_of() { # arm -> config files (spdf: two)
	case $1 in spdf) echo configs/experiment/spdf-pre.yaml configs/experiment/spdf-ft.yaml ;;
	*) echo "configs/experiment/$1.yaml" ;; esac
}
for a in $arms; do
	for f in $(cfg_of "$a"); do
		[ -f "$f" ] || { echo "experiment.sh: $f: no such arm" >&2; exit 2; }
	done
done
for s in $seeds; do
	case $s in *[!0-9]*|"") echo "experiment.sh: --seeds: '$s' is not a number" >&2; exit 2 ;; esac
done

# --quick: the schedules of each arm scaled from 5000 to 200 steps (every 100-step
# interval becomes 4 steps)
quick_ov() { # arm
	[ $quick = 1 ] || return 0
	local base=(train.warmup_steps=10 train.eval_every=50 train.eval_batches=4)
	case $1 in
	spdf-pre) echo train.steps=160 "${base[@]}" ;;
	spdf-ft) echo train.steps=40 train.warmup_steps=2 train.eval_every=20 train.eval_batches=4 ;;
	imp-*) echo train.steps=200 imp.steps_per_round=40 "${base[@]}" ;;
	gmp-*) echo train.steps=200 sparsity.sparsity.begin=10 sparsity.sparsity.end=100 \
		sparsity.update.freq=4 sparsity.update.start=10 sparsity.update.end=100 "${base[@]}" ;;
	set-*|rigl-*) echo train.steps=200 sparsity.update.freq=4 sparsity.update.stop=150 \
		sparsity.drop_fraction.half_period=150 "${base[@]}" ;;
	granet-*) echo train.steps=200 sparsity.prune_start=10 sparsity.prune_end=100 \
		sparsity.update.freq=4 sparsity.update.start=10 "${base[@]}" ;;
	*) echo train.steps=200 "${base[@]}" ;;
	esac
}

export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
runs=$out/runs
logs=$out/logs
data=$out/data
mkdir -p "$runs" "$logs" "$data" "$docs"
rm -f "$data"/*

if [ $report_only = 0 ]; then
# The token cache is written by whichever run misses it first; two runs missing it at the
# same time would write the same .tmp file. Build it once with a one-step run.
echo "experiment: token cache"
"$cshost" train configs/experiment/dense.yaml --force run.out_dir="$runs" run.name=_cache \
	train.steps=1 train.eval_batches=1 "${overrides[@]}" >"$logs/_cache.log" 2>&1 ||
	{ echo "experiment: warming the token cache failed:" >&2; tail -3 "$logs/_cache.log" >&2; exit 1; }
rm -rf "$runs/_cache"

# --- train the runs, at most $jobs at once ------------------------------------------
t_start=$EPOCHREALTIME
train1() { # config name seed log [overrides...]: one cshost train, timed
	local cfg=$1 name=$2 seed=$3 log=$4 TIMEFORMAT="%R %U %S"
	shift 4
	{ time "$cshost" train "$cfg" --force run.out_dir="$runs" run.name="$name" \
		run.seed="$seed" "$@" >"$log" 2>&1; } 2>>"$logs/$name.cpu"
}
run_job() { # arm seed
	local a=$1 s=$2 t0=$EPOCHREALTIME rc=0 name=$1-s$2
	rm -f "$logs/$name.cpu" "$logs/$name-pre.cpu" "$logs/$name-ft.cpu"
	if [ "$a" = spdf ]; then
		train1 configs/experiment/spdf-pre.yaml "spdf-pre-s$s" "$s" "$logs/spdf-pre-s$s.log" \
			$(quick_ov spdf-pre) "${overrides[@]}" &&
		train1 configs/experiment/spdf-ft.yaml "spdf-ft-s$s" "$s" "$logs/spdf-ft-s$s.log" \
			model.init_from="$runs/spdf-pre-s$s" $(quick_ov spdf-ft) "${overrides[@]}" || rc=$?
		cat "$logs/spdf-pre-s$s.cpu" "$logs/spdf-ft-s$s.cpu" >"$logs/$name.cpu" 2>/dev/null || true
		cat "$logs/spdf-pre-s$s.log" "$logs/spdf-ft-s$s.log" >"$logs/$name.log" 2>/dev/null || true
	else
		train1 "configs/experiment/$a.yaml" "$name" "$s" "$logs/$name.log" $(quick_ov "$a") \
			"${overrides[@]}" || rc=$?
	fi
	awk -v a="$t0" -v b="$EPOCHREALTIME" -v rc=$rc 'BEGIN { printf "%.1f %d\n", b - a, rc }' \
		>"$logs/$name.time"
	return $rc
}
declare -A pid_job=()
failed=()
reap() {
	local pid
	wait -n -p pid "${!pid_job[@]}" || true
	local j=${pid_job[$pid]}
	unset "pid_job[$pid]"
	read -r secs rc <"$logs/$j.time"
	if [ "$rc" = 0 ]; then
		echo "experiment: $j done in ${secs}s"
	else
		echo "experiment: $j FAILED (exit $rc), last lines of $logs/$j.log:" >&2
		tail -3 "$logs/$j.log" >&2
		failed+=("$j")
	fi
}
for a in $arms; do
	for s in $seeds; do
		while [ ${#pid_job[@]} -ge "$jobs" ]; do reap; done
		echo "experiment: training $a seed $s (log $logs/$a-s$s.log)"
		run_job "$a" "$s" &
		pid_job[$!]=$a-s$s
	done
done
while [ ${#pid_job[@]} -gt 0 ]; do reap; done
total_s=$(awk -v a="$t_start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
if [ ${#failed[@]} -gt 0 ]; then
	echo "experiment: ${#failed[@]} run(s) failed: ${failed[*]}; docs not written" >&2
	exit 1
fi
echo "experiment: all runs trained in ${total_s}s"
echo "$total_s $jobs $(date -u '+%Y-%m-%d_%H:%M_UTC')" >"$logs/experiment.time"
echo "$arms" >"$logs/experiment.arms"
echo "$seeds" >"$logs/experiment.seeds"
fi
read -r total_s jobs finished <"$logs/experiment.time" ||
	{ echo "experiment: $logs/experiment.time: no finished experiment to report" >&2; exit 1; }
arms=$(cat "$logs/experiment.arms")
seeds=$(cat "$logs/experiment.seeds")

# --- collect ------------------------------------------------------------------------
# The dense training FLOPs, per host/sparsity/flops.c: forward per sequence of S tokens
# = 2SVC (embedding) + L(6SC^2 + 4S^2C + 3HS^2 + 2SC^2 + 16SC^2) + 2SCV (logits);
# training = 3 x forward x sequences per step x steps.
dense_flops() { # run dir
	awk '
	/^model:/ { sec = "model" } /^train:/ { sec = "train" } /^[a-z]+:/ && !/^(model|train):/ { sec = "" }
	sec != "" && $1 ~ /:$/ { k = sec "." substr($1, 1, length($1) - 1); v[k] = $2 }
	END {
		S = v["model.block_size"]; C = v["model.n_embd"]; V = v["model.vocab_size"]
		H = v["model.n_head"]; L = v["model.n_layer"]
		f = 2*S*V*C + L*(6*S*C*C + 4*S*S*C + 3*H*S*S + 2*S*C*C + 16*S*C*C) + 2*S*C*V
		printf "%.6e\n", 3 * f * v["train.batch_size"] * v["train.grad_accum"] * v["train.steps"]
	}' "$1/config.yaml"
}
jget() { # key file: first numeric value of "key" in a JSON file (flat objects)
	awk -v k="\"$1\"" '{ i = index($0, k ": "); if (i) { s = substr($0, i + length(k) + 2);
		sub(/[,}].*/, "", s); gsub(/[" ]/, "", s); print s; exit } }' "$2"
}
run_flops() { # run dir -> "sparse_flops dense_flops sparsity nnz"
	local d=$1 df
	df=$(dense_flops "$d")
	if [ -f "$d/sparsity_flops.json" ]; then
		local f=$d/sparsity_flops.json
		awk -v a="$(jget train_flops_dense "$f")" -v b="$df" -v r="$d" 'BEGIN {
			if (a - b > 1e-5 * b || b - a > 1e-5 * b) {
				printf "experiment: %s: dense FLOPs %s (library) != %s (formula)\n", r, a, b > "/dev/stderr"
				exit 1 } }'
		echo "$(jget train_flops_sparse "$f") $df $(jget sparsity "$f") $(jget nonzeros "$f")"
	else
		local p
		p=$(sed -n 's/.* \([0-9][0-9]*\) parameters;.*/\1/p' "$d/../../logs/$(basename "$d").log" 2>/dev/null | head -1)
		echo "$df $df 0 ${p:-0}"
	fi
}
curves() { # run dir -> data/<name>.val, data/<name>.train
	local d=$1 n
	n=$(basename "$d")
	awk '/"val_loss"/ { match($0, /"step": [0-9]+/); s = substr($0, RSTART + 8, RLENGTH - 8)
		match($0, /"val_loss": [-0-9.e+]+/); print s, substr($0, RSTART + 12, RLENGTH - 12) }' \
		"$d/metrics.jsonl" >"$data/$n.val"
	awk '/"loss"/ && !/"val_loss"/ { match($0, /"step": [0-9]+/); s = substr($0, RSTART + 8, RLENGTH - 8)
		match($0, /"loss": [-0-9.e+]+/); print s, substr($0, RSTART + 8, RLENGTH - 8) }' \
		"$d/metrics.jsonl" >"$data/$n.train"
}
# one line per run in $data/runs: arm seed val tail_loss sparsity nnz flops dense_flops wall cpu
: >"$data/runs"
for a in $arms; do
	for s in $seeds; do
		name=$a-s$s
		if [ "$a" = spdf ]; then
			pre=$runs/spdf-pre-s$s ft=$runs/spdf-ft-s$s
			for d in "$pre" "$ft"; do
				[ -f "$d/summary.json" ] || { echo "experiment: $d/summary.json missing" >&2; exit 1; }
				curves "$d"
			done
			read -r pf pdf psp pnnz <<<"$(run_flops "$pre")"
			read -r ff fdf _ fnnz <<<"$(run_flops "$ft")"
			val=$(jget val_loss "$ft/summary.json")
			tail_loss=$(awk '{ l[NR] = $2 } END { n = int(NR / 10); if (n < 1) n = 1
				for (i = NR - n + 1; i <= NR; i++) s += l[i]; printf "%.4f", s / n }' "$data/spdf-ft-s$s.train")
			flops=$(awk -v a="$pf" -v b="$ff" 'BEGIN { printf "%.6e", a + b }')
			dfl=$(awk -v a="$pdf" -v b="$fdf" 'BEGIN { printf "%.6e", a + b }')
			sp=$psp nnz=$fnnz
		else
			d=$runs/$name
			[ -f "$d/summary.json" ] || { echo "experiment: $d/summary.json missing" >&2; exit 1; }
			curves "$d"
			read -r flops dfl sp nnz <<<"$(run_flops "$d")"
			val=$(jget val_loss "$d/summary.json")
			tail_loss=$(awk '{ l[NR] = $2 } END { n = int(NR / 10); if (n < 1) n = 1
				for (i = NR - n + 1; i <= NR; i++) s += l[i]; printf "%.4f", s / n }' "$data/$name.train")
		fi
		secs=$(awk '{ print $1 }' "$logs/$name.time")
		cpu_s=$(awk '{ s += $2 + $3 } END { printf "%.0f", s }' "$logs/$name.cpu" 2>/dev/null || echo -)
		echo "$a $s $val $tail_loss $sp $nnz $flops $dfl $secs ${cpu_s:--}" >>"$data/runs"
	done
done
# per arm: arm n mean_val sd_val mean_tail sd_tail sparsity nnz flops dense_flops wall cpu
awk '
	{ a = $1; if (!(a in n)) order[++k] = a; n[a]++; v[a, n[a]] = $3; t[a, n[a]] = $4
	  sp[a] += $5; nz[a] += $6; fl[a] += $7; df[a] += $8; w[a] += $9; c[a] += $10 }
	END {
		for (i = 1; i <= k; i++) {
			a = order[i]; m = 0; mt = 0
			for (j = 1; j <= n[a]; j++) { m += v[a, j]; mt += t[a, j] }
			m /= n[a]; mt /= n[a]; s = 0; st = 0
			for (j = 1; j <= n[a]; j++) { s += (v[a, j] - m)^2; st += (t[a, j] - mt)^2 }
			s = n[a] > 1 ? sqrt(s / (n[a] - 1)) : 0; st = n[a] > 1 ? sqrt(st / (n[a] - 1)) : 0
			printf "%s %d %.6f %.6f %.6f %.6f %.6f %.0f %.6e %.6e %.1f %.0f\n", a, n[a], m, s, mt, st,
				sp[a] / n[a], nz[a] / n[a], fl[a] / n[a], df[a] / n[a], w[a] / n[a], c[a] / n[a]
		}
	}' "$data/runs" >"$data/arms"

# --- results.md ---------------------------------------------------------------------
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git status --porcelain -- configs host scripts 2>/dev/null | head -1)
[ -n "$dirty" ] && commit="$commit (with uncommitted changes)"
first=$(set -- $arms; echo "$1")
[ "$first" = spdf ] && first=spdf-pre
model=$(awk '/^model:/ { m = 1; next } /^[a-z]/ { m = 0 } m { sub(/:$/, "", $1); v[$1] = $2 }
	END { printf "%d layers, %d heads, %d channels, context %d, vocabulary %d", v["n_layer"],
		v["n_head"], v["n_embd"], v["block_size"], v["vocab_size"] }' \
	"$runs/$first-s$(set -- $seeds; echo "$1")/config.yaml")
steps=$(awk '/^train:/ { m = 1; next } /^[a-z]/ { m = 0 } m && $1 == "steps:" { print $2 }' \
	"$runs/$first-s$(set -- $seeds; echo "$1")/config.yaml")
nseeds=$(echo $seeds | wc -w)
win=$((steps / 20)); [ $win -gt 100 ] && win=100; [ $win -lt 1 ] && win=1
ov=""
[ ${#overrides[@]} -gt 0 ] && ov=" Overrides: \`${overrides[*]}\`."
banner=""
[ $quick = 1 ] && banner="**QUICK run (\`--quick\`): 200-step runs with scaled schedules to check the pipeline; these numbers establish nothing.**

"
md=$docs/results.md
{
cat <<EOF
# Sparse training results (\`make experiment\`)

${banner}Generated by \`scripts/experiment.sh\` (training finished ${finished//_/ }, report written
$(date -u '+%Y-%m-%d %H:%M UTC')): $(uname -m), ${cpu:-unknown CPU}, $(getconf _NPROCESSORS_ONLN) cores
(shared with other jobs), commit $commit, \`$(basename "$cshost")\` on the \`native\` engine,
one thread per run, $jobs runs at a time; whole experiment ${total_s} s wall.$ov

Every arm (\`configs/experiment/<arm>.yaml\`) trains the same byte-level GPT ($model)
on the fortunes corpus (\`/usr/share/games/fortunes\`, 5% held out) for $steps steps of 16x64
tokens with AdamW (lr 3e-3, 5% warm-up, cosine to 3e-4), $nseeds seeds each (run.seed
$(echo $seeds | sed 's/ /, /g'): initialisation, masks and batch order); only the sparsity
workflow differs. Sparsity is over the projection matrices, q, k and v as separate tensors
(\`h.N.attn.{q,k,v}.weight\`, each with its own budget) plus attn proj, mlp fc and mlp proj;
embeddings, LayerNorms and biases stay dense. All sparse arms distribute the sparsity over
the tensors by ERK (\`sparsity_distribution: erk\`), except imp (per-tensor pruning of a
dense start, i.e. uniform).

| arm | n | final val loss (mean ± sd) | vs dense | train loss, last 10% | sparsity | nonzeros | training FLOPs | FLOPs vs dense | wall per run | CPU per run |
|---|---|---|---|---|---|---|---|---|---|---|
EOF
awk '
	NR == FNR && $1 == "dense" { dv = $3; dfl = $9 }
	NR == FNR { next }
	{
		d = (dv == "") ? "-" : sprintf("%+.4f", $3 - dv)
		r = (dfl == "") ? $9 / $10 : $9 / dfl
		printf "| %s | %d | %.4f ± %.4f | %s | %.4f ± %.4f | %.1f%% | %d | %.3e | %.2f | %.0f s | %.0f s |\n",
			$1, $2, $3, $4, d, $5, $6, 100 * $7, $8, $9, r, $11, $12
	}' "$data/arms" "$data/arms"
cat <<EOF

Columns: final validation loss (nats/byte, \`summary.json\`, the same 16 fixed validation
batches for every run), mean and sample standard deviation over the seeds; training loss
averaged over the last 10% of logged steps; sparsity of the sparsified tensors at the end
(spdf: of its pre-training); nonzero parameters of the whole model at the end (spdf: all,
dense after fine-tuning); training FLOPs as counted by \`host/sparsity/flops.c\`
(Chinchilla appendix F, each matmul scaled by its mask density, dense weight gradients on
RigL/GraNet update steps; dense runs by the same formula at density 1; spdf = its sparse
pre-training plus its dense fine-tuning) and their ratio to the dense arm; wall and CPU
seconds per run (inflated by the shared machine).

## Arms

- **dense**: no sparsity.
- **static-random / static-topk**: ERK mask at step 0 (random scores / top-k |W| of the
  fresh initialisation), never changed.
- **gmp**: dense until step 250, top-k |W| every 100 steps on the Zhu-Gupta cubic ramp
  0 -> s reaching s at step 2500; the second half trains at s.
- **set / rigl**: random ERK mask at s from step 0; drop/grow every 100 steps until step
  3750 (75% of training, RigL's T_end), drop fraction cosine 0.3 -> 0 over that window; SET
  regrows at random, RigL by largest dense-gradient magnitude.
- **granet**: random ERK mask at 50% density; every 100 steps from 250 to 2500 global
  magnitude pruning on the cubic ramp to s, each update also regenerating ceil(r*nnz) weights
  per tensor by gradient magnitude, and regeneration alone every 100 steps to the end of
  training; r cosine from 0.5 to 0.005 over the run.
- **imp**: iterative magnitude pruning (\`imp:\` keys): 1000 dense steps, then 4 rounds of
  1000 steps; each round prunes 1-(1-s)^(1/4) of the remaining weights of every tensor by
  magnitude and rewinds the learning-rate schedule (warm-up and cosine over 1000 steps).
- **spdf**: sparse pre-training at 75% (static random ERK) for 4000 steps, then dense
  fine-tuning of its weights (\`model.init_from\` the pre-training run, no sparsity block:
  masks removed, every weight trainable) for 1000 steps with a fresh AdamW (lr 1e-3, 50
  warm-up steps, cosine to 1e-4), on the same corpus. Its sparsity column is the
  pre-training's.

Regrown weights start at zero with zero Adam moments (\`docs/sparsity.md\`).

## The published claims, checked

z is the difference of the means over its standard error, sqrt(sd_a^2/n_a + sd_b^2/n_b):
how many standard deviations of the difference separate the arms. "holds" needs the
difference in the claimed direction; |z| < 2 means these seeds do not resolve it.
Why the claims that fail here fail, as far as we can tell: \`docs/results-discussion.md\`.

EOF
awk '
	{ m[$1] = $3; s[$1] = $4; n[$1] = $2; fl[$1] = $9; order[NR] = $1; k = NR }
	function zv(d, a, b,   se) {
		se = sqrt(s[a]^2 / n[a] + s[b]^2 / n[b])
		return (se > 0) ? d / se : ((d == 0) ? 0 : ((d > 0) ? 1e9 : -1e9))
	}
	function zs(x) { return (x > 1e8 || x < -1e8) ? ((x > 0) ? "+inf" : "-inf") : sprintf("%+.1f", x) }
	function verdict(d, z, extra) {
		if (d > 0 && extra)
			return (z >= 2) ? "holds" : "holds in direction, not resolved (z < 2)"
		return (z <= -2) ? "**does not hold**" : "**does not hold**, not resolved (|z| < 2)"
	}
	function claim(text, a, b,   d, z) { # a better (lower) than b
		if (!(a in m) || !(b in m)) return
		d = m[b] - m[a]; z = zv(d, a, b)
		printf "- %s: %s (%s %.4f vs %s %.4f, difference %+.4f, z %s)\n", text,
			verdict(d, z, 1), a, m[a], b, m[b], d, zs(z)
	}
	END {
		printf "**Dense is best.**\n\n"
		for (i = 1; i <= k; i++) if (order[i] != "dense") claim("dense better than " order[i], "dense", order[i])
		printf "\n**Dynamic sparse (SET, RigL) better than static at equal sparsity.**\n\n"
		split("80 90", lv, " ")
		for (i = 1; i <= 2; i++) for (x = 1; x <= 2; x++) {
			dyn = ((x == 1) ? "set-" : "rigl-") lv[i]
			claim(dyn " better than static-random-" lv[i], dyn, "static-random-" lv[i])
			claim(dyn " better than static-topk-" lv[i], dyn, "static-topk-" lv[i])
		}
		printf "\n**GraNet >= RigL.**\n\n"
		for (i = 1; i <= 2; i++) claim("granet-" lv[i] " at least as good as rigl-" lv[i], "granet-" lv[i], "rigl-" lv[i])
		printf "\n**Iterative pruning at 80%% within 2%% of dense validation loss.**\n\n"
		if (("imp-80" in m) && ("dense" in m)) {
			d = 1.02 * m["dense"] - m["imp-80"]; z = zv(d, "imp-80", "dense")
			printf "- imp-80 %.4f vs dense %.4f: %+.2f%% of dense, margin to the 2%% line %+.4f (z %s): %s\n",
				m["imp-80"], m["dense"], 100 * (m["imp-80"] / m["dense"] - 1), d, zs(z), verdict(d, z, 1)
		}
		printf "\n**SPDF fine-tuned within 1%% of dense at <= 0.6x of dense training FLOPs.**\n\n"
		if (("spdf" in m) && ("dense" in m)) {
			d = 1.01 * m["dense"] - m["spdf"]; r = fl["spdf"] / fl["dense"]; z = zv(d, "spdf", "dense")
			printf "- spdf %.4f vs dense %.4f: %+.2f%% of dense, margin to the 1%% line %+.4f (z %s), at %.2fx of dense FLOPs: %s\n",
				m["spdf"], m["dense"], 100 * (m["spdf"] / m["dense"] - 1), d, zs(z), r,
				verdict(d, z, r <= 0.6)
		}
	}' "$data/arms"
cat <<EOF

Ranking by mean final validation loss (lower is better):
$(sort -k3,3g "$data/arms" | awk '{ printf "%s%s %.4f", (NR > 1) ? " < " : "", $1, $3 } END { print "" }')

Per-run values: \`$data/runs\` (arm, seed, val loss, train loss, sparsity, nonzeros,
FLOPs, dense FLOPs, wall s, CPU s). Curves of seed $(set -- $seeds; echo "$1") (\`cshost plot\`: training loss as a
moving mean over $win steps, validation loss, learning rate, sparsity per layer, mask churn):

![80% arms](results-loss-80.svg)

![90% arms and spdf](results-loss-90.svg)
EOF
} >"$md.tmp"
mv "$md.tmp" "$md"

# --- plots ---------------------------------------------------------------------------
s1=$(set -- $seeds; echo "$1")
for lv in 80 90; do
	plot_runs=()
	for a in dense static-random-$lv static-topk-$lv gmp-$lv set-$lv rigl-$lv granet-$lv imp-$lv; do
		[ -s "$runs/$a-s$s1/metrics.jsonl" ] && plot_runs+=("$runs/$a-s$s1")
	done
	[ $lv = 90 ] && [ -s "$runs/spdf-pre-s$s1/metrics.jsonl" ] && plot_runs+=("$runs/spdf-pre-s$s1")
	[ ${#plot_runs[@]} -gt 0 ] || continue
	"$cshost" plot "${plot_runs[@]}" -o "$docs/results-loss-$lv.svg" \
		--title "$model, $steps steps, seed $s1, $lv% arms" --smooth "$win" >/dev/null || exit 1
done
echo "experiment: wrote $md and $docs/results-loss-{80,90}.svg"
