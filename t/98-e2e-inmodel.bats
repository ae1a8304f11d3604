#!/usr/bin/env bats
# pipelines/e2e-inmodel: in-model / standalone time per node, the spec-sheet
# fit of it, and its whole-model test (on the shipped NeuSight data, four
# cases: bert_large inference, 512 tokens, batch 8, on P4, P100, T4, L4).

load test_helper

setup_file() {
	D=$BATS_FILE_TMPDIR
	zcat "$PN_ROOT/samples/neusight/label-nodes.tsv.gz" |
		awk -F'\t' 'NR == 1 || ($1 ~ /^(P4|P100-PCIE-16GB|T4|L4)$/ && $2 == "bert_large" && $3 == "inf" && $5 == 8)' >"$D/nodes.tsv"
	NODES="$D/nodes.tsv" "$PN_ROOT/pipelines/e2e-inmodel" "$D/o" >"$D/out" 2>"$D/err"
}

setup() {
	D=$BATS_FILE_TMPDIR
	T=$BATS_TEST_TMPDIR
}

# node DEVICE NAME COLUMN: the value of COLUMN in nodes.tsv's row of that node
node() {
	awk -F'\t' -v d="$1" -v n="$2" -v c="$3" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
		$1 == d && $8 == n { print $h[c] }' "$D/o/nodes.tsv"
}

@test "pipelines/e2e-inmodel divides a node's in-model time by its shape measured alone" {
	[ -s "$D/o/nodes.tsv" ] || { cat "$D/err"; return 1; }
	n=bert_encoder_layer_0_attention_self_query
	# the T4's fw_ms of the node, and its dense 4096 x 1024 -> 1024 alone
	inm=$(awk -F'\t' -v n="$n" '$1 == "T4" && $7 == n { print $10 }' "$D/nodes.tsv")
	alone=$(zcat "$PN_ROOT/samples/neusight/test/dense.tsv.gz" |
		awk -F'\t' '$10 == "T4" && $2 == 4096 && $3 == 1024 && $4 == 1024 { s += $11; k++ } END { print s / k }')
	[ "$(node T4 "$n" alone_source)" = measured ]
	[ "$(node T4 "$n" kind)" = dense ]
	near "$(node T4 "$n" inmodel_ms)" "$inm"
	NEAR_TOL=1e-6 near "$(node T4 "$n" alone_ms)" "$alone"
	NEAR_TOL=1e-5 near "$(node T4 "$n" ratio)" "$(awk -v a="$inm" -v b="$alone" 'BEGIN { print a / b }')"
}

@test "pipelines/e2e-inmodel takes pn's prediction for a shape never measured alone" {
	# P4's embedding-mask product (elementwise mulu on 8 x 512): no P4 row
	[ "$(node P4 mul alone_source)" = model ]
	[ "$(node P4 mul kind)" = vector ]
	pn-sum -p -m "$PN_ROOT/samples/models/neusight-gpu.models.gz" --fallback roofline -d P4 \
		"$PN_ROOT/samples/neusight/graphs/bert_large-inf-512-8.tsv.gz" 2>/dev/null >"$T/rows"
	NEAR_TOL=1e-6 near "$(node P4 mul alone_ms)" "$(awk -F'\t' '$1 == "mul" && $3 == "fwd" { print $23 }' "$T/rows")"
}

@test "pipelines/e2e-inmodel gives each GPU, mode and kind its nodes' median ratio and quartiles" {
	awk -F'\t' '$1 == "T4" && $9 == "dense" { print $14 }' "$D/o/nodes.tsv" | sort -g >"$T/r"
	k=$(wc -l <"$T/r")
	[ "$k" -gt 4 ]
	row=$(awk -F'\t' '$1 == "T4" && $3 == "inf" && $4 == "dense"' "$D/o/ratios.tsv")
	[ "$(echo "$row" | cut -f5)" = "$k" ]
	# the median (k odd: the middle value; even: the mean of the two)
	med=$(awk -v k="$k" '{ v[NR] = $1 } END { print k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2 }' "$T/r")
	NEAR_TOL=1e-5 near "$(echo "$row" | cut -f7)" "$med"
	grep -q '^| T4 | train | inf | dense | ' "$D/out"
}

@test "pipelines/e2e-inmodel predicts a training GPU's ratio from the other training GPUs" {
	# quantity mean: exp of the mean ln(median over measured nodes) of P4 and P100
	m() { awk -F'\t' -v d="$1" '$1 == d && $4 == "dense" { print $10 }' "$D/o/ratios.tsv"; }
	want=$(awk -v a="$(m P4)" -v b="$(m P100-PCIE-16GB)" 'BEGIN { print exp((log(a) + log(b)) / 2) }')
	got=$(awk -F'\t' '$1 == "dense" && $2 == "mean" && $3 == "T4" { print $7 }' "$D/o/spec.tsv")
	NEAR_TOL=1e-5 near "$got" "$want"
	# the unseen L4: from all three; quantity one: 1
	want=$(awk -v a="$(m P4)" -v b="$(m P100-PCIE-16GB)" -v c="$(m T4)" 'BEGIN { print exp((log(a) + log(b) + log(c)) / 3) }')
	NEAR_TOL=1e-5 near "$(awk -F'\t' '$1 == "dense" && $2 == "mean" && $3 == "L4" { print $7 }' "$D/o/spec.tsv")" "$want"
	[ "$(awk -F'\t' '$2 == "one" { print $7 }' "$D/o/spec.tsv" | sort -u)" = 1 ]
	# boost_base: ln(ratio) on the line through P4's and P100's
	# (boost_mhz / base_mhz of gpuspecs: 1114 / 886, 1303 / 1126, T4 1590 / 585)
	want=$(awk -v a="$(m P4)" -v b="$(m P100-PCIE-16GB)" 'BEGIN { xa = 1114 / 886; xb = 1303 / 1126; x = 1590 / 585
		print exp(log(a) + (log(b) - log(a)) / (xb - xa) * (x - xa)) }')
	NEAR_TOL=1e-5 near "$(awk -F'\t' '$1 == "dense" && $2 == "boost_base" && $3 == "T4" { print $7 }' "$D/o/spec.tsv")" "$want"
	# three training GPUs left out in turn, per kind and quantity
	[ "$(awk -F'\t' '$1 == "dense" && $2 == "mean" { print $3 }' "$D/o/spec-logo.tsv")" = 3 ]
}

