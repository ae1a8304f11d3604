#!/usr/bin/env bats
# pn-sum: a training step as forward + backward + optimizer (step.h,
# pn-sum(1) TRAINING STEPS).
load test_helper

F="$FIX/step"
G="--gpuspecs $FIX/sum/gpus.tsv"
# GPU UNIT: 1024 GB/s, 1024 GFLOP/s.  An elementwise row without a model
# takes NeuSight's VEC roofline, traffic / 1e9 / 1024 s.  Adam's step moves
# 20 weight-sized tensors (8 passes), SGD's 3, SGD's with momentum 8.

setup() { T=$BATS_TEST_TMPDIR; }

setup_file() {
	# linear models, fitted exactly: a dense row takes in_features ms
	# (on forward rows; on train steps with Adam; with SGD), a bmm row m ms
	local d=$BATS_FILE_TMPDIR
	pn-fit -f lr --no-log-target -F in_features -o "$d/fwd.model" "$F/dense-fwd.tsv"
	pn-fit -f lr --no-log-target -F in_features,pass,optimizer -o "$d/adam.model" "$F/dense-adam.tsv"
	pn-fit -f lr --no-log-target -F in_features,pass,optimizer -o "$d/sgd.model" "$F/dense-sgd.tsv"
	pn-fit -f lr --no-log-target -F m -o "$d/m.model" "$F/bmm-fwd.tsv"
}

@test "pn-sum splits a dense train row into its forward, the transposed GEMMs, the bias gradient and Adam's step" {
	run pn-sum -m "$BATS_FILE_TMPDIR/fwd.model" --fallback roofline $G -d UNIT -b 4 "$F/dense.tsv"
	[ "$status" -eq 0 ]
	o=$(printf '%s\n' "$output")
	# forward dense (4, 1000, 500): 1000 ms by the model
	near "$(col <(echo "$o") fwd_ms 1)" 1000
	# input-grad dense (4, 500, 1000): 500; weight-grad dense (500, 4,
	# 1000): 4; bias-grad add (4, 1, 500), 4 (2000 + 500) bytes: 9.765625e-6
	near "$(col <(echo "$o") bwd_ms 1)" 504.000009765625
	# Adam over 500500 weights: 20 x 500500 x 4 bytes
	[ "$(col <(echo "$o") opt_ms 1)" = 0.03910156249999999 ]
	[ "$(col <(echo "$o") train_ms 1)" = 0 ]
	[ "$(col <(echo "$o") source 1)" = mixed ]
}

@test "pn-sum splits a bmm train row into the two products NeuSight's graphs trace" {
	run pn-sum -m "$BATS_FILE_TMPDIR/m.model" $G -d UNIT -b 2 "$F/bmm.tsv"
	[ "$status" -eq 0 ]
	o=$(printf '%s\n' "$output")
	# (2, 300, 50, 20): forward m = 300; grad-a (2, 300, 20, 50) 300,
	# grad-b (2, 50, 300, 20) 50
	near "$(col <(echo "$o") fwd_ms 1)" 300
	near "$(col <(echo "$o") bwd_ms 1)" 350
	[ "$(col <(echo "$o") opt_ms 1)" = 0 ]
	[ "$(col <(echo "$o") source 1)" = model ]
}

@test "pn-sum predicts a train row whole by a model fitted on train steps with its optimizer" {
	run pn-sum -m "$BATS_FILE_TMPDIR/adam.model" --fallback roofline $G -d UNIT -b 4 --per-layer "$F/dense.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | cut -f11,12 | tail -n +2)" = "$(printf 'model\twhole')" ]
	near "$(col <(printf '%s\n' "$output") time_ms 1)" 1000
}

@test "pn-sum decomposes a train row whose model saw train steps of another optimizer, its forward parts outside that model's domain" {
	run_io pn-sum -m "$BATS_FILE_TMPDIR/sgd.model" --fallback roofline $G -d UNIT -b 4 --per-layer "$F/dense.tsv"
	[ "$status" -eq 0 ]
	[ "$(cut -f11,12,20 "$T/out" | tail -n +2)" = "$(printf 'extrapolated\tdecomposed\tforward: pass=fwd,optimizer=none')" ]
}

