#!/usr/bin/env bats
# pn-fit -f xgb: gradient boosting and random forests through XGBoost's C
# API (src/lib/fam_xgb.c).  The rows are those of the mlp tests,
# t/fixtures/fit-mlp (see its README): y = 2 + sin(x1) + 0.5 x2^2 + 0.3 x3
# on [-2, 2]^3, whose sd over test.tsv is 0.96; and the featurized rows of
# t/fixtures/fit with the shared checks of t/fit_helper.bash.

load test_helper
load fit_helper

setup() {
	fit_setup
	M="$FIX/fit-mlp"
}

# fit (test_helper) fits XGBoost
FIT_FAMILY=xgb

# rmse_below MODEL LIMIT: the RMSE of MODEL on test.tsv is below LIMIT.
rmse_below() {
	pn-eval -m "$1" --metrics "$T/metrics" "$M/test.tsv" >/dev/null &&
		awk -F'\t' -v lim="$2" 'NR == 2 { ok = $1 == 200 && $2 < lim }
			END { exit !ok }' "$T/metrics"
}

@test "pn-fit -f xgb fits a smooth function to within 0.12 RMSE on held-out rows" {
	run_io pn-fit -f xgb -F x1,x2,x3 --no-by-layer -o a.model "$M/smooth.tsv"
	[ "$status" -eq 0 ]
	[ ! -s err ]
	rmse_below a.model 0.12
}

@test "pn-fit -f xgb -p mode=rf fits a smooth function to within 0.2 RMSE on held-out rows" {
	run_io pn-fit -f xgb -F x1,x2,x3 --no-by-layer -o a.model -p mode=rf "$M/smooth.tsv"
	[ "$status" -eq 0 ]
	[ ! -s err ]
	rmse_below a.model 0.2
}

@test "pn-fit -f xgb writes a model that pn-eval reads back and predicts" {
	family_roundtrip xgb -p rounds=5
}

@test "pn-fit -f xgb predicts the featurized test rows within 15% MAPE" {
	family_accuracy xgb 15
}

@test "pn-fit -f xgb -p mode=rf predicts the featurized test rows within 15% MAPE" {
	family_accuracy xgb 15 -p mode=rf
}

@test "pn-fit -f xgb writes the booster as base64 lines of 76 characters with its length" {
	fit a.model -p rounds=5 "$M/smooth.tsv"
	body a.model | sed -n 2p >format
	echo 'format ubj' | diff - format
	bytes=$(body a.model | awk '$1 == "bytes" { print $2 }')
	# every line but the last is 76 characters; the last 4 to 76
	body a.model | awk '$1 == "b64" { n++; len = length($2); if (len != 76) short++ }
		END { exit !(n > 1 && (short == 0 || (short == 1 && len != 76))) }'
	# standard base64 that decodes to the stated length of UBJSON ("{")
	body a.model | sed -n 's/^b64 //p' | base64 -d >booster
	[ "$(wc -c <booster)" -eq "$bytes" ]
	[ "$(head -c 1 booster)" = '{' ]
}

@test "pn-fit -f xgb gives a byte-identical model for the same --seed" {
	fit a.model -s 7 -p rounds=30 -p subsample=0.7 -p colsample_bynode=0.7 "$M/smooth.tsv"
	fit b.model -s 7 -p rounds=30 -p subsample=0.7 -p colsample_bynode=0.7 "$M/smooth.tsv"
	cmp a.model b.model
}

@test "pn-fit -f xgb gives a different model for a different --seed" {
	fit a.model -s 7 -p rounds=30 -p subsample=0.7 "$M/smooth.tsv"
	fit b.model -s 8 -p rounds=30 -p subsample=0.7 "$M/smooth.tsv"
	! cmp -s <(body a.model) <(body b.model)
}

@test "pn-fit -f xgb gives the same model with one thread as with two" {
	fit a.model -p rounds=30 -p subsample=0.7 -p threads=1 "$M/smooth.tsv"
	fit b.model -p rounds=30 -p subsample=0.7 -p threads=2 "$M/smooth.tsv"
	cmp <(body a.model) <(body b.model)
}

