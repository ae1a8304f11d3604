#!/usr/bin/env bats
# pn-featurize's lat_ms (the time of a latency-bound kernel) and the
# feature set lat of pn-fit: values computed by hand on TESTGPU (100 SMs,
# 1500 MHz, 1000 GB/s, fp32 10 and fp16 tensor 40 TFLOP/s).
load test_helper

G="--gpuspecs $FIX/featurize/gpus.tsv"
L="$FIX/featurize/lat-rows.tsv"

NEAR_TOL=1e-12

setup() {
	O=$BATS_TEST_TMPDIR/o
}

# lat_ms on TESTGPU of BYTES at 1 TB/s, with (1) or without (0) the
# latency term of 8 B a cycle on 100 SMs at 1.5 GHz, and the floor
lat() {
	awk -v b="$1" -v l="$2" 'BEGIN { printf "%.17g", (b / 1e12 + l * b / 1.2e12 + 5000 / 1.5e9) * 1e3 }'
}

@test "pn-featurize lat_ms of a layernorm adds a latency term to its bandwidth time and the floor" {
	pn-featurize $G "$L" >"$O"
	# 64 x 1024 fp16 in and out and 2 x 1024 weights: 266240 bytes at
	# 1 TB/s, plus at 8 B a cycle on 100 SMs at 1.5 GHz, plus 5000 cycles
	near "$(col "$O" lat_ms 1)" "$(awk 'BEGIN { printf "%.17g", (266240 / 1e12 + 266240 / 1.2e12 + 5000 / 1.5e9) * 1e3 }')"
	near "$(col "$O" lat_ms 1)" 0.00382144
}

@test "pn-featurize lat_ms of a forward embedding is its gathered rows at 2 bytes a cycle an SM" {
	pn-featurize $G "$L" >"$O"
	# not the 1000 x 512 table: 64 int64 indices, 64 rows of 512 fp16
	# read and written, 131584 bytes; 2 B a cycle on 100 SMs at 1.5 GHz
	# binds before 1 TB/s
	near "$(col "$O" lat_ms 2)" "$(awk 'BEGIN { printf "%.17g", (131584 / 3e11 + 5000 / 1.5e9) * 1e3 }')"
}

@test "pn-featurize lat_ms of a dense layer is its compute time plus the floor" {
	pn-featurize $G "$L" >"$O"
	# 33619968 flops at the fp16 tensor peak 40 TFLOP/s bind before the
	# 459776 bytes at 1 TB/s; no latency term for a GEMM
	near "$(col "$O" lat_ms 3)" "$(awk 'BEGIN { printf "%.17g", (33619968 / 4e13 + 5000 / 1.5e9) * 1e3 }')"
}

@test "pn-featurize lat_ms of a training embedding counts its traffic as a vector op's" {
	pn-featurize $G "$L" >"$O"
	[ "$(col "$O" traffic 4)" = 6538752 ]
	near "$(col "$O" lat_ms 4)" "$(lat 6538752 1)"
}

@test "pn-featurize lat_ms takes the floor and the latency term at the device's clock and SMs" {
	pn-featurize $G --device SLOWGPU "$L" >"$O"
	# SLOWGPU: 10 SMs at 1500 MHz, 100 GB/s
	near "$(col "$O" lat_ms 1)" "$(awk 'BEGIN { printf "%.17g", (266240 / 1e11 + 266240 / 1.2e11 + 5000 / 1.5e9) * 1e3 }')"
}

@test "pn-featurize lat_ms of a streaming elementwise op is its bandwidth time and the floor, as a GEMM's" {
	pn-featurize $G "$L" >"$O"
	# add of two 64 x 1024 fp16 tensors: 393216 bytes at 1 TB/s; no
	# latency term (PyTorch's add streams at the bandwidth)
	[ "$(col "$O" traffic 5)" = 393216 ]
	near "$(col "$O" lat_ms 5)" "$(lat 393216 0)"
}

@test "pn-featurize lat_ms of a gated op adds the latency term of a kernel a token" {
	pn-featurize $G "$L" >"$O"
	# silu_mul of dim 1024: reads both 64 x 1024 halves and writes one,
	# 393216 bytes as the add's, but a fused one-block-a-token kernel
	[ "$(col "$O" traffic 6)" = 393216 ]
	near "$(col "$O" lat_ms 6)" "$(lat 393216 1)"
}

@test "pn-featurize counts a gated op's two flops an element and its two input halves" {
	pn-featurize $G "$L" >"$O"
	[ "$(col "$O" flops 6)" = 131072 ]
	[ "$(col "$O" cm_in 6)" = 262144 ]
	[ "$(col "$O" cm_out 6)" = 131072 ]
}

@test "pn-fit --features lat fits on rel's columns and lat_ms" {
	# 12 layernorm rows of 1 to 12 tokens
	awk 'BEGIN { OFS = "\t"; print "layer", "batch", "seq_len", "dim", "precision", "pass", "optimizer", "device", "time_ms"
		for (b = 1; b <= 12; b++) print "layernorm", b, 1, 1024, "fp16", "fwd", "none", "TESTGPU", 0.01 * b }' |
		pn-featurize $G >"$O"
	run pn-fit -f lr -F lat --relative=lat_ms -o "$BATS_TEST_TMPDIR/m" "$O"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^transform logratio lat_ms$' "$BATS_TEST_TMPDIR/m")" -eq 1 ]
	grep '^feature ' "$BATS_TEST_TMPDIR/m" | cut -d' ' -f2 | paste -sd' ' >"$BATS_TEST_TMPDIR/got"
	echo "batch seq_len dim optimizer=none precision=fp16 pass=fwd flops traffic ai compute_ms memory_ms roofline_ms tiles waves wave_eff lat_ms" |
		diff - "$BATS_TEST_TMPDIR/got"
}