@test "pn-sum splits a loss train row without a model of its own into a log-softmax, the gather, the likelihood's gradient and the log-softmax's backward" {
	run pn-sum --fallback roofline $G -d UNIT -b 1 "$F/xent.tsv"
	[ "$status" -eq 0 ]
	o=$(printf '%s\n' "$output")
	# 256 tokens of 1000 classes, fp32.  log-softmax, a softmax: VEC,
	# 2 x 1024000 bytes / 1e9 / 1024 = 0.002 ms; nll, a mem pass of 512
	# elements: MEM, 2048 / (1024 x 2^30)
	near "$(col <(echo "$o") fwd_ms 1)" 0.0020018626451
	# nll.grad, a mem pass of 256000 elements (1024000 / (1024 x 2^30)),
	# and the softmax again
	near "$(col <(echo "$o") bwd_ms 1)" 0.0029313225746
	[ "$(col <(echo "$o") opt_ms 1)" = 0 ]
}

@test "pn-sum keeps an lstm train row whole, by the roofline" {
	run pn-sum --fallback roofline $G -d UNIT --per-layer "$F/mixed.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | cut -f1,19,20 | tail -n +2 | tr '\t\n' ' ;')" = "fc roofline decomposed;norm roofline decomposed;act roofline decomposed;rnn roofline whole;" ]
}

@test "pn-sum --optimizer adds Adam's step over a traced graph's weights" {
	run pn-sum --fallback roofline $G -d UNIT --optimizer adam "$F/traced.tsv"
	[ "$status" -eq 0 ]
	# the acc rows' weights, 2 x 1000000 + 24: 20 x 2000024 x 4 bytes
	[ "$(col <(printf '%s\n' "$output") opt_ms 1)" = 0.156251875 ]
}

@test "pn-sum --optimizer sgd moves 3 tensors of a traced graph's weights, 8 with --momentum" {
	pn-sum --fallback roofline $G -d UNIT --optimizer sgd "$F/traced.tsv" >"$T/plain"
	pn-sum --fallback roofline $G -d UNIT --optimizer sgd --momentum "$F/traced.tsv" >"$T/mom"
	[ "$(col "$T/plain" opt_ms 1)" = 0.02343778125 ]
	[ "$(col "$T/mom" opt_ms 1)" = 0.06250075 ]
}

@test "pn-sum adds no optimizer step to a traced graph without --optimizer" {
	run pn-sum --fallback roofline $G -d UNIT --per-layer "$F/traced.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | cut -f16 | tail -n +2 | sort -u)" = whole ]
	run pn-sum --fallback roofline $G -d UNIT "$F/traced.tsv"
	[ "$(col <(printf '%s\n' "$output") opt_ms 1)" = 0 ]
}

@test "pn-sum --per-layer gives a traced graph's acc rows the rule acc+opt under --optimizer" {
	run pn-sum --fallback roofline $G -d UNIT --optimizer adam --per-layer "$F/traced.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | cut -f4,16 | tail -n +2 | tr '\t\n' ' ;')" = "fwd whole;bwd whole;bwd whole;acc acc+opt;acc acc+opt;" ]
}

@test "pn-sum's phase columns add up to the iteration of a decomposed network" {
	run pn-sum --fallback roofline $G -d UNIT -b 4 "$F/mixed.tsv"
	[ "$status" -eq 0 ]
	o=$(printf '%s\n' "$output")
	sum=$(awk -F'\t' 'NR == 2 { printf "%.17g", $4 + $5 + $6 + $7 + $8 }' <<<"$o")
	near "$sum" "$(col <(echo "$o") iteration_ms 1)"
	[ "$(col <(echo "$o") train_ms 1)" != 0 ]
	[ "$(col <(echo "$o") opt_ms 1)" != 0 ]
}

@test "pn-sum without --fallback names the type a decomposed row's parts lack a model for" {
	run_io pn-sum -m "$BATS_FILE_TMPDIR/fwd.model" $G -d UNIT "$F/dense.tsv"
	[ "$status" -eq 1 ]
	[ ! -s "$T/out" ]
	[ "$(cat "$T/err")" = "pn-sum: $BATS_FILE_TMPDIR/fwd.model: no model for layer type 'elementwise' of $F/dense.tsv (--fallback roofline predicts it by the roofline)" ]
}

