#!/usr/bin/env bats
# pn-fit: models per layer type, feature sets, the model file, errors.
# The families themselves are tested in t/55-fit-families.bats.

load test_helper
load fit_helper

setup() {
	fit_setup
}

# the feature names of the model for one layer
features_of() {
	awk -v l="$1" '$1 == "layer" { f = ($2 == l) } f && $1 == "feature" { printf "%s ", $2 }' "$2"
}

@test "pn-fit writes one model per layer type in sorted order" {
	run_io pn-fit -p trees=5 "$F/train.tsv"
	[ "$status" -eq 0 ]
	[ "$(grep '^layer ' "$T/out" | tr '\n' ' ')" = "layer bmm layer dense " ]
	[ "$(grep -c '^end$' "$T/out")" -eq 2 ]
	[ ! -s "$T/err" ]
}

@test "pn-fit starts each model with its version, family, layer, target and transform" {
	pn-fit -f lr --log-target -o m.model "$F/train.tsv"
	printf 'pn-model 1\nfamily lr\nlayer bmm\ntarget time_ms\ntransform log\nfeatures 19\n' >expected
	head -6 m.model | diff -u expected -
}

@test "pn-fit --no-by-layer writes one model for every layer" {
	pn-fit -f lr --no-by-layer --features ct_ms,cm_total -o m.model "$F/train.tsv"
	[ "$(grep '^layer ' m.model)" = "layer *" ]
	grep -q '^info layers bmm,dense$' m.model
	grep -q '^info rows 160$' m.model
}

@test "pn-fit without a layer column writes one model for every layer" {
	cut -f2- "$F/train.tsv" >nolayer.tsv
	pn-fit -f lr --features ct_ms,cm_total -o m.model nolayer.tsv
	[ "$(grep '^layer ' m.model)" = "layer *" ]
}

@test "pn-fit records the provenance in info lines" {
	pn-fit -f lr --seed 42 -o m.model "$F/train.tsv"
	sed -n '/^layer dense$/,/^body$/p' m.model | grep '^info ' | grep -v '^info range ' >actual
	printf '%s\n' 'info rows 80' 'info devices T4,V100-PCIE-32GB' \
		'info layers dense' 'info precisions fp32' 'info passes fwd' \
		'info features cocmct' 'info seed 42' \
		'info created-by pn-fit 0.1.0' >expected
	diff -u expected actual
}

@test "pn-fit --features baseline is the dimensions, configuration and spec sheet" {
	pn-fit -f lr --features baseline -o m.model "$F/train.tsv"
	[ "$(features_of dense m.model)" = "batch in_features out_features precision=fp32 pass=fwd gpu_sms gpu_cores gpu_boost_mhz gpu_mem_gb gpu_mem_bw_gbs gpu_l2_mb gpu_fp32_gflops " ]
	[ "$(features_of bmm m.model)" = "batch m n k precision=fp32 pass=fwd gpu_sms gpu_cores gpu_boost_mhz gpu_mem_gb gpu_mem_bw_gbs gpu_l2_mb gpu_fp32_gflops " ]
}

@test "pn-fit --features co, cocm, cocmct and phys add to baseline in turn" {
	base="batch in_features out_features precision=fp32 pass=fwd gpu_sms gpu_cores gpu_boost_mhz gpu_mem_gb gpu_mem_bw_gbs gpu_l2_mb gpu_fp32_gflops"
	pn-fit -f lr --features co -o co.model "$F/train.tsv"
	pn-fit -f lr --features cocm -o cocm.model "$F/train.tsv"
	pn-fit -f lr --features cocmct -o cocmct.model "$F/train.tsv"
	pn-fit -f lr --features phys -o phys.model "$F/train.tsv"
	[ "$(features_of dense co.model)" = "$base co " ]
	[ "$(features_of dense cocm.model)" = "$base co cm_weights cm_in cm_out cm_total " ]
	[ "$(features_of dense cocmct.model)" = "$base co cm_weights cm_in cm_out cm_total ct_ms " ]
	[ "$(features_of dense phys.model)" = "$base co cm_weights cm_in cm_out cm_total ct_ms flops traffic ai compute_ms memory_ms roofline_ms tiles waves wave_eff " ]
}

@test "pn-fit defaults to the cocmct feature set" {
	pn-fit -f lr -o a.model "$F/train.tsv"
	pn-fit -f lr --features cocmct -o b.model "$F/train.tsv"
	cmp a.model b.model
}

