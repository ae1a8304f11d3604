#!/usr/bin/env bats
# pn-time on the layers of CNNs beside the convolution: batchnorm (PyTorch's
# NCHW batch-norm loops) and pool (max and avg pooling as PyTorch's scalar
# NCHW loops), checked against the
# plain-C reference and timed by phase, and on a CUDA device checked
# against the cpu backend.  (t/20-time.bats runs them with every other
# layer type.)
load test_helper

POOL_HEAD='layer\top\tbatch\tin_channels\timage\tkernel\tstride\tpadding\tpass\toptimizer\tlearning_rate\n'
BN_HEAD='layer\tbatch\tin_channels\timage\tpass\toptimizer\tlearning_rate\n'

# pn-time --check on $BATS_TEST_TMPDIR/in: its stderr in $output, its rows
# in $BATS_TEST_TMPDIR/o
check() {
	run bash -c "pn-time -q -r 1 -w 0 --check '$BATS_TEST_TMPDIR/in' 2>&1 >'$BATS_TEST_TMPDIR/o'"
}

# passes TYPE HEAD ROW: the one row ROW of TYPE under HEAD passes --check
passes() {
	printf "$2" >"$BATS_TEST_TMPDIR/in"
	printf "$3" >>"$BATS_TEST_TMPDIR/in"
	check
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ "$output" == "pn-time: check $1: PASS (1 row, max relative error "* ]] || { echo "$output"; return 1; }
	[ "$(column "$BATS_TEST_TMPDIR/o" status)" = ok ]
}

@test "pn-time --check passes a max pool training row with padding and overlapping windows" {
	passes pool "$POOL_HEAD" 'pool\tmax\t3\t5\t9\t3\t2\t1\ttrain\tnone\tNA\n'
}

@test "pn-time --check passes an avg pool training row, the padding counted as PyTorch does" {
	passes pool "$POOL_HEAD" 'pool\tavg\t3\t5\t9\t3\t2\t1\ttrain\tnone\tNA\n'
}

@test "pn-time --check passes a global average pool (kernel = image)" {
	passes pool "$POOL_HEAD" 'pool\tavg\t4\t32\t7\t7\t1\t0\tfwd\tnone\tNA\n'
}

@test "pn-time --check passes a batchnorm training row: output, input gradient, scale and shift gradients" {
	passes batchnorm "$BN_HEAD" 'batchnorm\t4\t6\t7\ttrain\tadam\t0.001\n'
}

@test "pn-time --check passes a forward batchnorm row, normalized with the running statistics" {
	passes batchnorm "$BN_HEAD" 'batchnorm\t4\t6\t7\tfwd\tnone\tNA\n'
}

# timed HEAD ROW: pn-time on the one row ROW under HEAD, in
# $BATS_TEST_TMPDIR/o; its status ok and its backward pass timed
timed() {
	printf "$1" >"$BATS_TEST_TMPDIR/in"
	printf "$2" >>"$BATS_TEST_TMPDIR/in"
	pn-time -q -r 2 "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" status)" = ok ]
	column "$BATS_TEST_TMPDIR/o" time_bwd_ms | awk '!($1 > 0) {exit 1}'
}

@test "pn-time times a batchnorm training row's backward pass and its optimizer step" {
	timed "$BN_HEAD" 'batchnorm\t8\t16\t14\ttrain\tsgd\t0.01\n'
	column "$BATS_TEST_TMPDIR/o" time_opt_ms | awk '!($1 > 0) {exit 1}'
}

@test "pn-time times a pool training row's backward pass and no optimizer step, pool having no weights" {
	timed "$POOL_HEAD" 'pool\tmax\t8\t16\t14\t2\t2\t0\ttrain\tnone\tNA\n'
	[ "$(column "$BATS_TEST_TMPDIR/o" time_opt_ms)" = NA ]
}

@test "pn-time pools with PyTorch's NCHW loops, a max pool writing an int64 index of every maximum, forward too" {
	# 2 x 3 channels of 8 x 8 pooled 2 x 2 / 2: 96 outputs, 768 bytes of
	# indices that the avg pool does not keep
	printf "$POOL_HEAD" >"$BATS_TEST_TMPDIR/in"
	printf 'pool\t%s\t2\t3\t8\t2\t2\t0\tfwd\tnone\tNA\n' max avg >>"$BATS_TEST_TMPDIR/in"
	pn-time -q -r 1 -w 0 "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" message | sort -u)" = c:nchw ]
	[ "$(column "$BATS_TEST_TMPDIR/o" mem_bytes | awk 'NR == 1 { a = $1 } NR == 2 { print a - $1 }')" -eq 768 ]
}

@test "pn-time normalizes a batch with PyTorch's NCHW loops, not oneDNN's primitive, in training and forward" {
	printf "$BN_HEAD" >"$BATS_TEST_TMPDIR/in"
	printf 'batchnorm\t2\t3\t8\t%b\n' 'train\tsgd\t0.01' 'fwd\tnone\tNA' >>"$BATS_TEST_TMPDIR/in"
	pn-time -q -r 1 -w 0 "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" status | sort -u)" = ok ]
	[ "$(column "$BATS_TEST_TMPDIR/o" message | sort -u)" = c:nchw ]
}

@test "pn-time --check passes batchnorm and pool rows on the cuda backend" {
	printf 'layer\tbatch\tm\tn\tk\nbmm\t1\t1\t1\t1\n' | pn-time -q --backend cuda >/dev/null 2>&1 ||
		skip "no CUDA device"
	printf "$BN_HEAD" >"$BATS_TEST_TMPDIR/in"
	printf 'batchnorm\t4\t6\t7\t%b\n' 'train\tsgd\t0.01' 'fwd\tnone\tNA' >>"$BATS_TEST_TMPDIR/in"
	pn-time -q -r 1 --check --backend cuda "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" status | sort -u)" = ok ]
	printf "$POOL_HEAD" >"$BATS_TEST_TMPDIR/in"
	printf 'pool\t%s\t3\t5\t9\t3\t2\t1\ttrain\tnone\tNA\n' max avg >>"$BATS_TEST_TMPDIR/in"
	pn-time -q -r 1 --check --backend cuda "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" status | sort -u)" = ok ]
}
