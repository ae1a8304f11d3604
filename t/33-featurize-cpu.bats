#!/usr/bin/env bats
# pn-featurize's CPU columns pad_co, cpu_ms, mask_p and vec_tail and pn-fit's feature set cpu
# (a oneDNN kernel on one AVX-512 core).  TESTCPU (cpu-gpus.tsv): 1000 MHz,
# 10 GB/s, a 1 MB last-level cache (l2_mb), 100 GFLOP/s fp32, 200 bf16 on
# the matrix unit; a call costs 2000 cycles, 0.002 ms.  cpu-rows.tsv: a
# 4 x 64 x 17 dense layer without bias (fp32, bf16), a 4 x 64 x 32 one
# (bf16), a 1x1 conv2d of 3 to 20 channels on 8 x 8, an add of 1000
# elements (fp32 fwd, bf16 fwd, fp32 train), an attention with dropout
# 0.3, an elementwise dropout without a rate and one of rate 0.2, an lstm
# of 2 and one of 1 layers with dropout 0.3, layernorms of dim 110 and 128.
# TESTAVX2 and TESTSSE are TESTCPU with arch CPU-AVX2 and CPU.
load test_helper

CG="--gpuspecs $FIX/featurize/cpu-gpus.tsv"
L="$FIX/featurize/cpu-rows.tsv"

setup() {
	O=$BATS_TEST_TMPDIR/o
	pn-featurize $CG "$L" >"$O"
}

# want_cpu_ms B CALLS EXTRA [FLOPS]: cpu_ms of a row of B bytes and FLOPS
# (default 0) FLOPs, CALLS calls and EXTRA s more: the larger of the
# compute time at 100 GFLOP/s and the memory time, the share
# h = 1 / (1 + r^2) of B, r = B / 1e6, at 16 bytes a cycle, the rest at
# 10 GB/s
want_cpu_ms() {
	awk -v b="$1" -v c="$2" -v x="$3" -v f="${4:-0}" 'BEGIN { r = b / 1e6; h = 1 / (1 + r * r)
		m = b * (h / 16e9 + (1 - h) / 10e9); k = f / 1e11
		printf "%.17g", (c * 2e-6 + (k > m ? k : m) + x) * 1e3 }'
}

@test "pn-featurize pad_co of a dense layer is co: only a conv2d's channels are padded" {
	# co 2 x 4 x 64 x 17 = 8704, out_features 17 not padded to a vector
	[ "$(col "$O" co 1)" = 8704 ]
	[ "$(col "$O" pad_co 1)" = 8704 ]
	[ "$(col "$O" pad_co 2)" = 8704 ]
}

@test "pn-featurize pad_co pads both channel counts of a conv2d to 16-channel blocks" {
	# co 3840 x 16 / 3 x 32 / 20
	[ "$(col "$O" co 4)" = 3840 ]
	[ "$(col "$O" pad_co 4)" = 32768 ]
}

@test "pn-featurize cpu_ms of a conv2d forward pads only its output channels below 16 input channels, and adds a cycle an element" {
	# 7680 FLOPs x 32 / 20 at 100 GFLOP/s, plus the input 3 x 64, twice
	# the output 20 x 64 and the weights 20 x 3 elements at 1 GHz
	[ "$(col "$O" flops 4)" = 7680 ]
	near "$(col "$O" cpu_ms 4)" "$(awk 'BEGIN { printf "%.17g", (2e-6 + 7680 * 32 / 20 / 1e11 + (192 + 2 * 1280 + 60) / 1e9) * 1e3 }')"
}

@test "pn-featurize cpu_ms of a conv2d train row pads both channel counts in its backward passes" {
	# row 4 as a train row without optimizer: 3 calls; forward as above,
	# backward 2 x 7680 FLOPs x 16 / 3 x 32 / 20 and 2 (192 + 1280 + 60) elements
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "pass") k = i } NR == 5 { $k = "train" } NR == 1 || NR == 5' "$L" >"$BATS_TEST_TMPDIR/c.tsv"
	pn-featurize $CG "$BATS_TEST_TMPDIR/c.tsv" >"$O.c"
	[ "$(col "$O.c" flops 1)" = 23040 ]
	near "$(col "$O.c" cpu_ms 1)" "$(awk 'BEGIN { printf "%.17g", (6e-6 + 7680 * 32 / 20 / 1e11 + (192 + 2 * 1280 + 60) / 1e9 + 2 * 7680 * 16 / 3 * 32 / 20 / 1e11 + 2 * (192 + 1280 + 60) / 1e9) * 1e3 }')"
}

