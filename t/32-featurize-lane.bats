#!/usr/bin/env bats
# The spec column fp32_lanes (FP32 lanes per SM that share no datapath with
# INT32), pn-featurize's lane_compute_ms and lane_roofline_ms, and the
# feature set lane of pn-fit.  LANEGPU (lane-gpus.tsv): 100 SMs of 128 FP32
# lanes, 64 of their own, 20 TFLOP/s listed, 1000 GB/s; NALANE the same
# with fp32_lanes NA; WIDEGPU with more lanes than cores.  Each row of
# lane-rows.tsv is a 128 x 256 x 512 dense layer with bias: 33619968 FLOPs,
# 919552 bytes (fp32), compute-bound.
load test_helper

LG="--gpuspecs $FIX/featurize/lane-gpus.tsv"
L="$FIX/featurize/lane-rows.tsv"

setup() {
	O=$BATS_TEST_TMPDIR/o
}

@test "pn-featurize lane_roofline_ms of an fp32 dense layer is at the peak of the FP32 lanes that own their datapath" {
	pn-featurize $LG "$L" >"$O"
	# 33619968 FLOPs at 20 TFLOP/s x 64 x 100 / 12800 = 10 TFLOP/s
	[ "$(col "$O" lane_compute_ms 1)" = 0.0033619968 ]
	[ "$(col "$O" lane_roofline_ms 1)" = 0.0033619968 ]
	[ "$(col "$O" roofline_ms 1)" = 0.0016809984 ]
}

@test "pn-featurize lane_roofline_ms is roofline_ms on a GPU whose fp32_lanes is NA" {
	pn-featurize $LG "$L" >"$O"
	[ "$(col "$O" device 2)" = NALANE ]
	[ "$(col "$O" lane_compute_ms 2)" = "$(col "$O" compute_ms 2)" ]
	[ "$(col "$O" lane_roofline_ms 2)" = 0.0016809984 ]
}

@test "pn-featurize lane_roofline_ms is never below roofline_ms when fp32_lanes exceeds the cores of an SM" {
	pn-featurize $LG "$L" >"$O"
	[ "$(col "$O" device 3)" = WIDEGPU ]
	[ "$(col "$O" lane_roofline_ms 3)" = 0.0016809984 ]
}

@test "pn-featurize lane_roofline_ms of an fp16 dense layer is roofline_ms (its tensor cores, not the FP32 lanes)" {
	pn-featurize $LG "$L" >"$O"
	[ "$(col "$O" precision 4)" = fp16 ]
	[ "$(col "$O" lane_compute_ms 4)" = "$(col "$O" compute_ms 4)" ]
	[ "$(col "$O" lane_roofline_ms 4)" = "$(col "$O" roofline_ms 4)" ]
}

@test "pn-featurize lane_compute_ms of an fp32 layernorm is compute_ms (a vector op streams, the lanes do not bind)" {
	pn-featurize $LG "$FIX/featurize/lane-vec.tsv" >"$O"
	# 524288 FLOPs at the listed 20 TFLOP/s
	[ "$(col "$O" compute_ms 1)" = 2.62144e-05 ]
	[ "$(col "$O" lane_compute_ms 1)" = 2.62144e-05 ]
	[ "$(col "$O" lane_roofline_ms 1)" = "$(col "$O" roofline_ms 1)" ]
}

@test "pn-featurize lane_roofline_ms is roofline_ms with a spec table that has no fp32_lanes column" {
	cut -f1-31 "$FIX/featurize/gpus.tsv" >"$BATS_TEST_TMPDIR/g"
	[ "$(head -1 "$BATS_TEST_TMPDIR/g" | cut -f31)" = tc_mhz ]
	pn-featurize --gpuspecs "$BATS_TEST_TMPDIR/g" -d TESTGPU "$L" >"$O"
	[ "$(col "$O" lane_roofline_ms 1)" = "$(col "$O" roofline_ms 1)" ]
	[ "$(col "$O" lane_roofline_ms 1)" = 0.0033619968 ]
}

