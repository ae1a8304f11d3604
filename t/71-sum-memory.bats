#!/usr/bin/env bats
# pn-sum: the peak memory of a training step (src/lib/memory.h), whether the
# job fits each GPU, and the largest batch that does.
load test_helper

F="$FIX/sum"
G="--gpuspecs $FIX/sum/mem-gpus.tsv"
# mem-gpus.tsv: BIG (2 GiB), TINY (1.4 GiB, twice BIG's speed, cheaper),
# CPU1 (arch CPU-test: backend cpu), CPUS (the same, 0.001 GiB).  Test
# GPUs pay memory.h's fixed GPU cost, 1343 MiB = 1408237568 bytes, and
# every tensor is rounded as PyTorch's CUDA caching allocator rounds it
# (memory.h, pn_mem_alloc): r(x) = x up to a multiple of 512, or of 2 MiB
# from 10 MiB on.
FIXED=1408237568
#
# mem-dense.tsv: one dense 1000 -> 500 with bias, fp32, at batch 4:
#   W = G = r(1000 x 500 x 4) + r(500 x 4), the matrix and the bias
#   = 2000384 + 2048 = 2002432; saved: the input
#   r(4 x 1000 x 4 = 16000) = 16384; forward workspace: the output r(8000)
#   = 8192; backward: the output's gradient 8192 (the first row: its input,
#   the network's, needs no gradient)
#   forward  W + S + 16384 + 8192      backward  W + S + 16384 + G + 8192
#   step     W + S + G + t W  (t: adam, adadelta 2; adagrad, rmsprop,
#            sgd with momentum 1; sgd 0)
# mem-mlp.tsv per sample (GPU: a dropout mask of 1 byte an element), at
# batch b (bytes before r):
#   fc1 100 -> 50: W r(20000) + r(200) = 20992, saved its input r(400 b),
#                 workspace r(200 b) / r(200 b) (the first row)
#   relu 50: saved its output r(200 b), workspace 2 r(200 b) / the same
#   dropout 50: saved its mask r(50 b), workspace 2 r(200 b) / the same
#   fc2 50 -> 10: W r(2000) + r(40) = 2560, saved its input r(200 b) (dropout
#                 keeps no output), workspace r(40 b) / r(200 b) + r(40 b)
#   softmax 10, the last row: saved its output r(40 b) and its input
#                 r(40 b) (the logits the loop holds), workspace r(40 b) x 2
#   W = 23552, adam state 47104.  At batch b (adam), from b = 225 on, the
#   peak is the backward pass at fc2: W + state + the saved tensors of fc1
#   to fc2 + G(fc2, loss) 2560 + fc2's gradients,
#   73216 + r(400 b) + 3 r(200 b) + r(50 b) + r(40 b)
#   (the others: fc1 94208 + r(400 b) + r(200 b); the forward at
#   dropout 70656 + r(400 b) + 3 r(200 b) + r(50 b); the step 70656 +
#   23552 + 2 x 20992)
# mem-cnn.tsv per sample on CPU1 (no rounding, fixed cost 0), SGD:
#   conv 1 -> 4, 3x3 pad 1 on 8x8: W 144, saved its input 256,
#                 workspace: forward its output 1024 and oneDNN's
#                 blocked output 16 x 64 x 4 = 4096 (its one input
#                 channel is read as it is); backward, the first row: the
#                 output's gradient 1024 and its blocked copy 4096
#   bn 4 x 8x8: W 32, saved its input 1024 + 2 x 4 x 4 = 32 (mean and
#                 1/std a channel, fp32, once a batch), workspace 1024 /
#                 2048
#   relu 256: saved its output 1024, workspace 2048 / 2048
#   pool max 2x2/2 to 4x4: saved its input (relu's output: counted) and
#                 64 int64 indices 512, workspace 256 / 1280
#   fc 64 -> 10: W 2600, saved its input 256, workspace 40 / 296
#   loss 10: saved its output and the logits 80, workspace 40 / 80
#   W = G = 2776; saved 3152 b + 32.  The peak is the backward pass at
#   conv: W + its saved input 256 b + G 2776 + its workspace 5120 b =
#   5376 b + 5552 (relu's: W + the saved of conv, bn, relu, 2304 b + 32,
#   + G(relu..loss) 2600 + its gradients 2048 b = 4352 b + 5408; the
#   forward at conv 5376 b + 2776; the step 5552)
# mem-res.tsv per sample on CPU1: a residual block, in -> c1 -> r1 -> c2
#   (stride 2) and in -> down (1x1, stride 2), add, relu: down reads the
#   block's input, which c1 keeps already

