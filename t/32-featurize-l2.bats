#!/usr/bin/env bats
# pn-featurize's l2_ms (lat_ms with the L2 for a streaming kernel) and the
# feature set l2 of pn-fit: values computed by hand on TESTGPU (100 SMs,
# 1500 MHz, 1000 GB/s, 8 MB of L2) and SLOWGPU (10 SMs, 1500 MHz, 100 GB/s,
# 2 MB).
load test_helper

G="--gpuspecs $FIX/featurize/gpus.tsv"
L="$FIX/featurize/l2-rows.tsv"

NEAR_TOL=1e-12

setup() {
	O=$BATS_TEST_TMPDIR/o
}

# l2_ms of BYTES on a GPU of SMS SMs at 1.5 GHz, BW GB/s and L2 MB: the
# share 1 / (1 + r^2) of the bytes (r = BYTES / L2 bytes) at the L2's
# 5120 / 108 bytes a cycle an SM, the rest at BW, plus 5000 cycles
l2() {
	awk -v b="$1" -v sms="$2" -v bw="$3" -v l2="$4" 'BEGIN {
		r = b / (l2 * 1e6); h = 1 / (1 + r * r)
		printf "%.17g", (b * (h / (sms * 1.5e9 * 5120 / 108) + (1 - h) / (bw * 1e9)) + 5000 / 1.5e9) * 1e3 }'
}

# add_row ROW BYTES L2_MS LAT_MS: on TESTGPU, data row ROW (an add) has
# traffic BYTES, l2_ms L2_MS (by bc, 30 digits, and by l2 above) and
# lat_ms LAT_MS (lat_ms keeps the DRAM bandwidth)
add_row() {
	pn-featurize $G "$L" >"$O"
	[ "$(col "$O" traffic "$1")" = "$2" ]
	near "$(col "$O" l2_ms "$1")" "$3"
	near "$(col "$O" l2_ms "$1")" "$(l2 "$2" 100 1000 8)"
	near "$(col "$O" lat_ms "$1")" "$4"
}

@test "pn-featurize l2_ms of a streaming add whose working set fits the L2 takes its bytes from the L2" {
	# two 64 x 1024 fp16 inputs and the output, 393216 bytes, r = 0.049152
	# of the 8 MB: 99.76% at 100 x 1.5 GHz x 5120 / 108 = 7.11 TB/s, the
	# rest at 1 TB/s, plus 5000 cycles
	add_row 1 393216 0.003389443753144576354899285 0.003726549333333333333333333
}

@test "pn-featurize l2_ms of a streaming add three times the L2 takes most of its bytes from DRAM" {
	# 4096 x 1024: 25165824 bytes, r = 3.145728, 9.18% from the L2
	add_row 2 25165824 0.026514239497678222729237845 0.028499157333333333333333333
}

@test "pn-featurize l2_ms takes the L2's size and bandwidth from the device's L2, SMs and clock" {
	pn-featurize $G --device SLOWGPU "$L" >"$O"
	near "$(col "$O" l2_ms 1)" "$(l2 393216 10 100 2)"
}

@test "pn-featurize l2_ms is lat_ms for a gated op, a layernorm and a dense layer" {
	pn-featurize $G "$L" >"$O"
	for r in 3 4 5; do
		[ "$(col "$O" l2_ms $r)" = "$(col "$O" lat_ms $r)" ]
	done
	near "$(col "$O" l2_ms 4)" 0.00382144
}

@test "pn-fit --features l2 fits on rel's columns and l2_ms" {
	# 12 add rows of 1 to 12 tokens
	awk 'BEGIN { OFS = "\t"; print "layer", "op", "batch", "seq_len", "dim", "precision", "pass", "optimizer", "device", "time_ms"
		for (b = 1; b <= 12; b++) print "elementwise", "add", b, 1, 1024, "fp16", "fwd", "none", "TESTGPU", 0.01 * b }' |
		pn-featurize $G >"$O"
	run pn-fit -f lr -F l2 --relative=l2_ms -o "$BATS_TEST_TMPDIR/m" "$O"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^transform logratio l2_ms$' "$BATS_TEST_TMPDIR/m")" -eq 1 ]
	grep '^feature ' "$BATS_TEST_TMPDIR/m" | cut -d' ' -f2 | paste -sd' ' >"$BATS_TEST_TMPDIR/got"
	echo "op=add batch seq_len dim optimizer=none precision=fp16 pass=fwd flops traffic ai compute_ms memory_ms roofline_ms tiles waves wave_eff l2_ms" |
		diff - "$BATS_TEST_TMPDIR/got"
}
