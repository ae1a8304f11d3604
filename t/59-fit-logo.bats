#!/usr/bin/env bats
# pn-fit --logo: the chosen family refitted without each device of a layer
# type's rows, and its error on that device recorded in the model as
# "logo DEVICE N BIAS SD" lines; how pn-eval reads those lines back.

load test_helper
load fit_helper

setup() {
	fit_setup
	three "$F/train.tsv" >train3.tsv
}

# three FILE: FILE with a third device: after every T4 row, a copy of it on
# P100-PCIE-16GB whose time_ms is 1.5 times the T4 one.  The devices first
# appear in the order T4, P100-PCIE-16GB, V100-PCIE-32GB, not sorted.
three() {
	awk -F'\t' -v OFS='\t' -v CONVFMT=%.17g '
	NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; print; next }
	{ print }
	$h["device"] == "T4" { $h["device"] = "P100-PCIE-16GB"; $h["time_ms"] = 1.5 * $h["time_ms"]; print }' "$1"
}

# of_device DEVICE KEEP FILE: the header and the rows of FILE on DEVICE
# (KEEP 1) or on any other device (KEEP 0).
of_device() {
	awk -F'\t' -v d="$1" -v keep="$2" '
	NR == 1 { for (i = 1; i <= NF; i++) if ($i == "device") k = i; print; next }
	($k == d) == keep' "$3"
}

# logo_of MODEL DEVICE: "LAYER N BIAS SD" of DEVICE's logo line in every
# model of the set MODEL, sorted by layer.
logo_of() {
	awk -v d="$2" '$1 == "layer" { l = $2 } $1 == "logo" && $2 == d { print l, $3, $4, $5 }' "$1" | sort
}

# refit_error DEVICE FIT-OPTION...: "LAYER N BIAS SD" per layer type, sorted
# by layer, found without --logo: pn-fit with the options on the rows of
# train3.tsv (and val3.tsv, when it exists) of every other device, pn-eval
# of the DEVICE rows with that model, and the mean and population standard
# deviation of ln(pred_ms / time_ms) over them.
refit_error() {
	local dev=$1; shift
	of_device "$dev" 0 train3.tsv >others.tsv
	of_device "$dev" 1 train3.tsv >left.tsv
	local val=()
	if [ -e val3.tsv ]; then
		of_device "$dev" 0 val3.tsv >vothers.tsv
		val=(--val vothers.tsv)
	fi
	pn-fit "$@" "${val[@]}" -o refit.model others.tsv
	pn-eval -m refit.model --metrics /dev/null left.tsv >pred.tsv
	awk -F'\t' '
	NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
	{ l = $h["layer"]; e = log($h["pred_ms"] / $h["time_ms"]); n[l]++; s[l] += e; v[l, n[l]] = e }
	END { for (l in n) { m = s[l] / n[l]; q = 0
		for (i = 1; i <= n[l]; i++) q += (v[l, i] - m) ^ 2
		printf "%s %d %.17g %.17g\n", l, n[l], m, sqrt(q / n[l]) } }' pred.tsv | sort
}

# same_error A B: two lists of "LAYER N BIAS SD" lines name the same layers
# and counts, and their biases and sds agree within 1e-9 relative.
same_error() {
	echo "A: $1"
	echo "B: $2"
	[ "$(echo "$1" | wc -l)" -eq "$(echo "$2" | wc -l)" ]
	paste -d' ' <(echo "$1") <(echo "$2") | awk '
	function off(a, b) { d = a - b; if (d < 0) d = -d; return d > 1e-9 * (b < 0 ? -b : b) + 1e-15 }
	$1 != $5 || $2 != $6 || off($3, $7) || off($4, $8) { bad = 1 }
	END { exit bad || NR == 0 }'
}

@test "pn-fit --logo records one logo line per device for every layer type, sorted by device" {
	run_io pn-fit -f lr -F ct_ms,cm_total -l --logo -o a.model train3.tsv
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	awk '$1 == "layer" { print } $1 == "logo" { print $1, $2, $3 }' a.model >got
	cat >want <<-EOF
	layer bmm
	logo P100-PCIE-16GB 40
	logo T4 40
	logo V100-PCIE-32GB 40
	layer dense
	logo P100-PCIE-16GB 40
	logo T4 40
	logo V100-PCIE-32GB 40
	EOF
	diff -u want got
}

@test "pn-fit --logo writes the logo lines after the info lines, just before body" {
	pn-fit -f lr -F ct_ms,cm_total -l --logo -o a.model train3.tsv
	awk '/^pn-model/ { n++ } n == 1 { print $1 }' a.model | sed '/^body$/q' | uniq >got
	printf '%s\n' pn-model family layer target transform features feature info logo body >want
	diff -u want got
}