# cpu_bytes FILE ROW: peak_gb of a summary row on CPU1, in bytes
cpu_bytes() {
	awk -F'\t' -v r="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "peak_gb") k = i }
		NR == r + 1 { printf "%.0f\n", $k * 2^30 }' "$1"
}

# saved FILE: name and saved_bytes of each row of pn-sum --per-layer
saved() {
	awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "saved_bytes") k = i; next }
		{ printf "%s %s;", $1, $k }' "$1"
}

# peak_bytes FILE ROW: peak_gb of a summary row, in bytes less the fixed cost
peak_bytes() {
	awk -F'\t' -v r="$2" -v f="$FIXED" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "peak_gb") k = i }
		NR == r + 1 { printf "%.0f\n", $k * 2^30 - f }' "$1"
}

sum() { pn-sum --fallback roofline $G "$@" >"$BATS_TEST_TMPDIR/o"; }

@test "pn-sum's summary ends with peak_gb mem_gb fits" {
	run pn-sum --fallback roofline $G -d BIG -b 4 "$F/mem-dense.tsv"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(printf 'rank\tdevice\tsource\tfwd_ms\tbwd_ms\tacc_ms\topt_ms\ttrain_ms\titeration_ms\titerations\tepoch_s\tprice_usd_h\tcost_usd\tcost_rank\tpeak_gb\tmem_gb\tfits')" ]
	[ "$(printf '%s\n' "${lines[1]}" | cut -f16,17)" = "$(printf '2\tyes')" ]
}

@test "pn-sum's peak with Adam is the optimizer step: W + 2W state + G + 2W temporaries" {
	sum -d BIG -b 4 "$F/mem-dense.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 12014592 ]
}

@test "pn-sum's peak with plain SGD is the backward pass: W + saved input + G + the output's gradient" {
	sum -d BIG -b 4 --optimizer sgd "$F/mem-dense.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 4029440 ]
}

@test "pn-sum's peak without an optimizer keeps gradients but no state" {
	sum -d BIG -b 4 --optimizer none "$F/mem-dense.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 4029440 ]
}

@test "pn-sum counts a momentum buffer for SGD with --momentum" {
	sum -d BIG -b 4 --optimizer sgd --momentum "$F/mem-dense.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 8009728 ]
}

@test "pn-sum counts Adagrad's one state tensor and its temporary" {
	sum -d BIG -b 4 --optimizer adagrad "$F/mem-dense.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 8009728 ]
}

@test "pn-sum counts RMSprop's state, and one more tensor with momentum" {
	sum -d BIG -b 4 --optimizer rmsprop "$F/mem-dense.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 8009728 ]
	sum -d BIG -b 4 --optimizer rmsprop --momentum "$F/mem-dense.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 10012160 ]
}

@test "pn-sum counts Adadelta's two state tensors and two temporaries" {
	sum -d BIG -b 4 --optimizer adadelta "$F/mem-dense.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 12014592 ]
}

@test "pn-sum keeps weights, gradients and state at the row's precision: fp16 halves them" {
	sed 's/fp32/fp16/' "$F/mem-dense.tsv" >"$BATS_TEST_TMPDIR/n.tsv"
	sum -d BIG -b 4 "$BATS_TEST_TMPDIR/n.tsv"
	# W = r(1001000) = 1001472; the step 6 W
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 6008832 ]
}

