#!/usr/bin/env bats
# pn-fit refuses what it cannot learn from (a target of 0, negative or too
# large, a column that mixes numbers and categories, validation rows of a
# layer type it does not fit, rows never featurized), and skips the failed
# rows of pn-time with --skip-failed.

load test_helper
load fit_helper

setup() {
	fit_setup
}

# with_time LINE VALUE [FILE]: the training rows with time_ms of line LINE
# set to VALUE.
with_time() {
	awk -F'\t' -v OFS='\t' -v l="$1" -v v="$2" '
	NR == 1 { for (i = 1; i <= NF; i++) if ($i == "time_ms") k = i }
	NR == l { $k = v } 1' "${3:-$F/train.tsv}"
}

# failed: the training rows as pn-time writes them, with a status column:
# lines 3 and 7 ran out of memory, line 90 failed; their time_ms is NA.
failed() {
	awk -F'\t' -v OFS='\t' '
	NR == 1 { for (i = 1; i <= NF; i++) if ($i == "time_ms") k = i; print $0, "status"; next }
	NR == 3 || NR == 7 { $k = "NA"; print $0, "oom"; next }
	NR == 90 { $k = "NA"; print $0, "error"; next }
	{ print $0, "ok" }' "$F/train.tsv"
}

# fit_fails FILE MESSAGE FIT-OPTION...: pn-fit with the options and each
# family lr, rf, gbdt and mlp exits 1 with MESSAGE and writes no model.
fit_fails() {
	local file=$1 msg=$2 fam; shift 2
	for fam in lr rf gbdt mlp; do
		run_io pn-fit -f "$fam" "$@" -o m.model "$file"
		[ "$status" -eq 1 ] || { echo "$fam: exit $status"; return 1; }
		[ "$(cat "$T/err")" = "$msg" ] || { echo "$fam: $(cat "$T/err")"; return 1; }
		[ ! -e m.model ] || { echo "$fam: wrote a model"; return 1; }
	done
}

@test "pn-fit refuses a target of 0 with every family, on a log scale or not" {
	with_time 4 0 >bad.tsv
	fit_fails bad.tsv "pn-fit: bad.tsv:4: column 'time_ms': '0' is not positive (a target is a time)" --no-log-target
}

@test "pn-fit refuses a target of 0 with every family" {
	with_time 4 0 >bad.tsv
	fit_fails bad.tsv "pn-fit: bad.tsv:4: column 'time_ms': '0' is not positive (a target is a time)"
}

@test "pn-fit refuses a negative target with every family" {
	with_time 5 -2.5 >bad.tsv
	fit_fails bad.tsv "pn-fit: bad.tsv:5: column 'time_ms': '-2.5' is not positive (a target is a time)"
}

@test "pn-fit refuses a target above 1e30 without a log, naming the limit" {
	with_time 6 1e300 >bad.tsv
	fit_fails bad.tsv "pn-fit: bad.tsv:6: column 'time_ms': '1e300' is above 1e30, the largest target the families fit (fit its log: --log-target)" --no-log-target
}

@test "pn-fit -f mlp writes no model that pn-eval rejects on a target of 1e300" {
	with_time 6 1e300 >bad.tsv
	run pn-fit -f mlp --no-log-target -p epochs=2 -o m.model bad.tsv
	[ "$status" -eq 1 ]
	[ ! -e m.model ]
}

@test "pn-fit --log-target fits a target of 1e300, whose log is small" {
	with_time 6 1e300 >big.tsv
	run_io pn-fit -f lr --log-target -o m.model big.tsv
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	run pn-eval -m m.model "$F/test.tsv"
	[ "$status" -eq 0 ]
}

@test "pn-fit --log-target refuses a negative target" {
	with_time 5 -2.5 >bad.tsv
	fit_fails bad.tsv "pn-fit: bad.tsv:5: column 'time_ms': '-2.5' is not positive (a target is a time)" --log-target
}

@test "pn-fit refuses a listed numeric column with one value that is not a number" {
	awk -F'\t' -v OFS='\t' 'NR == 9 { $2 = "big" } 1' "$F/train.tsv" >bad.tsv
	run_io pn-fit -f lr -F batch,ct_ms -o m.model bad.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-fit: bad.tsv:9: column 'batch': 'big' is not a number, but '324' on line 2 is one (a column is either numeric or categorical)" ]
	[ ! -e m.model ]
}

@test "pn-fit refuses a listed categorical column with one value that is a number" {
	awk -F'\t' -v OFS='\t' 'NR == 12 { $8 = "16" } 1' "$F/train.tsv" >bad.tsv
	run_io pn-fit -f lr -F ct_ms,precision -o m.model bad.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-fit: bad.tsv:12: column 'precision': '16' is a number, but 'fp32' on line 2 is not (a column is either numeric or categorical)" ]
}

@test "pn-fit still takes a listed column of categories as categorical" {
	run pn-fit -f lr -F ct_ms,device -o m.model "$F/train.tsv"
	[ "$status" -eq 0 ]
	grep -q '^feature device=T4 cat ' m.model
}