# small.tsv has 60 noisy rows: the validation error bottoms out early.
@test "pn-fit -f xgb with --val keeps the rounds up to its best validation round" {
	fit es.model -v "$M/val.tsv" -p patience=5 -p eta=0.3 "$M/small.tsv"
	pn-eval -m es.model "$M/val.tsv" >es.pred 2>/dev/null
	best=
	for k in $(seq 1 290); do
		fit k.model -p rounds="$k" -p eta=0.3 "$M/small.tsv"
		pn-eval -m k.model --metrics k.metrics "$M/val.tsv" >k.pred
		rmse[k]=$(awk -F'\t' 'NR == 2 { print $2 }' k.metrics)
		if [ -z "$best" ] && cmp -s es.pred k.pred; then
			best=$k
		fi
		[ -z "$best" ] || [ "$k" -lt $((best + 5)) ] || break
	done
	[ -n "$best" ]
	[ "$k" -eq $((best + 5)) ]
	for j in $(seq 1 "$k"); do
		awk -v a="${rmse[j]}" -v b="${rmse[best]}" 'BEGIN { exit !(a >= b) }'
	done
}

@test "pn-fit -f xgb model cut anywhere never loads in pn-eval" {
	family_truncated xgb -p rounds=5
}

@test "pn-fit -f xgb model names the feature column that pn-eval rows lack" {
	family_missing_feature xgb -p rounds=5
}

@test "pn-fit -f xgb model cut after a whole line is a clear error in pn-eval" {
	fit a.model -p rounds=5 "$M/smooth.tsv"
	head -n 30 a.model >cut.model
	run_io pn-eval -m cut.model "$M/test.tsv"
	[ "$status" -eq 1 ]
	[ ! -s out ]
	echo "pn-eval: cut.model:30: corrupt model: unexpected end of file" | diff - err
}

# second_b64 MODEL: the line number of the model's second "b64" line
second_b64() { grep -n '^b64 ' "$1" | sed -n '2s/:.*//p'; }

@test "pn-fit -f xgb model with a shortened base64 line is a clear error" {
	fit a.model -p rounds=5 "$M/smooth.tsv"
	l=$(second_b64 a.model)
	sed "${l}s/......\$//" a.model >bad.model
	run_io pn-eval -m bad.model "$M/test.tsv"
	[ "$status" -eq 1 ]
	echo "pn-eval: bad.model:$l: corrupt model: xgb: base64 line of 70 characters, want 76" |
		diff - err
}

@test "pn-fit -f xgb model with a character outside base64 is a clear error" {
	fit a.model -p rounds=5 "$M/smooth.tsv"
	l=$(second_b64 a.model)
	sed "${l}s/^b64 \(.....\)./b64 \1*/" a.model >bad.model
	run_io pn-eval -m bad.model "$M/test.tsv"
	[ "$status" -eq 1 ]
	echo "pn-eval: bad.model:$l: corrupt model: xgb: bad base64 at character 6" |
		diff - err
}

@test "pn-fit -f xgb model whose length disagrees with its base64 is a clear error" {
	fit a.model -p rounds=5 "$M/smooth.tsv"
	bytes=$(awk '$1 == "bytes" { print $2 }' a.model)
	sed "s/^bytes $bytes\$/bytes $((bytes - 3))/" a.model >bad.model
	last=$(grep -c '' bad.model)
	run_io pn-eval -m bad.model "$M/test.tsv"
	[ "$status" -eq 1 ]
	# the last line holds 3 bytes too many: 4 characters
	n=$(sed -n "$((last - 1))s/^b64 //p" bad.model | tr -d '\n' | wc -c)
	echo "pn-eval: bad.model:$((last - 1)): corrupt model: xgb: base64 line of $n characters, want $((n - 4))" |
		diff - err
}

@test "pn-fit -f xgb model whose booster is not UBJSON is a clear error" {
	fit a.model -p rounds=5 "$M/smooth.tsv"
	{
		sed '/^format ubj$/q' a.model
		echo 'bytes 24'
		echo 'crc32 6a5229ff'
		echo "b64 $(printf 'this is not a booster...' | base64)"
		echo end
	} >bad.model
	line=$(grep -c '' bad.model)
	run_io pn-eval -m bad.model "$M/test.tsv"
	[ "$status" -eq 1 ]
	echo "pn-eval: bad.model:$line: corrupt model: xgb: booster byte 0: unknown marker 0x74" |
		diff - err
}

@test "pn-fit -f xgb rejects a mode other than boost or rf as a usage error" {
	run_io pn-fit -f xgb -F x1,x2,x3 --no-by-layer -o a.model -p mode=dart "$M/smooth.tsv"
	[ "$status" -eq 2 ]
	[ ! -e a.model ]
	[ "$(head -1 err)" = "pn-fit: xgb: invalid --param mode=dart: want boost or rf" ]
}