@test "pn-featurize cpu_ms of a small fwd layer is one call plus its bytes from the last-level cache" {
	# above the 8704 FLOPs at 100 GFLOP/s
	[ "$(col "$O" traffic 1)" = 5648 ]
	near "$(col "$O" cpu_ms 1)" "$(want_cpu_ms 5648 1 0)"
}

# the add train row (row 7) with its op replaced by OP
train_op() {
	awk -F'\t' -v OFS='\t' -v op="$1" 'NR == 8 { $2 = op } NR == 1 || NR == 8' "$L" >"$BATS_TEST_TMPDIR/$1.tsv"
	pn-featurize $CG "$BATS_TEST_TMPDIR/$1.tsv" >"$O.$1"
}

@test "pn-featurize cpu_ms counts three calls for a train row" {
	# a mul of 2 x 1000 elements: its backward runs two products
	train_op mul
	[ "$(col "$O.mul" pass 1)" = train ]
	[ "$(col "$O.mul" traffic 1)" = 36000 ]
	near "$(col "$O.mul" cpu_ms 1)" "$(want_cpu_ms 36000 3 0)"
}

@test "pn-featurize cpu_ms of a train row whose gradient passes is its forward's" {
	# add: no backward kernel; one call and the forward's 12000 bytes,
	# while traffic keeps the row's three passes
	[ "$(col "$O" pass 7)" = train ]
	[ "$(col "$O" traffic 7)" = 36000 ]
	near "$(col "$O" cpu_ms 7)" "$(want_cpu_ms 12000 1 0)"
}

@test "pn-featurize cpu_ms of an elementwise op that computes more than it moves counts its own FLOPs an element" {
	# pow: 470 FLOPs an element forward, 800 backward; 1000 elements,
	# 12.7 us at 100 GFLOP/s against 36000 bytes' 2.2 us
	train_op pow
	[ "$(col "$O.pow" traffic 1)" = 36000 ]
	[ "$(col "$O.pow" flops 1)" = 3000 ]
	near "$(col "$O.pow" cpu_ms 1)" "$(want_cpu_ms 36000 3 0 1270000)"
}

@test "pn-featurize cpu_ms adds the conversion to fp32 and back of a bf16 vector op's elements" {
	# 6000 bytes: 3000 elements, 2 lane ops each at 50 G a second
	near "$(col "$O" cpu_ms 6)" "$(want_cpu_ms 6000 1 1.2e-7)"
}

@test "pn-featurize cpu_ms of a bf16 GEMM has no conversion term and the bf16 peak" {
	# 4864 bytes; 16384 FLOPs at 200 GFLOP/s are below the memory time
	[ "$(col "$O" traffic 3)" = 4864 ]
	near "$(col "$O" cpu_ms 3)" "$(want_cpu_ms 4864 1 0)"
}

# want_cpu_ms_of R CALLS EXTRA [FILE]: want_cpu_ms of row R of FILE
# (default $O), its traffic and flops as pn-featurize wrote them
want_cpu_ms_of() {
	want_cpu_ms "$(col "${4:-$O}" traffic "$1")" "$2" "$3" "$(col "${4:-$O}" flops "$1")"
}

@test "pn-featurize cpu_ms of an attention adds 40 cycles for each mask element a predictor misses" {
	# 2 x 4 heads x 16 x 16 scores, min(0.3, 0.7) of them missed, at 1 GHz
	near "$(col "$O" cpu_ms 8)" "$(want_cpu_ms_of 8 1 "$(awk 'BEGIN { printf "%.17g", 2 * 4 * 16 * 16 * 0.3 * 40 / 1e9 }')")"
}

