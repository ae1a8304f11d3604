#!/usr/bin/env bats
# pn-fit --cv K: the chosen family refitted K times, each without one fold of
# a layer type's training rows, its error on the rows it did not see
# recorded in the model as a line "cv K N BIAS SD"; how pn-eval and pn-sum
# turn that line into intervals on the devices the model was fitted on.

load test_helper
load fit_helper

setup() {
	fit_setup
}

# cv_of MODEL: "LAYER K N BIAS SD" of the cv line of every model of the set
# MODEL, in file order.
cv_of() {
	awk '$1 == "layer" { l = $2 } $1 == "cv" { print l, $2, $3, $4, $5 }' "$1"
}

# exact FILE: FILE with time_ms = exp(0.5 ct_ms + 1e-8 cm_total - 3), which
# lr on ln(time_ms) with those two features fits without error.
exact() {
	awk -F'\t' -v OFS='\t' -v CONVFMT=%.17g '
	NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; print; next }
	{ $h["time_ms"] = exp(0.5 * $h["ct_ms"] + 1e-8 * $h["cm_total"] - 3); print }' "$1"
}

# z90: the standard normal quantile at 0.95.
z90=1.6448536269514722

@test "pn-fit --cv records one cv line per layer type with the folds and the training rows" {
	run_io pn-fit -f lr -F ct_ms,cm_total -l --cv 5 -o a.model "$F/train.tsv"
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	for l in dense bmm; do
		n=$(awk -F'\t' -v l="$l" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "layer") k = i; next } $k == l { n++ } END { print n }' "$F/train.tsv")
		[ "$(cv_of a.model | awk -v l="$l" '$1 == l { print $2, $3 }')" = "5 $n" ]
	done
	[ "$(cv_of a.model | wc -l)" -eq 2 ]
}

@test "pn-fit --cv writes the cv line after the info lines, just before body" {
	pn-fit -f lr -F ct_ms,cm_total -l --cv 4 -o a.model "$F/train.tsv"
	# the line before each cv line is info, the one after it body
	[ "$(awk '$1 == "cv" { print prev; getline n; print n } { prev = $1 }' a.model | sort -u | tr '\n' ' ')" = "body info " ]
}

@test "pn-fit --cv on rows a refit predicts exactly records no error" {
	exact "$F/train.tsv" >exact.tsv
	pn-fit -f lr -F ct_ms,cm_total -l --cv 5 -o a.model exact.tsv
	cv_of a.model | awk '{ b = $4 < 0 ? -$4 : $4; if (b > 1e-9 || $5 > 1e-9) bad = 1 } END { exit bad || NR != 2 }'
}

@test "pn-fit --cv records an error of about the size a held-out row shows" {
	pn-fit -f lr -F ct_ms,cm_total -l --cv 5 -o a.model "$F/train.tsv"
	pn-eval -m a.model --metrics /dev/null "$F/test.tsv" >pred.tsv
	# per layer: the root mean square of ln(pred / time) on test.tsv, which
	# no fit saw, against sqrt(bias^2 + sd^2) of the cv line
	awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
	{ e = log($h["pred_ms"] / $h["time_ms"]); s[$h["layer"]] += e * e; n[$h["layer"]]++ }
	END { for (l in n) printf "%s %.17g\n", l, sqrt(s[l] / n[l]) }' pred.tsv | sort >held
	cv_of a.model | awk '{ printf "%s %.17g\n", $1, sqrt($4 * $4 + $5 * $5) }' | sort >cv
	cat held cv
	paste -d' ' held cv | awk '$1 != $3 || $4 > 2 * $2 || $4 < $2 / 2 { bad = 1 } END { exit bad || NR != 2 }'
}

@test "pn-fit --cv fits the model itself as without it" {
	pn-fit -f xgb -p rounds=20 -F ct_ms,cm_total -l -o a.model "$F/train.tsv"
	pn-fit -f xgb -p rounds=20 -F ct_ms,cm_total -l --cv 3 -o b.model "$F/train.tsv"
	diff a.model <(grep -v '^cv ' b.model)
}

@test "pn-fit --cv gives a byte-identical model for the same seed" {
	pn-fit -f xgb -p rounds=20 -F ct_ms,cm_total -l --cv 5 -s 3 -o a.model "$F/train.tsv"
	pn-fit -f xgb -p rounds=20 -F ct_ms,cm_total -l --cv 5 -s 3 -o b.model "$F/train.tsv"
	cmp a.model b.model
}

