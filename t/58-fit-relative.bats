#!/usr/bin/env bats
# pn-fit --relative (target ln(time / base column)), --log-features (inputs
# ln(max(x, floor))) and the feature set rel; their model-file lines
# ("transform logratio COL", "feature NAME log MEAN SD FLOOR") as pn-eval
# and pn-sum read them.

load test_helper
load fit_helper

setup() {
	fit_setup
}

# times3 FILE: FILE with time_ms set to 3 * roofline_ms.
times3() {
	awk -F'\t' -v OFS='\t' -v CONVFMT=%.17g 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; print; next }
		{ $h["time_ms"] = 3 * $h["roofline_ms"]; print }' "$1"
}

# loglin N: N rows of x in (0, 100] and y = 1 + 2 ln(x) exactly.
loglin() {
	awk -v n="$1" 'BEGIN { print "x\ty"; for (i = 1; i <= n; i++) { x = i * 100 / n; printf "%.17g\t%.17g\n", x, 1 + 2 * log(x) } }'
}

@test "pn-fit --relative records the roofline as the base of a logratio target" {
	times3 "$F/train.tsv" >train.tsv
	run_io pn-fit -f lr -F batch --relative -o a.model train.tsv
	[ "$status" -eq 0 ]
	[ "$(grep -c '^transform logratio roofline_ms$' a.model)" -eq 2 ]
}

@test "pn-eval predicts base times exp(model) for a logratio model" {
	times3 "$F/train.tsv" >train.tsv
	times3 "$F/test.tsv" >test.tsv
	# some test rows lie below the training rows' smallest roofline
	pn-fit -f lr -F batch --relative --no-base-floor -o a.model train.tsv
	pn-eval -m a.model --metrics /dev/null test.tsv >pred.tsv
	below "$(max_rel_err pred.tsv)" 1e-9
}

@test "pn-fit --relative=COL divides by another column" {
	awk -F'\t' -v OFS='\t' -v CONVFMT=%.17g 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; print; next }
		{ $h["time_ms"] = 2e-9 * $h["flops"]; print }' "$F/train.tsv" >train.tsv
	pn-fit -f lr -F batch --relative=flops -o a.model train.tsv
	grep -qx 'transform logratio flops' a.model
	pn-eval -m a.model --metrics /dev/null train.tsv >pred.tsv
	below "$(max_rel_err pred.tsv)" 1e-9
}

@test "pn-fit -r with no column takes roofline_ms" {
	times3 "$F/train.tsv" >train.tsv
	pn-fit -f lr -F batch -r -o a.model train.tsv
	grep -qx 'transform logratio roofline_ms' a.model
}

@test "pn-fit --relative rejects a base that is not positive, naming file and line" {
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i }
		NR == 3 { $h["roofline_ms"] = 0 } { print }' "$F/train.tsv" >train.tsv
	run_io pn-fit -f lr -F batch --relative -o a.model train.tsv
	[ "$status" -eq 1 ]
	grep -q "^pn-fit: train.tsv:3: column 'roofline_ms': '0' is not positive (the base of --relative)$" err
	[ ! -e a.model ]
}

@test "pn-fit --relative rejects a missing base column" {
	cut -f1-21,23- "$F/train.tsv" >train.tsv
	run_io pn-fit -f lr -F batch --relative -o a.model train.tsv
	[ "$status" -eq 1 ]
	grep -q "roofline_ms" err
}

@test "pn-fit --relative with --log-target is a usage error" {
	run_io pn-fit -f lr -F batch --relative -l "$F/train.tsv"
	[ "$status" -eq 2 ]
	grep -q "exclude each other" err
}

@test "pn-fit --relative naming the target itself is a usage error" {
	run_io pn-fit -f lr -F batch --relative=time_ms "$F/train.tsv"
	[ "$status" -eq 2 ]
	grep -q "is the target itself" err
}