@test "pn-featurize cpu_ms of an elementwise dropout counts its elements at min(p, 1 - p)" {
	# 1000 elements, rate 0.5 (none given) and 0.2
	near "$(col "$O" cpu_ms 9)" "$(want_cpu_ms_of 9 1 "$(awk 'BEGIN { printf "%.17g", 1000 * 0.5 * 40 / 1e9 }')")"
	near "$(col "$O" cpu_ms 10)" "$(want_cpu_ms_of 10 1 "$(awk 'BEGIN { printf "%.17g", 1000 * 0.2 * 40 / 1e9 }')")"
}

@test "pn-featurize cpu_ms of a train elementwise dropout counts its mask once: the backward reuses it" {
	# row 10 (1000 elements, rate 0.2) as a train row without optimizer: 3
	# calls, and the branches of one mask
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "pass") k = i } NR == 11 { $k = "train" } NR == 1 || NR == 11' "$L" >"$BATS_TEST_TMPDIR/e.tsv"
	pn-featurize $CG "$BATS_TEST_TMPDIR/e.tsv" >"$O.e"
	near "$(col "$O.e" cpu_ms 1)" "$(want_cpu_ms_of 1 3 "$(awk 'BEGIN { printf "%.17g", 1000 * 0.2 * 40 / 1e9 }')" "$O.e")"
}

@test "pn-featurize cpu_ms of a stacked lstm counts the masks between its layers only" {
	# 2 x 8 x 16 outputs of its first layer; the one-layer lstm draws none
	near "$(col "$O" cpu_ms 11)" "$(want_cpu_ms_of 11 1 "$(awk 'BEGIN { printf "%.17g", 2 * 8 * 16 * 0.3 * 40 / 1e9 }')")"
	near "$(col "$O" cpu_ms 12)" "$(want_cpu_ms_of 12 1 0)"
}

# dense_with ACT PASS OPT PREC: row 1 (4 x 64 x 17, no bias) with that
# activation, pass, optimizer and precision, featurized into $O.d
dense_with() {
	awk -F'\t' -v OFS='\t' -v a="$1" -v p="$2" -v o="$3" -v q="$4" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; print; next }
		NR == 2 { $h["activation"] = a; $h["pass"] = p; $h["optimizer"] = o; $h["precision"] = q; print }' "$L" >"$BATS_TEST_TMPDIR/d.tsv"
	pn-featurize $CG "$BATS_TEST_TMPDIR/d.tsv" >"$O.d"
}

@test "pn-featurize cpu_ms of a train row adds the optimizer's call and cycles a weight" {
	# 64 x 17 weights; SGD 0.25 cycles each, Adadelta 1.3, at 1 GHz
	dense_with none train sgd fp32
	near "$(col "$O.d" cpu_ms 1)" "$(want_cpu_ms_of 1 3 "$(awk 'BEGIN { printf "%.17g", (1500 + 64 * 17 * 0.25) / 1e9 }')" "$O.d")"
	dense_with none train adadelta fp32
	near "$(col "$O.d" cpu_ms 1)" "$(want_cpu_ms_of 1 3 "$(awk 'BEGIN { printf "%.17g", (1500 + 64 * 17 * 1.3) / 1e9 }')" "$O.d")"
}

@test "pn-featurize cpu_ms of a bf16 train row adds 2 cycles a weight for the fp32 master weight" {
	# Adam's 0.8 cycles and 2 more; a bf16 GEMM at 200 GFLOP/s, whose
	# compute stays below the memory time
	dense_with none train adam bf16
	near "$(col "$O.d" cpu_ms 1)" "$(want_cpu_ms_of 1 3 "$(awk 'BEGIN { printf "%.17g", (1500 + 64 * 17 * 2.8) / 1e9 }')" "$O.d")"
}

@test "pn-featurize cpu_ms of a dense with sigmoid adds 1.2 cycles an output element, and 0.6 more in training" {
	dense_with none fwd none fp32
	local f; f=$(col "$O.d" cpu_ms 1)
	dense_with sigmoid fwd none fp32
	near "$(col "$O.d" cpu_ms 1)" "$(awk -v b="$f" 'BEGIN { printf "%.17g", b + 4 * 17 * 1.2 / 1e6 }')"
	dense_with none train none fp32
	local t; t=$(col "$O.d" cpu_ms 1)
	dense_with relu train none fp32
	near "$(col "$O.d" cpu_ms 1)" "$(awk -v b="$t" 'BEGIN { printf "%.17g", b + 4 * 17 * 0.6 / 1e6 }')"
}