@test "pn-fit --cv draws its folds from the seed" {
	pn-fit -f lr -F ct_ms,cm_total -l --cv 5 -s 1 -o a.model "$F/train.tsv"
	pn-fit -f lr -F ct_ms,cm_total -l --cv 5 -s 2 -o b.model "$F/train.tsv"
	[ "$(cv_of a.model)" != "$(cv_of b.model)" ]
}

@test "pn-fit --cv --relative records ln(predicted / measured) with the base" {
	exact "$F/train.tsv" | awk -F'\t' -v OFS='\t' -v CONVFMT=%.17g '
	NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; print; next }
	{ $h["time_ms"] = $h["time_ms"] * $h["ct_ms"]; print }' >rel.tsv
	# ln(time / ct_ms) is exact in the features: no error (without the
	# base-floor, which moves a row below its refit's smallest ct_ms)
	pn-fit -f lr -F ct_ms,cm_total --relative=ct_ms --no-base-floor --cv 5 -o a.model rel.tsv
	cv_of a.model | awk '{ b = $4 < 0 ? -$4 : $4; if (b > 1e-9 || $5 > 1e-9) bad = 1 } END { exit bad || NR != 2 }'
}

@test "pn-fit --cv rejects a fold count outside 2 to 100" {
	for k in 1 101 x 2.5; do
		run pn-fit -f lr -l --cv "$k" -o a.model "$F/train.tsv"
		[ "$status" -eq 2 ]
		[[ "$output" == "pn-fit: --cv: "* ]]
	done
	[ ! -e a.model ]
}

@test "pn-fit --cv and --no-log-target exclude each other" {
	run pn-fit -f lr --no-log-target --cv 5 -o a.model "$F/train.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-fit: --cv and --no-log-target exclude each other (--cv records errors on a log scale)" ]
}

@test "pn-fit --cv fails on a layer type with fewer than twice the folds' rows" {
	run_io pn-fit -f lr -F ct_ms,cm_total -l --cv 50 -o a.model "$F/train.tsv"
	[ "$status" -eq 1 ]
	grep -q "^pn-fit: layer '[a-z]*': --cv 50 needs at least 100 rows; it has [0-9]*$" "$T/err"
	[ ! -e a.model ]
}

@test "pn-eval -m --interval takes a row of a training device from the cv line" {
	pn-fit -f lr -F ct_ms,cm_total -l --cv 5 -o a.model "$F/train.tsv"
	pn-eval -m a.model --interval --metrics /dev/null "$F/test.tsv" >iv.tsv
	for r in 1 30; do
		l=$(col iv.tsv layer "$r")
		k=$(cv_of a.model | awk -v l="$l" -v z="$z90" '$1 == l { printf "%.17g\n", exp(sqrt($4 * $4 + $5 * $5) * z) }')
		p=$(col iv.tsv pred_ms "$r")
		near "$(col iv.tsv pred_ms_hi "$r")" "$(awk -v p="$p" -v k="$k" 'BEGIN { printf "%.17g\n", p * k }')"
		near "$(col iv.tsv pred_ms_lo "$r")" "$(awk -v p="$p" -v k="$k" 'BEGIN { printf "%.17g\n", p / k }')"
	done
}

@test "pn-eval -m --interval refuses a row of a device the cv model never saw" {
	pn-fit -f lr -F ct_ms,cm_total -l --cv 5 -o a.model "$F/train.tsv"
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "device") k = i } NR == 2 { $k = "L4" } 1' \
		"$F/test.tsv" >l4.tsv
	run_io pn-eval -m a.model --interval -o rows.tsv l4.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-eval: l4.tsv:2: the $(col l4.tsv layer 1) model has no record for --interval on L4 (fit it with pn-fit --logo, or --cv for the devices it is fitted on)" ]
	[ ! -e rows.tsv ]
}

@test "pn-eval -m --interval takes an unseen device's row from the logo lines of a model with both" {
	three() {
		awk -F'\t' -v OFS='\t' -v CONVFMT=%.17g '
		NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; print; next }
		{ print }
		$h["device"] == "T4" { $h["device"] = "P100-PCIE-16GB"; $h["time_ms"] = 1.5 * $h["time_ms"]; print }' "$1"
	}
	three "$F/train.tsv" >train3.tsv
	pn-fit -f lr -F ct_ms,cm_total -l --cv 5 --logo -o both.model train3.tsv
	pn-fit -f lr -F ct_ms,cm_total -l --logo -o logo.model train3.tsv
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "device") k = i } NR > 1 { $k = "L4" } 1' \
		"$F/test.tsv" >l4.tsv
	pn-eval -m both.model --interval --metrics /dev/null l4.tsv >a.tsv
	pn-eval -m logo.model --interval --metrics /dev/null l4.tsv >b.tsv
	cmp a.tsv b.tsv
	# and a training device's row differs: the cv line, not the logo lines
	pn-eval -m both.model --interval --metrics /dev/null "$F/test.tsv" >c.tsv
	pn-eval -m logo.model --interval --metrics /dev/null "$F/test.tsv" >d.tsv
	! cmp -s c.tsv d.tsv
}