@test "pn-eval names the missing base column of a logratio model" {
	times3 "$F/train.tsv" >train.tsv
	pn-fit -f lr -F batch --relative -o a.model train.tsv
	cut -f1-21,23- "$F/test.tsv" >test.tsv
	run_io pn-eval -m a.model test.tsv
	[ "$status" -eq 1 ]
	grep -q "missing column 'roofline_ms' needed by the [a-z]* model (the base of its logratio target)" err
}

@test "pn-eval rejects a base that is not positive at prediction" {
	times3 "$F/train.tsv" >train.tsv
	pn-fit -f lr -F batch --relative -o a.model train.tsv
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i }
		NR == 2 { $h["roofline_ms"] = -1 } { print }' "$F/test.tsv" >test.tsv
	run_io pn-eval -m a.model test.tsv
	[ "$status" -eq 1 ]
	grep -q "test.tsv:2: .*column 'roofline_ms': '-1' is not positive" err
}

@test "pn-eval rejects a logratio transform without its column as a corrupt model" {
	times3 "$F/train.tsv" >train.tsv
	pn-fit -f lr -F batch --relative -o a.model train.tsv
	sed 's/^transform logratio roofline_ms$/transform logratio/' a.model >b.model
	run_io pn-eval -m b.model "$F/test.tsv"
	[ "$status" -eq 1 ]
	grep -q "b.model:5: corrupt model: unknown transform 'logratio'" err
}

@test "pn-sum predicts with a logratio model from the roofline it builds" {
	G="--gpuspecs $FIX/sum/gpus.tsv"
	pn-featurize $G "$FIX/sum/bmm-train.tsv" >f.tsv
	times3 f.tsv | pn-fit -f lr -F flops --relative -o bmm.model
	pn-sum --fallback roofline $G -d UNIT -b 2 --per-layer "$FIX/sum/bmm.tsv" >roof.tsv
	pn-sum -m bmm.model $G -d UNIT -b 2 --per-layer "$FIX/sum/bmm.tsv" >model.tsv
	r=$(column time_ms roof.tsv)
	m=$(column time_ms model.tsv)
	awk -v r="$r" -v m="$m" 'BEGIN { d = m / (3 * r) - 1; exit !(d < 1e-9 && d > -1e-9) }'
	[ "$(column source model.tsv)" = model ]
}

@test "pn-fit --log-features fits a line in ln(x) exactly" {
	loglin 50 >train.tsv
	pn-fit -f lr -F x -t y --no-log-target --log-features --no-by-layer -o a.model train.tsv
	grep -q '^feature x log ' a.model
	pn-eval -m a.model --measured y --predicted p --metrics metrics train.tsv >/dev/null
	awk -F'\t' 'NR == 2 { exit !($2 < 1e-9) }' metrics
}

@test "pn-fit without --log-features cannot fit that line exactly" {
	loglin 50 >train.tsv
	pn-fit -f lr -F x -t y --no-log-target --no-by-layer -o a.model train.tsv
	grep -q '^feature x num ' a.model
	pn-eval -m a.model --measured y --predicted p --metrics metrics train.tsv >/dev/null
	awk -F'\t' 'NR == 2 { exit !($2 > 0.1) }' metrics
}

@test "pn-fit --log-features records the smallest positive value as the floor" {
	{ loglin 10; printf '0\t1\n'; } >train.tsv
	pn-fit -f lr -F x -t y -L --no-by-layer -o a.model train.tsv
	[ "$(awk '$1 == "feature" && $2 == "x" { print $3, $6 }' a.model)" = "log 10" ]
}

@test "pn-fit --log-features keeps a feature with negative values linear" {
	printf 'x\ty\n-1\t1\n2\t2\n3\t3\n4\t4\n5\t5\n6\t6\n7\t7\n8\t8\n9\t9\n10\t10\n' >train.tsv
	pn-fit -f lr -F x -t y -L --no-by-layer -o a.model train.tsv
	grep -q '^feature x num ' a.model
}