@test "pn-fit refuses validation rows of a layer type it does not fit" {
	awk -F'\t' -v OFS='\t' 'NR == 3 { $1 = "conv2d" } 1' "$F/val.tsv" >val.tsv
	run_io pn-fit -f lr -F ct_ms -v val.tsv -o m.model "$F/train.tsv"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-fit: val.tsv:3: column 'layer': no training rows of layer type 'conv2d' (validation rows are of the types fitted)" ]
}

@test "pn-fit on rows never featurized says to run pn-featurize" {
	cut -f1-10,34 "$F/train.tsv" >raw.tsv
	run_io pn-fit raw.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-fit: raw.tsv:1: missing column 'gpu_sms': the rows were never featurized (run pn-featurize on them first)" ]
}

@test "pn-fit on an NA target of a failed row names --skip-failed" {
	failed >runs.tsv
	run_io pn-fit -f lr runs.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-fit: runs.tsv:90: column 'time_ms': value is NA (the row's status is 'error'; --skip-failed skips failed rows)" ]
}

@test "pn-fit --skip-failed skips the failed rows and counts them by status" {
	failed >runs.tsv
	run_io pn-fit -f lr --skip-failed -o m.model runs.tsv
	[ "$status" -eq 0 ]
	[ "$(cat "$T/err")" = "pn-fit: skipped 3 rows with status oom (2), error (1)" ]
	[ "$(grep '^info rows ' m.model | tr '\n' ' ')" = "info rows 79 info rows 78 " ]
}

@test "pn-fit --skip-failed fits the same model as the rows without the failed ones" {
	failed >runs.tsv
	awk -F'\t' 'NR == 1 || $NF == "ok"' runs.tsv >ok.tsv
	pn-fit -f rf -p trees=5 --skip-failed -o a.model runs.tsv 2>/dev/null
	pn-fit -f rf -p trees=5 -o b.model ok.tsv
	cmp a.model b.model
}

@test "pn-fit --skip-failed skips failed validation rows too" {
	failed >runs.tsv
	awk -F'\t' -v OFS='\t' 'NR == 1 { print $0, "status"; next } NR == 4 { print $0, "oom"; next } { print $0, "ok" }' "$F/val.tsv" >val.tsv
	run_io pn-fit -f lr --skip-failed -v val.tsv -o m.model runs.tsv
	[ "$status" -eq 0 ]
	[ "$(cat "$T/err")" = "pn-fit: skipped 3 rows with status oom (2), error (1)
pn-fit: skipped 1 validation row with status oom (1)" ]
}

@test "pn-fit --skip-failed fails when every row failed" {
	awk -F'\t' -v OFS='\t' 'NR == 1 { print $0, "status"; next } { print $0, "oom" }' "$F/train.tsv" >runs.tsv
	run_io pn-fit --skip-failed runs.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-fit: skipped 160 rows with status oom (160)
pn-fit: runs.tsv: no rows left after skipping 160 failed rows" ]
}

# big LINE=VALUE...: 12,000 rows of 20 numeric features (240,000 cells,
# which pn-fit parses in shares on threads of their own where it has more
# than one CPU), with x1 of each LINE set to VALUE (NA-FROM=N: x1 is NA
# from line 2 to N).
big() {
	awk -v OFS='\t' -v sets="$*" 'BEGIN {
		n = split(sets, a, " ")
		for (i = 1; i <= n; i++) {
			split(a[i], kv, "=")
			if (kv[1] == "NA-FROM") na = kv[2]; else v[kv[1]] = kv[2]
		}
		printf "layer"; for (j = 1; j <= 20; j++) printf "\tx%d", j
		print "\ttime_ms"
		for (l = 2; l <= 12001; l++) {
			printf "dense"
			for (j = 1; j <= 20; j++)
				printf "\t%s", j == 1 && l in v ? v[l] :
				    j == 1 && l <= na ? "NA" : (l * j) % 97 / 8
			printf "\t%.3f\n", 1 + l % 13
		}
	}'
}

@test "pn-fit names the first line of the other kind in a long table, past the first half of its rows" {
	big 6002=big 9000=bigger >bad.tsv
	run_io pn-fit -f lr -F "$(seq -s, -f x%g 20)" --no-by-layer -o m.model bad.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-fit: bad.tsv:6002: column 'x1': 'big' is not a number, but '0.25' on line 2 is one (a column is either numeric or categorical)" ]
}

@test "pn-fit takes a column's kind from its first value in a long table whose first half is NA" {
	big NA-FROM=7999 8000=fast >bad.tsv
	run_io pn-fit -f lr -F "$(seq -s, -f x%g 20)" --no-by-layer -o m.model bad.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-fit: bad.tsv:8001: column 'x1': '5.875' is a number, but 'fast' on line 8000 is not (a column is either numeric or categorical)" ]
}