@test "pn-fit one-hot encodes a column of names, in sorted order" {
	awk -F'\t' -v OFS='\t' 'NR == 1 { print $0, "kind"; next } { print $0, (NR % 3 ? "wide" : "narrow") }' \
		"$F/train.tsv" >kind.tsv
	pn-fit -f lr --features ct_ms,kind -o m.model kind.tsv
	[ "$(features_of dense m.model)" = "ct_ms kind=narrow kind=wide " ]
	grep -q '^feature kind=wide cat 0 1$' m.model
}

@test "pn-fit records the mean and sd of numeric features for lr and not for rf" {
	pn-fit -f lr --features batch -o lr.model "$F/train.tsv"
	pn-fit -f rf -p trees=2 --features batch -o rf.model "$F/train.tsv"
	# dense batch: mean and population sd of the 80 training values
	want=$(awk -F'\t' '$1 == "dense" { s += $2; q += $2 * $2; n++ }
		END { m = s / n; printf "%.6g %.6g", m, sqrt(q / n - m * m) }' "$F/train.tsv")
	got=$(awk '/^layer dense/ { f = 1 } f && /^feature batch/ { printf "%.6g %.6g", $4, $5; exit }' lr.model)
	[ "$got" = "$want" ]
	grep -q '^feature batch num 0 1$' rf.model
}

@test "pn-fit --features SET+COL fits the set's columns and then the columns named" {
	pn-fit -f lr --features baseline+ct_ms,cm_total -o m.model "$F/train.tsv"
	[ "$(features_of dense m.model)" = "batch in_features out_features precision=fp32 pass=fwd gpu_sms gpu_cores gpu_boost_mhz gpu_mem_gb gpu_mem_bw_gbs gpu_l2_mb gpu_fp32_gflops ct_ms cm_total " ]
	grep -q '^info features baseline+ct_ms,cm_total$' m.model
}

@test "pn-fit --features SET+COL one-hot encodes a column of names" {
	pn-fit -f lr --features baseline+device -o m.model "$F/train.tsv"
	[ "$(features_of dense m.model | tr ' ' '\n' | grep '^device=' | tr '\n' ' ')" = "device=T4 device=V100-PCIE-32GB " ]
}

@test "pn-fit --log-target fits the logarithm and pn-eval undoes it" {
	pn-fit -f lr --log-target --features ct_ms -o m.model "$F/train.tsv"
	grep -q '^transform log$' m.model
	pn-eval -m m.model "$F/test.tsv" >pred.tsv 2>/dev/null
	column pred_ms pred.tsv | awk '!($1 > 0) { bad = 1 } END { exit bad }'
}

@test "pn-fit --target fits another column" {
	pn-fit -f lr --target roofline_ms --features ct_ms -o m.model "$F/train.tsv"
	grep -q '^target roofline_ms$' m.model
}

@test "pn-fit --param is recorded in the model" {
	pn-fit -f rf -p trees=3 -p min_leaf=2 -o m.model "$F/train.tsv"
	[ "$(sed -n '/^layer bmm$/,/^body$/p' m.model | grep '^param ' | tr '\n' ' ')" = "param trees 3 param min_leaf 2 " ]
}

@test "pn-fit without --family fits xgb on ln(target)" {
	pn-fit -o m.model "$F/train.tsv"
	[ "$(awk '$1 == "family" || $1 == "transform"' m.model | sort -u | paste -sd,)" = "family xgb,transform log" ]
}

@test "pn-fit's default xgb grows 600 rounds of depth 8" {
	pn-fit -o a.model "$F/train.tsv"
	pn-fit -f xgb --log-target -p depth=8 -p rounds=600 -o b.model "$F/train.tsv"
	grep -v '^param ' b.model | diff -u a.model -
}

@test "pn-fit --no-log-target fits the target itself" {
	pn-fit -f lr --no-log-target -o m.model "$F/train.tsv"
	[ "$(awk '$1 == "transform"' m.model | sort -u)" = "transform none" ]
}

@test "pn-fit --relative with --no-log-target is a usage error" {
	run pn-fit --relative --no-log-target "$F/train.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-fit: --relative and --no-log-target exclude each other (--relative fits a log)" ]
}

@test "pn-fit refuses training and validation rows both from standard input as a usage error" {
	for args in '--val - -' '--val -'; do
		run bash -c "pn-fit $args <'$FIX/fit/train.tsv'"
		[ "$status" -eq 2 ]
		[ "${lines[0]}" = "pn-fit: the training and validation rows cannot both come from standard input" ]
	done
}