@test "pn-sum decomposes an lstm train row into the ops of every time step when the framework profile runs lstm op by op" {
	# lstm (B 4, S 3, I 10, H 5, one layer; g H = 20), dense rows taking
	# in_features ms, the elementwise rows by the roofline (~1e-8 ms):
	# forward input-proj (12, 10, 20) 10 + 3 hidden-proj (4, 5, 20) 5 = 25;
	# backward 3 x (input-grad (4, 20, 5) 20 + weight-grad (20, 4, 5) 4)
	# + input-proj's input-grad (12, 20, 10) 20 + weight-grad (20, 12,
	# 10) 12 = 104
	run_io pn-sum -m "$BATS_FILE_TMPDIR/fwd.model" --fallback roofline $G -d UNIT -b 4 \
		--framework "$F/cells-profile.tsv" "$F/lstm.tsv"
	[ "$status" -eq 0 ]
	NEAR_TOL=1e-6 near "$(col "$T/out" fwd_ms 1)" 25
	NEAR_TOL=1e-6 near "$(col "$T/out" bwd_ms 1)" 104
	[ "$(col "$T/out" train_ms 1)" = 0 ]
}

# add_models DIM...: fwd.model and an elementwise model of adds of 1-16
# rows of each DIM elements (b d / 1e6 ms) in $T/models
add_models() {
	{
		printf 'layer\top\tbatch\tseq_len\tdim\tprecision\tpass\toptimizer\tdevice\ttime_ms\n'
		for b in 1 2 4 16; do for d in "$@"; do
			awk -v b=$b -v d=$d 'BEGIN { printf "elementwise\tadd\t%s\t1\t%s\tfp32\tfwd\tnone\tUNIT\t%.9g\n", b, d, b * d / 1e6 }'
		done; done
	} | pn-featurize $G | pn-fit -f lr -L -F batch,dim -o "$T/ew.model"
	cat "$BATS_FILE_TMPDIR/fwd.model" "$T/ew.model" >"$T/models"
}

@test "pn-sum splits an lstm's weight accumulation as a flat pass inside the elementwise model's sampled shapes" {
	# adds of 64-4096 elements; an lstm of hidden 64 (g H = 256): its
	# weight gradient's 16384 elements as 8 rows of 2048, not 256 rows of
	# 64
	add_models 64 2048 4096
	printf 'name\tlayer\tphase\tbatch\tseq_len\tinput_size\thidden\tlayers\tbidirectional\tprecision\toptimizer\nrnn\tlstm\ttrain\t1\t3\t10\t64\t1\t0\tfp32\tnone\n' >"$T/lstm.tsv"
	run_io pn-sum -m "$T/models" --fallback roofline $G -d UNIT -b 4 \
		--framework "$F/cells-profile.tsv" --per-layer "$T/lstm.tsv"
	[ "$status" -eq 0 ]
	[ "$(column "$T/out" rule)" = decomposed ]
	[ "$(column "$T/out" domain)" = - ]
	[ "$(column "$T/out" source)" = model ]
}

@test "pn-sum splits a small lstm's weight accumulation as one row of its elements" {
	# adds of 1-1024 elements; an lstm of hidden 5 (g H = 20): 100
	# elements, one row of 100, not of 2048
	add_models 1 64 1024
	run_io pn-sum -m "$T/models" --fallback roofline $G -d UNIT -b 4 \
		--framework "$F/cells-profile.tsv" --per-layer "$F/lstm.tsv"
	[ "$status" -eq 0 ]
	[ "$(column "$T/out" domain)" = - ]
}

@test "pn-sum keeps the same lstm train row whole without a framework profile, as on a GPU" {
	run_io pn-sum -m "$BATS_FILE_TMPDIR/fwd.model" --fallback roofline $G -d UNIT -b 4 --per-layer "$F/lstm.tsv"
	[ "$status" -eq 0 ]
	[ "$(column "$T/out" rule)" = whole ]
}

