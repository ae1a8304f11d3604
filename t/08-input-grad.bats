#!/usr/bin/env bats
# The layer contract's input_grad column (src/lib/layer.h): a train row of
# the layer that reads the data computes no gradient of its input.  Read
# and refused by the contract, written by pn-net, honoured by pn-time's
# cpu backend, and predicted by pn-sum (rule whole-dx, source derived;
# a decomposed row loses its input-grad part).
load test_helper

G="--gpuspecs $FIX/featurize/gpus.tsv -d TESTGPU"
S="--gpuspecs $FIX/sum/gpus.tsv"
F="$FIX/step"

setup() { T=$BATS_TEST_TMPDIR; }

setup_file() {
	# a linear model, fitted exactly: a dense row takes in_features ms
	# forward, in_features + 600 ms as a train step with Adam
	pn-fit -f lr --no-log-target -F in_features,pass,optimizer \
		-o "$BATS_FILE_TMPDIR/dx.model" "$F/dense-dx-data.tsv"
	pn-fit -f lr --no-log-target -F in_features \
		-o "$BATS_FILE_TMPDIR/fwd.model" "$F/dense-fwd.tsv"
}

# a layer file with header $1 and rows $2... (fields given with \t)
layers() {
	local h=$1
	shift
	{ printf '%b\n' "$h"; for r in "$@"; do printf '%b\n' "$r"; done; } >"$T/in.tsv"
}

@test "the layer contract refuses an input_grad other than 0 and 1" {
	layers 'layer\tbatch\tin_features\tout_features\tinput_grad' 'dense\t2\t8\t4\t2'
	run_io pn-featurize $G "$T/in.tsv"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-featurize: $T/in.tsv:2: column 'input_grad': input_grad must be 0 or 1, not 2" ]
}

@test "the layer contract refuses input_grad 0 on a type other than dense and conv2d" {
	layers 'layer\tbatch\tseq_len\tdim\tinput_grad' 'softmax\t2\t1\t8\t0'
	run_io pn-featurize $G "$T/in.tsv"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-featurize: $T/in.tsv:2: impossible softmax: input_grad 0 is for dense and conv2d only" ]
}

@test "pn-net marks a CNN's first conv, which reads the images, input_grad 0 and no other row" {
	run_io pn-net --arch resnet18 --image 64
	[ "$status" -eq 0 ]
	[ "$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		{ n[$c["input_grad"]]++ } $c["input_grad"] == 0 { print $1 }
		END { printf "%d %d\n", n[1], n["NA"] + n[1] + n[0] }' "$T/out")" = "$(printf 'conv1\n20 %d' $(($(wc -l <"$T/out") - 1)))" ]
}

@test "pn-net writes no input_grad column where no row skips its input's gradient" {
	pn-net --arch resnet18 --image 64 --phase fwd >"$T/fwd"
	# a transformer's first row with weights is its embedding
	pn-net --hf "$FIX/net/tiny-gpt2.json" >"$T/gpt2"
	[ "$(head -n 1 "$T/fwd" | tr '\t' '\n' | grep -c '^input_grad$')" -eq 0 ]
	[ "$(head -n 1 "$T/gpt2" | tr '\t' '\n' | grep -c '^input_grad$')" -eq 0 ]
}

@test "pn-time's cpu backend creates no convolution backward-data primitive for a conv2d of input_grad 0" {
	for g in 1 0; do
		printf 'layer\tbatch\tin_channels\tout_channels\tkernel\timage\tstride\tpadding\tbias\tpass\toptimizer\tinput_grad\nconv2d\t2\t16\t16\t3\t8\t1\t1\t0\ttrain\tsgd\t%s\n' $g >"$T/in$g"
		DNNL_VERBOSE=1 pn-time -q -c -r 1 -w 0 "$T/in$g" >"$T/o$g" 2>"$T/e$g"
	done
	[ "$(grep -c ',backward_data,' "$T/o1")" -gt 0 ]
	[ "$(grep -c ',backward_data,' "$T/o0")" -eq 0 ]
	[ "$(grep -c ',backward_weights,' "$T/o0")" -gt 0 ]
	[ "$(column <(grep -v '^onednn_verbose' "$T/o0") status)" = ok ]
	[ "$(cat "$T/e0")" = "$(cat "$T/e1")" ]
}

@test "pn-time's dense of input_grad 0 allocates no input gradient: batch x in_features floats less" {
	printf 'layer\tbatch\tin_features\tout_features\tbias\tpass\toptimizer\tinput_grad\n' >"$T/in"
	printf 'dense\t8\t64\t32\t1\ttrain\tsgd\t%s\n' 1 0 >>"$T/in"
	pn-time -q -c -r 1 -w 0 "$T/in" >"$T/o"
	[ "$(column "$T/o" status | tr '\n' ' ')" = "ok ok " ]
	a=$(column "$T/o" mem_bytes | sed -n 1p) b=$(column "$T/o" mem_bytes | sed -n 2p)
	[ $((a - b)) -eq $((8 * 64 * 4)) ]
}

@test "pn-sum predicts a whole train row of input_grad 0 as the row less its input gradient's product, at most half the row" {
	run_io pn-sum -m "$BATS_FILE_TMPDIR/dx.model" --fallback roofline $S -d UNIT -b 4 --per-layer "$F/dense-dx.tsv"
	[ "$status" -eq 0 ]
	# fc1 (4, 1000, 500): 1600 - the dense (4, 500, 1000), 500 ms;
	# fc2 (4, 1000, 2000): 1600 - min(2000, 1600 / 2); fc3 input_grad 1
	[ "$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		{ printf "%s %s %s %.6f;", $1, $c["source"], $c["rule"], $c["time_ms"] }' "$T/out")" = "fc1 derived whole-dx 1100.000000;fc2 derived whole-dx 800.000000;fc3 model whole 1600.000000;" ]
}

@test "pn-sum's summary keeps a whole-dx row's time in train_ms, none in bwd_ms" {
	run_io pn-sum -m "$BATS_FILE_TMPDIR/dx.model" --fallback roofline $S -d UNIT -b 4 "$F/dense-dx.tsv"
	[ "$status" -eq 0 ]
	[ "$(column "$T/out" bwd_ms)" = 0 ]
	near "$(column "$T/out" train_ms)" 3500
	[ "$(column "$T/out" source)" = mixed ]
}

@test "pn-sum leaves the input-grad part out of a decomposed dense row of input_grad 0" {
	head -n 2 "$F/dense-dx.tsv" >"$T/net"
	run_io pn-sum -m "$BATS_FILE_TMPDIR/fwd.model" --fallback roofline $S -d UNIT -b 4 "$T/net"
	[ "$status" -eq 0 ]
	# weight-grad dense (500, 4, 1000): 4 ms; bias-grad add (4, 1, 500),
	# 4 (2000 + 500) bytes: 9.765625e-6 (t/77's 504 less the input-grad)
	near "$(column "$T/out" bwd_ms)" 4.000009765625
}
