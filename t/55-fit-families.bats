#!/usr/bin/env bats
# pn-fit families lr, rf and gbdt: fit, save, load, predict, accuracy,
# bad model files, missing features, determinism.  The checks are in
# t/fit_helper.bash; xgb and mlp have their own files.

load test_helper
load fit_helper

setup() {
	fit_setup
}

# ---- lr ---------------------------------------------------------------------

@test "pn-fit -f lr writes a model that pn-eval reads back and predicts" {
	family_roundtrip lr
}

@test "pn-fit -f lr recovers a noiseless linear function to 1e-6" {
	pn-fit -f lr --no-log-target --features ct_ms,cm_total -o m.model "$F/linear.tsv"
	run_io pn-eval -m m.model "$F/linear-test.tsv"
	[ "$status" -eq 0 ]
	e=$(max_rel_err "$T/out")
	echo "max relative error $e"
	below "$e" 1e-6
}

@test "pn-fit -f lr writes the intercept and one coefficient per feature" {
	pn-fit -f lr --features ct_ms,cm_total -o m.model "$F/linear.tsv"
	[ "$(sed -n '/^body$/,/^end$/p' m.model | awk '{ print $1, NF }' | sort -u | tr '\n' ' ')" = "body 1 coef 3 end 1 intercept 2 " ]
}

@test "pn-fit -f lr with ridge shrinks the coefficients" {
	pn-fit -f lr --features ct_ms,cm_total -o a.model "$F/linear.tsv"
	pn-fit -f lr --features ct_ms,cm_total -p ridge=1e6 -o b.model "$F/linear.tsv"
	a=$(awk '/^coef/ { print ($2 < 0 ? -$2 : $2); exit }' a.model)
	b=$(awk '/^coef/ { print ($2 < 0 ? -$2 : $2); exit }' b.model)
	echo "coef $a without ridge, $b with"
	below "$b" "$(awk -v a="$a" 'BEGIN { print a / 10 }')"
	grep -q '^param ridge 1e6$' b.model
}

@test "pn-fit -f lr gives a byte-identical model for the same seed" {
	family_deterministic lr
}

@test "pn-fit -f lr fits fewer rows than features as their least-squares solution, whatever the heap held" {
	# 12 dense rows of one GPU, more features than rows
	awk -F'\t' 'NR == 1 || ($1 == "dense" && $10 == "T4" && ++n <= 12)' "$F/train.tsv" >few.tsv
	[ "$(($(wc -l <few.tsv) - 1))" -eq 12 ]
	pn-fit -f lr -F cocmct --no-log-target -o a.model few.tsv
	[ "$(awk '/^features/ { print $2 }' a.model)" -gt 12 ]
	MALLOC_PERTURB_=170 pn-fit -f lr -F cocmct --no-log-target -o b.model few.tsv
	cmp a.model b.model
	# near its rows (an intercept alone, as before, missed them by 2x)
	run_io pn-eval -m a.model few.tsv
	e=$(max_rel_err "$T/out")
	echo "max relative error $e"
	below "$e" 0.1
}

@test "pn-eval -m fails on an lr model cut anywhere" {
	family_truncated lr
}

@test "pn-eval -m fails on an lr model with a corrupt coefficient" {
	family_corrupt lr '0,/^coef /s/^coef [^ ]*/coef 1.2.3/'
}

@test "pn-eval -m fails on an lr model with a missing coefficient" {
	family_corrupt lr '0,/^coef /{/^coef /s/ [^ ]*$//}'
}

@test "pn-eval -m names the feature column that an lr model misses" {
	family_missing_feature lr
}

@test "pn-fit -f lr rejects a negative ridge with exit 2" {
	run pn-fit -f lr -p ridge=-1 "$F/train.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-fit: invalid --param ridge=-1: want at least 0" ]
}

# ---- rf ---------------------------------------------------------------------

@test "pn-fit -f rf writes a model that pn-eval reads back and predicts" {
	family_roundtrip rf -p trees=20
}

