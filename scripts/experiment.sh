#!/bin/bash
# experiment.sh - `make experiment`: train the same tiny GPT dense and with every sparsity
# algorithm (configs/experiment/<arm>.yaml), then write the results table and a reading of
# it to docs/results.md and the loss curves to docs/results-loss.svg.
#
# Bash and awk only (CI machines may lack python). Every number in the outputs comes from
# the run directories: summary.json (final validation loss), metrics.jsonl (curves, final
# sparsity), sparsity_flops.json (nonzeros, training FLOPs; written by the trainer for
# sparse runs). The dense run has no sparsity_flops.json, so its training FLOPs are counted
# here with the formula of host/sparsity/flops.c (Chinchilla appendix F), which is checked
# against the dense-equivalent count that every sparse run reports.
#
# Usage: scripts/experiment.sh [--cshost PATH] [--out DIR] [--docs DIR] [--jobs N]
#                              [--arms "a b ..."] [section.key=value ...]
#   --out   run directories and logs (default build/experiment)
#   --docs  where results.md and results-loss.svg go (default docs)
#   --jobs  training processes at once, 1 or 2 (default 2; the budget is 2 cores)
#   --arms  subset of arms, in the order given, separated by spaces or colons (default: all)
#   --report-only  do not train: rewrite the docs from the runs of the last experiment
#   overrides are passed to every arm (e.g. train.steps=5 for a smoke run)
# Exit status: 0 iff every arm trained and the outputs were written.
set -euo pipefail

ALL_ARMS="dense static-random static-topk gmp set rigl granet"
# Run order: the slowest arms first so that the two lanes finish together.
RUN_ORDER="gmp granet rigl set static-random static-topk dense"

cshost=build/bin/cshost
out=build/experiment
docs=docs
jobs=2
arms=""
report_only=0
overrides=()
while [ $# -gt 0 ]; do
	case $1 in
	--cshost) cshost=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--docs) docs=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	--arms) arms=${2//[:,]/ }; shift 2 ;;
	--report-only) report_only=1; shift ;;
	-h|--help) sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*=*) overrides+=("$1"); shift ;;
	*) echo "experiment.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
case $jobs in 1|2) ;; *) echo "experiment.sh: --jobs $jobs: must be 1 or 2" >&2; exit 2 ;; esac
[ -x "$cshost" ] || { echo "experiment.sh: $cshost: not built (run make)" >&2; exit 2; }
if [ -z "$arms" ]; then
	arms=$RUN_ORDER
fi
for a in $arms; do
	[ -f "configs/experiment/$a.yaml" ] ||
		{ echo "experiment.sh: configs/experiment/$a.yaml: no such arm" >&2; exit 2; }
done

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
"$cshost" train "configs/experiment/$(set -- $arms; echo "$1").yaml" --force \
	run.out_dir="$runs" run.name=_cache train.steps=1 train.sample_tokens=0 \
	train.eval_batches=1 "${overrides[@]}" >"$logs/_cache.log" 2>&1 ||
	{ echo "experiment: warming the token cache failed:" >&2; tail -3 "$logs/_cache.log" >&2; exit 1; }
rm -rf "$runs/_cache"

