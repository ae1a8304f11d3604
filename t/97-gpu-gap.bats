#!/usr/bin/env bats
# pipelines/gpu-gap: the whole-model gap (label minus the sum of its nodes)
# per case, its fits, and the framework profile it gives (fixtures:
# t/fixtures/gpu-gap).

load test_helper

setup() {
	T=$BATS_TEST_TMPDIR
	F=$FIX/gpu-gap
	mkdir -p "$T/graphs"
	for f in "$F"/graphs/*.tsv; do gzip -c "$f" >"$T/graphs/$(basename "$f").gz"; done
	export GPUS=P4,T4 LABELS=$F/labels.tsv NODES=$F/label-nodes.tsv GRAPHS=$T/graphs
}

@test "pipelines/gpu-gap sets each case's label beside its nodes and kernels" {
	run_io "$PN_ROOT/pipelines/gpu-gap" "$T/o"
	[ "$status" -eq 0 ]
	[ "$(cat "$T/err")" = "gpu-gap: skipped case P4 nograph-inf-4-8: no graph" ]
	diff "$F/expected-cases.tsv" "$T/o/cases.tsv"
}

@test "pipelines/gpu-gap fits the gap per kernel of each GPU, without each, and of all" {
	run_io "$PN_ROOT/pipelines/gpu-gap" "$T/o"
	[ "$status" -eq 0 ]
	diff "$F/expected-fit.tsv" "$T/o/fit.tsv"
	# P4's one case: 0.34 ms over 11 kernels; no two-term fit of one case
	[ "$(awk -F'\t' '$1 == "P4" { printf "%.3f %.4f %s %s", $4, $5, $6, $7 }' "$T/o/fit.tsv")" = "30.909 0.2048 NA NA" ]
	grep -qx '| all | P4,T4 | 3 | 20.2 | 0.144 | 0.086 | 8.3 | 14.8 |' "$T/out"
}

@test "pipelines/gpu-gap writes a profile that pn-sum adds per kernel" {
	run_io "$PN_ROOT/pipelines/gpu-gap" "$T/o"
	[ "$status" -eq 0 ]
	[ "$(column "$T/o/profile.tsv" cost | paste -sd' ')" = "step dense.fwd dense.bwd elementwise.fwd elementwise.bwd" ]
	[ "$(column "$T/o/profile.tsv" us | sort -u | paste -sd' ')" = "0 20.17" ]
	# the toy training graph's 11 kernels at 20.17 us
	pn-sum --fallback roofline -d P4 --framework "$T/o/profile.tsv" "$T/graphs/toy-train-4-8.tsv.gz" >"$T/sum"
	[ "$(column "$T/sum" overhead_ms | awk '{ printf "%.5f", $1 }')" = 0.22187 ]
}

@test "pipelines/gpu-gap gives no cost below 0 when the nodes exceed the label" {
	run_io env GPUS=L4 "$PN_ROOT/pipelines/gpu-gap" "$T/o"
	[ "$status" -eq 0 ]
	[ "$(awk -F'\t' '$1 == "all" { print $4 }' "$T/o/fit.tsv")" = -30 ]
	[ "$(column "$T/o/profile.tsv" us | sort -u)" = 0 ]
	[ "$(column "$T/o/profile.tsv" what | sed -n 2p)" = "per kernel: the whole-model gap of L4, -30 us by least squares, below 0: none" ]
}

@test "pipelines/gpu-gap corrects LOGO's predictions of each GPU by the fits without it" {
	run_io env LOGO="$F/logo-cases.tsv" "$PN_ROOT/pipelines/gpu-gap" "$T/o"
	[ "$status" -eq 0 ]
	diff "$F/expected-logo.tsv" "$T/o/logo.tsv"
	# P4 by T4's c (16.414 us x 11 kernels), T4 by P4's (30.909 us x 4):
	# APE 0.972 and 17.662; L4 by the fit of all (20.172 us x 4): 60.229
	[ "$(awk -F'\t' '$1 == "c" { printf "%.3f ", $5 }' "$T/o/logo.tsv")" = "9.317 60.229 " ]
	# P4 alone has no two-term fit: T4's ab has none, nor the LOGO mean
	[ "$(awk -F'\t' '$1 == "ab" && $2 == "LOGO" { print $4, $5 }' "$T/o/logo.tsv")" = "2 NA" ]
	grep -qx '| c | LOGO | all | 2 | 9.32 | NA |' "$T/out"
}

@test "pipelines/gpu-gap refuses a LOGO it cannot read" {
	run_io env LOGO="$T/none.tsv" "$PN_ROOT/pipelines/gpu-gap" "$T/o"
	[ "$status" -eq 1 ]
	[ "$(tail -1 "$T/err")" = "gpu-gap: LOGO: $T/none.tsv: cannot read" ]
}

@test "pipelines/gpu-gap refuses a case without a label" {
	{ cat "$F/label-nodes.tsv"; printf 'P4\tother\tinf\t4\t8\tNA\tfc\tLinear\t1\t0.5\t0\t0\n'; } >"$T/nodes.tsv"
	run_io env NODES="$T/nodes.tsv" "$PN_ROOT/pipelines/gpu-gap" "$T/o"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "gpu-gap: no label of case P4	other	inf	4	8	NA" ]
}

@test "pipelines/gpu-gap fails when no case is of GPUS" {
	run_io env GPUS=V100-PCIE-32GB "$PN_ROOT/pipelines/gpu-gap" "$T/o"
	[ "$status" -eq 1 ]
	[ "$(tail -1 "$T/err")" = "gpu-gap: no case of V100-PCIE-32GB" ]
}