@test "pn-fit -f rf predicts the test rows within 15% MAPE" {
	family_accuracy rf 15
}

@test "pn-fit -f rf without bootstrap fits a step function exactly" {
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "time_ms") k = i; print; next }
		{ $k = $2 > 100 ? 5 : 1; print }' "$F/train.tsv" >step.tsv
	pn-fit -f rf --no-log-target -p trees=10 -p bootstrap=0 --features batch -o m.model step.tsv
	run_io pn-eval -m m.model step.tsv
	[ "$status" -eq 0 ]
	[ "$(max_rel_err "$T/out")" = "0" ]
}

@test "pn-fit -f rf gives a byte-identical model for the same seed" {
	family_deterministic rf -p trees=10
}

@test "pn-fit -f rf gives the same forest whatever the number of threads" {
	pn-fit -f rf -p trees=10 -p threads=1 -o a.model "$F/train.tsv"
	pn-fit -f rf -p trees=10 -p threads=3 -o b.model "$F/train.tsv"
	cmp <(grep -v '^param threads' a.model) <(grep -v '^param threads' b.model)
}

@test "pn-fit -f rf gives another forest for another seed" {
	family_seeded rf -p trees=10
}

@test "pn-fit -f rf without bootstrap and with all features grows equal trees" {
	pn-fit -f rf -p trees=3 -p bootstrap=0 -o m.model "$F/train.tsv"
	# 6 trees (3 per layer type), 2 different ones
	awk '/^tree / { k++ } /^(tree|split|leaf) / { t[k] = t[k] $0 "|" }
		END { for (i in t) print t[i] }' m.model >trees
	[ "$(wc -l <trees)" -eq 6 ]
	[ "$(sort -u trees | wc -l)" -eq 2 ]
}

@test "pn-fit -f rf limits the depth of its trees" {
	pn-fit -f rf -p trees=5 -p depth=2 -o m.model "$F/train.tsv"
	# depth 2: at most 7 nodes a tree
	[ "$(awk '/^tree / { if ($2 > m) m = $2 } END { print m }' m.model)" -le 7 ]
}

@test "pn-eval -m fails on an rf model cut anywhere" {
	family_truncated rf -p trees=3
}

@test "pn-eval -m fails on an rf model whose split names a feature it lacks" {
	family_corrupt rf '0,/^split /s/^split [0-9]* /split 99 /' -p trees=3
}

@test "pn-eval -m fails on an rf model whose split points backwards" {
	family_corrupt rf '0,/^split /{/^split /s/ [0-9]*$/ 0/}' -p trees=3
}

@test "pn-eval -m fails on an rf model with a leaf that is not a number" {
	family_corrupt rf '0,/^leaf /s/^leaf .*/leaf nan/' -p trees=3
}

@test "pn-eval -m fails on an rf model with fewer trees than it says" {
	pn-fit -f rf -p trees=3 -o m.model "$F/train.tsv"
	sed '0,/^trees /s/^trees 3$/trees 4/' m.model >bad.model
	end=$(grep -n '^end$' bad.model | head -1 | cut -d: -f1)
	run pn-eval -m bad.model "$F/test.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-eval: bad.model:$end: corrupt model: 'end' too early, want 'tree'" ]
}

@test "pn-eval -m names the feature column that an rf model misses" {
	family_missing_feature rf -p trees=3
}

@test "pn-fit -f rf rejects trees=0 with exit 2" {
	run pn-fit -f rf -p trees=0 "$F/train.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-fit: invalid --param trees=0: want 1 to 100000" ]
	[ "${lines[1]}" = "Try 'pn-fit --help' for more information." ]
}

@test "pn-fit -f rf rejects a fractional tree count with exit 2" {
	run pn-fit -f rf -p trees=2.5 "$F/train.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-fit: invalid --param trees=2.5: not a whole number" ]
}

# ---- gbdt -------------------------------------------------------------------

@test "pn-fit -f gbdt writes a model that pn-eval reads back and predicts" {
	family_roundtrip gbdt -p rounds=20
}