@test "pn-fit --logo records the error of an lr refit without the device on that device's rows" {
	pn-fit -f lr -F ct_ms,cm_total -l --logo -o a.model train3.tsv
	for d in P100-PCIE-16GB T4 V100-PCIE-32GB; do
		same_error "$(logo_of a.model "$d")" "$(refit_error "$d" -f lr -F ct_ms,cm_total -l)"
	done
}

@test "pn-fit --logo --relative records ln(predicted / measured) of the refit" {
	pn-fit -f lr -F ct_ms,cm_total --relative --logo -o a.model train3.tsv
	for d in P100-PCIE-16GB T4 V100-PCIE-32GB; do
		same_error "$(logo_of a.model "$d")" "$(refit_error "$d" -f lr -F ct_ms,cm_total --relative)"
	done
}

@test "pn-fit --logo leaves the left-out device's validation rows out of the early stopping" {
	three "$F/val.tsv" >val3.tsv
	opts=(-f gbdt -p rounds=50 -F ct_ms,cm_total,gpu_sms -l)
	pn-fit "${opts[@]}" --val val3.tsv --logo -o a.model train3.tsv
	for d in P100-PCIE-16GB T4 V100-PCIE-32GB; do
		same_error "$(logo_of a.model "$d")" "$(refit_error "$d" "${opts[@]}")"
	done
	# and the test can tell: with every validation row, the refit without
	# V100 stops at another round and fits other trees
	of_device V100-PCIE-32GB 0 train3.tsv >others.tsv
	of_device V100-PCIE-32GB 0 val3.tsv >vothers.tsv
	pn-fit "${opts[@]}" --val val3.tsv -o all.model others.tsv
	pn-fit "${opts[@]}" --val vothers.tsv -o some.model others.tsv
	! cmp -s <(sed -n '/^body$/,$p' all.model) <(sed -n '/^body$/,$p' some.model) || return 1
}

@test "pn-fit --logo gives a byte-identical model for the same seed" {
	pn-fit -f rf -p trees=10 -l --logo --seed 7 -o a.model train3.tsv
	pn-fit -f rf -p trees=10 -l --logo --seed 7 -o b.model train3.tsv
	cmp a.model b.model
}

@test "pn-fit --logo fits the model itself as without it" {
	pn-fit -f rf -p trees=10 -l --logo -o a.model train3.tsv
	pn-fit -f rf -p trees=10 -l -o b.model train3.tsv
	[ "$(grep -c '^logo ' a.model)" -eq 6 ]
	diff -u b.model <(grep -v '^logo ' a.model)
}

@test "pn-eval -m predicts with a model that has logo lines exactly as without them" {
	pn-fit -f rf -p trees=10 -l --logo -o a.model train3.tsv
	pn-fit -f rf -p trees=10 -l -o b.model train3.tsv
	run_io pn-eval -m a.model "$F/test.tsv"
	[ "$status" -eq 0 ]
	mv "$T/out" a.tsv
	pn-eval -m b.model "$F/test.tsv" >b.tsv 2>/dev/null
	[ "$(wc -l <a.tsv)" -eq 41 ]
	cmp a.tsv b.tsv
}

@test "pn-fit --logo fails on a layer type with rows of fewer than 3 devices" {
	run_io pn-fit -f lr -l --logo -o a.model "$F/train.tsv"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-fit: $F/train.tsv: --logo needs rows of at least 3 devices; layer 'bmm' has 2" ]
	[ ! -e a.model ]
}

@test "pn-fit --logo counts the devices of each layer type on its own" {
	# the third device for the bmm rows only
	awk -F'\t' '$1 != "dense" || $10 != "P100-PCIE-16GB"' train3.tsv >mixed.tsv
	run_io pn-fit -f lr -F ct_ms -l --logo -o a.model mixed.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-fit: mixed.tsv: --logo needs rows of at least 3 devices; layer 'dense' has 2" ]
}

@test "pn-fit --logo --no-by-layer pools the layer types' rows per device" {
	run_io pn-fit -f lr -F ct_ms -l --logo --no-by-layer -o a.model train3.tsv
	[ "$status" -eq 0 ]
	[ "$(awk '$1 == "layer" { print } $1 == "logo" { print $1, $2, $3 }' a.model | paste -sd,)" = \
		"layer *,logo P100-PCIE-16GB 80,logo T4 80,logo V100-PCIE-32GB 80" ]
}

