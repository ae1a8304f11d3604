#!/usr/bin/env bats
# pn-sum: the warning for rows in a precision that no model was fitted on.
load test_helper

F="$FIX/sum"
G="--gpuspecs $FIX/sum/gpus.tsv"

setup_file() {
	pn-featurize $G "$F/bmm-train.tsv" |
		pn-fit -f lr -F flops -o "$BATS_FILE_TMPDIR/bmm.model"
}

# net PRECISION: mixed.tsv (one bmm row, one mem row) in PRECISION
net() {
	awk -F'\t' -v OFS='\t' -v p="$1" '{ print $0, NR == 1 ? "precision" : p }' "$F/mixed.tsv"
}

@test "pn-sum says once that fp16 rows predicted by the roofline were never checked at that precision" {
	net fp16 >"$BATS_TEST_TMPDIR/n.tsv"
	run_io pn-sum --fallback roofline $G -d UNIT,HALF "$BATS_TEST_TMPDIR/n.tsv"
	[ "$status" -eq 0 ]
	[ "$(cat "$T/err")" = "pn-sum: warning: $BATS_TEST_TMPDIR/n.tsv: no model was fitted on precision fp16: 2 rows predicted by the roofline (checked against fp32 measurements only), 0 extrapolated by a model" ]
	[ "$(wc -l <"$T/out")" -eq 3 ]
}

@test "pn-sum says nothing about fp32 rows" {
	net fp32 >"$BATS_TEST_TMPDIR/n.tsv"
	run_io pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" --fallback roofline $G -d UNIT "$BATS_TEST_TMPDIR/n.tsv"
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
}

@test "pn-sum counts rows that a model without recorded precisions extrapolates to bf16" {
	net bf16 >"$BATS_TEST_TMPDIR/n.tsv"
	run_io pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" --fallback roofline $G -d UNIT "$BATS_TEST_TMPDIR/n.tsv"
	[ "$status" -eq 0 ]
	[ "$(cat "$T/err")" = "pn-sum: warning: $BATS_TEST_TMPDIR/n.tsv: no model was fitted on precision bf16: 1 row predicted by the roofline (checked against fp32 measurements only), 1 extrapolated by a model" ]
}

@test "pn-sum takes a model's 'info precisions' line as the precisions it was fitted on" {
	sed 's/^body$/info precisions fp16,fp32\nbody/' "$BATS_FILE_TMPDIR/bmm.model" >"$BATS_TEST_TMPDIR/m"
	grep -qx 'info precisions fp16,fp32' "$BATS_TEST_TMPDIR/m"
	awk -F'\t' -v OFS='\t' '{ print $0, NR == 1 ? "precision" : "fp16" }' "$F/bmm.tsv" >"$BATS_TEST_TMPDIR/n.tsv"
	run_io pn-sum -m "$BATS_TEST_TMPDIR/m" $G -d UNIT "$BATS_TEST_TMPDIR/n.tsv"
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	sed 's/^body$/info precisions fp32\nbody/' "$BATS_FILE_TMPDIR/bmm.model" >"$BATS_TEST_TMPDIR/m"
	run_io pn-sum -m "$BATS_TEST_TMPDIR/m" $G -d UNIT "$BATS_TEST_TMPDIR/n.tsv"
	[ "$status" -eq 0 ]
	[ "$(cat "$T/err")" = "pn-sum: warning: $BATS_TEST_TMPDIR/n.tsv: no model was fitted on precision fp16: 0 rows predicted by the roofline (checked against fp32 measurements only), 1 extrapolated by a model" ]
}
