#!/usr/bin/env bats
# pn-sum: the peak memory of a training step (src/lib/memory.h), whether the
# job fits each GPU, and the largest batch that does.
load test_helper

F="$FIX/sum"
G="--gpuspecs $FIX/sum/mem-gpus.tsv"
# mem-gpus.tsv: BIG (2 GiB), TINY (1.4 GiB, twice BIG's speed, cheaper),
# CPU1 (arch CPU-test: backend cpu).  Test GPUs pay memory.h's fixed GPU
# cost, 1343 MiB = 1408237568 bytes.
FIXED=1408237568
#
# mem-dense.tsv: one dense 1000 -> 500 with bias, fp32, at batch 4:
#   W = G = (1000 x 500 + 500) x 4 = 2002000; saved: the input 4 x 1000 x 4
#   = 16000; forward workspace: the output 8000; backward: 16000 + 8000
#   forward  W + S + 16000 + 8000      backward  W + S + 16000 + G + 24000
#   step     W + S + G + t W  (t: adam, adadelta 2; adagrad, rmsprop,
#            sgd with momentum 1; sgd 0)
# mem-mlp.tsv per sample (GPU: a dropout mask of 1 byte an element):
#   fc1 100 -> 50: W 20200, saved its input 400, workspace 200 / 600
#   relu 50: saved its output 200, workspace 400 / 400
#   dropout 50: saved its mask 50, workspace 400 / 400
#   fc2 50 -> 10: W 2040, saved its input 200 (dropout keeps no output),
#                 workspace 40 / 240
#   softmax 10, the last row: saved its output 40 and its input 40 (the
#                 logits the loop holds), workspace 80 / 80
#   W = 22240, adam state 44480; saved 930 b in all.  At batch b (adam):
#   forward, the highest row: dropout, 66720 + 650 b + 400 b
#   backward, the highest row: fc2, 66720 + 850 b + G(fc2, loss) 2040
#             + its gradients 240 b = 68760 + 1090 b (the others: fc1
#             88960 + 1000 b, loss 66720 + 1010 b, drop 68760 + 1050 b)
#   step      66720 + 22240 + 2 x 20200 = 129360
#   so from b = 225 on the peak is 68760 + 1090 b

# peak_bytes FILE ROW: peak_gb of a summary row, in bytes less the fixed cost
peak_bytes() {
	awk -F'\t' -v r="$2" -v f="$FIXED" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "peak_gb") k = i }
		NR == r + 1 { printf "%.0f\n", $k * 2^30 - f }' "$1"
}

sum() { pn-sum --fallback roofline $G "$@" >"$BATS_TEST_TMPDIR/o"; }

@test "pn-sum's summary ends with peak_gb mem_gb fits" {
	run pn-sum --fallback roofline $G -d BIG -b 4 "$F/mem-dense.tsv"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(printf 'rank\tdevice\tsource\tfwd_ms\tbwd_ms\tacc_ms\ttrain_ms\titeration_ms\titerations\tepoch_s\tprice_usd_h\tcost_usd\tcost_rank\tpeak_gb\tmem_gb\tfits')" ]
	[ "$(printf '%s\n' "${lines[1]}" | cut -f15,16)" = "$(printf '2\tyes')" ]
}

@test "pn-sum's peak with Adam is the optimizer step: W + 2W state + G + 2W temporaries" {
	sum -d BIG -b 4 "$F/mem-dense.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 12012000 ]
}

@test "pn-sum's peak with plain SGD is the backward pass: W + saved input + G + gradients of input and output" {
	sum -d BIG -b 4 --optimizer sgd "$F/mem-dense.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 4044000 ]
}

@test "pn-sum's peak without an optimizer keeps gradients but no state" {
	sum -d BIG -b 4 --optimizer none "$F/mem-dense.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 4044000 ]
}

@test "pn-sum counts a momentum buffer for SGD with --momentum" {
	sum -d BIG -b 4 --optimizer sgd --momentum "$F/mem-dense.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 8008000 ]
}

@test "pn-sum counts Adagrad's one state tensor and its temporary" {
	sum -d BIG -b 4 --optimizer adagrad "$F/mem-dense.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 8008000 ]
}

