#!/usr/bin/env bats
# pn-eval --model: predict every row with a model file, then the metrics.

load test_helper
load fit_helper

setup() {
	fit_setup
	pn-fit -f lr -o "$T/lr.model" "$F/train.tsv"
}

@test "pn-eval -m appends a pred_ms column and keeps every input column" {
	run_io pn-eval -m lr.model "$F/test.tsv"
	[ "$status" -eq 0 ]
	[ "$(head -1 "$T/out")" = "$(head -1 "$F/test.tsv")	pred_ms	domain" ]
	diff -u "$F/test.tsv" <(cut -f1-34 "$T/out")
	[ "$(cut -f35 "$T/out" | grep -c .)" -eq 41 ]
}

@test "pn-eval -m predicts what the lr formula gives" {
	pn-fit -f lr --no-log-target --features ct_ms,cm_total -o m.model "$F/train.tsv"
	pn-eval -m m.model "$F/test.tsv" >pred.tsv 2>/dev/null
	# dense rows: b + c1 (ct_ms - mean1) / sd1 + c2 (cm_total - mean2) / sd2
	awk -F'\t' '
	FNR == NR { split($0, w, " ")
		if (w[1] == "layer") f = (w[2] == "dense")
		if (f && w[1] == "feature") { mean[w[2]] = w[4]; sd[w[2]] = w[5] }
		if (f && w[1] == "intercept") b = w[2]
		if (f && w[1] == "coef") { c1 = w[2]; c2 = w[3] }
		next }
	FNR == 1 { for (i = 1; i <= NF; i++) k[$i] = i; next }
	$1 == "dense" {
		want = b + c1 * ($k["ct_ms"] - mean["ct_ms"]) / sd["ct_ms"] + c2 * ($k["cm_total"] - mean["cm_total"]) / sd["cm_total"]
		d = $k["pred_ms"] - want; if (d < 0) d = -d
		if (d > 1e-12 * (want < 0 ? -want : want) + 1e-15) { print FNR ": " $k["pred_ms"] " want " want; bad = 1 }
		n++
	}
	END { exit bad || n != 20 }' m.model pred.tsv
}

@test "pn-eval -m writes the metrics on standard error as a markdown table" {
	run_io pn-eval -m lr.model "$F/test.tsv"
	[ "$status" -eq 0 ]
	[ "$(sed -n 1p "$T/err")" = "| n | rmse | mae | mape | mdape | maxape | r2 |" ]
	[ "$(sed -n 2p "$T/err")" = "|---:|---:|---:|---:|---:|---:|---:|" ]
	[[ "$(sed -n 3p "$T/err")" == "| 40 | "* ]]
	[ "$(wc -l <"$T/err")" -eq 3 ]
}

@test "pn-eval -m --metrics writes the metrics to a file as TSV" {
	run_io pn-eval -m lr.model --metrics metrics.tsv "$F/test.tsv"
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	# the same numbers as pn-eval on the predicted rows
	pn-eval "$T/out" >expected
	diff -u expected metrics.tsv
}

@test "pn-eval -m --metrics --by --format md groups the metrics" {
	pn-eval -m lr.model --metrics metrics.md --by layer --total --format md "$F/test.tsv" >/dev/null
	pn-eval -m lr.model "$F/test.tsv" 2>/dev/null | pn-eval --by layer --total --format md >expected
	diff -u expected metrics.md
}

@test "pn-eval -m writes no metrics when the rows have no measured column" {
	cut -f1-33 "$F/test.tsv" >nomeas.tsv
	run_io pn-eval -m lr.model nomeas.tsv
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	[ "$(head -1 "$T/out" | awk -F'\t' '{ print $(NF - 1), $NF }')" = "pred_ms domain" ]
}

@test "pn-eval -m --measured names a column that must exist" {
	run_io pn-eval -m lr.model --measured wall_ms "$F/test.tsv"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-eval: $F/test.tsv:1: missing column 'wall_ms'" ]
}

@test "pn-eval -m --predicted names the column" {
	run_io pn-eval -m lr.model --predicted guess_ms "$F/test.tsv"
	[ "$status" -eq 0 ]
	[ "$(head -1 "$T/out" | awk -F'\t' '{ print $(NF - 1), $NF }')" = "guess_ms domain" ]
}

@test "pn-eval -m replaces an existing prediction column in place" {
	pn-eval -m lr.model "$F/test.tsv" >once.tsv 2>/dev/null
	pn-eval -m lr.model once.tsv >twice.tsv 2>/dev/null
	diff -u once.tsv twice.tsv
	awk -F'\t' -v OFS='\t' '{ t = $1; $1 = $35; $35 = t; print }' once.tsv >moved.tsv
	pn-eval -m lr.model moved.tsv >out.tsv 2>/dev/null
	diff -u moved.tsv out.tsv
}