@test "pn-sum --interval on a device the cv model was fitted on bounds the iteration by the cv line" {
	G="--gpuspecs $FIX/sum/gpus.tsv"
	# t/70-sum.bats' exact bmm model (its rows on UNIT), with a cv line:
	# bias 0.1, sd 0.2, so k = exp(sqrt(0.05) z90) for the row and the sum
	pn-featurize $G "$FIX/sum/bmm-train.tsv" | pn-fit -f lr -l -F flops -o plain.model
	grep -q '^info devices UNIT$' plain.model
	awk '$1 == "body" { print "cv 5 10 0.1 0.2" } { print }' plain.model >cv.model
	pn-sum -m cv.model --interval $G -d UNIT -b 2 "$FIX/sum/bmm.tsv" >o.tsv
	k=$(awk -v z="$z90" 'BEGIN { printf "%.17g\n", exp(sqrt(0.05) * z) }')
	t=$(col o.tsv iteration_ms 1)
	NEAR_TOL=1e-6 near "$(col o.tsv iteration_hi_ms 1)" "$(awk -v a="$t" -v k="$k" 'BEGIN { printf "%.17g\n", a * k }')"
	NEAR_TOL=1e-6 near "$(col o.tsv iteration_lo_ms 1)" "$(awk -v a="$t" -v k="$k" 'BEGIN { printf "%.17g\n", a / k }')"
}

@test "pn-sum --interval refuses a cv model on a device it was not fitted on" {
	G="--gpuspecs $FIX/sum/gpus.tsv"
	pn-featurize $G "$FIX/sum/bmm-train.tsv" | pn-fit -f lr -l -F flops --cv 2 -o cv.model
	run pn-sum -m cv.model --interval $G -d HALF "$FIX/sum/bmm.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-sum: cv.model: the bmm model has no record for --interval on HALF (fit it with pn-fit --logo, or --cv for the devices it is fitted on)" ]
}

# corrupt_cv SED MESSAGE: the model of train.tsv, its first cv line changed
# by SED, is refused by pn-eval with exit 1 and "corrupt model: MESSAGE" at
# the changed line.
corrupt_cv() {
	pn-fit -f lr -F ct_ms,cm_total -l --cv 5 -o m.model "$F/train.tsv"
	corrupt_refused m.model "$1" "$2"
}

@test "pn-eval -m rejects a cv line with too few values" {
	corrupt_cv '0,/^cv /s/^\(cv [^ ]* [^ ]* [^ ]*\) .*/\1/' \
		"'cv' needs a fold count, a row count, a bias and an sd"
}

@test "pn-eval -m rejects a cv line with a fold count below 2" {
	corrupt_cv '0,/^cv /s/^cv [^ ]* /cv 1 /' \
		"cv folds: '1' is not a count of at least 2"
}

@test "pn-eval -m rejects a cv line with fewer rows than folds" {
	corrupt_cv '0,/^cv /s/^cv \([^ ]*\) [^ ]* /cv \1 3 /' \
		"cv rows: '3' is not a count of at least the folds"
}

@test "pn-eval -m rejects a cv line with a negative sd" {
	corrupt_cv '0,/^cv /s/^\(cv [^ ]* [^ ]* [^ ]*\) .*/\1 -0.5/' \
		"cv sd: '-0.5' is negative"
}

@test "pn-eval -m rejects a cv bias that is not a finite number" {
	corrupt_cv '0,/^cv /s/^\(cv [^ ]* [^ ]*\) [^ ]*/\1 inf/' \
		"cv bias: 'inf' is not a number"
}

@test "pn-eval -m rejects a second cv line in one model" {
	corrupt_cv '0,/^cv /s/^cv .*/&\n&/' "'cv' listed twice"
}

