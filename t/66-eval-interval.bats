#!/usr/bin/env bats
# pn-eval --interval: with --model, the columns PRED_lo and PRED_hi of a
# prediction interval from the model's leave-one-device-out (logo) lines;
# without, those columns read; either way the metric cover.

load test_helper
load fit_helper

setup() {
	fit_setup
	# the training rows with a third device (pn-fit --logo needs 3): a
	# copy of every T4 row on P100-PCIE-16GB, 1.5 times slower
	awk -F'\t' -v OFS='\t' -v CONVFMT=%.17g '
	NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; print; next }
	{ print }
	$h["device"] == "T4" { $h["device"] = "P100-PCIE-16GB"; $h["time_ms"] = 1.5 * $h["time_ms"]; print }' \
		"$F/train.tsv" >train3.tsv
	pn-fit -f lr -F ct_ms,cm_total -l --logo -o logo.model train3.tsv
}

# k_of MODEL LEVEL: "LAYER K" per model of the set MODEL: the interval
# factor k = exp(s t), s = sqrt(mean over the layer's logo lines of bias^2
# + sd^2), t the quantile at (1 + LEVEL / 100) / 2 of Student's t with as
# many degrees of freedom as logo lines.  The models here have 3, and for 3
# degrees of freedom the t distribution function has the closed form
#   F(t) = 1/2 + (atan(t / sqrt(3)) + sqrt(3) t / (3 + t^2)) / pi,
# which bisection inverts: t_{0.95,3} = 2.3533634..., t_{0.975,3} =
# 3.1824463..., the values of the tables.
k_of() {
	awk -v level="$2" '
	function F(t) { return 0.5 + (atan2(t, sqrt(3)) + sqrt(3) * t / (3 + t * t)) / 3.141592653589793 }
	function quantile(p,   lo, hi, mid, i) {
		lo = 0; hi = 100
		for (i = 0; i < 200; i++) { mid = (lo + hi) / 2; if (F(mid) < p) lo = mid; else hi = mid }
		return lo
	}
	$1 == "layer" { l = $2 }
	$1 == "logo" { s[l] += $4 * $4 + $5 * $5; d[l]++ }
	END { t = quantile((1 + level / 100) / 2)
		for (l in d) { if (d[l] != 3) exit 1; printf "%s %.17g\n", l, exp(sqrt(s[l] / 3) * t) } }' "$1"
}

# factors_are K-LIST FILE: in every row of FILE, pred_ms_hi / pred_ms and
# pred_ms / pred_ms_lo equal the K of the row's layer within 1e-12
# relative.
factors_are() {
	awk -F'\t' '
	FNR == NR { k[$1] = $2; next }
	function off(a, b) { d = a / b - 1; return d > 1e-12 || d < -1e-12 }
	FNR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
	{ K = k[$h["layer"]]; n++
	  if (K == "" || off($h["pred_ms_hi"] / $h["pred_ms"], K) || off($h["pred_ms"] / $h["pred_ms_lo"], K)) {
		print FNR ": " $h["pred_ms_lo"], $h["pred_ms"], $h["pred_ms_hi"] " want k " K; bad = 1 } }
	END { exit bad || n == 0 }' <(echo "$1" | tr ' ' '\t') "$2"
}

@test "pn-eval -m --interval appends the columns pred_ms_lo and pred_ms_hi" {
	run_io pn-eval -m logo.model --interval "$F/test.tsv"
	[ "$status" -eq 0 ]
	[ "$(head -1 "$T/out")" = "$(head -1 "$F/test.tsv")	pred_ms	pred_ms_lo	pred_ms_hi	domain" ]
	diff -u "$F/test.tsv" <(cut -f1-34 "$T/out")
	[ "$(awk -F'\t' 'NF != 38' "$T/out" | wc -l)" -eq 0 ]
	[ "$(wc -l <"$T/out")" -eq 41 ]
}

@test "pn-eval -m --interval predicts the same pred_ms as without it" {
	pn-eval -m logo.model --interval "$F/test.tsv" >iv.tsv 2>/dev/null
	pn-eval -m logo.model "$F/test.tsv" >plain.tsv 2>/dev/null
	diff -u plain.tsv <(cut -f1-35,38 iv.tsv)
}

