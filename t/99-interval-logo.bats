#!/usr/bin/env bats
# pipelines/interval-logo: pn's intervals on a GPU that neither the model
# nor its leave-one-device-out record saw (on the shipped NeuSight data,
# with few rows per fit so that it stays quick).  It runs once, in
# setup_file: T4 left out of FIT, and L4 outside FIT.

load test_helper

setup_file() {
	O=$BATS_FILE_TMPDIR/o
	env FIT=P4,T4,V100-PCIE-32GB,A100-PCIE-40GB OUT=T4,L4 ROWS=100 KEEP=1 \
		"$PN_ROOT/pipelines/interval-logo" "$O" >"$BATS_FILE_TMPDIR/out" 2>"$BATS_FILE_TMPDIR/err"
	echo $? >"$BATS_FILE_TMPDIR/status"
}

setup() {
	O=$BATS_FILE_TMPDIR/o
	T=$BATS_TEST_TMPDIR
	[ "$(cat "$BATS_FILE_TMPDIR/status")" -eq 0 ] || { cat "$BATS_FILE_TMPDIR/err"; return 1; }
}

@test "pipelines/interval-logo scores every op type and the whole models of each GPU" {
	[ "$(awk -F'\t' 'NR > 1 { print $1, $2 }' "$O/rows.tsv" | paste -sd,)" = \
		"T4 dense,T4 bmm,T4 layernorm,T4 softmax,T4 elementwise,T4 whole,L4 dense,L4 bmm,L4 layernorm,L4 softmax,L4 elementwise,L4 whole" ]
	# T4's five whole-model cases with a graph, L4's fourteen
	[ "$(awk -F'\t' '$2 == "whole" { print $1, $3 }' "$O/rows.tsv" | paste -sd,)" = "T4 5,L4 14" ]
	grep -qx '| T4 | whole | 5 | .*' "$BATS_FILE_TMPDIR/out"
}

@test "pipelines/interval-logo fits T4's models and record without T4, and L4's on all of FIT" {
	[ "$(grep -c '^interval-logo: without-T4: ' "$BATS_FILE_TMPDIR/err")" -eq 6 ]
	[ "$(grep -c '^interval-logo: all: ' "$BATS_FILE_TMPDIR/err")" -eq 6 ]
	# each model's record: three devices without T4, four with it, T4 never
	# among the first
	[ "$(awk '$1 == "logo" { print $2 }' "$O/without-T4.models" | sort -u | paste -sd,)" = \
		A100-PCIE-40GB,P4,V100-PCIE-32GB ]
	[ "$(awk '$1 == "logo" { print $2 }' "$O/all.models" | sort -u | paste -sd,)" = \
		A100-PCIE-40GB,P4,T4,V100-PCIE-32GB ]
}

@test "pipelines/interval-logo's cover is pn-eval's, and its width and score follow their definitions" {
	pn-featurize "$PN_ROOT/samples/neusight/collect/dense.tsv.gz" >"$T/c.tsv"
	pn-featurize "$PN_ROOT/samples/neusight/test/dense.tsv.gz" | tail -n +2 >>"$T/c.tsv"
	pn-split --hold-out T4 -f 100/0/0 --train "$T/drop.tsv" --test "$T/t4.tsv" "$T/c.tsv"
	pn-eval -m "$O/without-T4.models" --interval -o "$T/pred.tsv" --metrics "$T/m.tsv" "$T/t4.tsv"
	want=$(awk -F'\t' '$1 == "T4" && $2 == "dense"' "$O/rows.tsv")
	[ "$(echo "$want" | cut -f3)" = "$(column "$T/m.tsv" n)" ]
	[ "$(echo "$want" | cut -f4)" = "$(column "$T/m.tsv" cover | awk '{ printf "%.2f", $1 }')" ]
	# half-width factor exp(mean ln(hi / lo) / 2); score ln(hi / lo) plus
	# 20 times the distance outside, both in ln units (LEVEL 90)
	got=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
		{ y = log($h["time_ms"]); lo = log($h["pred_ms_lo"]); hi = log($h["pred_ms_hi"])
		  w += hi - lo; s += hi - lo + 20 * (y < lo ? lo - y : y > hi ? y - hi : 0); n++ }
		END { printf "%.4f\t%.4f", exp(w / n / 2), s / n }' "$T/pred.tsv")
	[ "$(echo "$want" | cut -f5-6)" = "$got" ]
}

@test "pipelines/interval-logo averages each group's GPUs and kinds in summary.tsv" {
	[ "$(cut -f1,2 "$O/summary.tsv" | paste -sd,)" = \
		"group	kinds,FIT, each left out	6,others, fitted on FIT	6" ]
	[ "$(awk -F'\t' '$1 == "T4" { s += $4; n++ } END { printf "%.2f", s / n }' "$O/rows.tsv")" = \
		"$(awk -F'\t' '$1 == "FIT, each left out" { print $3 }' "$O/summary.tsv")" ]
}

@test "pipelines/interval-logo refuses a LEVEL of 100 or more" {
	run_io env LEVEL=100 "$PN_ROOT/pipelines/interval-logo" "$T/o"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "interval-logo: LEVEL must be below 100, not '100'" ]
}

@test "pipelines/interval-logo fits FEATURES relative to BASE where they are set" {
	run_io env FIT=P4,T4,V100-PCIE-32GB,A100-PCIE-40GB OUT=L4 ROWS=100 KEEP=1 \
		FEATURES=rel BASE=roofline_ms "$PN_ROOT/pipelines/interval-logo" "$T/r"
	[ "$status" -eq 0 ] || { cat "$T/err"; return 1; }
	grep -qF "; -F rel --relative=roofline_ms; " "$T/out"
	# every model of the set relative to roofline_ms; the default set's
	# (setup_file) relative to pipelines/lib.sh's column
	[ "$(awk '$1 == "transform" { print $3 }' "$T/r/all.models" | sort | uniq -c | awk '{ print $1, $2 }')" = "6 roofline_ms" ]
	[ "$(awk '$1 == "transform" { print $3 }' "$O/all.models" | sort | uniq -c | awk '{ print $1, $2 }')" = "6 power_roofline_ms" ]
}
