#!/usr/bin/env bats
# pn-sum --precision: every row rewritten in one precision or under
# automatic mixed precision (src/lib/precision.h), the casts AMP adds, the
# memory of an AMP step, and rows no model saw in their precision.
load test_helper

F="$FIX/sum"
G="--gpuspecs $FIX/sum/amp-gpus.tsv"
# amp-gpus.tsv: TC (fp32 1024, tf32 8192, fp16 and bf16 16384 GFLOP/s,
# 1024 GB/s) and NOTC (fp16 tensor cores only, as a V100).
#
# amp-net.tsv, per sample, every row phase train:
#   ln   layernorm 4 x 8           fc   dense 4 x (8 -> 16), weights 144
#   gelu elementwise 4 x 16        add  elementwise (binary) 4 x 16
#   fc2  dense 4 x (16 -> 8), weights 136      sm softmax 4 x 8
# Under amp-bf16: ln fp32; fc bf16, its input (ln's output, fp32) cast,
# 32 elements a sample, its weights cast, 144; gelu follows fc (bf16); add
# promotes to fp32; fc2 bf16, its input cast (64 a sample) and its weights
# (136); sm fp32, its input (fc2's bf16 output, 32 a sample) cast.  A cast
# of N elements: elements 2N, traffic_bytes 6N, and a bwd twin.

setup_file() {
	# a linear model for bmm, fitted on fp32 rows: time_ms = flops / 1e9
	pn-featurize --gpuspecs "$FIX/sum/gpus.tsv" "$F/bmm-train.tsv" |
		pn-fit -f lr --no-log-target -F flops -o "$BATS_FILE_TMPDIR/bmm.model"
}

setup() { T=$BATS_TEST_TMPDIR; }

# layers ARGS...: pn-sum --per-layer on TC, into $T/out (stderr $T/err)
layers() { run_io pn-sum --fallback roofline $G -d TC --per-layer "$@"; }

# cols FILE NAME...: the named columns of a TSV, header included
cols() {
	local f=$1
	shift
	awk -F'\t' -v OFS='\t' -v want="$*" 'NR == 1 { n = split(want, w, " ")
		for (i = 1; i <= NF; i++) at[$i] = i }
		{ s = $at[w[1]]; for (j = 2; j <= n; j++) s = s OFS $at[w[j]]; print s }' "$f"
}

@test "pn-sum --precision bf16 puts every row in bf16 and adds no casts" {
	layers --precision bf16 "$F/amp-net.tsv"
	[ "$status" -eq 0 ]
	[ "$(column precision "$T/out" | sort -u)" = bf16 ]
	[ "$(column precision_rule "$T/out" | sort -u)" = bf16 ]
	[ "$(column name "$T/out" | tr '\n' ' ')" = "ln fc gelu add fc2 sm " ]
}

