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

@test "pipelines/e2e-logo breaks the left-out GPU's cases down by node kind" {
	run_io env FIT=P4,P100-PCIE-16GB,T4 OUT=P4 ROWS=200 "$PN_ROOT/pipelines/e2e-logo" "$T/o"
	[ "$status" -eq 0 ] || { cat "$T/err"; return 1; }
	# P4's three inference labels all have per-node labels: 15 groups
	[ "$(column "$T/o/nodes.tsv" device | sort | uniq -c | awk '{ print $1, $2 }')" = "15 P4" ]
	[ "$(awk -F'\t' '$3 == "whole-model gap" { print $4 }' "$T/o/nodes.tsv")" = 3 ]
	# the groups' errors add up to the cases' whole-model error (cases.tsv
	# holds each time to 6 digits)
	[ "$(awk -F'\t' 'NR > 1 { s += $7 } END { printf "%.2f", s }' "$T/o/nodes.tsv")" = \
		"$(awk -F'\t' 'NR > 1 { s += $9 - $8 } END { printf "%.2f", s }' "$T/o/cases.tsv")" ]
	grep -qx '| P4 | inf | whole-model gap | 3 | .*' "$T/out"
}

@test "pipelines/e2e-logo predicts a GPU of FIT that is also unseen once" {
	run_io env FIT=P4,T4,L4 OUT=L4,T4,L4 ROWS=200 "$PN_ROOT/pipelines/e2e-logo" "$T/o"
	[ "$status" -eq 0 ] || { cat "$T/err"; return 1; }
	# L4's 11 inference and 3 training labels, each once
	[ "$(column "$T/o/cases.tsv" device | sort | uniq -c | awk '{ print $1, $2 }' | paste -sd,)" = "14 L4,5 T4" ]
}

@test "pipelines/e2e-logo predicts a GPU outside FIT by the fit on all of FIT" {
	run_io env FIT=P4,T4 OUT=L4 ROWS=200 "$PN_ROOT/pipelines/e2e-logo" "$T/o"
	[ "$status" -eq 0 ] || { cat "$T/err"; return 1; }
	[ "$(column "$T/o/summary.tsv" fitted_on | sort -u)" = P4,T4 ]
	[ "$(grep -c '^e2e-logo: all: ' "$T/err")" -eq 6 ]
}

@test "pipelines/e2e-logo writes pn's per-layer rows of every case, fused ones too" {
	run_io env FIT=P4,T4 OUT=L4 ROWS=200 "$PN_ROOT/pipelines/e2e-logo" "$T/o"
	[ "$status" -eq 0 ] || { cat "$T/err"; return 1; }
	awk -F'\t' 'NR > 1 { print $1, $2, $3, $4, $5, $6 }' "$T/o/cases.tsv" | sort >"$T/cases"
	awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
		{ print $h["device"], $h["case_model"], $h["case_mode"], $h["case_seq"], $h["case_batch"], $h["case_variant"] }' \
		"$T/o/per-layer.tsv" | sort -u >"$T/rowed"
	diff "$T/cases" "$T/rowed"
	grep -q ' fusion$' "$T/rowed"
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

@test "pipelines/e2e-logo adds FRAMEWORK's costs to every prediction" {
	env FIT=P4,P100-PCIE-16GB,T4 OUT=P4 ROWS=200 "$PN_ROOT/pipelines/e2e-logo" "$T/o" >/dev/null 2>&1
	# 1 ms on every fwd and bwd row (times its repeat): each case's kernels
	{
		printf 'cost\tus\nstep\t0\n'
		for l in dense bmm layernorm softmax elementwise mem; do printf '%s.fwd\t1000\n%s.bwd\t1000\n' "$l" "$l"; done
	} >"$T/ms.tsv"
	run_io env FIT=P4,P100-PCIE-16GB,T4 OUT=P4 ROWS=200 FRAMEWORK="$T/ms.tsv" "$PN_ROOT/pipelines/e2e-logo" "$T/f"
	[ "$status" -eq 0 ] || { cat "$T/err"; return 1; }
	grep -qxF "* framework profile (pn-sum --framework): $T/ms.tsv" "$T/out"
	# bert_large inf 512 16 and 8 (521 kernels), gpt2_large inf 1024 4 (1233)
	paste <(column "$T/o/cases.tsv" pn_ms) <(column "$T/f/cases.tsv" pn_ms) |
		awk -F'\t' '{ printf "%.6f\n", $2 - $1 }' >"$T/added"
	[ "$(paste -sd' ' "$T/added")" = "521.000000 521.000000 1233.000000" ]
}

@test "pipelines/e2e-logo refuses a FRAMEWORK it cannot read" {
	run_io env FRAMEWORK="$T/none.tsv" "$PN_ROOT/pipelines/e2e-logo" "$T/o"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "e2e-logo: FRAMEWORK: $T/none.tsv: cannot read" ]
}

@test "pipelines/e2e-logo fits pn's method of pipelines/lib.sh by default" {
	run_io env FIT=P4,P100-PCIE-16GB,T4 OUT=P4 ROWS=200 "$PN_ROOT/pipelines/e2e-logo" "$T/o"
	[ "$status" -eq 0 ] || { cat "$T/err"; return 1; }
	method=$(. "$PN_ROOT/pipelines/lib.sh"; echo "-F $method_features --relative=$method_base")
	[ "$method" = "-F power --relative=power_roofline_ms" ]
	grep -qF "; $method, xgb " "$T/out"
}

@test "pipelines/e2e-logo fits FEATURES relative to BASE where they are set" {
	env FIT=P4,P100-PCIE-16GB,T4 OUT=P4 ROWS=200 "$PN_ROOT/pipelines/e2e-logo" "$T/o" >/dev/null 2>&1
	run_io env FIT=P4,P100-PCIE-16GB,T4 OUT=P4 ROWS=200 FEATURES=rel BASE=roofline_ms "$PN_ROOT/pipelines/e2e-logo" "$T/r"
	[ "$status" -eq 0 ] || { cat "$T/err"; return 1; }
	grep -qF "; -F rel --relative=roofline_ms, xgb " "$T/out"
	# the P4 (75 W, 5.5 TFLOP/s: 13.6 W per TFLOP/s) runs below its listed
	# clock in the power set, so the two sets predict it differently
	! cmp -s <(column "$T/o/cases.tsv" pn_ms) <(column "$T/r/cases.tsv" pn_ms)
}
