#!/usr/bin/env bats
# pn-eval: accuracy metrics of predicted against measured values.

load test_helper

setup() {
	T="$BATS_TEST_TMPDIR"
	E="$FIX/eval"
	cd "$T"
}

# assert_close EXPECTED ACTUAL: two TSV files of the same shape whose numeric
# fields agree to 1e-9 relative and whose other fields are equal.
assert_close() {
	awk -F'\t' -v tol=1e-9 '
	function isnum(s) {
		return s ~ /^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$/
	}
	function bad(msg) { print "line " FNR ": " msg; failed = 1 }
	NR == FNR { want[FNR] = $0; nwant = FNR; next }
	{
		ngot = FNR
		if (!(FNR in want)) { bad("unexpected line: " $0); next }
		nf = split(want[FNR], w, "\t")
		if (nf != NF) { bad(NF " fields, want " nf); next }
		for (i = 1; i <= NF; i++) {
			if (isnum(w[i]) && isnum($i)) {
				d = $i - w[i]; if (d < 0) d = -d
				s = w[i] < 0 ? -w[i] : w[i]
				if (d > tol * s)
					bad("field " i ": " $i ", want " w[i])
			} else if ($i != w[i]) {
				bad("field " i ": " $i ", want " w[i])
			}
		}
	}
	END {
		if (ngot != nwant) { print ngot " lines, want " nwant; failed = 1 }
		exit failed
	}' "$1" "$2"
}

# t/fixtures/eval/runs.tsv, by hand (e = pred - meas, APE = 100|e|/meas):
#   device meas pred   e  APE
#   T4      10   12    2   20
#   A100    20   19   -1    5
#   T4      40   36   -4   10
#   A100    50   50    0    0
#   T4      80   88    8   10
#   V100    30   33    3   10
# all:  n 6, rmse sqrt(94/6) = 3.958114029..., mae 18/6 = 3, mape 55/6,
#       mdape (10+10)/2 = 10, maxape 20, mean(meas) 230/6,
#       SS_tot 11900 - 230^2/6 = 18500/6, r2 1 - 94*6/18500 = 0.969513513...
# T4:   n 3, rmse sqrt(84/3) = sqrt(28), mae 14/3, mape 40/3, mdape 10,
#       maxape 20, SS_tot 8100 - 130^2/3 = 7400/3, r2 1 - 252/7400
# A100: n 2, rmse sqrt(1/2), mae 0.5, mape 2.5, mdape (5+0)/2 = 2.5,
#       maxape 5, SS_tot 450, r2 1 - 1/450
# V100: n 1, rmse 3, mae 3, APE 10, r2 NA (n < 2)
# The digits in runs.expected and by-device*.expected come from bc -l.

@test "pn-eval matches hand-computed metrics over the whole input" {
	run_io pn-eval "$E/runs.tsv"
	[ "$status" -eq 0 ]
	assert_close "$E/runs.expected" "$T/out"
	[ ! -s "$T/err" ]
}

# t/fixtures/eval/precise.tsv in bc -l with scale=40:
#   rmse   sqrt(sse/8) = 17.8558814265076256414131923741018419168603
#   mae    6.438225
#   mape   7.1775446478885491629908426296667116843900
#   mdape  (5.3333...33 + 5.4545...45) / 2 = 5.393939...39
#   maxape 20.2
#   r2     .9523622458973697344355463014725587884730
@test "pn-eval matches metrics computed with bc to 1e-9 relative" {
	run_io pn-eval "$E/precise.tsv"
	[ "$status" -eq 0 ]
	assert_close "$E/precise.expected" "$T/out"
	[ ! -s "$T/err" ]
}

@test "pn-eval --by writes one row per group in order of first appearance" {
	run_io pn-eval --by device "$E/runs.tsv"
	[ "$status" -eq 0 ]
	assert_close "$E/by-device.expected" "$T/out"
	[ ! -s "$T/err" ]
}

@test "pn-eval --total appends an overall row whose by columns read ALL" {
	run_io pn-eval --by device --total "$E/runs.tsv"
	[ "$status" -eq 0 ]
	assert_close "$E/by-device-total.expected" "$T/out"
	[ ! -s "$T/err" ]
}

@test "pn-eval --format md writes a markdown table grouped by two columns" {
	run_io pn-eval -b device,layer --total --format md "$E/runs.tsv"
	[ "$status" -eq 0 ]
	diff -u "$E/by-device-layer.md" "$T/out"
	[ ! -s "$T/err" ]
}

@test "pn-eval --format md rounds to 4 significant digits" {
	run_io pn-eval --by case --format md "$E/scale.tsv"
	[ "$status" -eq 0 ]
	diff -u "$E/scale.md" "$T/out"
	[ ! -s "$T/err" ]
}