@test "pn-eval takes a log feature below its floor at the floor" {
	loglin 10 >train.tsv
	pn-fit -f lr -F x -t y -L --no-by-layer -o a.model train.tsv
	printf 'x\n0\n10\n' | pn-eval -m a.model --predicted p >pred.tsv
	[ "$(sed -n 2p pred.tsv | cut -f2)" = "$(sed -n 3p pred.tsv | cut -f2)" ]
}

@test "pn-eval rejects a log feature without its floor as a corrupt model" {
	loglin 10 >train.tsv
	pn-fit -f lr -F x -t y -L --no-by-layer -o a.model train.tsv
	sed 's/^\(feature x log [^ ]* [^ ]*\) .*/\1/' a.model >b.model
	run_io pn-eval -m b.model train.tsv
	[ "$status" -eq 1 ]
	grep -q "b.model:7: corrupt model: 'feature ... log' needs name, kind, mean, sd and floor" err
}

@test "pn-eval rejects a log feature whose floor is not positive" {
	loglin 10 >train.tsv
	pn-fit -f lr -F x -t y -L --no-by-layer -o a.model train.tsv
	sed 's/^\(feature x log [^ ]* [^ ]*\) .*/\1 0/' a.model >b.model
	run_io pn-eval -m b.model train.tsv
	[ "$status" -eq 1 ]
	grep -q "b.model:7: corrupt model: floor must be positive" err
}

@test "pn-fit -F rel uses the work, roofline and wave columns and no spec-sheet column" {
	pn-featurize "$F/train.tsv" >train.tsv
	pn-fit -f lr -F rel -r -o a.model train.tsv
	awk '$1 == "layer" { l = $2 } $1 == "feature" && $2 !~ /=/ { f[l] = f[l] $2 " " }
		END { for (l in f) print l ": " f[l] }' a.model | sort >actual
	printf '%s\n' "bmm: batch m n k flops traffic ai compute_ms memory_ms roofline_ms tiles waves wave_eff " \
		"dense: batch in_features out_features flops traffic ai compute_ms memory_ms roofline_ms tiles waves wave_eff " |
		diff -u - actual
	! grep -q '^feature gpu_' a.model
	! grep -q '^feature ct_ms ' a.model
}

@test "pn-fit -F rel --relative is deterministic under --seed" {
	pn-featurize "$F/train.tsv" >train.tsv
	pn-fit -f xgb -F rel -r -p rounds=20 -s 7 -o a.model train.tsv
	pn-fit -f xgb -F rel -r -p rounds=20 -s 7 -o b.model train.tsv
	cmp a.model b.model
}

# smallest COL FILE: the smallest value of column COL of FILE (%.17g)
smallest() {
	awk -F'\t' -v c="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
		m == "" || $k + 0 < m + 0 { m = $k } END { printf "%.17g\n", m }' "$2"
}

# scaled_row N F FILE: FILE's header and its N-th data row, the latter
# again with roofline_ms times F
scaled_row() {
	awk -F'\t' -v OFS='\t' -v n="$1" -v f="$2" -v CONVFMT=%.17g 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; print; next }
		NR == n + 1 { print; $h["roofline_ms"] = $h["roofline_ms"] * f; print }' "$3"
}

@test "pn-fit --relative records the smallest base of the training rows as the base-floor" {
	times3 "$F/train.tsv" >train.tsv
	pn-fit -f lr -F batch --relative -o a.model train.tsv
	for l in bmm dense; do
		awk -F'\t' -v l="$l" 'NR == 1 || $1 == l' train.tsv >rows.tsv
		want=$(smallest roofline_ms rows.tsv)
		got=$(awk -v l="$l" '$1 == "layer" { f = ($2 == l) } f && $1 == "info" && $2 == "base-floor" { print $3 }' a.model)
		awk -v a="$want" -v b="$got" 'BEGIN { d = b / a - 1; exit !(d < 1e-12 && d > -1e-12) }'
	done
}

@test "pn-fit --no-base-floor records no base-floor" {
	times3 "$F/train.tsv" >train.tsv
	pn-fit -f lr -F batch --relative --no-base-floor -o a.model train.tsv
	! grep -q '^info base-floor ' a.model
}