# cv_models: in the test's directory, t/70-sum.bats' exact bmm model (rows
# on UNIT) with the cv line "cv 5 10 0.1 0.2" (bmm.model), the same
# relabelled as dense's with "cv 5 10 0 0.4" (dense.model), both in
# set.model; and two.tsv, a network of a bmm and a dense row.
cv_models() {
	G="--gpuspecs $FIX/sum/gpus.tsv"
	pn-featurize $G "$FIX/sum/bmm-train.tsv" | pn-fit -f lr -l -F flops -o plain.model
	awk '$1 == "body" { print "cv 5 10 0.1 0.2" } { print }' plain.model >bmm.model
	sed 's/^layer bmm$/layer dense/; s/^info layers bmm$/info layers dense/; s/^cv .*/cv 5 10 0 0.4/' \
		bmm.model >dense.model
	cat bmm.model dense.model >set.model
	printf 'name\tlayer\tphase\tbatch\tm\tn\tk\tin_features\tout_features\n' >two.tsv
	printf 'mm\tbmm\tfwd\t1\t1000\t500\t1000\tNA\tNA\n' >>two.tsv
	printf 'fc\tdense\tfwd\t1000\tNA\tNA\tNA\t1000\t500\n' >>two.tsv
}

# row_times NET: the total_ms (time x repeat) of every row of pn-sum
# --per-layer with set.model on UNIT, one a line.
row_times() {
	pn-sum -m set.model $G -d UNIT --per-layer "$1" |
		awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next } { printf "%.17g\n", $h["total_ms"] }'
}

@test "pn-sum --interval adds the bounds of cv rows of one layer type" {
	cv_models
	printf 'name\tlayer\tphase\tbatch\tm\tn\tk\nmm\tbmm\tfwd\t1\t1000\t500\t1000\nmm2\tbmm\tfwd\t1\t500\t500\t1000\n' >same.tsv
	pn-sum -m set.model --interval $G -d UNIT same.tsv >o.tsv
	k=$(awk -v z="$z90" 'BEGIN { printf "%.17g\n", exp(sqrt(0.05) * z) }')
	t=$(col o.tsv iteration_ms 1)
	NEAR_TOL=1e-9 near "$(col o.tsv iteration_hi_ms 1)" "$(awk -v a="$t" -v k="$k" 'BEGIN { printf "%.17g\n", a * k }')"
	NEAR_TOL=1e-9 near "$(col o.tsv iteration_lo_ms 1)" "$(awk -v a="$t" -v k="$k" 'BEGIN { printf "%.17g\n", a / k }')"
}

@test "pn-sum --interval adds cv rows of different layer types in root sum of squares" {
	cv_models
	pn-sum -m set.model --interval $G -d UNIT two.tsv >o.tsv
	row_times two.tsv >rows
	[ "$(wc -l <rows)" -eq 2 ]
	a=$(sed -n 1p rows) b=$(sed -n 2p rows)
	want=$(awk -v a="$a" -v b="$b" -v z="$z90" 'BEGIN {
		ka = exp(sqrt(0.05) * z); kb = exp(0.4 * z)
		hi = a + b + sqrt((a * (ka - 1)) ^ 2 + (b * (kb - 1)) ^ 2)
		lo = a + b - sqrt((a - a / ka) ^ 2 + (b - b / kb) ^ 2)
		printf "%.17g %.17g\n", lo, hi }')
	NEAR_TOL=1e-9 near "$(col o.tsv iteration_lo_ms 1)" "${want% *}"
	NEAR_TOL=1e-9 near "$(col o.tsv iteration_hi_ms 1)" "${want#* }"
}

@test "pn-sum --interval adds a logo row's bounds to the root sum of squares of cv rows" {
	cv_models
	# the dense model with a leave-one-device-out record and no cv line:
	# its row adds its bounds, the bmm row its deviation
	sed '/^cv /d' dense.model | awk '$1 == "body" { print "logo A 10 0.1 0.2"; print "logo B 10 -0.1 0.2"; print "logo C 10 0.1 0.2" } { print }' >dlogo.model
	cat bmm.model dlogo.model >set.model
	pn-sum -m set.model --interval $G -d UNIT two.tsv >o.tsv
	row_times two.tsv >rows
	a=$(sed -n 1p rows) b=$(sed -n 2p rows)
	# the logo factor of a sum at 90% with 3 devices: exp(0.1 t), t = 2.3533634348
	want=$(awk -v a="$a" -v b="$b" -v z="$z90" 'BEGIN {
		ka = exp(sqrt(0.05) * z); kb = exp(0.1 * 2.3533634348)
		printf "%.17g %.17g\n", a / ka + b / kb, a * ka + b * kb }')
	NEAR_TOL=1e-6 near "$(col o.tsv iteration_lo_ms 1)" "${want% *}"
	NEAR_TOL=1e-6 near "$(col o.tsv iteration_hi_ms 1)" "${want#* }"
}