@test "pn-eval -m --interval puts every prediction inside its interval" {
	pn-eval -m logo.model --interval "$F/test.tsv" >iv.tsv 2>/dev/null
	awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
		!(0 < $h["pred_ms_lo"] && $h["pred_ms_lo"] < $h["pred_ms"] && $h["pred_ms"] < $h["pred_ms_hi"]) { bad = 1 }
		END { exit bad || NR != 41 }' iv.tsv
}

@test "pn-eval -m --interval divides and multiplies the prediction by k from the model's logo lines" {
	k=$(k_of logo.model 90)
	echo "$k"
	[ "$(echo "$k" | wc -l)" -eq 2 ]
	pn-eval -m logo.model --interval "$F/test.tsv" >iv.tsv 2>/dev/null
	factors_are "$k" iv.tsv
}

@test "pn-eval -m --interval takes s as the root mean of bias^2 + sd^2 over the logo lines" {
	# biases 0.1, -0.1, 0.1 and sds 0.2: s = sqrt(0.01 + 0.04); t_{0.95,3}
	# = 2.3533634348018 (k_of above, and the tables)
	pn-fit -f lr -F ct_ms,cm_total -l -o plain.model train3.tsv
	awk '$1 == "body" { print "logo A 10 0.1 0.2"; print "logo B 10 -0.1 0.2"; print "logo C 10 0.1 0.2" } 1' \
		plain.model >hand.model
	k=$(awk 'BEGIN { printf "%.17g", exp(sqrt(0.05) * 2.3533634348018) }')
	pn-eval -m hand.model --interval "$F/test.tsv" >iv.tsv 2>/dev/null
	factors_are "$(printf 'dense %s\nbmm %s\n' "$k" "$k")" iv.tsv
}

@test "pn-eval -m --interval=95 takes the 97.5% quantile of t" {
	pn-eval -m logo.model --interval=95 "$F/test.tsv" >iv.tsv 2>/dev/null
	factors_are "$(k_of logo.model 95)" iv.tsv
}

@test "pn-eval -m -I takes a fractional level attached to the option" {
	pn-eval -m logo.model -I97.5 "$F/test.tsv" >iv.tsv 2>/dev/null
	factors_are "$(k_of logo.model 97.5)" iv.tsv
}

@test "pn-eval -m --interval=95 gives a wider interval than the default 90" {
	pn-eval -m logo.model --interval "$F/test.tsv" >90.tsv 2>/dev/null
	pn-eval -m logo.model --interval=95 "$F/test.tsv" >95.tsv 2>/dev/null
	paste <(cut -f36,37 90.tsv) <(cut -f36,37 95.tsv) |
		awk -F'\t' 'NR > 1 && !($3 < $1 && $4 > $2) { bad = 1 } END { exit bad || NR != 41 }'
}

@test "pn-eval -m --interval replaces existing pred_ms_lo and pred_ms_hi columns in place" {
	pn-eval -m logo.model --interval "$F/test.tsv" >once.tsv 2>/dev/null
	# the bounds moved to the front, in the other order, with stale values
	awk -F'\t' -v OFS='\t' '{ hi = $37; lo = $36; NF = 35
		print (NR == 1 ? hi : 0), $0, (NR == 1 ? lo : 0) }' once.tsv >stale.tsv
	pn-eval -m logo.model --interval stale.tsv >out.tsv 2>/dev/null
	[ "$(head -1 out.tsv)" = "$(head -1 stale.tsv)	domain" ]
	awk -F'\t' -v OFS='\t' '{ hi = $37; lo = $36; d = $38; NF = 35; print hi, $0, lo, d }' once.tsv >want.tsv
	diff -u want.tsv out.tsv
}

@test "pn-eval -m --interval writes columns PRED_lo and PRED_hi for --predicted PRED" {
	run_io pn-eval -m logo.model --interval --predicted guess_ms "$F/test.tsv"
	[ "$status" -eq 0 ]
	[ "$(head -1 "$T/out" | cut -f35-)" = "guess_ms	guess_ms_lo	guess_ms_hi	domain" ]
}

@test "pn-eval -m --interval adds the metric cover as the last column" {
	run_io pn-eval -m logo.model --interval "$F/test.tsv"
	[ "$status" -eq 0 ]
	[ "$(sed -n 1p "$T/err")" = "| n | rmse | mae | mape | mdape | maxape | r2 | cover |" ]
	[ "$(sed -n 2p "$T/err")" = "|---:|---:|---:|---:|---:|---:|---:|---:|" ]
	[ "$(wc -l <"$T/err")" -eq 3 ]
	pn-eval -m logo.model --interval --metrics m.tsv "$F/test.tsv" >/dev/null
	[ "$(head -1 m.tsv)" = "n	rmse	mae	mape	mdape	maxape	r2	cover" ]
	# the other metrics as without --interval
	pn-eval -m logo.model --metrics plain.tsv "$F/test.tsv" >/dev/null
	diff -u plain.tsv <(cut -f1-7 m.tsv)
}