@test "pn-eval -m sends each layer type to its own model of a set" {
	awk '/^pn-model/ { n++ } n == 2' lr.model >dense.model
	grep -q '^layer dense$' dense.model
	grep -v '^bmm' "$F/test.tsv" >dense.tsv
	pn-eval -m lr.model "$F/test.tsv" 2>/dev/null | grep -v '^bmm' >set.tsv
	pn-eval -m dense.model dense.tsv >single.tsv 2>/dev/null
	diff -u single.tsv set.tsv
}

@test "pn-eval -m reads a set made by concatenating model files" {
	pn-fit -f lr --features ct_ms -o a.model <(grep -v '^bmm' "$F/train.tsv")
	pn-fit -f rf -p trees=5 --features ct_ms -o b.model <(grep -v '^dense' "$F/train.tsv")
	cat a.model b.model >set.model
	run_io pn-eval -m set.model "$F/test.tsv"
	[ "$status" -eq 0 ]
	[ "$(wc -l <"$T/out")" -eq 41 ]
}

@test "pn-eval -m uses the catch-all model for layers without their own" {
	pn-fit -f lr --no-by-layer --features ct_ms -o any.model "$F/train.tsv"
	awk '/^pn-model/ { n++ } n == 2' lr.model >dense.model
	cat dense.model any.model >set.model
	pn-eval -m set.model "$F/test.tsv" 2>/dev/null | grep '^bmm' >set.tsv
	pn-eval -m any.model "$F/test.tsv" 2>/dev/null | grep '^bmm' >any.tsv
	diff -u any.tsv set.tsv
}

@test "pn-eval -m fails on a row whose layer has no model" {
	awk '/^pn-model/ { n++ } n == 2' lr.model >dense.model
	run_io pn-eval -m dense.model "$F/test.tsv"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-eval: $F/test.tsv:22: no model for layer 'bmm'" ]
}

@test "pn-eval -m fails on an NA feature" {
	awk -F'\t' -v OFS='\t' 'NR == 3 { $18 = "NA" } 1' "$F/test.tsv" >na.tsv
	run_io pn-eval -m lr.model na.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-eval: na.tsv:3: column 'ct_ms': value is NA" ]
}

@test "pn-eval -m fails on a feature that is not a number" {
	awk -F'\t' -v OFS='\t' 'NR == 3 { $18 = "fast" } 1' "$F/test.tsv" >bad.tsv
	run_io pn-eval -m lr.model bad.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-eval: bad.tsv:3: column 'ct_ms': 'fast' is not a number" ]
}

@test "pn-eval -m predicts a row whose category was not seen in training" {
	awk -F'\t' -v OFS='\t' 'NR == 1 { print $0, "kind"; next } { print $0, (NR % 2 ? "a" : "b") }' \
		"$F/train.tsv" >kind.tsv
	pn-fit -f lr --features ct_ms,kind -o kind.model kind.tsv
	awk -F'\t' -v OFS='\t' 'NR == 1 { print $0, "kind"; next } { print $0, "c" }' "$F/test.tsv" >unseen.tsv
	run_io pn-eval -m kind.model unseen.tsv
	[ "$status" -eq 0 ]
	[ "$(wc -l <"$T/out")" -eq 41 ]
}

@test "pn-eval -m --skip-na predicts every row and skips NA measured values in the metrics" {
	awk -F'\t' -v OFS='\t' 'NR == 3 || NR == 5 { $34 = "NA" } 1' "$F/test.tsv" >na.tsv
	run_io pn-eval -m lr.model --skip-na --metrics m.tsv na.tsv
	[ "$status" -eq 0 ]
	[ "$(wc -l <"$T/out")" -eq 41 ]
	[ "$(cut -f1 m.tsv | tail -1)" = "38" ]
	[ "$(cat "$T/err")" = "pn-eval: skipped 2 rows with a missing value" ]
}

@test "pn-eval -m fails on an NA measured value without --skip-na" {
	awk -F'\t' -v OFS='\t' 'NR == 3 { $34 = "NA" } 1' "$F/test.tsv" >na.tsv
	run_io pn-eval -m lr.model na.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-eval: na.tsv:3: column 'time_ms': value is NA" ]
}

@test "pn-eval -m reads the model from standard input" {
	pn-eval -m - "$F/test.tsv" <lr.model >a.tsv 2>/dev/null
	pn-eval -m lr.model "$F/test.tsv" >b.tsv 2>/dev/null
	cmp a.tsv b.tsv
}

@test "pn-eval -m -o writes the rows to a file" {
	run_io pn-eval -m lr.model -o rows.tsv "$F/test.tsv"
	[ "$status" -eq 0 ]
	[ ! -s "$T/out" ]
	[ "$(wc -l <rows.tsv)" -eq 41 ]
}

@test "pn-eval -m -o leaves no file when a row cannot be predicted" {
	awk -F'\t' -v OFS='\t' 'NR == 30 { $18 = "NA" } 1' "$F/test.tsv" >na.tsv
	run pn-eval -m lr.model -o rows.tsv na.tsv
	[ "$status" -eq 1 ]
	[ ! -e rows.tsv ]
}