@test "pn-fit reads gzip input from standard input" {
	gzip -c "$F/train.tsv" >train.tsv.gz
	pn-fit -f lr -o a.model <train.tsv.gz
	pn-fit -f lr -o b.model "$F/train.tsv"
	cmp a.model b.model
}

@test "pn-fit prints no progress when standard error is not a terminal" {
	run_io pn-fit -f gbdt -p rounds=5 "$F/train.tsv"
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
}

# ---- --auto -------------------------------------------------------------------

@test "pn-fit --auto keeps lr on a noiseless linear function" {
	head -21 "$F/linear-test.tsv" >val.tsv
	tail -20 "$F/linear-test.tsv" >>val.tsv
	run_io pn-fit --auto --no-log-target --features ct_ms,cm_total -v val.tsv -p trees=10 -p rounds=20 -p epochs=5 "$F/linear.tsv"
	[ "$status" -eq 0 ] || { cat "$T/err"; false; }
	[ "$(grep '^family ' "$T/out" | tr '\n' ' ')" = "family lr family lr " ]
}

@test "pn-fit --auto records every family's validation error" {
	run_io pn-fit --auto --no-log-target --features ct_ms,cm_total -v "$F/linear-test.tsv" -p trees=10 -p rounds=20 -p epochs=5 "$F/linear.tsv"
	[ "$status" -eq 0 ]
	sed -n '/^layer dense$/,/^body$/p' "$T/out" | grep '^info auto ' | cut -d' ' -f1-4 >actual
	printf 'info auto %s rmse\n' lr rf gbdt xgb mlp >expected
	diff -u expected actual
	# and lr's is the smallest
	sed -n '/^layer dense$/,/^body$/p' "$T/out" | awk '$2 == "auto" { print $5, $3 }' | sort -g | head -1 | grep -q ' lr$'
}

@test "pn-fit --auto keeps a tree family on a step function" {
	for f in train val; do
		awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "time_ms") k = i; print; next }
			{ $k = $2 > 100 ? 5 : 1; print }' "$F/$f.tsv" >step-$f.tsv
	done
	run_io pn-fit --auto --features batch,ct_ms -v step-val.tsv -p trees=10 -p bootstrap=0 -p rounds=20 -p epochs=5 step-train.tsv
	[ "$status" -eq 0 ]
	[ "$(sed -n '/^layer dense$/,/^feature/p' "$T/out" | grep '^family ')" != "family lr" ]
	[ "$(sed -n '/^layer dense$/,/^body$/p' "$T/out" | grep -c '^info auto ')" -eq 5 ]
}

@test "pn-fit --auto needs --val" {
	run pn-fit --auto "$F/train.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-fit: --auto needs --val FILE" ]
	[ "${lines[1]}" = "Try 'pn-fit --help' for more information." ]
}

@test "pn-fit --auto fails when the validation rows lack a layer type" {
	grep -v '^bmm' "$F/val.tsv" >val.tsv
	run pn-fit --auto -v val.tsv "$F/train.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-fit: val.tsv: no validation rows of layer 'bmm'" ]
}

# ---- determinism ---------------------------------------------------------------

@test "pn-fit gives a byte-identical model file for the same input and seed" {
	pn-fit -p trees=5 --seed 3 -o a.model "$F/train.tsv"
	pn-fit -p trees=5 --seed 3 -o b.model "$F/train.tsv"
	cmp a.model b.model
}

# ---- errors ---------------------------------------------------------------------

@test "pn-fit fails on a missing feature column" {
	run pn-fit --features ct_ms,nosuch "$F/train.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-fit: $F/train.tsv:1: missing column 'nosuch'" ]
}

@test "pn-fit fails on a feature set column missing from the input" {
	cut -f1-20,34 "$F/train.tsv" >short.tsv
	run pn-fit short.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-fit: short.tsv:1: missing column 'gpu_sms'" ]
}

@test "pn-fit fails on a missing target column" {
	run pn-fit --target nosuch "$F/train.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-fit: $F/train.tsv:1: missing column 'nosuch'" ]
}

@test "pn-fit fails on a feature that is not a number" {
	awk -F'\t' -v OFS='\t' 'NR == 4 { $2 = "abc" } 1' "$F/train.tsv" >bad.tsv
	run pn-fit bad.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-fit: bad.tsv:4: column 'batch': 'abc' is not a number" ]
}