@test "pn-eval without --interval writes no cover column" {
	pn-eval -m logo.model --metrics m.tsv "$F/test.tsv" >/dev/null
	[ "$(head -1 m.tsv)" = "n	rmse	mae	mape	mdape	maxape	r2" ]
}

@test "pn-eval -m --interval reports as cover the percentage of measured values inside their interval" {
	# every third row 30 times slower: outside its interval (k is below 30)
	awk -F'\t' -v OFS='\t' -v CONVFMT=%.17g 'NR > 1 && NR % 3 == 0 { $34 = 30 * $34 } 1' \
		"$F/test.tsv" >slow.tsv
	pn-eval -m logo.model --interval --metrics m.tsv slow.tsv >iv.tsv
	want=$(awk -F'\t' 'NR > 1 { n++; in_ += $36 <= $34 && $34 <= $37 } END { printf "%.17g", 100 * in_ / n }' iv.tsv)
	got=$(tail -1 m.tsv | cut -f8)
	echo "cover $got, want $want"
	awk -v g="$got" -v w="$want" 'BEGIN { d = g - w; exit !(w > 0 && w < 100 && d < 1e-12 && d > -1e-12) }'
}

@test "pn-eval -m --interval --by reports the cover of every group" {
	awk -F'\t' -v OFS='\t' -v CONVFMT=%.17g 'NR > 1 && NR % 3 == 0 { $34 = 30 * $34 } 1' \
		"$F/test.tsv" >slow.tsv
	pn-eval -m logo.model --interval --by layer --metrics m.tsv slow.tsv >iv.tsv
	awk -F'\t' 'NR > 1 { n[$1]++; in_[$1] += $36 <= $34 && $34 <= $37 }
		END { for (l in n) printf "%s\t%.17g\n", l, 100 * in_[l] / n[l] }' iv.tsv | sort >want
	tail -n +2 m.tsv | cut -f1,9 | sort >got
	paste want got | awk -F'\t' '$1 != $3 { bad = 1 } { d = $2 - $4; if (d > 1e-12 || d < -1e-12) bad = 1 }
		END { exit bad || NR != 2 }'
}

@test "pn-eval -m --interval fails on a model without logo or cv lines" {
	pn-fit -f lr -F ct_ms,cm_total -l -o plain.model train3.tsv
	run_io pn-eval -m plain.model --interval -o rows.tsv "$F/test.tsv"
	[ "$status" -eq 1 ]
	dev=$(col "$F/test.tsv" device 1)
	[ "$(cat "$T/err")" = "pn-eval: $F/test.tsv:2: the dense model has no record for --interval on $dev (fit it with pn-fit --logo, or --cv for the devices it is fitted on)" ]
	[ ! -e rows.tsv ]
}

@test "pn-eval -m --interval names the first row whose model of a set has no logo lines" {
	pn-fit -f lr -F ct_ms,cm_total -l -o plain.model train3.tsv
	# bmm without, dense with logo lines
	{ awk '/^pn-model/ { n++ } n == 1' plain.model; awk '/^pn-model/ { n++ } n == 2' logo.model; } >set.model
	run_io pn-eval -m set.model --interval "$F/test.tsv"
	[ "$status" -eq 1 ]
	dev=$(col "$F/test.tsv" device 21)
	[ "$(tail -1 "$T/err")" = "pn-eval: $F/test.tsv:22: the bmm model has no record for --interval on $dev (fit it with pn-fit --logo, or --cv for the devices it is fitted on)" ]
}

@test "pn-eval --interval rejects a level of 0, 100 or below 0" {
	for level in 0 100 -5; do
		run pn-eval -m logo.model --interval=$level "$F/test.tsv"
		[ "$status" -eq 2 ]
		case $level in
		100) want="'100' is too large (must be below 100)" ;;
		*) want="'$level' is too small (must be above 0)" ;;
		esac
		[ "${lines[0]}" = "pn-eval: --interval: $want" ]
		[ "${lines[1]}" = "Try 'pn-eval --help' for more information." ]
	done
}