@test "pn-featurize mask_p of an attention is its dropout rate" {
	[ "$(col "$O" mask_p 8)" = 0.3 ]
}

@test "pn-featurize mask_p of an elementwise dropout is its rate, 0.5 without one" {
	[ "$(col "$O" mask_p 9)" = 0.5 ]
	[ "$(col "$O" mask_p 10)" = 0.2 ]
}

@test "pn-featurize mask_p of an lstm counts its dropout between stacked layers only" {
	[ "$(col "$O" mask_p 11)" = 0.3 ]
	[ "$(col "$O" mask_p 12)" = 0 ]
}

@test "pn-featurize mask_p is 0 on an op that draws no mask" {
	[ "$(col "$O" mask_p 5)" = 0 ]
	[ "$(col "$O" mask_p 1)" = 0 ]
}

@test "pn-featurize refuses a dropout rate outside [0, 1)" {
	awk -F'\t' -v OFS='\t' 'NR == 9 { for (i = 1; i <= NF; i++) if ($i == "0.3") $i = "1.5" } { print }' "$L" >"$BATS_TEST_TMPDIR/bad.tsv"
	T=$BATS_TEST_TMPDIR run_io pn-featurize $CG "$BATS_TEST_TMPDIR/bad.tsv"
	[ "$status" -eq 1 ]
	[ "$(cat "$BATS_TEST_TMPDIR/err")" = "pn-featurize: $BATS_TEST_TMPDIR/bad.tsv:9: column 'dropout': 1.5 is not in [0, 1)" ]
}

@test "pn-featurize vec_tail of a vector op on an AVX-512 CPU is dim modulo 16" {
	[ "$(col "$O" vec_tail 13)" = 14 ]
	[ "$(col "$O" vec_tail 14)" = 0 ]
	[ "$(col "$O" vec_tail 5)" = 8 ]
}

@test "pn-featurize vec_tail takes 8 lanes on an AVX2 CPU and 4 on another" {
	pn-featurize $CG -d TESTAVX2 "$L" >"$O.2"
	pn-featurize $CG -d TESTSSE "$L" >"$O.s"
	[ "$(col "$O.2" vec_tail 13)" = 6 ]
	[ "$(col "$O.s" vec_tail 13)" = 2 ]
}

@test "pn-featurize vec_tail is 0 on a GEMM and on a GPU" {
	[ "$(col "$O" vec_tail 1)" = 0 ]
	pn-featurize --gpuspecs "$FIX/featurize/gpus.tsv" -d TESTGPU "$L" >"$O.g"
	[ "$(col "$O.g" vec_tail 13)" = 0 ]
}

@test "pn-fit --help lists the feature set cpu as rel plus pad_co, cpu_ms, mask_p and vec_tail" {
	run pn-fit --help
	[ "$status" -eq 0 ]
	[[ "$(printf '%s ' "${lines[@]}")" == *"cpu = rel + pad_co cpu_ms mask_p vec_tail (a oneDNN kernel"* ]]
}

@test "pn-fit -F cpu fits the rel columns, pad_co, cpu_ms, mask_p and vec_tail, relative to cpu_ms" {
	# the add rows four times (a fit needs 10), a time of 3 x cpu_ms
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "cpu_ms") k = i
		print $0, "time_ms"; next } { print $0, 3 * $k }' "$O" >"$O.t"
	{ head -1 "$O.t"; for i in 1 2 3 4; do grep '^elementwise' "$O.t"; done; } >"$O.4"
	run pn-fit -f lr -F cpu --relative=cpu_ms -o "$BATS_TEST_TMPDIR/m" "$O.4"
	[ "$status" -eq 0 ]
	run grep -c -e '^transform logratio cpu_ms$' -e '^feature pad_co ' -e '^feature cpu_ms ' -e '^feature roofline_ms ' -e '^feature mask_p ' -e '^feature vec_tail ' "$BATS_TEST_TMPDIR/m"
	[ "$output" = 6 ]
}
