#!/usr/bin/env bats
# pipelines/e2e-logo: whole models on a GPU left out of training (on the
# shipped NeuSight data, with few rows per fit so that it stays quick).

load test_helper

setup() {
	T=$BATS_TEST_TMPDIR
}

@test "pipelines/e2e-logo predicts a GPU's whole models by the fit without it" {
	run_io env FIT=P4,P100-PCIE-16GB,T4 OUT=P4 ROWS=200 "$PN_ROOT/pipelines/e2e-logo" "$T/o"
	[ "$status" -eq 0 ] || { cat "$T/err"; return 1; }
	# P4's three inference labels, by the fit on P100 and T4 alone
	[ "$(column "$T/o/summary.tsv" device)" = P4 ]
	[ "$(column "$T/o/summary.tsv" n)" = 3 ]
	[ "$(column "$T/o/summary.tsv" fitted_on)" = P100-PCIE-16GB,T4 ]
	[ "$(column "$T/o/cases.tsv" device | sort -u)" = P4 ]
	[ "$(column "$T/o/cases.tsv" pn_ms | grep -cvE '^[0-9.e+-]+$')" -eq 0 ]
	# six op types fitted, the rows of P4 never among them
	[ "$(grep -c '^e2e-logo: without-P4: ' "$T/err")" -eq 6 ]
	grep -qx '| P4 | inf | 3 | .* | P100-PCIE-16GB,T4 |' "$T/out"
}

@test "pipelines/e2e-logo predicts a GPU outside FIT by the fit on all of FIT" {
	run_io env FIT=P4,T4 OUT=L4 ROWS=200 "$PN_ROOT/pipelines/e2e-logo" "$T/o"
	[ "$status" -eq 0 ] || { cat "$T/err"; return 1; }
	[ "$(column "$T/o/summary.tsv" fitted_on | sort -u)" = P4,T4 ]
	[ "$(grep -c '^e2e-logo: all: ' "$T/err")" -eq 6 ]
}

@test "pipelines/e2e-logo refuses a ROWS that is not a whole number" {
	run_io env ROWS=many "$PN_ROOT/pipelines/e2e-logo" "$T/o"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "e2e-logo: ROWS must be a whole number, not 'many'" ]
}

@test "pipelines/e2e-logo fails on a GPU without whole-model labels" {
	run_io env FIT=P4,T4 OUT=P40 ROWS=200 "$PN_ROOT/pipelines/e2e-logo" "$T/o"
	[ "$status" -eq 1 ]
	[ "$(tail -1 "$T/err")" = "e2e-logo: no whole-model label of P40" ]
}