@test "pn-eval --interval rejects a level that is not a number" {
	run pn-eval -m logo.model --interval=abc "$F/test.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-eval: --interval: 'abc' is not a number" ]
}

# iv.tsv: four hand-checked rows: errors 0, -1, 0, -6; APE 0, 50, 0, 75;
# measured values inside, above, inside (on the lower bound), above their
# interval.
bounds() {
	printf 'time_ms\tpred_ms\tpred_ms_lo\tpred_ms_hi\n4\t4\t2\t8\n2\t1\t0.5\t1.5\n1\t1\t1\t2\n8\t2\t1\t4\n' >iv.tsv
}

@test "pn-eval --interval without -m reads the bound columns and reports cover" {
	bounds
	run_io pn-eval --interval iv.tsv
	[ "$status" -eq 0 ]
	# rmse sqrt(37 / 4); mae 7 / 4; r2 1 - 37 / 28.75 (mean 3.75); cover 2 of 4
	printf 'n\trmse\tmae\tmape\tmdape\tmaxape\tr2\tcover\n4\t3.0413812651491097\t1.75\t31.25\t25\t75\t-0.28695652173913044\t50\n' >want
	diff -u want "$T/out"
	[ ! -s "$T/err" ]
}

@test "pn-eval --interval counts a measured value on either bound as inside" {
	printf 'time_ms\tpred_ms\tpred_ms_lo\tpred_ms_hi\n1\t2\t1\t3\n3\t2\t1\t3\n' >edge.tsv
	run_io pn-eval --interval edge.tsv
	[ "$status" -eq 0 ]
	[ "$(tail -1 "$T/out" | cut -f8)" = "100" ]
}

@test "pn-eval --interval without -m reads the bounds of --predicted" {
	bounds
	sed '1s/pred_ms/p/g' iv.tsv >p.tsv
	run_io pn-eval --interval --predicted p p.tsv
	[ "$status" -eq 0 ]
	[ "$(tail -1 "$T/out" | cut -f8)" = "50" ]
}

@test "pn-eval --interval without -m fails on a missing pred_ms_lo column" {
	bounds
	cut -f1,2,4 iv.tsv >nolo.tsv
	run_io pn-eval --interval nolo.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-eval: nolo.tsv:1: missing column 'pred_ms_lo'" ]
}

@test "pn-eval --interval without -m fails on a missing pred_ms_hi column" {
	bounds
	cut -f1-3 iv.tsv >nohi.tsv
	run_io pn-eval --interval nohi.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-eval: nohi.tsv:1: missing column 'pred_ms_hi'" ]
}

@test "pn-eval --interval fails on an upper bound below the lower bound" {
	bounds
	awk -F'\t' -v OFS='\t' 'NR == 3 { t = $3; $3 = $4; $4 = t } 1' iv.tsv >swapped.tsv
	run_io pn-eval --interval swapped.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-eval: swapped.tsv:3: column 'pred_ms_hi': the interval's upper bound is below its lower bound" ]
}

@test "pn-eval --interval fails on an NA bound without --skip-na" {
	bounds
	sed '3s/\t0.5\t/\tNA\t/' iv.tsv >na.tsv
	run_io pn-eval --interval na.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-eval: na.tsv:3: column 'pred_ms_lo': value is NA" ]
}

@test "pn-eval --interval --skip-na skips a row with an NA bound" {
	bounds
	sed '3s/\t0.5\t/\tNA\t/' iv.tsv >na.tsv
	run_io pn-eval --interval --skip-na na.tsv
	[ "$status" -eq 0 ]
	[ "$(tail -1 "$T/out" | cut -f1,8)" = "3	66.66666666666667" ]
	[ "$(cat "$T/err")" = "pn-eval: skipped 1 row with a missing value" ]
}

@test "pn-eval without --interval groups by a column named cover" {
	printf 'time_ms\tpred_ms\tcover\n1\t2\ta\n2\t2\tb\n' >cv.tsv
	run pn-eval --by cover cv.tsv
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | cut -f1,2 | tr '\t\n' ' ;')" = "cover n;a 1;b 1;" ]
}

@test "pn-eval --interval refuses to group by a column named cover" {
	printf 'time_ms\tpred_ms\tpred_ms_lo\tpred_ms_hi\tcover\n1\t2\t1\t3\ta\n' >cv.tsv
	run pn-eval --interval --by cover cv.tsv
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-eval: column 'cover' cannot be used in --by: the output has a column of that name" ]
}
