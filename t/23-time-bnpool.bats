#!/usr/bin/env bats
# pn-time on the layers of CNNs beside the convolution: batchnorm (oneDNN
# batch normalization) and pool (max and avg pooling), checked against the
# plain-C reference and timed by phase; the cuda backend does not time
# them.  (t/20-time.bats runs them with every other layer type.)
load test_helper

POOL_HEAD='layer\top\tbatch\tin_channels\timage\tkernel\tstride\tpadding\tpass\toptimizer\tlearning_rate\n'
BN_HEAD='layer\tbatch\tin_channels\timage\tpass\toptimizer\tlearning_rate\n'

# pn-time --check on $BATS_TEST_TMPDIR/in: its stderr in $output, its rows
# in $BATS_TEST_TMPDIR/o
check() {
	run bash -c "pn-time -q -r 1 -w 0 --check '$BATS_TEST_TMPDIR/in' 2>&1 >'$BATS_TEST_TMPDIR/o'"
}

@test "pn-time --check passes a max pool training row with padding and overlapping windows" {
	printf "$POOL_HEAD" >"$BATS_TEST_TMPDIR/in"
	printf 'pool\tmax\t3\t5\t9\t3\t2\t1\ttrain\tnone\tNA\n' >>"$BATS_TEST_TMPDIR/in"
	check
	[ "$status" -eq 0 ]
	[[ "$output" == "pn-time: check pool: PASS (1 row, max relative error "* ]] || { echo "$output"; return 1; }
	[ "$(column "$BATS_TEST_TMPDIR/o" status)" = ok ]
}

@test "pn-time --check passes an avg pool training row, the padding counted as PyTorch does" {
	printf "$POOL_HEAD" >"$BATS_TEST_TMPDIR/in"
	printf 'pool\tavg\t3\t5\t9\t3\t2\t1\ttrain\tnone\tNA\n' >>"$BATS_TEST_TMPDIR/in"
	check
	[ "$status" -eq 0 ]
	[[ "$output" == "pn-time: check pool: PASS (1 row, max relative error "* ]] || { echo "$output"; return 1; }
	[ "$(column "$BATS_TEST_TMPDIR/o" status)" = ok ]
}

@test "pn-time --check passes a batchnorm training row: output, input gradient, scale and shift gradients" {
	printf "$BN_HEAD" >"$BATS_TEST_TMPDIR/in"
	printf 'batchnorm\t4\t6\t7\ttrain\tadam\t0.001\n' >>"$BATS_TEST_TMPDIR/in"
	check
	[ "$status" -eq 0 ]
	[[ "$output" == "pn-time: check batchnorm: PASS (1 row, max relative error "* ]] || { echo "$output"; return 1; }
	[ "$(column "$BATS_TEST_TMPDIR/o" status)" = ok ]
}

@test "pn-time --check passes a forward batchnorm row, normalized with the running statistics" {
	printf "$BN_HEAD" >"$BATS_TEST_TMPDIR/in"
	printf 'batchnorm\t4\t6\t7\tfwd\tnone\tNA\n' >>"$BATS_TEST_TMPDIR/in"
	check
	[ "$status" -eq 0 ]
	[[ "$output" == "pn-time: check batchnorm: PASS (1 row, max relative error "* ]] || { echo "$output"; return 1; }
}

@test "pn-time times a batchnorm training row's backward pass and its optimizer step" {
	printf "$BN_HEAD" >"$BATS_TEST_TMPDIR/in"
	printf 'batchnorm\t8\t16\t14\ttrain\tsgd\t0.01\n' >>"$BATS_TEST_TMPDIR/in"
	pn-time -q -r 2 "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" status)" = ok ]
	column "$BATS_TEST_TMPDIR/o" time_bwd_ms | awk '!($1 > 0) {exit 1}'
	column "$BATS_TEST_TMPDIR/o" time_opt_ms | awk '!($1 > 0) {exit 1}'
}

@test "pn-time times a pool training row's backward pass and no optimizer step, pool having no weights" {
	printf "$POOL_HEAD" >"$BATS_TEST_TMPDIR/in"
	printf 'pool\tmax\t8\t16\t14\t2\t2\t0\ttrain\tnone\tNA\n' >>"$BATS_TEST_TMPDIR/in"
	pn-time -q -r 2 "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" status)" = ok ]
	column "$BATS_TEST_TMPDIR/o" time_bwd_ms | awk '!($1 > 0) {exit 1}'
	[ "$(column "$BATS_TEST_TMPDIR/o" time_opt_ms)" = NA ]
}

@test "pn-time times a global average pool (kernel = image)" {
	printf "$POOL_HEAD" >"$BATS_TEST_TMPDIR/in"
	printf 'pool\tavg\t4\t32\t7\t7\t1\t0\tfwd\tnone\tNA\n' >>"$BATS_TEST_TMPDIR/in"
	check
	[ "$status" -eq 0 ]
	[ "$(column "$BATS_TEST_TMPDIR/o" status)" = ok ]
}

@test "pn-time marks batchnorm and pool rows invalid on the cuda backend" {
	printf 'layer\tbatch\tm\tn\tk\nbmm\t1\t1\t1\t1\n' | pn-time -q --backend cuda >/dev/null 2>&1 ||
		skip "no CUDA device"
	printf "$BN_HEAD" >"$BATS_TEST_TMPDIR/in"
	printf 'batchnorm\t4\t6\t7\ttrain\tsgd\t0.01\n' >>"$BATS_TEST_TMPDIR/in"
	pn-time -q -r 1 --backend cuda "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" status)" = invalid ]
	[ "$(column "$BATS_TEST_TMPDIR/o" message)" = "batchnorm is not timed by the cuda backend" ]
	printf "$POOL_HEAD" >"$BATS_TEST_TMPDIR/in"
	printf 'pool\tmax\t3\t5\t9\t3\t2\t1\ttrain\tnone\tNA\n' >>"$BATS_TEST_TMPDIR/in"
	pn-time -q -r 1 --backend cuda "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" message)" = "pool is not timed by the cuda backend" ]
}