@test "pn-eval -m fails on a model file that does not exist" {
	run pn-eval -m nosuch.model "$F/test.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: nosuch.model: No such file or directory" ]
}

@test "pn-eval -m fails on a file that is not a model" {
	run pn-eval -m "$F/test.tsv" "$F/test.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: $F/test.tsv:1: corrupt model: 'layer', want 'pn-model' (not a pn model file)" ]
}

@test "pn-eval -m fails on an empty model file" {
	: >empty.model
	run pn-eval -m empty.model "$F/test.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: empty.model: no model" ]
}

@test "pn-eval -m fails on a model of another version" {
	sed '1s/^pn-model 1$/pn-model 2/' lr.model >v2.model
	run pn-eval -m v2.model "$F/test.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: v2.model:1: unsupported model version 2 (this pn reads 1)" ]
}

@test "pn-eval -m fails on a model of an unknown family" {
	sed '2s/^family lr$/family svm/' lr.model >svm.model
	run pn-eval -m svm.model "$F/test.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: svm.model:2: corrupt model: unknown family 'svm'" ]
}

@test "pn-eval -m fails on a set with two models for one layer" {
	awk '/^pn-model/ { n++ } n == 2' lr.model >dense.model
	cat dense.model dense.model >twice.model
	end=$(wc -l <twice.model)
	run pn-eval -m twice.model "$F/test.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: twice.model:$end: corrupt model: a second model for layer 'dense'" ]
}

@test "pn-eval -m fails on text after the last model" {
	{ cat lr.model; echo junk; } >junk.model
	end=$(wc -l <junk.model)
	run pn-eval -m junk.model "$F/test.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: junk.model:$end: corrupt model: 'junk' after 'end', want 'pn-model'" ]
}

@test "pn-eval -m fails on a feature line with a bad sd" {
	sed '0,/^feature /s/^\(feature [^ ]* num [^ ]*\) [^ ]*$/\1 0/' lr.model >sd.model
	run pn-eval -m sd.model "$F/test.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: sd.model:7: corrupt model: sd must be positive" ]
}

@test "pn-eval -m rejects the model and the rows both on standard input" {
	run pn-eval -m - <lr.model
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-eval: the model and the rows cannot both come from standard input" ]
}

@test "pn-eval --metrics without --model is a usage error" {
	run pn-eval --metrics m.tsv "$F/test.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-eval: --metrics needs --model" ]
	[ "${lines[1]}" = "Try 'pn-eval --help' for more information." ]
}

@test "pn-eval -m reports a write error on a full device" {
	run bash -c 'pn-eval -m "$1" "$2" 2>&1 >/dev/full' _ lr.model "$F/test.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: write error: No space left on device" ]
}

# chain.tsv: the training rows with time_ms doubling from row to row, so
# that squared-error trees peel one row off at a time and grow deeper than
# 16 levels (the compiled forest walks such trees differently).
chain_rows() {
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "time_ms") c = i; print; next }
		{ $c = 2 ^ (NR % 40); print }' "$F/train.tsv" >chain.tsv
}

# same_as_ref MODEL: pn-eval -m MODEL on the test rows predicts the same,
# byte for byte, with the compiled forest and with the reference walk.
same_as_ref() {
	pn-eval -m "$1" -o fast.tsv "$F/test.tsv" 2>/dev/null
	PN_FOREST_KERNEL=ref pn-eval -m "$1" -o ref.tsv "$F/test.tsv" 2>/dev/null
	[ "$(wc -l <fast.tsv)" -eq 41 ]
	cmp fast.tsv ref.tsv
}

@test "pn-eval -m predicts with a compiled rf forest exactly what its trees give" {
	pn-fit -f rf -p trees=20 -o rf.model "$F/train.tsv"
	same_as_ref rf.model
}

@test "pn-eval -m predicts with a compiled forest of trees deeper than 16 exactly what its trees give" {
	chain_rows
	pn-fit -f rf --no-log-target -p trees=5 -p bootstrap=0 -p min_leaf=1 -o deep.model chain.tsv
	# the model does have a path deeper than 16 splits
	awk '/^tree / { n = 0; delete d; next }
		/^split / { d[$4] = d[$4 + 1] = d[n] + 1; if (d[n] + 1 > m) m = d[n] + 1 }
		/^(split|leaf) / { n++ }
		END { exit !(m > 16) }' deep.model
	same_as_ref deep.model
}

@test "pn-eval -m predicts with a compiled gbdt forest exactly what its trees give" {
	pn-fit -f gbdt -p rounds=30 -o gbdt.model "$F/train.tsv"
	same_as_ref gbdt.model
}

@test "pn-eval -m rejects an unknown PN_FOREST_KERNEL with exit 2" {
	pn-fit -f rf -p trees=2 -o rf.model "$F/train.tsv"
	PN_FOREST_KERNEL=simd run pn-eval -m rf.model "$F/test.tsv"
	[ "$status" -eq 2 ]
	[[ "$output" == *"PN_FOREST_KERNEL=simd"* ]]
}
