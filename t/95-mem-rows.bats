#!/usr/bin/env bats
# pipelines/mem-rows: mem training rows from bandwidth-bound elementwise rows
# (fixtures: t/fixtures/mem-rows).

load test_helper

setup() {
	T=$BATS_TEST_TMPDIR
	F=$FIX/mem-rows
	pn-featurize "$F/elementwise.tsv" >"$T/in.tsv"
}

@test "pipelines/mem-rows keeps the cheap ops above the floor, as mem rows of their traffic" {
	run_io "$PN_ROOT/pipelines/mem-rows" "$T/in.tsv"
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	diff "$F/expected.tsv" "$T/out"
}

@test "pipelines/mem-rows reads standard input" {
	run_io bash -c '"$1" <"$2"' _ "$PN_ROOT/pipelines/mem-rows" "$T/in.tsv"
	[ "$status" -eq 0 ]
	diff "$F/expected.tsv" "$T/out"
}

@test "pipelines/mem-rows takes the floor from MIN_MS" {
	MIN_MS=0.1 run_io "$PN_ROOT/pipelines/mem-rows" "$T/in.tsv"
	[ "$status" -eq 0 ]
	[ "$(column elements "$T/out")" = 12582912 ]
}

@test "pipelines/mem-rows fails when no row is left" {
	MIN_MS=10 run_io "$PN_ROOT/pipelines/mem-rows" "$T/in.tsv"
	[ "$status" -eq 1 ]
	[ ! -s "$T/out" ]
	[ "$(cat "$T/err")" = "mem-rows: no elementwise row of add, addu, mul, mulu or relu with memory_ms >= 10" ]
}

@test "pipelines/mem-rows refuses a floor that is not a number" {
	MIN_MS=abc run_io "$PN_ROOT/pipelines/mem-rows" "$T/in.tsv"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "mem-rows: MIN_MS must be a number of milliseconds, not 'abc'" ]
}