@test "pn-sum counts RMSprop's state, and one more tensor with momentum" {
	sum -d BIG -b 4 --optimizer rmsprop "$F/mem-dense.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 8008000 ]
	sum -d BIG -b 4 --optimizer rmsprop --momentum "$F/mem-dense.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 10010000 ]
}

@test "pn-sum counts Adadelta's two state tensors and two temporaries" {
	sum -d BIG -b 4 --optimizer adadelta "$F/mem-dense.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 12012000 ]
}

@test "pn-sum keeps weights, gradients and state at the row's precision: fp16 halves them" {
	sed 's/fp32/fp16/' "$F/mem-dense.tsv" >"$BATS_TEST_TMPDIR/n.tsv"
	sum -d BIG -b 4 "$BATS_TEST_TMPDIR/n.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 6006000 ]
}

@test "pn-sum --per-layer gives every row's weights, gradients, state, saved bytes and workspace" {
	run pn-sum --fallback roofline $G -d BIG -b 4 --per-layer "$F/mem-dense.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[0]}" | cut -f10-)" = "$(printf 'device\tsource\ttime_ms\ttotal_ms\tweights_bytes\tgrads_bytes\tstate_bytes\tsaved_bytes\tworkspace_bytes')" ]
	[ "$(printf '%s\n' "${lines[1]}" | cut -f14-)" = "$(printf '2002000\t2002000\t4004000\t16000\t24000')" ]
}

@test "pn-sum keeps a dropout mask of one byte an element on a GPU and of the precision's bytes on the CPU" {
	run pn-sum --fallback roofline $G -d BIG,CPU1 -b 1000 --per-layer "$F/mem-mlp.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | awk -F'\t' '$1 == "drop" { print $12, $19 }' | tr '\n' ';')" = "BIG 50000;CPU1 200000;" ]
}

@test "pn-sum counts a tensor kept by one row and read by the next once" {
	run pn-sum --fallback roofline $G -d BIG -b 1000 --per-layer "$F/mem-mlp.tsv"
	[ "$status" -eq 0 ]
	# relu keeps its output; dropout keeps its mask only; fc2 keeps its
	# input; the loss its output and the logits
	[ "$(printf '%s\n' "$output" | cut -f1,19 | tail -n +2 | tr '\t\n' ' ;')" = "fc1 400000;relu 200000;drop 50000;fc2 200000;loss 80000;" ]
}

@test "pn-sum's peak of a small network at a large batch is in the backward pass, where saved tensors meet the gradients" {
	sum -d BIG -b 1000 "$F/mem-mlp.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 1158760 ]
}

@test "pn-sum ranks a GPU the job does not fit after one it fits, by time and by cost" {
	# batch 100000: 68760 + 109000000 + 1408237568 bytes > TINY's 1.4 GiB
	run pn-sum --fallback roofline $G -d TINY,BIG -b 100000 "$F/mem-mlp.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | cut -f1,2,13,16 | tail -n +2 | tr '\t\n' ' ;')" = "1 BIG 1 yes;2 TINY 2 no;" ]
}

@test "pn-sum ranks the faster GPU first when the job fits both" {
	run pn-sum --fallback roofline $G -d TINY,BIG -b 1000 "$F/mem-mlp.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | cut -f1,2,13,16 | tail -n +2 | tr '\t\n' ' ;')" = "1 TINY 1 yes;2 BIG 2 yes;" ]
}

@test "pn-sum --max-batch finds the hand-computed largest batch" {
	# TINY: 1.4 x 2^30 - 1408237568 = 95000985.6 bytes for
	# 68760 + 1090 b: b = 87093
	run pn-sum --fallback roofline $G -d TINY --max-batch "$F/mem-mlp.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | column /dev/stdin batch)" = 87093 ]
	[ "$(printf '%s\n' "$output" | column /dev/stdin fits)" = yes ]
	[ "$(peak_bytes <(printf '%s\n' "$output") 1)" = 95000130 ]
}