@test "pn-eval --format md writes an infinite error as inf" {
	printf 'measured\tpredicted\n1e-300\t1e300\n' >in.tsv
	run_io pn-eval --measured measured --predicted predicted --format md in.tsv
	[ "$status" -eq 0 ]
	printf '%s\n' '| n | rmse | mae | mape | mdape | maxape | r2 |' \
		'|---:|---:|---:|---:|---:|---:|---:|' \
		'| 1 | 1.000e+300 | 1.000e+300 | inf | inf | inf | NA |' >expected
	diff -u expected "$T/out"
	[ ! -s "$T/err" ]
}

@test "pn-eval --measured and --predicted choose the columns" {
	sed '1s/time_ms/t/; 1s/pred_ms/p/' "$E/runs.tsv" >in.tsv
	run_io pn-eval --measured t --predicted p in.tsv
	[ "$status" -eq 0 ]
	assert_close "$E/runs.expected" "$T/out"
}

@test "pn-eval -o writes the metrics to a file" {
	run pn-eval -o metrics.tsv "$E/runs.tsv"
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
	assert_close "$E/runs.expected" metrics.tsv
}

@test "pn-eval reads gzip input" {
	gzip -c "$E/runs.tsv" >runs.tsv.gz
	run_io pn-eval runs.tsv.gz
	[ "$status" -eq 0 ]
	assert_close "$E/runs.expected" "$T/out"
}

@test "pn-eval gives r2 NA when every measured value is equal" {
	printf 'time_ms\tpred_ms\n5\t4\n5\t6\n' >same.tsv
	printf 'n\trmse\tmae\tmape\tmdape\tmaxape\tr2\n2\t1\t1\t20\t20\t20\tNA\n' >expected
	run_io pn-eval same.tsv
	[ "$status" -eq 0 ]
	diff -u expected "$T/out"
}

@test "pn-eval fails on a missing column" {
	run pn-eval --predicted guess "$E/runs.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: $E/runs.tsv:1: missing column 'guess'" ]
}

@test "pn-eval fails on a missing --by column" {
	run pn-eval --by gpu "$E/runs.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: $E/runs.tsv:1: missing column 'gpu'" ]
}

@test "pn-eval fails on a value that is not a number" {
	printf 'time_ms\tpred_ms\n1\t2\n3\tfast\n' >in.tsv
	run pn-eval in.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: in.tsv:3: column 'pred_ms': 'fast' is not a number" ]
}

@test "pn-eval fails on a measured value of 0" {
	printf 'time_ms\tpred_ms\n1\t2\n0\t0.5\n' >in.tsv
	run pn-eval in.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: in.tsv:3: measured value is 0: APE undefined" ]
}

@test "pn-eval fails on an NA value without --skip-na" {
	cp "$E/na.tsv" .
	run pn-eval na.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: na.tsv:3: column 'time_ms': value is NA" ]
}

@test "pn-eval fails on an empty value without --skip-na" {
	sed 3d "$E/na.tsv" >na.tsv
	run pn-eval na.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: na.tsv:3: column 'pred_ms': value is empty" ]
}

@test "pn-eval --skip-na skips rows without a value and reports their count" {
	# left: (10, 12) and (40, 36): rmse sqrt((4+16)/2), mae 3, APE 20 and
	# 10, SS_tot 450, r2 1 - 20/450
	printf 'n\trmse\tmae\tmape\tmdape\tmaxape\tr2\n2\t3.16227766016837933\t3\t15\t15\t20\t0.955555555555555556\n' >expected
	run_io pn-eval --skip-na "$E/na.tsv"
	[ "$status" -eq 0 ]
	assert_close expected "$T/out"
	[ "$(cat "$T/err")" = "pn-eval: skipped 2 rows with a missing value" ]
}

@test "pn-eval --skip-na fails when every row is skipped" {
	printf 'time_ms\tpred_ms\nNA\t1\n2\tNA\n' >in.tsv
	run pn-eval --skip-na in.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: in.tsv: no rows left after skipping 2 with a missing value" ]
}

@test "pn-eval fails on empty input" {
	run pn-eval </dev/null
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: -: empty input (no header)" ]
}

@test "pn-eval fails on a header without rows" {
	printf 'time_ms\tpred_ms\n' >in.tsv
	run pn-eval in.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: in.tsv: no data rows" ]
}

@test "pn-eval fails on a row with the wrong field count" {
	printf 'time_ms\tpred_ms\n1\t2\n3\n' >in.tsv
	run pn-eval in.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: in.tsv:3: expected 2 fields, found 1" ]
}