@test "pn-sum --per-layer gives every row's weights, gradients, state, saved bytes and workspace" {
	run pn-sum --fallback roofline $G -d BIG -b 4 --per-layer "$F/mem-dense.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[0]}" | cut -f10-19)" = "$(printf 'device\tsource\trule\ttime_ms\ttotal_ms\tweights_bytes\tgrads_bytes\tstate_bytes\tsaved_bytes\tworkspace_bytes')" ]
	[ "$(printf '%s\n' "${lines[1]}" | cut -f15-19)" = "$(printf '2002432\t2002432\t4004864\t16384\t8192')" ]
}

@test "pn-sum keeps a dropout mask of one byte an element on a GPU and of the precision's bytes on the CPU" {
	run pn-sum --fallback roofline $G -d BIG,CPU1 -b 1000 --per-layer "$F/mem-mlp.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | awk -F'\t' '$1 == "drop" { print $12, $20 }' | tr '\n' ';')" = "BIG 50176;CPU1 200000;" ]
}

@test "pn-sum counts a tensor kept by one row and read by the next once" {
	run pn-sum --fallback roofline $G -d BIG -b 1000 --per-layer "$F/mem-mlp.tsv"
	[ "$status" -eq 0 ]
	# relu keeps its output; dropout keeps its mask only; fc2 keeps its
	# input; the loss its output and the logits
	[ "$(printf '%s\n' "$output" | cut -f1,20 | tail -n +2 | tr '\t\n' ' ;')" = "fc1 400384;relu 200192;drop 50176;fc2 200192;loss 80896;" ]
}

@test "pn-sum's peak of a small network at a large batch is in the backward pass, where saved tensors meet the gradients" {
	sum -d BIG -b 1000 "$F/mem-mlp.tsv"
	# at fc2's backward: 73216 + r(400000) + 3 r(200000) + r(50000)
	# + 2 r(40000) (the loss's output gradient, and the logits, which the
	# training loop holds to the end of the step)
	# = 73216 + 400384 + 3 x 200192 + 50176 + 2 x 40448
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 1205248 ]
}

@test "pn-sum ranks a GPU the job does not fit after one it fits, by time and by cost" {
	# batch 100000: about 109 MB + 1408237568 bytes > TINY's 1.4 GiB
	run pn-sum --fallback roofline $G -d TINY,BIG -b 100000 "$F/mem-mlp.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | cut -f1,2,14,17 | tail -n +2 | tr '\t\n' ' ;')" = "1 BIG 1 yes;2 TINY 2 no;" ]
}

@test "pn-sum ranks the faster GPU first when the job fits both" {
	run pn-sum --fallback roofline $G -d TINY,BIG -b 1000 "$F/mem-mlp.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | cut -f1,2,14,17 | tail -n +2 | tr '\t\n' ' ;')" = "1 TINY 1 yes;2 BIG 2 yes;" ]
}

@test "pn-sum --max-batch finds the hand-computed largest batch" {
	# TINY: 1.4 x 2^30 - 1408237568 = 95000985.6 bytes for
	# 73216 + r(400 b) + 3 r(200 b) + r(50 b) + 2 r(40 b): at b = 83886,
	# 400 b = 33554400 and 200 b = 16777200 round to 32 and 16 MiB:
	# 73216 + 33554432 + 3 x 16777216 + r(4194300) 4194304
	# + 2 r(3355440) 2 x 3355648 = 94864896; at 83887 they round up to
	# 34 and 18 MiB: 103254016, too much
	run pn-sum --fallback roofline $G -d TINY --max-batch "$F/mem-mlp.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | column /dev/stdin batch)" = 83886 ]
	[ "$(printf '%s\n' "$output" | column /dev/stdin fits)" = yes ]
	[ "$(peak_bytes <(printf '%s\n' "$output") 1)" = 94864896 ]
}