@test "pn-sum --precision tf32 puts the GEMM-like rows in tf32 and the others in fp32" {
	layers --precision tf32 "$F/amp-net.tsv"
	[ "$status" -eq 0 ]
	[ "$(cols "$T/out" name precision precision_rule)" = "$(printf 'name\tprecision\tprecision_rule
ln\tfp32\ttf32-not-gemm
fc\ttf32\ttf32
gelu\tfp32\ttf32-not-gemm
add\tfp32\ttf32-not-gemm
fc2\ttf32\ttf32
sm\tfp32\ttf32-not-gemm')" ]
}

@test "pn-sum --precision amp-bf16 runs dense in bf16, layernorm and softmax in fp32, and adds the casts" {
	layers --precision amp-bf16 "$F/amp-net.tsv"
	[ "$status" -eq 0 ]
	[ "$(cols "$T/out" name layer phase precision precision_rule)" = "$(printf 'name\tlayer\tphase\tprecision\tprecision_rule
ln\tlayernorm\ttrain\tfp32\tautocast-fp32
amp.cast:fc\tmem\tfwd\tbf16\tcast-input
amp.cast:fc\tmem\tbwd\tbf16\tcast-input-grad
amp.cast:fc\tmem\tfwd\tbf16\tcast-weight
fc\tdense\ttrain\tbf16\tautocast-half
amp.cast:fc\tmem\tbwd\tbf16\tcast-weight-grad
gelu\telementwise\ttrain\tbf16\tfollow
add\telementwise\ttrain\tfp32\tpromote
amp.cast:fc2\tmem\tfwd\tbf16\tcast-input
amp.cast:fc2\tmem\tbwd\tbf16\tcast-input-grad
amp.cast:fc2\tmem\tfwd\tbf16\tcast-weight
fc2\tdense\ttrain\tbf16\tautocast-half
amp.cast:fc2\tmem\tbwd\tbf16\tcast-weight-grad
amp.cast:sm\tmem\tfwd\tbf16\tcast-input
amp.cast:sm\tmem\tbwd\tbf16\tcast-input-grad
sm\tsoftmax\ttrain\tfp32\tautocast-fp32')" ]
}

@test "pn-sum scales the casts of inputs by the batch and not the casts of weights" {
	layers --precision amp-fp16 -b 2 "$F/amp-net.tsv"
	[ "$status" -eq 0 ]
	grep -v '^amp' "$T/out" >"$T/rest"
	[ "$(column elements "$T/rest" | sort -u)" = NA ]
	grep '^amp' "$T/out" >"$T/casts" || true
	sed -i "1i $(head -1 "$T/out")" "$T/casts"
	[ "$(cols "$T/casts" precision_rule elements traffic_bytes)" = "$(printf 'precision_rule\telements\ttraffic_bytes
cast-input\t128\t384
cast-input-grad\t128\t384
cast-weight\t288\t864
cast-weight-grad\t288\t864
cast-input\t256\t768
cast-input-grad\t256\t768
cast-weight\t272\t816
cast-weight-grad\t272\t816
cast-input\t128\t384
cast-input-grad\t128\t384')" ]
	[ "$(column precision "$T/casts" | sort -u)" = fp16 ]
}

@test "pn-sum --precision bf16 runs a bmm at the bf16 tensor-core peak" {
	# 2 x 1000 x 500 x 1000 FLOP: 0.9765625 ms at 1024 GFLOP/s, 1/16 of
	# it at 16384 (compute bound either way)
	layers "$F/bmm.tsv"
	[ "$(column time_ms "$T/out")" = 0.9765625 ]
	layers --precision bf16 "$F/bmm.tsv"
	[ "$status" -eq 0 ]
	[ "$(column time_ms "$T/out")" = 0.06103515625 ]
}

@test "pn-sum warns that a GPU without bf16 tensor cores runs bf16 GEMMs at its fp32 peak" {
	run_io pn-sum --fallback roofline $G -d TC,NOTC --per-layer --precision bf16 "$F/bmm.tsv"
	[ "$status" -eq 0 ]
	[ "$(column time_ms "$T/out" | tr '\n' ' ')" = "0.06103515625 0.9765625 " ]
	[ "$(head -1 "$T/err")" = "pn-sum: warning: no bf16 unit faster than fp32 on 1 GPU (NOTC): bf16 GEMMs predicted at the fp32 peak there" ]
	run_io pn-sum --fallback roofline $G -d TC,NOTC --precision fp16 "$F/bmm.tsv"
	[ "$status" -eq 0 ]
	! grep -q 'no fp16 unit' "$T/err"
}

@test "pn-sum's memory of a dense row under amp-bf16 keeps fp32 masters and the half copy of its weights" {
	# mem-dense.tsv: dense 1000 -> 500 + bias, Adam, batch 4; every tensor
	# rounded up to 512 bytes (the GPU's allocator, memory.h):
	#   weights: fp32 W 2000000 -> 2000384 + b 2000 -> 2048 = 2002432, grads
	#   the same, state 2 x 2002432; saved: its bf16 input 4 x 1000 x 2 =
	#   8000 -> 8192 + the bf16 weights 1000000 -> 1000448 + 1000 -> 1024 =
	#   1009664; workspace: backward 8192 + 4000 -> 4096 + the bf16 weight
	#   gradient 1001472 = 1013760
	run_io pn-sum --fallback roofline $G -d TC --per-layer -b 4 --precision amp-bf16 "$F/mem-dense.tsv"
	[ "$status" -eq 0 ]
	cols "$T/out" name weights_bytes grads_bytes state_bytes saved_bytes workspace_bytes >"$T/bytes"
	[ "$(awk -F'\t' '$1 == "fc"' "$T/bytes")" = "$(printf 'fc\t2002432\t2002432\t4004864\t1009664\t1013760')" ]
}

# peak_bytes FILE: peak_gb of the summary's first row in bytes, less the
# GPU's fixed cost (memory.h: 1343 MiB)
peak_bytes() {
	awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "peak_gb") k = i }
		NR == 2 { printf "%.0f\n", $k * 2^30 - 1408237568 }' "$1"
}

@test "pn-sum's peak under amp-bf16 with Adam is the hand-computed optimizer step" {
	# step: W 2002432 + state 4004864 + G 2002432 + Adam's temporaries
	# 2 x 2002432 = 12014592; plain bf16: W 1001472 + state 2002944 + G
	# 1001472 + 2 x 1001472 = 6008832
	run_io pn-sum --fallback roofline $G -d TC -b 4 --precision amp-bf16 "$F/mem-dense.tsv"
	[ "$status" -eq 0 ]
	[ "$(peak_bytes "$T/out")" = 12014592 ]
	run_io pn-sum --fallback roofline $G -d TC -b 4 --precision bf16 "$F/mem-dense.tsv"
	[ "$(peak_bytes "$T/out")" = 6008832 ]
}

@test "pn-sum's peak under amp-bf16 with SGD is the backward pass with the half weights" {
	# backward at fc: W 2002432 + saved 1009664 + G 2002432 + workspace
	# 1013760 = 6028288
	run_io pn-sum --fallback roofline $G -d TC -b 4 --optimizer sgd --precision amp-bf16 "$F/mem-dense.tsv"
	[ "$status" -eq 0 ]
	[ "$(peak_bytes "$T/out")" = 6028288 ]
}

@test "pn-sum says extrapolated, never model, for a model's row in a precision it was not fitted on" {
	run_io pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" $G -d TC --per-layer "$F/bmm.tsv"
	[ "$(column source "$T/out")" = model ]
	run_io pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" $G -d TC --per-layer --precision bf16 "$F/bmm.tsv"
	[ "$status" -eq 0 ]
	[ "$(column source "$T/out")" = extrapolated ]
	[ "$(cat "$T/err")" = "pn-sum: warning: $F/bmm.tsv: no model was fitted on precision bf16: 0 rows predicted by the roofline alone (checked against fp32 measurements only), 1 by models, extrapolated in precision
pn-sum: warning: $F/bmm.tsv: 1 of 1 rows predicted outside their model's domain on TC, extrapolated (the first, line 2, bmm: precision=bf16 via its fp32 twin); --per-layer names them, --strict refuses them" ]
	run_io pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" $G -d TC --precision bf16 "$F/bmm.tsv"
	[ "$(column source "$T/out")" = extrapolated ]
}

@test "pn-sum predicts a matrix op in a precision its model never saw as its fp32 twin times the ratio of the rooflines" {
	# the model: 1 ms for the 1e9 flops of bmm.tsv's product in fp32; on
	# TC its roofline is 1e9 / 1024e9 s in fp32 (no lanes column) and
	# 1e9 / 16384e9 s in bf16 (compute-bound): 1 ms x 1024 / 16384
	run_io pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" $G -d TC --per-layer --precision bf16 "$F/bmm.tsv"
	[ "$status" -eq 0 ]
	NEAR_TOL=1e-9 near "$(column time_ms "$T/out")" 0.0625
	[ "$(column domain "$T/out")" = "precision=bf16 via its fp32 twin" ]
}

@test "pn-sum never predicts a matrix op's fp32 twin below the roofline of the unit its own precision runs on" {
	# TC's fp32 lanes a quarter of its cores (16 of 64 an SM): the twin's
	# lane roofline 4 x 0.9766 ms, which the model's 1 ms beats, so the
	# ratio alone gives 1 ms / 64 = 0.0156 ms, below the bf16 roofline,
	# 1e9 / 16384e9 s
	awk -F'\t' -v OFS='\t' 'NR == 1 { print $0, "fp32_lanes"; next } { print $0, 16 }' \
		"$F/amp-gpus.tsv" >"$T/lanes.tsv"
	run_io pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" --gpuspecs "$T/lanes.tsv" -d TC --per-layer --precision bf16 "$F/bmm.tsv"
	[ "$status" -eq 0 ]
	NEAR_TOL=1e-9 near "$(column time_ms "$T/out")" 0.06103515625
	[ "$(column domain "$T/out")" = "precision=bf16 via its fp32 twin" ]
}

@test "pn-sum feeds a CPU's matrix op in a precision its model never saw to the model as it is" {
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "arch") a = i }
		$1 == "TC" { $a = "CPU-AVX512" } 1' "$F/amp-gpus.tsv" >"$T/cpus.tsv"
	run_io pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" --gpuspecs "$T/cpus.tsv" -d TC --per-layer --precision bf16 "$F/bmm.tsv"
	[ "$status" -eq 0 ]
	NEAR_TOL=1e-9 near "$(column time_ms "$T/out")" 1
	[ "$(column domain "$T/out")" = "precision=bf16" ]
}