@test "pn-eval -o leaves no file when the input is bad" {
	printf 'time_ms\tpred_ms\n1\t2\n0\t1\n' >in.tsv
	run pn-eval -o metrics.tsv in.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: in.tsv:3: measured value is 0: APE undefined" ]
	[ "$(ls)" = "in.tsv" ]
}

@test "pn-eval reports a write error on a full device" {
	run bash -c 'pn-eval "$1" 2>&1 >/dev/full' _ "$E/runs.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: write error: No space left on device" ]
}

@test "pn-eval --help prints the usage on stdout" {
	run_io pn-eval --help
	[ "$status" -eq 0 ]
	[ "$(head -1 "$T/out")" = "Usage: pn-eval [OPTION]... [FILE]" ]
	grep -q -- '--skip-na' "$T/out"
	[ ! -s "$T/err" ]
}

@test "pn-eval --version prints the version" {
	run pn-eval --version
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^pn-eval\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
}

@test "pn-eval rejects an unknown option with exit 2" {
	run pn-eval --bogus "$E/runs.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-eval: unrecognized option '--bogus'" ]
	[ "${lines[1]}" = "Try 'pn-eval --help' for more information." ]
}

@test "pn-eval rejects an unknown --format with exit 2" {
	run pn-eval --format csv "$E/runs.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-eval: --format: unknown value 'csv' (one of: tsv, md)" ]
	[ "${lines[1]}" = "Try 'pn-eval --help' for more information." ]
}

@test "pn-eval rejects a --by column named like a metric with exit 2" {
	printf 'n\ttime_ms\tpred_ms\n1\t1\t2\n' >in.tsv
	run pn-eval --by n in.tsv
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-eval: column 'n' cannot be used in --by: the output has a column of that name" ]
}


# ---- --ape: the rows with a per-row APE -------------------------------------
# t/fixtures/eval/ape.tsv by hand: APE = 100 |p - m| / m
#   measured pn  APE  roofline APE
#   10       12  20   4        60
#   20       19  5    NA       NA
#   30       33  10   25       16.6667 (50/3 to 6 digits)

@test "pn-eval --ape writes each row with the APE right after each predicted column" {
	run_io pn-eval --ape --measured measured_ms --predicted pn_ms --predicted roofline_ms "$E/ape.tsv"
	[ "$status" -eq 0 ]
	diff -u "$E/ape.expected" "$T/out"
	[ ! -s "$T/err" ]
}

@test "pn-eval --ape names the APE column of a column without _ms COL_ape" {
	printf 'time_ms\tguess\n4\t5\n' >in.tsv
	run_io pn-eval --ape --predicted guess in.tsv
	[ "$status" -eq 0 ]
	[ "$(cat "$T/out")" = "$(printf 'time_ms\tguess\tguess_ape\n4\t5\t25')" ]
}

@test "pn-eval --ape moves an APE column of the input after its predicted column" {
	printf 'pred_ape\ttime_ms\tpred_ms\nold\t8\t6\n' >in.tsv
	run_io pn-eval --ape in.tsv
	[ "$status" -eq 0 ]
	[ "$(cat "$T/out")" = "$(printf 'time_ms\tpred_ms\tpred_ape\n8\t6\t25')" ]
}

@test "pn-eval --ape on its own output writes the same rows" {
	pn-eval --ape --measured measured_ms --predicted pn_ms --predicted roofline_ms "$E/ape.tsv" >once.tsv
	run_io pn-eval --ape --measured measured_ms --predicted pn_ms --predicted roofline_ms once.tsv
	[ "$status" -eq 0 ]
	diff -u once.tsv "$T/out"
}

@test "pn-eval --ape rejects a measured value of 0 with exit 1" {
	printf 'time_ms\tpred_ms\n1\t1\n0\t2\n' >in.tsv
	run_io pn-eval --ape -o out.tsv in.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-eval: in.tsv:3: measured value is 0: APE undefined" ]
	[ ! -e out.tsv ]
}

@test "pn-eval --ape rejects --by with exit 2" {
	run pn-eval --ape --by device "$E/runs.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-eval: --ape and --by exclude each other (--ape writes rows, not metrics)" ]
}

@test "pn-eval --ape rejects --model with exit 2" {
	run pn-eval --ape -m x.model "$E/runs.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-eval: --ape and --model exclude each other (pipe the rows of pn-eval --model into pn-eval --ape)" ]
}

@test "pn-eval rejects --predicted given twice without --ape with exit 2" {
	run pn-eval --predicted pred_ms --predicted time_ms "$E/runs.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-eval: --predicted given twice (several need --ape)" ]
}