# --- train the arms, at most $jobs at once --------------------------------------------
t_start=$EPOCHREALTIME
run_arm() {
	local a=$1 t0=$EPOCHREALTIME rc=0 TIMEFORMAT="%R %U %S"
	{ time "$cshost" train "configs/experiment/$a.yaml" --force run.out_dir="$runs" \
		"${overrides[@]}" >"$logs/$a.log" 2>&1; } 2>"$logs/$a.cpu" || rc=$?
	awk -v a="$t0" -v b="$EPOCHREALTIME" -v rc=$rc 'BEGIN { printf "%.1f %d\n", b - a, rc }' \
		>"$logs/$a.time"
	return $rc
}
declare -A pid_arm=()
failed=()
reap() {
	local pid
	wait -n -p pid "${!pid_arm[@]}" || true
	local a=${pid_arm[$pid]}
	unset "pid_arm[$pid]"
	read -r secs rc <"$logs/$a.time"
	if [ "$rc" = 0 ]; then
		echo "experiment: $a done in ${secs}s"
	else
		echo "experiment: $a FAILED (exit $rc), last lines of $logs/$a.log:" >&2
		tail -3 "$logs/$a.log" >&2
		failed+=("$a")
	fi
}
for a in $arms; do
	while [ ${#pid_arm[@]} -ge "$jobs" ]; do reap; done
	echo "experiment: training $a (log $logs/$a.log)"
	run_arm "$a" &
	pid_arm[$!]=$a
done
while [ ${#pid_arm[@]} -gt 0 ]; do reap; done
total_s=$(awk -v a="$t_start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
if [ ${#failed[@]} -gt 0 ]; then
	echo "experiment: ${#failed[@]} arm(s) failed: ${failed[*]}; docs not written" >&2
	exit 1
fi
echo "experiment: all arms trained in ${total_s}s"
echo "$total_s $jobs $(date -u '+%Y-%m-%d %H:%M UTC')" >"$logs/experiment.time"
fi
read -r total_s jobs finished <"$logs/experiment.time" ||
	{ echo "experiment: $logs/experiment.time: no finished experiment to report" >&2; exit 1; }

# --- collect ------------------------------------------------------------------------
# One line per arm in $data/table: the fields named in the header below.
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
: >"$data/table"
for a in $ALL_ARMS; do
	case " $arms " in *" $a "*) ;; *) continue ;; esac
	d=$runs/$a
	[ -f "$d/summary.json" ] || { echo "experiment: $d/summary.json missing" >&2; exit 1; }
	# curves: validation (step val_loss) and training (step loss)
	awk '/"val_loss"/ { match($0, /"step": [0-9]+/); s = substr($0, RSTART + 8, RLENGTH - 8)
		match($0, /"val_loss": [-0-9.e+]+/); print s, substr($0, RSTART + 12, RLENGTH - 12) }' \
		"$d/metrics.jsonl" >"$data/$a.val"
	awk '/"loss"/ && !/"val_loss"/ { match($0, /"step": [0-9]+/); s = substr($0, RSTART + 8, RLENGTH - 8)
		match($0, /"loss": [-0-9.e+]+/); print s, substr($0, RSTART + 8, RLENGTH - 8) }' \
		"$d/metrics.jsonl" >"$data/$a.train"
	val=$(jget val_loss "$d/summary.json")
	steps=$(jget steps "$d/summary.json")
	ms=$(jget ms_per_step "$d/summary.json")
	secs=$(awk '{ print $1 }' "$logs/$a.time")
	params=$(sed -n 's/.* \([0-9][0-9]*\) parameters;.*/\1/p' "$logs/$a.log" | head -1)
	dflops=$(dense_flops "$d")
	# mean training loss over the last 10% of steps (the same batches in every arm)
	tail_loss=$(awk -v n="$steps" '$1 > n - n / 10 { s += $2; c++ } END { printf "%.4f", s / c }' \
		"$data/$a.train")
	if [ -f "$d/sparsity_flops.json" ]; then
		f=$d/sparsity_flops.json
		nnz=$(jget nonzeros "$f")
		sp=$(jget sparsity "$f")
		flops=$(jget train_flops_sparse "$f")
		# the formula above must agree with the library's dense-equivalent count
		awk -v a="$(jget train_flops_dense "$f")" -v b="$dflops" -v arm="$a" 'BEGIN {
			if (a - b > 1e-5 * b || b - a > 1e-5 * b) {
				printf "experiment: %s: dense FLOPs %s (library) != %s (formula)\n", arm, a, b > "/dev/stderr"
				exit 1 } }'
	else
		nnz=$params sp=0 flops=$dflops
	fi
	cpu_s=-
	[ -s "$logs/$a.cpu" ] && cpu_s=$(awk '{ printf "%.0f", $2 + $3 }' "$logs/$a.cpu")
	echo "$a $val $tail_loss $sp $nnz $params $flops $dflops $steps $ms $secs $cpu_s" >>"$data/table"
done

# --- results.md ---------------------------------------------------------------------
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git status --porcelain -- configs host scripts 2>/dev/null | head -1)
[ -n "$dirty" ] && commit="$commit (with uncommitted changes)"
steps=$(awk 'NR == 1 { print $9 }' "$data/table")
win=$((steps / 20)); [ $win -gt 100 ] && win=100; [ $win -lt 1 ] && win=1
model=$(awk '/^model:/ { m = 1; next } /^[a-z]/ { m = 0 } m { sub(/:$/, "", $1); v[$1] = $2 }
	END { printf "%d layers, %d heads, %d channels, context %d, vocabulary %d", v["n_layer"],
		v["n_head"], v["n_embd"], v["block_size"], v["vocab_size"] }' \
	"$runs/$(awk 'NR == 1 { print $1 }' "$data/table")/config.yaml")

ov=""
[ ${#overrides[@]} -gt 0 ] && ov=" Overrides: \`${overrides[*]}\`."
md=$docs/results.md
{
cat <<EOF
# Sparse training results (\`make experiment\`)

Generated by \`scripts/experiment.sh\` (training finished $finished, report written
$(date -u '+%Y-%m-%d %H:%M UTC')): $(uname -m), ${cpu:-unknown CPU}, $(getconf _NPROCESSORS_ONLN) cores
(shared with other jobs), commit $commit, \`$(basename "$cshost")\` on the \`native\` engine,
one OpenBLAS thread per run, $jobs runs at a time; whole experiment ${total_s} s wall
$(awk '$12 != "-" { s += $12; n++ } END { if (n == NR) printf "(%d s of CPU time over the runs)", s }' "$data/table").$ov

Every arm (\`configs/experiment/<arm>.yaml\`) trains the same byte-level GPT ($model)
on the fortunes corpus (\`/usr/share/games/fortunes\`, 5% held out) with the same seed, data
order, optimizer (AdamW, lr 3e-3, 50 warm-up steps, cosine to 3e-4) and step count; only the
\`sparsity:\` block differs. The sparse arms run the projections on the native sparse
engine (fp32, \`docs/engine.md\`; a projection above 40% density runs as dense sgemm); the
dense arm runs them as fp32 sgemm on the host.
Sparsity is over the 8 projection matrices (qkv, attn proj, mlp fc, mlp proj of each
layer); embeddings, LayerNorms and biases stay dense, so "nonzeros" counts them too.
q, k and v are one fused tensor (\`h.N.attn.qkv.weight\`), so the per-tensor budgets of SET,
RigL and GraNet's regrowth let nonzeros move between q, k and v (Cerebras' GPT configs
sparsify them as separate layers; \`balance_out_groups: 3\` on qkv would pin a third each).

| arm | final val loss | vs dense | train loss, last 10% | sparsity | nonzeros | training FLOPs | FLOPs vs dense | ms/step | wall | CPU |
|---|---|---|---|---|---|---|---|---|---|---|
EOF
awk '
	NR == FNR && $1 == "dense" { dv = $2 }
	NR == FNR { next }
	{
		d = (dv == "") ? "-" : sprintf("%+.4f", $2 - dv)
		printf "| %s | %.4f | %s | %.4f | %.1f%% | %d of %d | %.3e | %.2f | %.0f | %.0f s | %s |\n",
$1, $2, d, $3, 100 * $4, $5, $6, $7, $7 / $8, $10, $11, ($12 == "-") ? "-" : $12 " s"
	}' "$data/table" "$data/table"
cat <<EOF

Columns: final validation loss (nats/byte, \`summary.json\`, over the same 16 fixed
validation batches for every arm); training loss averaged over the last 10% of steps (the
same training batches in every arm, so it compares arms on ~10x more tokens than the
validation set); sparsity over the sparsified tensors at the end; nonzero parameters of the
whole model; training FLOPs as counted by \`host/sparsity/flops.c\` (Chinchilla appendix F,
each matmul scaled by its mask density, dense weight gradients on RigL/GraNet update steps;
the dense arm by the same formula at density 1) and their ratio to the dense run; time per
step and wall time of the run (both inflated by the shared machine) and its CPU time
(user + system seconds: what the run costs on an otherwise idle core).

## Schedules

- **static-random / static-topk**: 80% mask at step 0 (random scores / top-k |W| of the
  fresh initialisation), never changed.
- **GMP**: dense until step 50 (end of warm-up), then top-k |W| every 25 steps on the
  Zhu-Gupta cubic ramp 0 -> 0.8 reaching 0.8 at step 500; the second half of training runs
  at 80% (recovery, as in Zhu & Gupta).
- **SET / RigL**: random 80% mask at step 0; drop/grow every 25 steps until step 750 (75% of
  training, RigL's T_end), drop fraction cosine 0.3 -> 0 over that window; SET regrows at
  random, RigL by largest dense-gradient magnitude (of that step's batch). 25 steps rather
  than RigL's 100 because the run is short: 29 updates.
- **GraNet**: random 50% mask at step 0; every 25 steps from 50 to 500 global magnitude
  pruning on the cubic ramp 0.5 -> 0.8 (the same ramp end as GMP), each followed, and then
  alone every 25 steps until step 725, by per-tensor regeneration of
  ceil(r*nnz) weights by dense-gradient magnitude, r cosine-annealed from 0.5 to 0.005 over the run (GraNet's defaults).

Regrown weights start at zero with zero Adam moments (\`docs/sparsity.md\` section 2).

## Reading

EOF
awk -v noise=0.01 '
	{ v[$1] = $2; t[$1] = $3; f[$1] = $7 / $8; n++; arm[n] = $1 }
	END {
		# ranking by final validation loss
		for (i = 1; i <= n; i++) r[i] = arm[i]
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
			if (v[r[j]] < v[r[i]]) { x = r[i]; r[i] = r[j]; r[j] = x }
		s = ""
		for (i = 1; i <= n; i++) s = s (i > 1 ? " < " : "") sprintf("%s %.4f", r[i], v[r[i]])
		printf "Ranking by final validation loss (lower is better): %s.\n\n", s
		for (i = 1; i <= n; i++) rt[i] = arm[i]
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
			if (t[rt[j]] < t[rt[i]]) { x = rt[i]; rt[i] = rt[j]; rt[j] = x }
		s = ""
		for (i = 1; i <= n; i++) s = s (i > 1 ? " < " : "") rt[i]
		printf "Ranking by training loss over the last 10%% of steps: %s.\n\n", s
		if ("dense" in v) {
			best = ""; worst = ""
			for (i = 1; i <= n; i++) if (r[i] != "dense") { if (best == "") best = r[i]; worst = r[i] }
			if (best != "")
				printf "At 80%% sparsity the best sparse arm (%s) is %+.4f nats from dense and the worst (%s) %+.4f; the sparse arms span %.4f nats.\n\n", \
					best, v[best] - v["dense"], worst, v[worst] - v["dense"], v[worst] - v[best]
		}
		printf "Expected from the literature (reference section 6.3): dense best, then GMP and GraNet, then RigL, then SET, static random worst. Pairwise, on the final validation loss (and on the end-of-training training loss); \"too close\" means |difference| < %.2f nats, which one seed cannot resolve (a rough allowance, not a measured seed-to-seed spread):\n\n", noise
		np = split("dense<gmp dense<granet gmp<rigl granet<rigl rigl<set set<static-random", pr, " ")
		for (k = 1; k <= np; k++) {
			split(pr[k], ab, "<"); a = ab[1]; b = ab[2]
			if (!(a in v) || !(b in v)) continue
			d = v[b] - v[a]; dt = t[b] - t[a]
			verdict = (d > noise) ? "holds" : (d < -noise) ? "**reversed**" : "too close"
			printf "- %s better than %s: %s (val %+.4f, train %+.4f)\n", a, b, verdict, d, dt
		}
		if (("static-topk" in v) && ("static-random" in v))
			printf "- (no expectation) static-topk vs static-random: val %+.4f, train %+.4f\n", \
				v["static-topk"] - v["static-random"], t["static-topk"] - t["static-random"]
		printf "\nTraining cost: "
		s = ""
		for (i = 1; i <= n; i++) s = s (i > 1 ? ", " : "") sprintf("%s %.2f", arm[i], f[arm[i]])
		printf "%s (training FLOPs relative to dense). GMP and GraNet spend more because they start dense or half dense and prune gradually; RigL and GraNet are also charged dense weight gradients on their update steps.\n", s
	}' "$data/table"
cat <<EOF

One seed, one short run: the ordering of arms closer than a few hundredths of a nat is not
established by this experiment. Curves: \`results-loss.svg\` (\`cshost plot\`: validation loss and
training loss as a moving mean over $win steps, learning rate, sparsity per layer, mask churn
per update of the dynamic arms).

![loss curves](results-loss.svg)
EOF
} >"$md.tmp"
mv "$md.tmp" "$md"

# --- results-loss.svg ---------------------------------------------------------------
# cshost plot (gnuplot): loss (training as a moving mean of $win steps, validation), learning
# rate, sparsity per layer of the first arm and overall of the others, mask churn per update.
plot_runs=()
for a in $ALL_ARMS; do
	[ -s "$runs/$a/metrics.jsonl" ] && plot_runs+=("$runs/$a")
done
"$cshost" plot "${plot_runs[@]}" -o "$docs/results-loss.svg" --title "$model, $steps steps" \
	--smooth "$win" >/dev/null || exit 1
echo "experiment: wrote $md and $docs/results-loss.svg"
