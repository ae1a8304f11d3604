#!/usr/bin/env bats
# pn-eval --interval: prediction intervals for unmeasured GPUs from a
# model's leave-one-device-out record (pn-fit --logo), and the metric cover.

load test_helper
load fit_helper

setup() {
	fit_setup
	# every layer's model gets three records: biases 0.1, -0.1, 0.1 and
	# sds 0.2, so the spread of one row is sqrt(0.01 + 0.04)
	pn-fit -f lr -F flops -l -o plain.model "$F/train.tsv"
	awk '$1 == "body" { print "logo A 10 0.1 0.2"; print "logo B 10 -0.1 0.2"; print "logo C 10 0.1 0.2" } { print }' \
		plain.model >logo.model
}

# k(T): exp(sqrt(0.05) * T), T the t quantile for the level and 3 degrees of
# freedom: 2.3533634348 at 90% (t_0.95,3), 3.1824463053 at 95% (t_0.975,3)
k() { awk -v t="$1" 'BEGIN { printf "%.15g", exp(sqrt(0.05) * t) }'; }

# ratios FILE K: every row has pred_ms_hi / pred_ms and pred_ms / pred_ms_lo
# equal to K (1e-9 relative)
ratios() {
	awk -F'\t' -v k="$2" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
		{ a = $h["pred_ms_hi"] / $h["pred_ms"]; b = $h["pred_ms"] / $h["pred_ms_lo"]
		  if ((a - k) ^ 2 > (1e-9 * k) ^ 2 || (b - k) ^ 2 > (1e-9 * k) ^ 2) { print NR ": " a " " b " want " k; bad = 1 }; n++ }
		END { exit bad || n != 40 }' "$1"
}

@test "pn-eval -m --interval appends the bounds after the prediction" {
	run_io pn-eval -m logo.model --interval "$F/test.tsv"
	[ "$status" -eq 0 ]
	[ "$(head -1 out)" = "$(head -1 "$F/test.tsv")	pred_ms	pred_ms_lo	pred_ms_hi" ]
	diff -u "$F/test.tsv" <(cut -f1-34 out)
}

@test "pn-eval --interval puts the prediction k times above and below, k from the t quantile" {
	pn-eval -m logo.model --interval --metrics /dev/null "$F/test.tsv" >pred.tsv
	ratios pred.tsv "$(k 2.3533634348)"
}

@test "pn-eval --interval=95 uses the 95% quantile" {
	pn-eval -m logo.model --interval=95 --metrics /dev/null "$F/test.tsv" >pred.tsv
	ratios pred.tsv "$(k 3.1824463053)"
}

@test "pn-eval --interval replaces existing bound columns in place" {
	pn-eval -m logo.model -I --metrics /dev/null "$F/test.tsv" >once.tsv
	pn-eval -m logo.model -I --metrics /dev/null once.tsv >twice.tsv
	cmp once.tsv twice.tsv
}

@test "pn-eval --interval reports the share of measured values inside as cover" {
	pn-eval -m logo.model -I --metrics metrics.tsv -o pred.tsv "$F/test.tsv"
	[ "$(head -1 metrics.tsv)" = "$(printf 'n\trmse\tmae\tmape\tmdape\tmaxape\tr2\tcover')" ]
	want=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
		{ n++; in_ += $h["pred_ms_lo"] <= $h["time_ms"] && $h["time_ms"] <= $h["pred_ms_hi"] }
		END { print 100 * in_ / n }' pred.tsv)
	got=$(awk -F'\t' 'NR == 2 { print $8 }' metrics.tsv)
	awk -v a="$got" -v b="$want" 'BEGIN { exit !((a - b) ^ 2 < 1e-18) }'
}

@test "pn-eval --interval without a model reads the bounds from the input" {
	pn-eval -m logo.model -I --metrics metrics.tsv -o pred.tsv "$F/test.tsv"
	run pn-eval --interval pred.tsv
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") metrics.tsv
}

@test "pn-eval --interval without a model needs the bound columns" {
	pn-eval -m logo.model --metrics /dev/null -o pred.tsv "$F/test.tsv"
	run pn-eval --interval pred.tsv
	[ "$status" -eq 1 ]
	[[ "$output" == *"'pred_ms_lo'"* ]]
}

@test "pn-eval --interval rejects a row whose upper bound is below its lower bound" {
	pn-eval -m logo.model -I --metrics /dev/null -o pred.tsv "$F/test.tsv"
	awk -F'\t' -v OFS='\t' 'NR == 3 { t = $(NF - 1); $(NF - 1) = $NF; $NF = t } { print }' pred.tsv >swap.tsv
	run pn-eval --interval swap.tsv
	[ "$status" -eq 1 ]
	[[ "$output" == "pn-eval: swap.tsv:3:"*"the interval's upper bound is below its lower bound" ]]
}

@test "pn-eval --interval names a model without a leave-one-device-out record" {
	run_io pn-eval -m plain.model --interval "$F/test.tsv"
	[ "$status" -eq 1 ]
	[ "$(cat err)" = "pn-eval: $F/test.tsv:2: the dense model has no leave-one-device-out record for --interval (fit it with pn-fit --logo)" ]
}

@test "pn-eval rejects an interval level that is not a percentage" {
	for v in 0 100 abc -5; do
		run pn-eval -m logo.model --interval="$v" "$F/test.tsv"
		[ "$status" -eq 2 ]
		[ "${lines[0]}" = "pn-eval: invalid --interval '$v': want a percentage more than 0 and less than 100" ]
	done
}

@test "pn-eval without --interval writes neither bounds nor cover" {
	pn-eval -m logo.model --metrics metrics.tsv -o pred.tsv "$F/test.tsv"
	[ "$(head -1 pred.tsv | tr '\t' '\n' | grep -c '^pred_ms_')" -eq 0 ]
	[ "$(head -1 metrics.tsv | tr '\t' '\n' | tail -1)" = r2 ]
}