@test "pn-sum says model for a row in a precision its model's info line names" {
	sed 's/^body$/info precisions bf16,fp32\nbody/' "$BATS_FILE_TMPDIR/bmm.model" >"$BATS_TEST_TMPDIR/m"
	grep -qx 'info precisions bf16,fp32' "$BATS_TEST_TMPDIR/m"
	run_io pn-sum -m "$BATS_TEST_TMPDIR/m" $G -d TC --per-layer --precision bf16 "$F/bmm.tsv"
	[ "$status" -eq 0 ]
	[ "$(column source "$T/out")" = model ]
	[ ! -s "$T/err" ]
}

@test "pn-sum rejects an unknown --precision with exit 2" {
	run_io pn-sum --fallback roofline $G -d TC --precision fp64 "$F/bmm.tsv"
	[ "$status" -eq 2 ]
	[ "$(cat "$T/err")" = "pn-sum: --precision: unknown value 'fp64' (one of: fp32, tf32, fp16, bf16, amp-fp16, amp-bf16)
Try 'pn-sum --help' for more information." ]
	[ ! -s "$T/out" ]
}

@test "pn-sum --fp32-master keeps a bf16 row's fp32 masters beside its half weights, half gradients and fp32 state" {
	# mem-dense.tsv under bf16: weights 1001472 (half) + 2002432 (fp32
	# masters, as under amp-bf16 above); grads 1001472; state 2 x 2002432
	run_io pn-sum --fallback roofline $G -d TC --per-layer -b 4 --precision bf16 --fp32-master "$F/mem-dense.tsv"
	[ "$status" -eq 0 ]
	cols "$T/out" name weights_bytes grads_bytes state_bytes >"$T/bytes"
	[ "$(awk -F'\t' '$1 == "fc"' "$T/bytes")" = "$(printf 'fc\t3003904\t1001472\t4004864')" ]
}

@test "pn-sum --fp32-master sizes Adam's temporaries by the masters" {
	# W 3003904 + state 4004864 + G 1001472 + 2 x 2002432
	run_io pn-sum --fallback roofline $G -d TC -b 4 --precision bf16 --fp32-master "$F/mem-dense.tsv"
	[ "$status" -eq 0 ]
	[ "$(peak_bytes "$T/out")" = 12015104 ]
}

@test "pn-sum --fp32-master steps a bf16 row's weights as fp32 ones" {
	pn-sum --fallback roofline $G -d TC -b 4 --precision fp32 "$F/mem-dense.tsv" >"$T/fp32" 2>/dev/null
	pn-sum --fallback roofline $G -d TC -b 4 --precision bf16 "$F/mem-dense.tsv" >"$T/half" 2>/dev/null
	pn-sum --fallback roofline $G -d TC -b 4 --precision bf16 --fp32-master "$F/mem-dense.tsv" >"$T/master" 2>/dev/null
	[ "$(col "$T/master" opt_ms 1)" = "$(col "$T/fp32" opt_ms 1)" ]
	near "$(col "$T/half" opt_ms 1)" "$(awk -v a="$(col "$T/fp32" opt_ms 1)" 'BEGIN { printf "%.17g\n", a / 2 }')"
	[ "$(col "$T/master" fwd_ms 1)" = "$(col "$T/half" fwd_ms 1)" ]
}

@test "pn-sum --fp32-master changes nothing in fp32 or under amp-bf16" {
	for p in fp32 amp-bf16; do
		pn-sum --fallback roofline $G -d TC -b 4 --per-layer --precision $p "$F/mem-dense.tsv" >"$T/a" 2>/dev/null
		pn-sum --fallback roofline $G -d TC -b 4 --per-layer --precision $p --fp32-master "$F/mem-dense.tsv" >"$T/b" 2>/dev/null
		cmp "$T/a" "$T/b"
	done
}

# opt FILE: the summary's opt_ms on its one GPU
opt() { awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "opt_ms") k = i; next } { print $k }' "$1"; }