# logo DIR: a pipelines/e2e-logo output of two cases, P100 and L4, with
# 10 ms of dense rows, 1 ms of bmm and 2 ms of mem each
logo() {
	mkdir -p "$1"
	printf 'device\tmodel\tmode\tseq\tbatch\tvariant\tfitted_on\tmeasured_ms\tpn_ms\tpn_ape\n' >"$1/cases.tsv"
	printf 'P100-PCIE-16GB\ttoy\tinf\t4\t8\tNA\tP4,T4\t12\t13\t8.33\nL4\ttoy\tinf\t4\t8\tNA\tP4,T4\t10\t13\t30\n' >>"$1/cases.tsv"
	printf 'case_model\tcase_mode\tcase_seq\tcase_batch\tcase_variant\tname\tlayer\tdevice\ttotal_ms\n' >"$1/per-layer.tsv"
	for d in P100-PCIE-16GB L4; do
		printf 'toy\tinf\t4\t8\tNA\tfc\tdense\t%s\t6\ntoy\tinf\t4\t8\tNA\tfc2\tdense\t%s\t4\n' "$d" "$d"
		printf 'toy\tinf\t4\t8\tNA\tmm\tbmm\t%s\t1\ntoy\tinf\t4\t8\tNA\tdrop\tmem\t%s\t2\n' "$d" "$d"
	done >>"$1/per-layer.tsv"
}

@test "pipelines/e2e-inmodel with LOGO scales each kind's rows by its GPU's predicted ratio" {
	logo "$T/logo"
	run_io env NODES="$D/nodes.tsv" LOGO="$T/logo" "$PN_ROOT/pipelines/e2e-inmodel" "$T/o"
	[ "$status" -eq 0 ] || { cat "$T/err"; return 1; }
	f() { awk -F'\t' -v k="$1" -v q="$2" -v d="$3" '$1 == k && $2 == q && $3 == d { print $7 }' "$T/o/spec.tsv"; }
	w() { awk -F'\t' -v q="$1" -v k="$2" -v d="$3" -v c="$4" '$1 == q && $2 == k && $3 == d { print $c }' "$T/o/wholemodel.tsv"; }
	# no factor: pn's own APE
	NEAR_TOL=1e-6 near "$(w one all L4 7)" 30
	# dense rows (10 ms) times the L4's factor; all: the bmm row (1 ms) too
	fd=$(f dense boost_base L4) fb=$(f bmm boost_base L4)
	NEAR_TOL=1e-6 near "$(w boost_base dense L4 7)" "$(awk -v f="$fd" 'BEGIN { p = 13 + (f - 1) * 10; e = (p - 10) / 10 * 100; print e < 0 ? -e : e }')"
	NEAR_TOL=1e-6 near "$(w boost_base all L4 7)" "$(awk -v f="$fd" -v g="$fb" 'BEGIN { p = 13 + (f - 1) * 10 + (g - 1); e = (p - 10) / 10 * 100; print e < 0 ? -e : e }')"
	# the LOGO mean is over the training GPUs (here P100 alone)
	[ "$(awk -F'\t' '$1 == "one" && $2 == "all" { print $3 }' "$T/o/wholemodel-logo.tsv")" = "$(w one all P100-PCIE-16GB 7)" ]
	grep -q '^| one | all | L4 | unseen | inf | 1 | 30.0 | 30.0 |$' "$T/out"
}

@test "pipelines/e2e-inmodel refuses a LOGO case without per-layer rows" {
	logo "$T/logo"
	printf 'T4\ttoy\tinf\t4\t8\tNA\tP4\t1\t1\t0\n' >>"$T/logo/cases.tsv"
	run_io env NODES="$D/nodes.tsv" LOGO="$T/logo" "$PN_ROOT/pipelines/e2e-inmodel" "$T/o"
	[ "$status" -eq 1 ]
	[ "$(tail -1 "$T/err")" = "e2e-inmodel: LOGO: no per-layer rows of case T4	toy	inf	4	8	NA" ]
}

@test "pipelines/e2e-inmodel refuses a LOGO directory without per-layer.tsv" {
	logo "$T/logo"
	rm "$T/logo/per-layer.tsv"
	run_io env LOGO="$T/logo" "$PN_ROOT/pipelines/e2e-inmodel" "$T/o"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "e2e-inmodel: LOGO: $T/logo/per-layer.tsv: cannot read" ]
	[ ! -e "$T/o" ]
}

@test "pipelines/e2e-inmodel refuses NODES it cannot read" {
	run_io env NODES="$T/none.tsv" "$PN_ROOT/pipelines/e2e-inmodel" "$T/o"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "e2e-inmodel: NODES: $T/none.tsv: cannot read" ]
}
