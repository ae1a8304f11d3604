#!/usr/bin/env bats
# pipelines/collect-cpu on a few tiny dense rows (REPS=1, no warm-up).

load test_helper

# collect OUT [VAR=VALUE...]: three dense rows of at most 1e6 flops
collect() {
	local out=$1
	shift
	env N=3 TYPES=dense REPS=1 WARMUP=0 MAX_FLOPS=1e6 "$@" \
		"$PN_ROOT/pipelines/collect-cpu" "$out" 2>"$BATS_TEST_TMPDIR/err"
}

@test "pipelines/collect-cpu draws from the ranges in RANGES and says so in its README" {
	collect "$BATS_TEST_TMPDIR/o" RANGES="batch=100:100"
	zcat "$BATS_TEST_TMPDIR/o/dense.tsv.gz" >"$BATS_TEST_TMPDIR/d.tsv"
	[ "$(column "$BATS_TEST_TMPDIR/d.tsv" batch | sort -u)" = 100 ]
	grep -q 'with the ranges batch=100:100' "$BATS_TEST_TMPDIR/o/README.md"
}

@test "pipelines/collect-cpu without RANGES draws PreNeT's Table 3 batch of 1 to 64" {
	collect "$BATS_TEST_TMPDIR/o"
	zcat "$BATS_TEST_TMPDIR/o/dense.tsv.gz" >"$BATS_TEST_TMPDIR/d.tsv"
	[ "$(column "$BATS_TEST_TMPDIR/d.tsv" batch | wc -l)" = 3 ]
	column "$BATS_TEST_TMPDIR/d.tsv" batch | awk '!($1 >= 1 && $1 <= 64) { exit 1 }'
	! grep -q 'with the ranges' "$BATS_TEST_TMPDIR/o/README.md"
}

@test "pipelines/collect-cpu draws the values in CHOICES and says so in its README" {
	collect "$BATS_TEST_TMPDIR/o" CHOICES="input_grad=0"
	zcat "$BATS_TEST_TMPDIR/o/dense.tsv.gz" >"$BATS_TEST_TMPDIR/d.tsv"
	# 0 on the train rows (all three of seed 1's), NA on forward rows
	[ "$(column "$BATS_TEST_TMPDIR/d.tsv" input_grad | sort -u)" = 0 ]
	grep -q 'and the values input_grad=0 drawn' "$BATS_TEST_TMPDIR/o/README.md"
}