@test "pn-fit --logo with --no-log-target is a usage error" {
	run pn-fit -f lr --no-log-target --logo train3.tsv
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-fit: --logo and --no-log-target exclude each other (--logo records errors on a log scale)" ]
	[ "${lines[1]}" = "Try 'pn-fit --help' for more information." ]
}

@test "pn-fit --logo needs a device column" {
	cut -f1-9,11- train3.tsv >nodev.tsv
	run_io pn-fit -f lr -F ct_ms -l --logo -o a.model nodev.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-fit: nodev.tsv:1: missing column 'device'" ]
	[ ! -e a.model ]
}

@test "pn-fit --logo rejects a device with a space, naming its row" {
	sed 's/\tP100-PCIE-16GB\t/\tTesla P100\t/' train3.tsv >space.tsv
	# bmm is fitted first: the first bmm row of that device
	line=$(awk -F'\t' '$1 == "bmm" && $10 == "Tesla P100" { print NR; exit }' space.tsv)
	run_io pn-fit -f lr -F ct_ms -l --logo -o a.model space.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-fit: space.tsv:$line: column 'device': 'Tesla P100' has a space and cannot be recorded in a model (--logo)" ]
	[ ! -e a.model ]
}

@test "pn-fit --logo rejects an NA device" {
	awk -F'\t' -v OFS='\t' 'NR == 5 { $10 = "NA" } 1' train3.tsv >na.tsv
	run_io pn-fit -f lr -F ct_ms -l --logo na.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-fit: na.tsv:5: column 'device': value is NA (--logo)" ]
}

# corrupt_logo SED MESSAGE: the model of train3.tsv, its logo lines changed
# by SED, is refused by pn-eval with exit 1 and "corrupt model: MESSAGE" at
# the changed line.
corrupt_logo() {
	pn-fit -f lr -F ct_ms,cm_total -l --logo -o m.model train3.tsv
	corrupt_refused m.model "$1" "$2"
}

@test "pn-eval -m rejects a logo line with too few values" {
	corrupt_logo '0,/^logo /s/^\(logo [^ ]* [^ ]* [^ ]*\) .*/\1/' \
		"'logo' needs a device, a row count, a bias and an sd"
}

@test "pn-eval -m rejects a logo line with too many values" {
	corrupt_logo '0,/^logo /s/^logo .*/& 1/' \
		"'logo' needs a device, a row count, a bias and an sd"
}

@test "pn-eval -m rejects a logo line with a negative sd" {
	corrupt_logo '0,/^logo /s/^\(logo [^ ]* [^ ]* [^ ]*\) .*/\1 -0.5/' \
		"logo sd: '-0.5' is negative"
}

@test "pn-eval -m rejects a logo bias that is not a number" {
	corrupt_logo '0,/^logo /s/^\(logo [^ ]* [^ ]*\) [^ ]*/\1 abc/' \
		"logo bias: 'abc' is not a number"
}

@test "pn-eval -m rejects a logo sd that is not a finite number" {
	corrupt_logo '0,/^logo /s/^\(logo [^ ]* [^ ]* [^ ]*\) .*/\1 nan/' \
		"logo sd: 'nan' is not a number"
}

@test "pn-eval -m rejects a logo row count that is not a whole number" {
	corrupt_logo '0,/^logo /s/^\(logo [^ ]*\) [^ ]*/\1 2.5/' \
		"logo rows: '2.5' is not a count of at least 1"
}

@test "pn-eval -m rejects a logo row count of 0" {
	corrupt_logo '0,/^logo /s/^\(logo [^ ]*\) [^ ]*/\1 0/' \
		"logo rows: '0' is not a count of at least 1"
}

@test "pn-eval -m rejects a device listed twice in the logo lines of a model" {
	corrupt_logo '0,/^logo T4 /s/^logo T4 /logo P100-PCIE-16GB /' \
		"logo: device 'P100-PCIE-16GB' listed twice"
}

# ---- --keep-folds: the fold models in the model file; pn-eval --logo -------

# models_of MODEL: "LAYER FOLD" of each model of the file MODEL, in order
# (FOLD "-" for a layer's model itself).
models_of() {
	awk '$1 == "pn-model" { if (l != "") print l, f; l = ""; f = "-" }
	$1 == "layer" { l = $2 } $1 == "fold" { f = $2 }
	END { if (l != "") print l, f }' "$1"
}

