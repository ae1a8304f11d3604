# Shared by the pn-fit and pn-eval --model tests (t/5*-fit*.bats,
# t/65-eval-model.bats): fixtures and checks that every family must pass
# (run_io and column are test_helper's).  A family test file loads
# this after test_helper and calls the family_* checks with the family's
# name and the options it needs (see t/55-fit-families.bats).
#
# Fixtures (t/fixtures/fit/, made by its gen script): train.tsv, val.tsv,
# test.tsv hold dense and bmm rows on T4 and V100; linear*.tsv the same
# rows with a noiseless linear time_ms.

F="$FIX/fit"

fit_setup() {
	T="$BATS_TEST_TMPDIR"
	cd "$T"
}

# mape FILE [MEASURED PREDICTED]: mean absolute percentage error of a
# predicted TSV.
mape() {
	awk -F'\t' -v m="${2:-time_ms}" -v p="${3:-pred_ms}" '
	NR == 1 { for (i = 1; i <= NF; i++) { if ($i == m) a = i; if ($i == p) b = i }; next }
	{ e = ($b - $a) / $a; s += e < 0 ? -e : e; n++ }
	END { printf "%.6f\n", 100 * s / n }' "$1"
}

# max_rel_err FILE: the largest |pred_ms - time_ms| / time_ms.
max_rel_err() {
	awk -F'\t' '
	NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "time_ms") a = i; if ($i == "pred_ms") b = i }; next }
	{ e = ($b - $a) / $a; e = e < 0 ? -e : e; if (e > m) m = e }
	END { printf "%.3g\n", m }' "$1"
}

# below X Y: true when the number X < Y.
below() {
	awk -v x="$1" -v y="$2" 'BEGIN { exit !(x < y) }'
}

# family_roundtrip FAMILY [FIT OPTION]...: the family fits the training
# rows, writes a model that pn-eval reads back, and predicts every test row
# with a finite number.
family_roundtrip() {
	local fam=$1; shift
	run pn-fit -f "$fam" "$@" -o m.model "$F/train.tsv"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "$(grep -c '^pn-model 1$' m.model)" -eq 2 ]
	[ "$(grep "^family " m.model | sort -u)" = "family $fam" ]
	run_io pn-eval -m m.model "$F/test.tsv"
	[ "$status" -eq 0 ] || { cat "$T/err"; return 1; }
	[ "$(wc -l <"$T/out")" -eq "$(wc -l <"$F/test.tsv")" ]
	[ "$(head -1 "$T/out")" = "$(head -1 "$F/test.tsv")	pred_ms	domain" ]
	column pred_ms "$T/out" | awk '!($1 > -1e300 && $1 < 1e300) { bad = 1 } END { exit bad }'
}

# family_accuracy FAMILY MAX_MAPE [FIT OPTION]...: fitted on the training
# rows (log target), the family predicts the test rows within MAX_MAPE %.
family_accuracy() {
	local fam=$1 max=$2; shift 2
	pn-fit -f "$fam" --log-target "$@" -o m.model "$F/train.tsv"
	pn-eval -m m.model "$F/test.tsv" >pred.tsv 2>/dev/null
	local e; e=$(mape pred.tsv)
	echo "$fam: test MAPE $e%, want below $max%"
	below "$e" "$max"
}

# family_deterministic FAMILY [FIT OPTION]...: the same seed gives a
# byte-identical model file.
family_deterministic() {
	local fam=$1; shift
	pn-fit -f "$fam" --seed 7 "$@" -o a.model "$F/train.tsv"
	pn-fit -f "$fam" --seed 7 "$@" -o b.model "$F/train.tsv"
	cmp a.model b.model
}

# family_seeded FAMILY [FIT OPTION]...: another seed gives another model.
family_seeded() {
	local fam=$1; shift
	pn-fit -f "$fam" --seed 1 "$@" -o a.model "$F/train.tsv"
	pn-fit -f "$fam" --seed 2 "$@" -o b.model "$F/train.tsv"
	! cmp -s <(sed '/^info seed/d' a.model) <(sed '/^info seed/d' b.model)
}

# family_truncated FAMILY [FIT OPTION]...: the model file cut at about 40
# places, from its first byte to its last, never loads: pn-eval exits 1
# with a message that names the cut file.
family_truncated() {
	local fam=$1; shift
	pn-fit -f "$fam" "$@" -o m.model "$F/train.tsv"
	local size step off n=0
	size=$(stat -c %s m.model)
	step=$(( size / 37 + 1 ))
	for off in $(seq 0 "$step" "$size") $((size - 1)) $((size - 2)); do
		head -c "$off" m.model >cut.model
		run pn-eval -m cut.model "$F/test.tsv"
		[ "$status" -eq 1 ] || { echo "cut at $off: exit $status"; return 1; }
		[[ "${lines[-1]}" == "pn-eval: cut.model"* ]] ||
			{ echo "cut at $off: ${lines[-1]}"; return 1; }
		n=$((n + 1))
	done
	[ "$n" -ge 30 ]
}

# family_corrupt FAMILY SED [FIT OPTION]...: a model whose body was changed
# by the sed script SED (that must change something) is refused with exit 1
# and "corrupt model" at the changed line.
family_corrupt() {
	local fam=$1 script=$2; shift 2
	pn-fit -f "$fam" "$@" -o m.model "$F/train.tsv"
	sed "$script" m.model >bad.model
	! cmp -s m.model bad.model
	local line
	line=$(cmp m.model bad.model | awk '{ print $NF }')
	run_io pn-eval -m bad.model "$F/test.tsv"
	[ "$status" -eq 1 ]
	[ ! -s "$T/out" ]
	[[ "$(cat "$T/err")" == "pn-eval: bad.model:$line: corrupt model: "* ]] || { cat "$T/err"; return 1; }
}

# family_missing_feature FAMILY [FIT OPTION]...: predicting rows that lack
# a feature column of the model names the column and the model.
family_missing_feature() {
	local fam=$1; shift
	pn-fit -f "$fam" "$@" -o m.model "$F/train.tsv"
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "ct_ms") k = i }
		{ $k = ""; sub(/\t\t/, "\t"); print }' "$F/test.tsv" >noct.tsv
	run_io pn-eval -m m.model noct.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-eval: noct.tsv:2: missing column 'ct_ms' needed by the dense model" ]
}

# corrupt_refused MODEL SED MESSAGE: MODEL changed by SED (which must change
# it) is refused by pn-eval with exit 1, no rows written, and "corrupt
# model: MESSAGE" at the changed line.
corrupt_refused() {
	sed "$2" "$1" >bad.model
	! cmp -s "$1" bad.model || return 1
	local line
	line=$(cmp "$1" bad.model | awk '{ print $NF }')
	run_io pn-eval -m bad.model "$F/test.tsv"
	[ "$status" -eq 1 ]
	[ ! -s "$T/out" ]
	[ "$(cat "$T/err")" = "pn-eval: bad.model:$line: corrupt model: $3" ]
}