@test "pn-sum --max-batch predicts each GPU's epoch at its own batch" {
	run pn-sum --fallback roofline $G -d TINY,BIG --max-batch -n 1000000 "$F/mem-mlp.tsv"
	[ "$status" -eq 0 ]
	# BIG: 2 x 2^30 - 1408237568 = 739246080 bytes; at b = 650117:
	# 73216 + r(260046800) 124 MiB + 3 r(130023400) 62 MiB
	# + r(32505850) 16 MiB + 2 r(26004680) 13 MiB = 738270720; at
	# 650118 400 b rounds up to 125 MiB: 740367872, too much.  1e6
	# samples in two batches, in 12 on TINY
	[ "$(printf '%s\n' "$output" | cut -f2,4,11 | tail -n +2 | tr '\t\n' ' ;')" = "TINY 83886 12;BIG 650117 2;" ]
}

@test "pn-sum --max-batch gives batch 0 and no times on a GPU not even one sample fits" {
	printf 'name\tlayer\tphase\tbatch\tin_features\tout_features\noops\tdense\ttrain\t1\t16384\t16384\n' >"$BATS_TEST_TMPDIR/n.tsv"
	# (16384^2 + 16384) x 4 x 4 (adam) > 2 GiB - 1343 MiB on both
	run pn-sum --fallback roofline $G -d BIG --max-batch --optimizer adam "$BATS_TEST_TMPDIR/n.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | cut -f4,10,17,18 | tail -n 1)" = "$(printf '0\tNA\t2\tno')" ]
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
	# mem-traced.tsv: two acc rows of 1000 and 24 elements: W = G =
	# r(4000) + r(96) = 4096 + 512 = 4608, adam state 9216, the largest
	# weight row 4096 bytes: the step 4608 x 4 + 2 x 4096 (the dense rows'
	# own weights do not count)
	sum -d BIG --optimizer adam "$F/mem-traced.tsv"
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 26624 ]
	sum -d BIG "$F/mem-traced.tsv"
	# no optimizer: forward W + input r(192) + output r(320); backward
	# from the first row: W + input 512 + G + its output's gradient 512
	[ "$(peak_bytes "$BATS_TEST_TMPDIR/o" 1)" = 10240 ]
}

@test "pn-sum --plot draws the GPUs the job does not fit in grey" {
	fake_gnuplot
	run pn-sum --fallback roofline $G -d TINY,BIG -b 100000 --plot "$BATS_TEST_TMPDIR/p.png" "$F/mem-mlp.tsv"
	[ "$status" -eq 0 ]
	[ -e "$BATS_TEST_TMPDIR/p.png" ]
	# grey 0xbbbbbb = 12303291 for TINY, blue 0x4477aa = 4487082 for BIG,
	# in the epoch chart and the cost chart
	[ "$(grep -c '^"TINY" .* 12303291$' "$BATS_TEST_TMPDIR/script")" = 2 ]
	[ "$(grep -c '^"BIG" .* 4487082$' "$BATS_TEST_TMPDIR/script")" = 2 ]
}

@test "pn-sum keeps a max pooling's int64 indices and a batch norm's input with its mean and 1/std a channel" {
	pn-sum --fallback roofline $G -d CPU1 -b 2 --per-layer "$F/mem-cnn.tsv" >"$BATS_TEST_TMPDIR/o"
	[ "$(saved "$BATS_TEST_TMPDIR/o")" = "conv 512;bn 2080;relu 2048;pool 1024;fc 512;loss 160;" ]
}

@test "pn-sum's peak of a network with batch norm and max pooling on the CPU is the hand-computed one, oneDNN's blocked copies included" {
	sum -d CPU1 -b 2 "$F/mem-cnn.tsv"
	# 5376 x 2 + 5552, + the logits the training loop holds through the
	# backward (the loss row's input, 10 floats a sample): 5416 x 2 + 5552
	[ "$(cpu_bytes "$BATS_TEST_TMPDIR/o" 1)" = 16384 ]
}

@test "pn-sum keeps only the input of an average pooling, which the row before keeps already" {
	sed 's/\tmax\t/\tavg\t/' "$F/mem-cnn.tsv" >"$BATS_TEST_TMPDIR/n.tsv"
	pn-sum --fallback roofline $G -d CPU1 -b 2 --per-layer "$BATS_TEST_TMPDIR/n.tsv" >"$BATS_TEST_TMPDIR/o"
	[ "$(saved "$BATS_TEST_TMPDIR/o")" = "conv 512;bn 2080;relu 2048;pool 0;fc 512;loss 160;" ]
}