@test "pn-sum --max-batch predicts each GPU's epoch at its own batch" {
	run pn-sum --fallback roofline $G -d TINY,BIG --max-batch -n 1000000 "$F/mem-mlp.tsv"
	[ "$status" -eq 0 ]
	# BIG: (2 x 2^30 - 1408237568 - 68760) / 1090 = 678144.3; 1e6 samples
	# in two batches, in 12 on TINY
	[ "$(printf '%s\n' "$output" | cut -f2,4,10 | tail -n +2 | tr '\t\n' ' ;')" = "TINY 87093 12;BIG 678144 2;" ]
}

@test "pn-sum --max-batch gives batch 0 and no times on a GPU not even one sample fits" {
	printf 'name\tlayer\tphase\tbatch\tin_features\tout_features\noops\tdense\ttrain\t1\t16384\t16384\n' >"$BATS_TEST_TMPDIR/n.tsv"
	# (16384^2 + 16384) x 4 x 4 (adam) > 2 GiB - 1343 MiB on both
	run pn-sum --fallback roofline $G -d BIG --max-batch --optimizer adam "$BATS_TEST_TMPDIR/n.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | cut -f4,9,16,17 | tail -n 1)" = "$(printf '0\tNA\t2\tno')" ]
}

@test "pn-sum --max-batch refuses a traced network" {
	run bash -c "pn-sum --fallback roofline $G -d BIG --max-batch '$F/mem-traced.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-sum: $F/mem-traced.tsv: the network is traced at batch 2: --max-batch cannot rescale it (give a network of one sample)" ]
}

@test "pn-sum --max-batch and --batch together are a usage error" {
	run bash -c "pn-sum --fallback roofline $G -d BIG --max-batch -b 2 '$F/mem-mlp.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sum: --max-batch and --batch both choose the batch" ]
}

@test "pn-sum --max-batch and --per-layer together are a usage error" {
	run bash -c "pn-sum --fallback roofline $G -d BIG --max-batch -p '$F/mem-mlp.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sum: --max-batch and --per-layer cannot be combined: each GPU has its own batch" ]
}

@test "pn-sum rejects an unknown optimizer" {
	run bash -c "pn-sum --fallback roofline $G -d BIG --optimizer lamb '$F/mem-mlp.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sum: invalid --optimizer 'lamb': expected one of none, sgd, adam, adagrad, adadelta, rmsprop" ]
}

@test "pn-sum takes a traced graph's weights from its acc rows and the optimizer from --optimizer" {
	# mem-traced.tsv: two acc rows of 1000 and 24 elements: W = G = 4096,
	# adam state 8192, the largest weight row 4000 bytes: the step
	# 4096 x 4 + 2 x 4000 (the dense rows' own weights do not count)
	sum -d BIG --optimizer adam "$F/mem-traced.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 24384 ]
	sum -d BIG "$F/mem-traced.tsv"
	# no optimizer: forward 4096 + input 192 + output 320; backward from
	# the first row: W + input + G + its gradients 192 + 320
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 8896 ]
}

@test "pn-sum --plot draws the GPUs the job does not fit in grey" {
	# a gnuplot that keeps its script and makes the output file
	mkdir "$BATS_TEST_TMPDIR/bin"
	printf '#!/bin/sh\ntee "%s/script" | sed -n "s/^set output .\\(.*\\).$/\\1/p" | while read -r f; do : >"$f"; done\n' \
		"$BATS_TEST_TMPDIR" >"$BATS_TEST_TMPDIR/bin/gnuplot"
	chmod +x "$BATS_TEST_TMPDIR/bin/gnuplot"
	PATH="$BATS_TEST_TMPDIR/bin:$PATH" run pn-sum --fallback roofline $G -d TINY,BIG -b 100000 --plot "$BATS_TEST_TMPDIR/p.png" "$F/mem-mlp.tsv"
	[ "$status" -eq 0 ]
	[ -e "$BATS_TEST_TMPDIR/p.png" ]
	# grey 0xbbbbbb = 12303291 for TINY, blue 0x4477aa = 4487082 for BIG,
	# in the epoch chart and the cost chart
	[ "$(grep -c '^"TINY" .* 12303291$' "$BATS_TEST_TMPDIR/script")" = 2 ]
	[ "$(grep -c '^"BIG" .* 4487082$' "$BATS_TEST_TMPDIR/script")" = 2 ]
}