@test "pn-fit --no-base-floor without --relative is a usage error" {
	run_io pn-fit -f lr -F batch --no-base-floor "$F/train.tsv"
	[ "$status" -eq 2 ]
	[ "$(head -1 err)" = "pn-fit: --no-base-floor needs --relative" ]
}

@test "pn-eval predicts a row below the base-floor at the floor, outside its domain" {
	times3 "$F/train.tsv" >train.tsv
	pn-fit -f lr -F batch --relative -o a.model train.tsv
	floor=$(awk '$1 == "layer" { f = ($2 == "dense") } f && $1 == "info" && $2 == "base-floor" { print $3 }' a.model)
	# a dense row, and the same row with its roofline 1e-6 of the floor
	awk -F'\t' 'NR == 1 || $1 == "dense"' "$F/test.tsv" | scaled_row 1 1 - >one.tsv
	awk -F'\t' -v OFS='\t' -v fl="$floor" -v CONVFMT=%.17g 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; print; next }
		NR == 2 { $h["roofline_ms"] = fl; print; $h["roofline_ms"] = fl * 1e-6; print }' one.tsv >rows.tsv
	pn-eval -m a.model rows.tsv >pred.tsv
	[ "$(column pred_ms pred.tsv | sed -n 1p)" = "$(column pred_ms pred.tsv | sed -n 2p)" ]
	[ "$(column domain pred.tsv | sed -n 1p)" = - ]
	[[ "$(column domain pred.tsv | sed -n 2p)" == "roofline_ms<"* ]]
}

@test "pn-eval predicts a row below the base by its own base without a base-floor" {
	times3 "$F/train.tsv" >train.tsv
	pn-fit -f lr -F batch --relative --no-base-floor -o a.model train.tsv
	awk -F'\t' 'NR == 1 || $1 == "dense"' "$F/test.tsv" | scaled_row 1 1e-9 - >rows.tsv
	pn-eval -m a.model rows.tsv >pred.tsv
	a=$(column pred_ms pred.tsv | sed -n 1p)
	b=$(column pred_ms pred.tsv | sed -n 2p)
	awk -v a="$a" -v b="$b" 'BEGIN { d = b / (a * 1e-9) - 1; exit !(d < 1e-9 && d > -1e-9) }'
}

@test "pn-eval names no base below its floor when the base is a feature: the range does" {
	times3 "$F/train.tsv" >train.tsv
	pn-fit -f lr -F batch,roofline_ms --relative -o a.model train.tsv
	awk -F'\t' 'NR == 1 || $1 == "dense"' "$F/test.tsv" | scaled_row 1 1e-9 - >rows.tsv
	pn-eval -m a.model rows.tsv >pred.tsv
	d=$(column domain pred.tsv | sed -n 2p)
	[[ "$d" == "roofline_ms<"* ]]
	[ "$(grep -o 'roofline_ms<' <<<"$d" | wc -l)" -eq 1 ]
}

@test "pn-eval refuses a base-floor that is not one positive number as a corrupt model" {
	times3 "$F/train.tsv" >train.tsv
	pn-fit -f lr -F batch --relative -o a.model train.tsv
	for bad in 0 -1 x "1 2" ""; do
		awk -v b="$bad" '$1 == "info" && $2 == "base-floor" { print "info base-floor " b; next } { print }' a.model >b.model
		run_io pn-eval -m b.model train.tsv
		[ "$status" -eq 1 ]
		grep -q "b.model:[0-9]*: corrupt model: 'base-floor' needs one positive number" err
	done
}

@test "pn-eval refuses a base-floor in a model without a logratio transform" {
	pn-fit -f lr -F batch -o a.model "$F/train.tsv"
	sed 's/^info rows \(.*\)/info rows \1\ninfo base-floor 1/' a.model >b.model
	run_io pn-eval -m b.model "$F/train.tsv"
	[ "$status" -eq 1 ]
	grep -q "corrupt model: 'base-floor' in a model without a logratio transform" err
}