@test "pn-sum counts a residual block's input once, though its shortcut conv reads it too" {
	pn-sum --fallback roofline $G -d CPU1 -b 2 --per-layer "$F/mem-res.tsv" >"$BATS_TEST_TMPDIR/o"
	# in and r1 keep their outputs (64 x 4 x 2); c1, c2 read them; down
	# reads in's output: nothing new; out keeps its output and input
	[ "$(saved "$BATS_TEST_TMPDIR/o")" = "in 512;c1 0;r1 512;c2 0;down 0;add 0;out 512;" ]
}

@test "pn-sum --max-batch on a network with batch norm and max pooling is the hand-computed batch" {
	# CPUS: 0.001 GiB = 1073741.824 bytes; 5416 b + 5552: b = 197
	# (1072504 bytes; 198: 1077920)
	run pn-sum --fallback roofline $G -d CPUS --max-batch "$F/mem-cnn.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | column /dev/stdin batch)" = 197 ]
	[ "$(cpu_bytes <(printf '%s\n' "$output") 1)" = 1072504 ]
}

@test "pn-sum rounds each tensor on a GPU as PyTorch's caching allocator does, and not on the CPU" {
	pn-sum --fallback roofline $G -d BIG,CPU1 -b 4 --per-layer "$F/mem-dense.tsv" >"$BATS_TEST_TMPDIR/o"
	# weights 2000000 + 2000 bytes: 3907 and 4 blocks of 512 on the GPU
	[ "$(awk -F'\t' 'NR > 1 { printf "%s %s;", $10, $15 }' "$BATS_TEST_TMPDIR/o")" = "BIG 2002432;CPU1 2002000;" ]
}

@test "pn-sum gives a GPU tensor of 10 MiB or more a segment of whole 2 MiB" {
	# one dense 1024 -> 2561 without bias: 10489856 bytes of weights,
	# 10 MiB + 4096: 12 MiB
	printf 'name\tlayer\tphase\tbatch\tin_features\tout_features\tbias\noops\tdense\ttrain\t1\t1024\t2561\t0\n' >"$BATS_TEST_TMPDIR/n.tsv"
	pn-sum --fallback roofline $G -d BIG --per-layer "$BATS_TEST_TMPDIR/n.tsv" >"$BATS_TEST_TMPDIR/o"
	[ "$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "weights_bytes") k = i; next } { print $k }' "$BATS_TEST_TMPDIR/o")" = 12582912 ]
}

@test "pn-sum keeps both halves of a gated op's input for its backward" {
	run pn-sum --fallback roofline $G -d BIG -b 1000 --per-layer "$F/mem-gated.tsv"
	[ "$status" -eq 0 ]
	# up 100 -> 100 (gate and up) keeps its input r(400000); silu_mul of
	# dim 50 keeps its input, both halves of up's output, r(2 x 50 x
	# 1000 x 4); proj keeps its input r(200000)
	[ "$(printf '%s\n' "$output" | cut -f1,3,20 | tail -n +2 | tr '\t\n' ' ;')" = "up dense 400384;act silu_mul 400384;proj dense 200192;" ]
}

@test "pn-sum keeps no tensor of a division by a number and both of a division of two tensors" {
	# autograd keeps only the number of x / c (divu); x / y keeps x and y
	# (1000 fp32 elements each, 4096 bytes as the allocator rounds them)
	printf 'name\tlayer\top\tphase\tbatch\tseq_len\tdim\tprecision\n' >"$BATS_TEST_TMPDIR/n"
	printf '%s\telementwise\t%s\ttrain\t1\t1\t1000\tfp32\n' a divu b div c relu >>"$BATS_TEST_TMPDIR/n"
	pn-sum --fallback roofline $G -d BIG -p "$BATS_TEST_TMPDIR/n" >"$BATS_TEST_TMPDIR/o"
	[ "$(column saved_bytes "$BATS_TEST_TMPDIR/o" | sed -n 1,2p | paste -sd' ')" = "0 8192" ]
}