@test "pn-fit -f gbdt predicts the test rows within 20% MAPE" {
	family_accuracy gbdt 20
}

@test "pn-fit -f gbdt gives a byte-identical model for the same seed" {
	family_deterministic gbdt -p rounds=20 -p subsample=0.7
}

# 4000 rows of 20 features: 80,000 cells, enough for gbdt to build the
# histograms of its large nodes on helper threads (integer arithmetic: the
# same rows from any awk)
wide_rows() {
	awk 'BEGIN {
		printf "layer"; for (j = 1; j <= 20; j++) printf "\tx%d", j; print "\ttime_ms"
		for (i = 0; i < 4000; i++) {
			printf "dense"; s = 0
			for (j = 1; j <= 20; j++) {
				x = (i * (2 * j + 1) * 7919 + j * j * 104729) % 1000 / 1000 - 0.5
				s += j * x * (j == 3 ? x : 1); printf "\t%.3f", x
			}
			printf "\t%.6f\n", 200 + s + (x > 0 ? 5 : 0)
		} }' >wide.tsv
}

@test "pn-fit -f gbdt gives the same model whatever the number of threads" {
	wide_rows
	cols=$(seq -s, -f 'x%g' 1 20)
	pn-fit -f gbdt -F "$cols" -p rounds=20 -p threads=1 -o a.model wide.tsv
	pn-fit -f gbdt -F "$cols" -p rounds=20 -p threads=3 -o b.model wide.tsv
	cmp <(grep -v '^param threads' a.model) <(grep -v '^param threads' b.model)
}

@test "pn-fit -f gbdt grows the trees it grew before its fit took the rows' predictions from their leaves" {
	# made by pn-fit of 78e446c, which walked each tree over the rows
	wide_rows
	cols=$(seq -s, -f 'x%g' 1 20)
	pn-fit -f gbdt -F "$cols" --no-log-target -p rounds=5 -p depth=4 -p threads=2 -o m.model wide.tsv
	sed -n '/^body$/,/^end$/p' m.model >body
	diff "$F/gbdt-wide.body" body
}

@test "pn-fit -f gbdt with subsampling gives another model for another seed" {
	family_seeded gbdt -p rounds=20 -p subsample=0.7
}

@test "pn-fit -f gbdt with --val keeps the rounds up to the best one" {
	pn-fit -f gbdt --log-target -p rounds=2000 -p patience=10 -v "$F/val.tsv" -o m.model "$F/train.tsv"
	# stopped early: fewer trees than rounds, and the validation error noted
	awk '/^trees / { if ($2 >= 2000 || $2 < 1) bad = 1 } END { exit bad }' m.model
	[ "$(grep -c '^info val rows 20 rmse [0-9.e-]* (log scale)$' m.model)" -eq 2 ]
}

@test "pn-fit -f gbdt with one round and lr 1 is one tree on the residuals" {
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "time_ms") k = i; print; next }
		{ $k = $2 > 100 ? 5 : 1; print }' "$F/train.tsv" >step.tsv
	pn-fit -f gbdt -p rounds=1 -p lr=1 --features batch -o m.model step.tsv
	run_io pn-eval -m m.model step.tsv
	[ "$status" -eq 0 ]
	below "$(max_rel_err "$T/out")" 1e-12
	[ "$(grep -c '^tree ' m.model)" -eq 2 ]
}

@test "pn-eval -m fails on a gbdt model cut anywhere" {
	family_truncated gbdt -p rounds=5
}

@test "pn-eval -m fails on a gbdt model with a corrupt base" {
	family_corrupt gbdt '0,/^base /s/^base .*/base 1e999/' -p rounds=5
}

@test "pn-eval -m names the feature column that a gbdt model misses" {
	family_missing_feature gbdt -p rounds=5
}

@test "pn-fit -f gbdt rejects a learning rate above 1 with exit 2" {
	run pn-fit -f gbdt -p lr=2 "$F/train.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-fit: invalid --param lr=2: want more than 0 and at most 1" ]
}