@test "pn-sum's backward of an attention with a dropout rate applies the mask again on the probabilities' gradient" {
	for p in 0 0.1; do
		printf 'name\tlayer\tphase\tbatch\tseq_len\tembed_dim\theads\tdropout\tprecision\toptimizer\nattn\tattention\ttrain\t1\t64\t128\t4\t%s\tfp32\tnone\n' "$p" >"$T/a$p.tsv"
		pn-sum -m "$BATS_FILE_TMPDIR/m.model" --fallback roofline $G -d UNIT -b 2 \
			"$T/a$p.tsv" 2>/dev/null | col /dev/stdin bwd_ms 1 >"$T/b$p"
	done
	# the mask over (B h, S, S) = (8, 64, 64), by the roofline
	printf 'layer\top\tbatch\tseq_len\tdim\tdropout\tprecision\tpass\toptimizer\nelementwise\tdropout\t8\t64\t64\t0.1\tfp32\tfwd\tnone\n' |
		pn-featurize --gpuspecs "$FIX/sum/gpus.tsv" --device UNIT | col /dev/stdin roofline_ms 1 >"$T/mask"
	awk -v a="$(cat "$T/b0")" -v b="$(cat "$T/b0.1")" -v m="$(cat "$T/mask")" \
		'BEGIN { d = b - a - m; exit !(m > 0 && d < 1e-9 * b && d > -1e-9 * b) }'
}

# tiny.model: train steps with Adam that take in_features / 1e6 ms, so
# that a row's weights' sweep takes longer than the model says
tiny_model() {
	awk -F'\t' -v OFS='\t' 'NR > 1 { $7 = $7 / 1e6 } 1' "$F/dense-adam.tsv" >"$T/tiny.tsv"
	pn-fit -f lr --no-log-target -F in_features,pass,optimizer -o "$T/tiny.model" "$T/tiny.tsv"
}

@test "pn-sum --per-layer gives a whole train row at least its weights' sweep at the memory's bandwidth when the step's weights, gradients and state exceed the cache" {
	tiny_model
	# UNIT: 4 MB of L2, 1024 GB/s; the row's W + G + S as the CUDA
	# allocator holds them, 8,009,728 bytes
	run_io pn-sum -m "$T/tiny.model" $G -d UNIT -b 4 --per-layer "$F/dense.tsv"
	[ "$status" -eq 0 ]
	[ "$(col "$T/out" rule 1)" = sweep ]
	[ "$(col "$T/out" source 1)" = model ]
	w=$(col "$T/out" weights_bytes 1) g=$(col "$T/out" grads_bytes 1) s=$(col "$T/out" state_bytes 1)
	[ "$(awk -v w="$w" -v g="$g" -v s="$s" 'BEGIN { print w + g + s }')" = 8009728 ]
	near "$(col "$T/out" time_ms 1)" "$(awk -v w="$w" -v g="$g" -v s="$s" 'BEGIN { printf "%.17g", 2 * (w + g + s) / 1024e6 }')"
}

@test "pn-sum counts a row's weights' sweep in its step's train time" {
	tiny_model
	run_io pn-sum -m "$T/tiny.model" $G -d UNIT -b 4 "$F/dense.tsv"
	[ "$status" -eq 0 ]
	# 2 x 8,009,728 bytes at 1024 GB/s
	near "$(col "$T/out" train_ms 1)" 0.015644
}

@test "pn-sum keeps the model's time of a train row whose step fits the cache" {
	tiny_model
	# NOPRICE: 8 MB of L2 holds a dense 1000 x 400's 6,408,192 bytes
	sed 's/\t500\t/\t400\t/' "$F/dense.tsv" >"$T/dense400.tsv"
	run_io pn-sum -m "$T/tiny.model" $G -d NOPRICE -b 4 --per-layer "$T/dense400.tsv"
	[ "$status" -eq 0 ]
	[ "$(col "$T/out" rule 1)" = whole ]
	near "$(col "$T/out" time_ms 1)" 0.001
}

# half.model: train steps with SGD that take in_features ms and with Adam
# half that, which no optimizer does
half_model() {
	{
		cat "$F/dense-sgd.tsv"
		awk -F'\t' -v OFS='\t' 'NR > 1 { $7 = $7 / 2; print }' "$F/dense-adam.tsv"
	} | pn-fit -f lr --no-log-target -F in_features,pass,optimizer -o "$T/half.model"
}