@test "pn-specs prints fp32_lanes as the last column but one (blas_fp32_gflops), NA for a table without it" {
	run pn-specs $LG LANEGPU
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[0]}" | awk -F'\t' '{ print $(NF - 1), $NF }')" = "fp32_lanes blas_fp32_gflops" ]
	[ "$(printf '%s\n' "${lines[1]}" | awk -F'\t' '{ print $(NF - 1) }')" = 64 ]
	cut -f1-31 "$FIX/featurize/gpus.tsv" >"$BATS_TEST_TMPDIR/g"
	run pn-specs --gpuspecs "$BATS_TEST_TMPDIR/g" TESTGPU
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[1]}" | awk -F'\t' '{ print $NF }')" = NA ]
}

@test "pn-specs rejects an fp32_lanes that is not a whole number of at least 1, naming file, line and column" {
	g=$BATS_TEST_TMPDIR/g
	"$FIX/specs/with" fp32_lanes 0 <"$FIX/featurize/lane-gpus.tsv" >"$g"
	run bash -c "pn-specs --gpuspecs '$g' LANEGPU 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-specs: $g:2: column 'fp32_lanes': '0' is too small (at least 1)" ]
	"$FIX/specs/with" fp32_lanes 64.5 <"$FIX/featurize/lane-gpus.tsv" >"$g"
	run bash -c "pn-specs --gpuspecs '$g' LANEGPU 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-specs: $g:2: column 'fp32_lanes': '64.5' is not a whole number" ]
}

@test "every GA10x and Ada row of gpuspecs has half its FP32 lanes as fp32_lanes, every other NVIDIA row before Blackwell all of them" {
	run awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
		$h["vendor"] == "NVIDIA" && $h["arch"] != "Blackwell" {
			per = $h["cores"] / $h["sms"]
			half = $h["arch"] == "Ada" || ($h["arch"] == "Ampere" && $h["cc"] == "8.6")
			want = half ? per / 2 : per
			if ($h["fp32_lanes"] != want) print $h["name"] ": " $h["fp32_lanes"] " lanes, want " want
		}' "$BATS_TEST_DIRNAME/../gpuspecs/gpus.tsv"
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
}

@test "pn-fit -F lane relative to lane_roofline_ms predicts as -F rel relative to roofline_ms where the lanes' peak is the listed one" {
	# T4 and V100: every FP32 lane its own
	same_as_rel lane lane_roofline_ms
}

# lane_model SET BASE [FAMILY]: a model (default linear) of the sum
# fixture's bmm rows (UNIT) on feature set SET relative to BASE, to
# lane.model in the test's tmpdir
lane_model() {
	pn-featurize --gpuspecs "$FIX/sum/gpus.tsv" "$FIX/sum/bmm-train.tsv" >"$BATS_TEST_TMPDIR/bt.tsv"
	pn-fit -f "${3:-lr}" ${3:+-p rounds=10} -F "$1" --relative="$2" -o "$BATS_TEST_TMPDIR/lane.model" "$BATS_TEST_TMPDIR/bt.tsv"
}

@test "pn-sum warns that a lane model predicts FP32 GEMMs from the listed peak on a GPU without fp32_lanes" {
	lane_model lane lane_roofline_ms
	run bash -c "pn-sum -m '$BATS_TEST_TMPDIR/lane.model' --gpuspecs '$FIX/sum/gpus.tsv' -d UNIT '$FIX/sum/bmm.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 0 ]
	[ "$output" = "pn-sum: warning: no fp32_lanes for 1 GPU (UNIT): FP32 GEMMs predicted from the listed FP32 peak there, less trustworthy than the intervals say" ]
}

@test "pn-sum says nothing of fp32_lanes for a model that does not read the lane columns" {
	lane_model rel roofline_ms
	run bash -c "pn-sum -m '$BATS_TEST_TMPDIR/lane.model' --gpuspecs '$FIX/sum/gpus.tsv' -d UNIT '$FIX/sum/bmm.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
}

@test "pn-sum says nothing of fp32_lanes for a lane model on a GPU that has them" {
	# trees: a linear model of one GPU's rows takes LANEGPU's times
	# beyond a double, which pn-sum refuses
	lane_model lane lane_roofline_ms xgb
	run bash -c "pn-sum -m '$BATS_TEST_TMPDIR/lane.model' $LG -d LANEGPU '$FIX/sum/bmm.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
}