@test "pn-fit fails on an NA feature" {
	awk -F'\t' -v OFS='\t' 'NR == 5 { $2 = "NA" } 1' "$F/train.tsv" >bad.tsv
	run pn-fit bad.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-fit: bad.tsv:5: column 'batch': value is NA" ]
}

@test "pn-fit fails on an NA target" {
	awk -F'\t' -v OFS='\t' 'NR == 3 { $NF = "NA" } 1' "$F/train.tsv" >bad.tsv
	run pn-fit bad.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-fit: bad.tsv:3: column 'time_ms': value is NA" ]
}

@test "pn-fit fails on a target that is not finite" {
	awk -F'\t' -v OFS='\t' 'NR == 4 { $NF = "inf" } 1' "$F/train.tsv" >bad.tsv
	run pn-fit bad.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-fit: bad.tsv:4: column 'time_ms': 'inf' is not a number" ]
}

@test "pn-fit --log-target fails on a target that is not positive" {
	awk -F'\t' -v OFS='\t' 'NR == 4 { $NF = "0" } 1' "$F/train.tsv" >bad.tsv
	run pn-fit --log-target bad.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-fit: bad.tsv:4: column 'time_ms': '0' is not positive (a target is a time)" ]
}

@test "pn-fit fails on a layer type with fewer than 10 rows" {
	head -9 "$F/train.tsv" >few.tsv
	grep '^bmm' "$F/train.tsv" >>few.tsv
	run pn-fit few.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-fit: few.tsv: layer 'dense' has only 8 rows (at least 10 needed)" ]
}

@test "pn-fit fails on an unknown layer type with a named feature set" {
	sed '2,12s/^dense/warp/' "$F/train.tsv" >bad.tsv
	run pn-fit bad.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-fit: bad.tsv:2: unknown layer type 'warp' (feature set 'cocmct' needs its dimension columns; name the features with --features)" ]
}

# big.tsv: the rows of train.tsv again and again, some 4 MB, which pn-fit
# splits on as many threads as the machine has (one share a MB or more)
big() {
	awk 'NR == 1 { print; next } { r[NR] = $0 } END { for (k = 0; k < 120; k++) for (i = 2; i <= NR; i++) print r[i] }' "$F/train.tsv" >big.tsv
	[ "$(wc -c <big.tsv)" -gt 4000000 ]
}

# run pn-fit on big.tsv as the awk program $1 changes it
run_big() {
	big
	awk -F'\t' -v OFS='\t' "$1" big.tsv >bad.tsv
	run pn-fit -f lr bad.tsv
	[ "$status" -eq 1 ]
}

@test "pn-fit names the row with a wrong field count far into a large file" {
	run_big 'NR == 14001 { NF = 5 } 1'
	[ "$output" = "pn-fit: bad.tsv:14001: expected 34 fields, found 5" ]
}

@test "pn-fit names the first of two rows with a wrong field count in a large file" {
	run_big 'NR == 300 { NF = 7 } NR == 14001 { NF = 5 } 1'
	[ "$output" = "pn-fit: bad.tsv:300: expected 34 fields, found 7" ]
}

@test "pn-fit names the line of a bad value far into a large file" {
	run_big 'NR == 13999 { $NF = "NA" } 1'
	[ "$output" = "pn-fit: bad.tsv:13999: column 'time_ms': value is NA" ]
}

@test "pn-fit fits a large file with CRLF lines and no last newline as the same file with LF" {
	big
	pn-fit -f lr -o lf.model big.tsv
	sed 's/$/\r/' big.tsv | head -c -1 >crlf.tsv
	pn-fit -f lr -o crlf.model crlf.tsv
	cmp lf.model crlf.model
	[ "$(grep -c '^info rows 9600$' lf.model)" -eq 2 ]
}

@test "pn-fit fails on a header without rows" {
	head -1 "$F/train.tsv" >empty.tsv
	run pn-fit empty.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-fit: empty.tsv: no data rows" ]
}

@test "pn-fit fails on empty input" {
	run pn-fit </dev/null
	[ "$status" -eq 1 ]
	[ "$output" = "pn-fit: -: empty input (no header)" ]
}

@test "pn-fit -o leaves no file when the input is bad" {
	awk -F'\t' -v OFS='\t' 'NR == 4 { $NF = "inf" } 1' "$F/train.tsv" >bad.tsv
	run pn-fit -o m.model bad.tsv
	[ "$status" -eq 1 ]
	[ ! -e m.model ]
	[ "$(ls)" = "bad.tsv" ]
}

