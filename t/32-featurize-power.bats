#!/usr/bin/env bats
# pn-featurize's power_compute_ms and power_roofline_ms (the roofline at the
# clock a GPU's power limit holds) and the feature set power of pn-fit.
# power-gpus.tsv: four GPUs of 20 TFLOP/s listed (80 fp16), 1000 GB/s, of
# 400 W (20 W per TFLOP/s), 200 W (10), 40 W (2) and no TDP; each fp32 row
# of power-rows.tsv is a 128 x 256 x 512 dense layer with bias, 33619968
# FLOPs, compute-bound: 0.0016809984 ms at the listed peak.
load test_helper

PG="--gpuspecs $FIX/featurize/power-gpus.tsv"
P="$FIX/featurize/power-rows.tsv"

setup() {
	O=$BATS_TEST_TMPDIR/o
	pn-featurize $PG "$P" >"$O"
}

# at W watts per TFLOP/s: the listed compute time over (W / 15)^0.5
at_power() {
	awk -v w="$1" -v t="$2" 'BEGIN { printf "%.17g", t / sqrt(w / 15) }'
}

@test "pn-featurize power_roofline_ms of a GPU of 10 W per TFLOP/s is at (10 / 15)^0.5 of its peak" {
	[ "$(col "$O" device 2)" = HALFGPU ]
	near "$(col "$O" power_compute_ms 2)" "$(at_power 10 0.0016809984)"
	near "$(col "$O" power_roofline_ms 2)" 0.002058794169217467
	[ "$(col "$O" roofline_ms 2)" = 0.0016809984 ]
}

@test "pn-featurize power_roofline_ms is roofline_ms at 15 W per TFLOP/s or more" {
	[ "$(col "$O" device 1)" = FULLGPU ]
	[ "$(col "$O" power_compute_ms 1)" = 0.0016809984 ]
	[ "$(col "$O" power_roofline_ms 1)" = 0.0016809984 ]
}

@test "pn-featurize power_roofline_ms holds the power law at 8.6 W per TFLOP/s below it" {
	# 2 W per TFLOP/s is below every training GPU's (the T4's 8.6)
	[ "$(col "$O" device 3)" = LOWGPU ]
	near "$(col "$O" power_compute_ms 3)" "$(at_power 8.6 0.0016809984)"
}

@test "pn-featurize power_roofline_ms is roofline_ms on a GPU without a TDP" {
	[ "$(col "$O" device 4)" = NATDP ]
	[ "$(col "$O" power_roofline_ms 4)" = "$(col "$O" roofline_ms 4)" ]
}

@test "pn-featurize power_roofline_ms takes the row's own unit's peak, an fp16 GEMM's tensor cores, at the same share" {
	[ "$(col "$O" precision 5)" = fp16 ]
	# 80 TFLOP/s: 0.0004202496 ms; memory-bound at the listed peak, not at 200 W
	near "$(col "$O" power_compute_ms 5)" "$(at_power 10 0.0004202496)"
	near "$(col "$O" power_roofline_ms 5)" "$(at_power 10 0.0004202496)"
	[ "$(col "$O" roofline_ms 5)" = 0.000459776 ]
}

@test "pn-fit -F power relative to power_roofline_ms predicts as -F rel relative to roofline_ms on GPUs of 15 W per TFLOP/s or more" {
	# gpuspecs with every TDP at 1000 W: no GPU below 15 W per TFLOP/s
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "tdp_w") c = i; print; next } { $c = 1000; print }' \
		"$BATS_TEST_DIRNAME/../gpuspecs/gpus.tsv" >"$BATS_TEST_TMPDIR/g.tsv"
	same_as_rel power power_roofline_ms "$BATS_TEST_TMPDIR/g.tsv"
}