@test "pn-fit -f xgb refuses a parameter out of range as a usage error, naming its range" {
	run_io pn-fit -f xgb -F x1,x2,x3 --no-by-layer -o a.model -p depth=0 "$M/smooth.tsv"
	[ "$status" -eq 2 ]
	[ "$(head -1 err)" = "pn-fit: xgb: invalid --param: depth must be 1 to 63" ]
	[ ! -e a.model ]
}

@test "pn-fit -f xgb -p mode=rf grows its forest in two parts by default" {
	fit a.model -p mode=rf -p trees=5 "$M/smooth.tsv"
	body a.model | awk '$1 == "parts" || $1 == "trees"' >parts
	printf 'parts 2\ntrees 3\ntrees 2\n' | diff - parts
}

@test "pn-fit -f xgb -p mode=rf gives the same forest in parts with one thread as with two" {
	fit a.model -p mode=rf -p trees=6 -p parts=3 -p threads=1 "$M/smooth.tsv"
	fit b.model -p mode=rf -p trees=6 -p parts=3 -p threads=2 "$M/smooth.tsv"
	cmp <(body a.model) <(body b.model)
}

# Part i of a forest is the forest of its trees alone with the seed + i, and
# the forest predicts the mean of its parts weighted by their trees.
@test "pn-fit -f xgb -p mode=rf predicts the tree-weighted mean of its parts" {
	fit all.model -s 5 -p mode=rf -p trees=3 -p parts=2 "$M/smooth.tsv"
	fit p0.model -s 5 -p mode=rf -p trees=2 -p parts=1 "$M/smooth.tsv"
	fit p1.model -s 6 -p mode=rf -p trees=1 -p parts=1 "$M/smooth.tsv"
	for m in all p0 p1; do
		pn-eval -m $m.model "$M/test.tsv" >$m.out
		column pred_ms $m.out >$m.pred
	done
	paste all.pred p0.pred p1.pred | awk -F'\t' '{
		want = (2 * $2 + $3) / 3; d = $1 - want; if (d < 0) d = -d
		if (d > 1e-6 * (want < 0 ? -want : want)) bad++; n++ }
		END { exit !(n == 200 && !bad) }'
}

@test "pn-fit -f xgb rejects parts above 1 in boost mode" {
	run_io pn-fit -f xgb -F x1,x2,x3 --no-by-layer -o a.model -p parts=2 "$M/smooth.tsv"
	[ "$status" -eq 2 ]
	[ ! -e a.model ]
	[ "$(head -1 err)" = "pn-fit: xgb: invalid --param: parts above 1 want mode=rf and rounds=1" ]
}

@test "pn-fit -f xgb rejects more parts than trees" {
	run_io pn-fit -f xgb -F x1,x2,x3 --no-by-layer -o a.model -p mode=rf -p trees=2 -p parts=3 "$M/smooth.tsv"
	[ "$status" -eq 2 ]
	[ ! -e a.model ]
	[ "$(head -1 err)" = "pn-fit: xgb: invalid --param: parts must be 1 to 64 and at most trees" ]
}

@test "pn-fit -f xgb model whose part holds other than its stated trees is a clear error" {
	fit a.model -p mode=rf -p trees=5 "$M/smooth.tsv"
	l=$(grep -n '^trees 3$' a.model | cut -d: -f1)
	sed "${l}s/.*/trees 4/" a.model >bad.model
	end=$(grep -n '^end$' bad.model | tail -1 | cut -d: -f1)
	run_io pn-eval -m bad.model "$M/test.tsv"
	[ "$status" -eq 1 ]
	[ ! -s out ]
	echo "pn-eval: bad.model:$end: corrupt model: xgb: part 1 has 3 trees, the model says 4" |
		diff - err
}

@test "pn-fit -f xgb model with one part fewer than it states is a clear error" {
	fit a.model -p mode=rf -p trees=5 "$M/smooth.tsv"
	l=$(grep -n '^trees 2$' a.model | cut -d: -f1)
	end=$(grep -n '^end$' a.model | tail -1 | cut -d: -f1)
	sed "${l},$((end - 1))d" a.model >bad.model
	run_io pn-eval -m bad.model "$M/test.tsv"
	[ "$status" -eq 1 ]
	echo "pn-eval: bad.model:$l: corrupt model: 'end' too early, want 'trees'" |
		diff - err
}