@test "pn-fit reports a write error on a full device" {
	run bash -c 'pn-fit -f lr "$1" 2>&1 >/dev/full' _ "$F/train.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-fit: write error: No space left on device" ]
}

@test "pn-fit rejects an unknown family with exit 2" {
	run pn-fit -f nn "$F/train.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-fit: unknown family 'nn': want lr, rf, gbdt, xgb or mlp" ]
	[ "${lines[1]}" = "Try 'pn-fit --help' for more information." ]
}

@test "pn-fit rejects a --param that the family does not read with exit 2" {
	run pn-fit -p rounds=5 -p min_leaf=2 "$F/train.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-fit: --param 'min_leaf' is not read by family 'xgb'" ]
}

@test "pn-fit rejects a --param without a value with exit 2" {
	run pn-fit -p trees "$F/train.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-fit: invalid --param 'trees': want NAME=VALUE" ]
}

@test "pn-fit rejects a --param given twice with exit 2" {
	run pn-fit -p trees=2 -p trees=3 "$F/train.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-fit: --param 'trees' given twice" ]
}

@test "pn-fit rejects a --param value that is not a number with exit 2" {
	run pn-fit -p trees=many "$F/train.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-fit: invalid --param trees=many: not a whole number" ]
}

@test "pn-fit rejects a target that is also a feature with exit 2" {
	run pn-fit --target ct_ms "$F/train.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-fit: the target 'ct_ms' is also a feature" ]
}

@test "pn-fit rejects a column named twice in --features with exit 2" {
	run pn-fit --features ct_ms,co,ct_ms "$F/train.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-fit: column 'ct_ms' named twice in --features" ]
}

@test "pn-fit rejects --features SET+COL of an unknown set with exit 2" {
	run pn-fit --features nosuch+ct_ms "$F/train.tsv"
	[ "$status" -eq 2 ]
	[[ "$output" == "pn-fit: --features 'nosuch+ct_ms': no feature set 'nosuch'"* ]]
}

@test "pn-fit rejects --features SET+ without columns with exit 2" {
	run pn-fit --features baseline+ "$F/train.tsv"
	[ "$status" -eq 2 ]
	[[ "$output" == "pn-fit: invalid --features 'baseline+'"* ]]
}

@test "pn-fit rejects --features SET+COL naming a column of the set with exit 2" {
	run pn-fit --features baseline+batch "$F/train.tsv"
	[ "$status" -eq 2 ]
	[[ "$output" == "pn-fit: column 'batch' named twice in --features"* ]]
}

@test "pn-fit rejects a seed that is not a whole number with exit 2" {
	run pn-fit --seed -1 "$F/train.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-fit: --seed: '-1' is too small (at least 0)" ]
}

@test "pn-fit rejects an unknown option with exit 2" {
	run pn-fit --bogus "$F/train.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-fit: unrecognized option '--bogus'" ]
	[ "${lines[1]}" = "Try 'pn-fit --help' for more information." ]
}

@test "pn-fit --help lists the families and feature sets" {
	run_io pn-fit --help
	[ "$status" -eq 0 ]
	[ "$(head -1 "$T/out")" = "Usage: pn-fit [OPTION]... [FILE]" ]
	grep -q 'lr, rf, gbdt, xgb or mlp' "$T/out"
	grep -q 'baseline, co, cocm, cocmct, phys' "$T/out"
}

@test "pn-fit --timings says on standard error where the time went, a line a phase and layer" {
	run_io pn-fit -f lr --timings -o m.model "$F/train.tsv"
	[ "$status" -eq 0 ]
	n='[0-9]+\.[0-9]{3} s'
	[ "$(wc -l <"$T/err")" -eq 5 ]
	sed -n 1p "$T/err" | grep -Eqx "pn-fit: timings: read $n, 160 rows"
	sed -n 2p "$T/err" | grep -Eqx "pn-fit: timings: layer bmm, 80 rows, 19 features: prepare $n, fit $n, other $n"
	sed -n 3p "$T/err" | grep -Eqx "pn-fit: timings: layer dense, 80 rows, 18 features: prepare $n, fit $n, other $n"
	sed -n 4p "$T/err" | grep -Eqx "pn-fit: timings: write $n"
	sed -n 5p "$T/err" | grep -Eqx "pn-fit: timings: total $n"
}

@test "pn-fit --timings writes the same model as without it" {
	pn-fit -f lr -o plain.model "$F/train.tsv"
	pn-fit -f lr --timings -o timed.model "$F/train.tsv" 2>/dev/null
	cmp plain.model timed.model
}

