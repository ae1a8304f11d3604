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
	# the same rows with an input_grad column: fwd rows NA, every other
	# train row 0 (the same times: a first layer's train step that this
	# model saw)
	awk -F'\t' -v OFS='\t' 'NR == 1 { print $0, "input_grad"; next }
		{ print $0, $5 == "fwd" ? "NA" : NR % 2 }' "$F/dense-dx-data.tsv" \
		>"$BATS_FILE_TMPDIR/dx0-data.tsv"
	pn-fit -f lr --no-log-target -F in_features,pass,optimizer \
		-o "$BATS_FILE_TMPDIR/dx0.model" "$BATS_FILE_TMPDIR/dx0-data.tsv"
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

@test "pn-sample draws input_grad when asked, 0 or 1 on train rows, NA on forward rows" {
	run_io pn-sample -l conv2d -n 300 -s 3 -c input_grad=0,1
	[ "$status" -eq 0 ]
	[ "$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		{ n[$c["pass"] "=" $c["input_grad"]] = 1 }
		END { for (k in n) print k }' "$T/out" | sort | paste -sd' ')" = "fwd=NA train=0 train=1" ]
}

@test "pn-sample writes no input_grad column unless an option names it" {
	run_io pn-sample -l dense -n 5 -s 3
	[ "$status" -eq 0 ]
	[ "$(head -n 1 "$T/out" | tr '\t' '\n' | grep -c '^input_grad$')" -eq 0 ]
}

@test "pn-sample refuses input_grad for a type without it" {
	run_io pn-sample -l softmax -n 5 -c input_grad=0,1
	[ "$status" -eq 2 ]
	grep -q "layer 'softmax' has no column 'input_grad'" "$T/err"
}

@test "pn-fit records the input_grad values of its train rows" {
	grep -qx 'info input_grads 0,1' "$BATS_FILE_TMPDIR/dx0.model"
	! grep -q '^info input_grads' "$BATS_FILE_TMPDIR/dx.model"
}

@test "pn-eval -m marks a train row of input_grad 0 outside a model that saw none" {
	printf 'layer\tbatch\tin_features\tout_features\tpass\toptimizer\tinput_grad\ttime_ms\ndense\t1\t10\t20\ttrain\tadam\t0\t610\ndense\t1\t10\t20\tfwd\tnone\t0\t10\n' >"$T/in"
	run_io pn-eval -m "$BATS_FILE_TMPDIR/dx.model" "$T/in"
	[ "$status" -eq 0 ]
	# a forward row ignores its input_grad
	[ "$(column domain "$T/out" | paste -sd' ')" = "input_grad=0 -" ]
	run_io pn-eval -m "$BATS_FILE_TMPDIR/dx0.model" "$T/in"
	[ "$status" -eq 0 ]
	[ "$(column domain "$T/out" | paste -sd' ')" = "- -" ]
}

@test "pn-sum predicts a train row of input_grad 0 whole by a model that saw such rows" {
	run_io pn-sum -m "$BATS_FILE_TMPDIR/dx0.model" --fallback roofline $S -d UNIT -b 4 --per-layer "$F/dense-dx.tsv"
	[ "$status" -eq 0 ]
	[ "$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		{ printf "%s %s %s %.6f;", $1, $c["source"], $c["rule"], $c["time_ms"] }' "$T/out")" = "fc1 model whole 1600.000000;fc2 model whole 1600.000000;fc3 model whole 1600.000000;" ]
}

@test "pn-sum predicts a whole-dx row from the features of the train step that computes its input gradient" {
	# a linear model of a dense train step's flops (3 products of 2 B I O),
	# which never saw input_grad 0: fc1 (4, 1000, 500) is 12e6 flops as a
	# full step, less its input gradient's product (a dense (4, 500, 1000)
	# forward, 4e6 flops: predicted from its flops as well) = 8e6, and
	# the bias's few flops
	awk 'BEGIN { OFS = "\t"; print "layer", "batch", "in_features", "out_features", "pass", "optimizer", "device", "time_ms"
		for (b = 1; b <= 8; b *= 2) for (i = 100; i <= 2000; i *= 2) print "dense", b, i, 700, "train", "adam", "UNIT", 6 * b * i * 700 / 1e6 }' |
		pn-featurize $S | pn-fit -f lr --no-log-target -F flops -o "$T/flops.model"
	head -n 2 "$F/dense-dx.tsv" >"$T/net"
	run_io pn-sum -m "$T/flops.model" $S -d UNIT -b 4 --per-layer "$T/net"
	[ "$status" -eq 0 ]
	[ "$(column rule "$T/out")" = whole-dx ]
	NEAR_TOL=1e-3 near "$(column time_ms "$T/out")" 8
}

@test "pn-featurize counts two products, not three, in a train row of input_grad 0" {
	layers 'layer\tbatch\tin_features\tout_features\tbias\tpass\toptimizer\tinput_grad\tdevice' \
		'dense\t4\t100\t50\t0\ttrain\tsgd\t1\tTESTGPU' 'dense\t4\t100\t50\t0\ttrain\tsgd\t0\tTESTGPU' \
		'dense\t4\t100\t50\t0\tfwd\tnone\t0\tTESTGPU'
	run_io pn-featurize --gpuspecs "$FIX/featurize/gpus.tsv" "$T/in.tsv"
	[ "$status" -eq 0 ]
	# 2 B I O a product: 40000
	[ "$(column flops "$T/out" | paste -sd' ')" = "120000 80000 40000" ]
	[ "$(column co "$T/out" | paste -sd' ')" = "120000 80000 40000" ]
}

@test "pn-fit takes input_grad as a configuration column: one 0/1 feature a value, none for NA" {
	awk -F'\t' -v OFS='\t' '{ print $0, NR == 1 ? "device" : "TESTGPU" }' \
		"$BATS_FILE_TMPDIR/dx0-data.tsv" >"$T/data.tsv"
	pn-featurize --gpuspecs "$FIX/featurize/gpus.tsv" "$T/data.tsv" >"$T/feat.tsv"
	run_io pn-fit -f lr -F rel --relative "$T/feat.tsv"
	[ "$status" -eq 0 ]
	[ "$(awk '$1 == "feature" && $2 ~ /^input_grad/ { print $2, $3 }' "$T/out" | paste -sd' ')" = "input_grad=0 cat input_grad=1 cat" ]
}