@test "pn-fit --logo --keep-folds gives each fold the smallest base of its own rows" {
	awk -F'\t' -v OFS='\t' -v CONVFMT=%.17g 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; print; next }
		{ print } $h["device"] == "T4" { $h["device"] = "P100-PCIE-16GB"; print }' "$F/train.tsv" | times3 /dev/stdin >train3.tsv
	pn-fit -f lr -F batch --relative --logo --keep-folds -o a.model train3.tsv
	for d in T4 P100-PCIE-16GB V100-PCIE-32GB; do
		want=$(awk -F'\t' -v d="$d" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
			$h["layer"] == "dense" && $h["device"] != d && (m == "" || $h["roofline_ms"] + 0 < m + 0) { m = $h["roofline_ms"] }
			END { printf "%.17g\n", m }' train3.tsv)
		got=$(awk -v d="$d" '$1 == "layer" { l = $2; f = "" } $1 == "fold" { f = $2 }
			l == "dense" && f == d && $1 == "info" && $2 == "base-floor" { print $3 }' a.model)
		awk -v a="$want" -v b="$got" 'BEGIN { x = b / a - 1; exit !(x < 1e-12 && x > -1e-12) }'
	done
}

@test "pn-eval --logo predicts below a fold's floor at it and names the base" {
	awk -F'\t' -v OFS='\t' -v CONVFMT=%.17g 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; print; next }
		{ print } $h["device"] == "T4" { $h["device"] = "P100-PCIE-16GB"; print }' "$F/train.tsv" | times3 /dev/stdin >train3.tsv
	pn-fit -f lr -F batch --relative --logo --keep-folds -o a.model train3.tsv
	floor=$(awk '$1 == "layer" { l = $2; f = "" } $1 == "fold" { f = $2 }
		l == "dense" && f == "V100-PCIE-32GB" && $1 == "info" && $2 == "base-floor" { print $3 }' a.model)
	# a V100 dense row at the fold's floor, and at 1e-6 of it
	awk -F'\t' -v OFS='\t' -v fl="$floor" -v CONVFMT=%.17g 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; print; next }
		$h["layer"] == "dense" && $h["device"] == "V100-PCIE-32GB" && !done { $h["roofline_ms"] = fl; print; $h["roofline_ms"] = fl * 1e-6; print; done = 1 }' train3.tsv >rows.tsv
	pn-eval -m a.model --logo rows.tsv >pred.tsv
	[ "$(column pred_ms pred.tsv | sed -n 1p)" = "$(column pred_ms pred.tsv | sed -n 2p)" ]
	[[ "$(column domain pred.tsv | sed -n 2p)" == *"roofline_ms<"* ]]
}

@test "pn-sum predicts a row below its model's base-floor at the floor" {
	G="--gpuspecs $FIX/sum/gpus.tsv"
	pn-featurize $G "$FIX/sum/bmm-train.tsv" >f.tsv
	times3 f.tsv | pn-fit -f lr -F flops --relative -o bmm.model
	floor=$(awk '$1 == "info" && $2 == "base-floor" { print $3 }' bmm.model)
	# two small bmm, both below the floor
	printf 'name\tlayer\tphase\tbatch\tm\tn\tk\nbig\tbmm\tfwd\t1\t1\t1\t2\nsmall\tbmm\tfwd\t1\t1\t1\t1\n' >net.tsv
	pn-sum -m bmm.model $G -d UNIT --per-layer net.tsv >pl.tsv 2>/dev/null
	pn-sum --fallback roofline $G -d UNIT --per-layer net.tsv >roof.tsv
	awk -v r="$(column time_ms roof.tsv | head -1)" -v f="$floor" 'BEGIN { exit !(r < f) }'
	[ "$(column time_ms pl.tsv | sed -n 1p)" = "$(column time_ms pl.tsv | sed -n 2p)" ]
	[ "$(column source pl.tsv | sed -n 1p)" = extrapolated ]
}
