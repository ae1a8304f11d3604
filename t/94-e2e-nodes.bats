#!/usr/bin/env bats
# pipelines/e2e-nodes: pn's per-layer prediction joined with NeuSight's
# per-node latencies, grouped by node kind (fixtures: t/fixtures/e2e-nodes).

load test_helper

setup() {
	T=$BATS_TEST_TMPDIR
	F=$FIX/e2e-nodes
}

@test "pipelines/e2e-nodes breaks each case down by node kind" {
	run_io "$PN_ROOT/pipelines/e2e-nodes" --cases "$F/label-nodes.tsv" "$F/per-layer.tsv" "$F/cases.tsv"
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	diff "$F/expected-cases.tsv" "$T/out"
}

@test "pipelines/e2e-nodes: a case's errors add up to its whole-model error" {
	"$PN_ROOT/pipelines/e2e-nodes" --cases "$F/label-nodes.tsv" "$F/per-layer.tsv" "$F/cases.tsv" >"$T/out"
	awk -F'\t' 'NR > 1 { k = $1 " " $3 " " $5; s[k] += $10 } END { for (k in s) printf "%s %.6f\n", k, s[k] }' "$T/out" | sort >"$T/sums"
	awk -F'\t' 'NR > 1 { printf "%s %s %s %.6f\n", $1, $3, $5, $8 - $7 }' "$F/cases.tsv" | sort >"$T/cases"
	[ "$(wc -l <"$T/cases")" -eq 3 ]
	diff "$T/cases" "$T/sums"
}

@test "pipelines/e2e-nodes sums each device and mode over its cases" {
	run_io "$PN_ROOT/pipelines/e2e-nodes" "$F/label-nodes.tsv" "$F/per-layer.tsv" "$F/cases.tsv"
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	diff "$F/expected.tsv" "$T/out"
}

@test "pipelines/e2e-nodes refuses a case without per-node labels" {
	{ cat "$F/cases.tsv"; printf 'L4\ttoy\ttrain\t4\t8\tNA\t1\t1\t0\n'; } >"$T/cases.tsv"
	run_io "$PN_ROOT/pipelines/e2e-nodes" "$F/label-nodes.tsv" "$F/per-layer.tsv" "$T/cases.tsv"
	[ "$status" -eq 1 ]
	[ ! -s "$T/out" ]
	[ "$(cat "$T/err")" = "e2e-nodes: no nodes of case L4	toy	train	4	8	NA" ]
}

@test "pipelines/e2e-nodes with two files is a usage error" {
	run_io "$PN_ROOT/pipelines/e2e-nodes" "$F/label-nodes.tsv" "$F/per-layer.tsv"
	[ "$status" -eq 2 ]
	[ ! -s "$T/out" ]
	[ "$(cat "$T/err")" = "usage: pipelines/e2e-nodes [--cases] LABEL_NODES PER_LAYER CASES" ]
}