# sgd_step MODEL: MODEL's time_ms of dense.tsv's row with SGD (a failing
# pn-sum fails the assignment that calls it)
sgd_step() {
	sed 's/adam$/sgd/' "$F/dense.tsv" >"$T/sgd.tsv"
	pn-sum -m "$1" $G -d UNIT -b 4 --per-layer "$T/sgd.tsv" >"$T/sgd.out"
	column "$T/sgd.out" time_ms
}

@test "pn-sum never predicts a whole train step faster than the same step with SGD where the model saw SGD" {
	half_model
	sgd=$(sgd_step "$T/half.model")
	run_io pn-sum -m "$T/half.model" $G -d UNIT -b 4 --per-layer "$F/dense.tsv"
	[ "$status" -eq 0 ]
	[ "$(column "$T/out" rule)" = whole ]
	[ "$(column "$T/out" time_ms)" = "$sgd" ]
}

@test "pn-sum keeps a whole train step's own time where it is above the same step with SGD" {
	# Adam's steps twice SGD's
	awk -F'\t' -v OFS='\t' 'NR > 1 { $7 = $7 * 2 } 1' "$F/dense-adam.tsv" >"$T/slow.tsv"
	{ cat "$F/dense-sgd.tsv"; tail -n +2 "$T/slow.tsv"; } |
		pn-fit -f lr --no-log-target -F in_features,pass,optimizer -o "$T/slow.model"
	sgd=$(sgd_step "$T/slow.model")
	run_io pn-sum -m "$T/slow.model" $G -d UNIT -b 4 --per-layer "$F/dense.tsv"
	[ "$status" -eq 0 ]
	awk -v a="$(column "$T/out" time_ms)" -v s="$sgd" 'BEGIN { exit !(a > s && s > 0) }'
}

@test "pn-sum ignores an SGD bound that is no time and keeps the row's own" {
	# SGD's steps in_features - 150 ms (fitted above 150, below 0 at
	# 100), Adam's in_features
	{
		awk -F'\t' -v OFS='\t' 'NR == 1 || $3 > 150 { if (NR > 1) $7 = $7 - 150; print }' "$F/dense-sgd.tsv"
		tail -n +2 "$F/dense-adam.tsv"
	} | pn-fit -f lr --no-log-target -F in_features,pass,optimizer -o "$T/low.model"
	sed 's/\t1000\t500\t/\t100\t500\t/' "$F/dense.tsv" >"$T/small.tsv"
	run_io pn-sum -m "$T/low.model" $G -d UNIT -b 4 --per-layer "$T/small.tsv"
	[ "$status" -eq 0 ]
	NEAR_TOL=1e-9 near "$(column "$T/out" time_ms)" 100
}

@test "pn-sum bounds a twin's step by the same step's SGD twin, each at its own rooflines" {
	# SGD's and Adam's fp32 steps both in_features ms; a bf16 row on TC
	# goes through its fp32 twin, whose rooflines differ by the state
	{ cat "$F/dense-sgd.tsv"; tail -n +2 "$F/dense-adam.tsv"; } |
		pn-fit -f lr --no-log-target -F in_features,pass,optimizer -o "$T/same.model"
	pn-fit -f lr --no-log-target -F in_features,pass,optimizer -o "$T/adam-only.model" "$F/dense-adam.tsv"
	A="--gpuspecs $FIX/sum/amp-gpus.tsv -d TC -b 1 --per-layer"
	sed 's/fp32\tadam$/bf16\tadam/' "$F/dense.tsv" >"$T/adam.tsv"
	sed 's/fp32\tadam$/bf16\tsgd/' "$F/dense.tsv" >"$T/sgd.tsv"
	own=$(pn-sum -m "$T/adam-only.model" $A "$T/adam.tsv" 2>/dev/null | column /dev/stdin time_ms)
	sgd=$(pn-sum -m "$T/same.model" $A "$T/sgd.tsv" 2>/dev/null | column /dev/stdin time_ms)
	run_io pn-sum -m "$T/same.model" $A "$T/adam.tsv"
	[ "$status" -eq 0 ]
	want=$(awk -v a="$own" -v s="$sgd" 'BEGIN { printf "%.17g", (a > s ? a : s) }')
	NEAR_TOL=1e-9 near "$(column "$T/out" time_ms)" "$want"
}