@test "pn-fit --keep-folds writes after each layer's model its fold models, one per device, sorted" {
	run_io pn-fit -f lr -F ct_ms,cm_total -l --logo --keep-folds -o a.model train3.tsv
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	[ "$(models_of a.model)" = "$(printf '%s\n' 'bmm -' 'bmm P100-PCIE-16GB' 'bmm T4' 'bmm V100-PCIE-32GB' 'dense -' 'dense P100-PCIE-16GB' 'dense T4' 'dense V100-PCIE-32GB')" ]
}

@test "pn-fit --keep-folds writes each layer's model as --logo alone does" {
	pn-fit -f rf -p trees=10 -l --logo --keep-folds -o a.model train3.tsv
	pn-fit -f rf -p trees=10 -l --logo -o b.model train3.tsv
	# the models without a fold line, whole
	awk '$1 == "pn-model" { n++ } { blk[n] = blk[n] $0 "\n" } $1 == "fold" { fold[n] = 1 }
	END { for (i = 1; i <= n; i++) if (!fold[i]) printf "%s", blk[i] }' a.model >main.model
	[ "$(grep -c '^fold ' a.model)" -eq 6 ]
	cmp b.model main.model
}

@test "pn-fit --keep-folds without --logo is a usage error" {
	run pn-fit -f lr -l --keep-folds train3.tsv
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-fit: --keep-folds needs --logo" ]
}

@test "pn-eval -m predicts with a model that has fold models exactly as without them" {
	pn-fit -f lr -l --logo --keep-folds -o a.model train3.tsv
	pn-fit -f lr -l --logo -o b.model train3.tsv
	pn-eval -m a.model "$F/test.tsv" >a.tsv 2>a.err
	pn-eval -m b.model "$F/test.tsv" >b.tsv 2>b.err
	[ "$(wc -l <a.tsv)" -eq 41 ]
	cmp a.tsv b.tsv
	cmp a.err b.err
}

@test "pn-eval --logo predicts each row by the fit without the row's device" {
	pn-fit -f lr -l --logo --keep-folds -o a.model train3.tsv
	of_device T4 0 train3.tsv >others.tsv
	pn-fit -f lr -l -o noT4.model others.tsv
	of_device T4 1 "$F/test.tsv" >t4.tsv
	run_io pn-eval -m a.model --logo --metrics /dev/null t4.tsv
	[ "$status" -eq 0 ]
	pn-eval -m noT4.model --metrics /dev/null t4.tsv >want.tsv
	[ "$(wc -l <want.tsv)" -eq 21 ]
	cmp want.tsv "$T/out"
}

@test "pn-eval --logo names the row whose device has no fold model" {
	pn-fit -f lr -l --logo -o a.model train3.tsv
	run_io pn-eval -m a.model --logo "$F/test.tsv"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-eval: $F/test.tsv:2: the dense model has no fold model without device 'T4' (fit it with pn-fit --logo --keep-folds)" ]
}

@test "pn-eval --logo without --model is a usage error" {
	run pn-eval --logo "$F/test.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-eval: --logo needs --model" ]
}

@test "pn-eval --logo needs a device column" {
	pn-fit -f lr -l --logo --keep-folds -o a.model train3.tsv
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "device") $i = "gpu" } { print }' "$F/test.tsv" >nodev.tsv
	run_io pn-eval -m a.model --logo nodev.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-eval: nodev.tsv:1: missing column 'device'" ]
}

@test "pn-eval -m rejects a fold model that does not follow its layer's model" {
	pn-fit -f lr -F ct_ms,cm_total -l --logo --keep-folds -o m.model train3.tsv
	# the first fold model alone
	awk '$1 == "pn-model" { n++ } n == 2' m.model >bad.model
	[ "$(sed -n 4p bad.model)" = "fold P100-PCIE-16GB" ]
	run_io pn-eval -m bad.model "$F/test.tsv"
	[ "$status" -eq 1 ]
	[ ! -s "$T/out" ]
	[ "$(cat "$T/err")" = "pn-eval: bad.model:4: corrupt model: fold model of layer 'bmm' does not follow that layer's model" ]
}

@test "pn-eval -m rejects a second fold model of the same device" {
	pn-fit -f lr -F ct_ms,cm_total -l --logo --keep-folds -o m.model train3.tsv
	sed '0,/^fold T4$/s//fold P100-PCIE-16GB/' m.model >bad.model
	line=$(cmp m.model bad.model | awk '{ print $NF }')
	run_io pn-eval -m bad.model "$F/test.tsv"
	[ "$status" -eq 1 ]
	[ ! -s "$T/out" ]
	[ "$(cat "$T/err")" = "pn-eval: bad.model:$line: corrupt model: a second fold model without device 'P100-PCIE-16GB' of layer 'bmm'" ]
}