@test "pn-sum steps a tf32 network's weights as fp32's, one group with the rows TF32 leaves in fp32, with or without --fp32-master" {
	# amp-net's layernorm stays fp32 under tf32, its dense rows are tf32:
	# all are fp32 tensors, one foreach step
	pn-sum --fallback roofline $G -d TC --optimizer adam --precision fp32 "$F/amp-net.tsv" >"$T/fp32"
	pn-sum --fallback roofline $G -d TC --optimizer adam --precision tf32 "$F/amp-net.tsv" >"$T/tf32"
	pn-sum --fallback roofline $G -d TC --optimizer adam --precision tf32 --fp32-master "$F/amp-net.tsv" >"$T/master"
	[ "$(opt "$T/fp32")" = "$(opt "$T/tf32")" ]
	[ "$(opt "$T/tf32")" = "$(opt "$T/master")" ]
	awk -v x="$(opt "$T/tf32")" 'BEGIN { exit !(x > 0) }'
}

@test "pn-sum counts a decomposed row whose parts a model predicts in an unseen precision as by models, not as the roofline's" {
	# a bmm train row splits into bmm parts, which the fp32 bmm model
	# predicts through their fp32 twins
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "phase") k = i; print; next } { $k = "train"; print }' "$F/bmm.tsv" >"$T/n.tsv"
	run_io pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" $G -d TC --per-layer --precision bf16 "$T/n.tsv"
	[ "$status" -eq 0 ]
	[ "$(column rule "$T/out")" = decomposed ]
	[ "$(column source "$T/out")" = extrapolated ]
	[[ "$(cat "$T/err")" == "pn-sum: warning: $T/n.tsv: no model was fitted on precision bf16: 0 rows predicted by the roofline alone (checked against fp32 measurements only), 1 by models, extrapolated in precision"* ]]
}
