#!/usr/bin/env bats
# pn-fit -f mlp: the PreNeT multilayer perceptron (src/lib/fam_mlp.c).
# Fixtures: t/fixtures/fit-mlp (see its README): y = 2 + sin(x1) + 0.5 x2^2
# + 0.3 x3 on [-2, 2]^3, whose sd over test.tsv is 0.96; and the featurized
# rows of t/fixtures/fit with the shared checks of t/fit_helper.bash.

load test_helper
load fit_helper

setup() {
	fit_setup
	M="$FIX/fit-mlp"
}

# fit (test_helper) fits an MLP
FIT_FAMILY=mlp

# rmse_of MODEL ROWS: the RMSE of MODEL on ROWS, by pn-eval -m.
rmse_of() {
	pn-eval -m "$1" --metrics "$T/metrics" "$2" >/dev/null &&
		awk -F'\t' 'NR == 2 { print $2 }' "$T/metrics"
}

@test "pn-fit -f mlp fits a smooth function to within 0.1 RMSE on held-out rows" {
	fit a.model "$M/smooth.tsv"
	run_io pn-eval -m a.model --metrics metrics "$M/test.tsv"
	[ "$status" -eq 0 ]
	[ ! -s err ]
	[ "$(awk -F'\t' 'NR == 2 { print ($2 < 0.1) }' metrics)" = 1 ]
	[ "$(awk -F'\t' 'NR == 2 { print $1 }' metrics)" = 200 ]
}

@test "pn-fit -f mlp writes a model that pn-eval reads back and predicts" {
	family_roundtrip mlp -p epochs=5
}

# 80 rows per layer type: the network does worse than the trees here
@test "pn-fit -f mlp predicts the featurized test rows within 25% MAPE" {
	family_accuracy mlp 25
}

@test "pn-fit -f mlp model predicts after reloading what it predicted when fitted" {
	fit a.model -v "$M/val.tsv" -p epochs=20 "$M/smooth.tsv"
	want=$(awk '$1 == "info" && $2 == "val" { print $6 }' a.model)
	got=$(rmse_of a.model "$M/val.tsv")
	awk -v a="$want" -v b="$got" 'BEGIN {
		d = a - b; if (d < 0) d = -d
		exit !(a > 0 && d <= 1e-12 * a) }'
}

@test "pn-fit -f mlp writes the layer sizes and target scaling at the top of its body" {
	fit a.model -p epochs=1 "$M/smooth.tsv"
	body a.model | sed -n '2,3p' >head
	printf 'layers 7\nsizes 3 32 64 128 128 128 128 1\n' | diff - head
	body a.model | awk '$1 == "yscale" { y++ } $1 == "w" { w++ } $1 == "b" { b++ }
		END { print y, w, b }' >counts
	# one w line per unit of every layer: 32 + 64 + 4 * 128 + 1
	echo '1 609 7' | diff - counts
}

@test "pn-fit -f mlp --param hidden sets the hidden layers" {
	fit a.model -p hidden=8-4 -p epochs=1 "$M/smooth.tsv"
	body a.model | sed -n 3p >sizes
	echo 'sizes 3 8 4 1' | diff - sizes
}

@test "pn-fit -f mlp gives a byte-identical model for the same --seed" {
	fit a.model -s 7 -p epochs=20 "$M/smooth.tsv"
	fit b.model -s 7 -p epochs=20 "$M/smooth.tsv"
	cmp a.model b.model
}

@test "pn-fit -f mlp gives a different model for a different --seed" {
	fit a.model -s 7 -p epochs=20 "$M/smooth.tsv"
	fit b.model -s 8 -p epochs=20 "$M/smooth.tsv"
	! cmp -s <(body a.model) <(body b.model)
}

@test "pn-fit -f mlp gives the same model with one thread as with two" {
	fit a.model -p epochs=20 -p threads=1 "$M/smooth.tsv"
	fit b.model -p epochs=20 -p threads=2 "$M/smooth.tsv"
	cmp <(body a.model) <(body b.model)
}

# small.tsv has 60 noisy rows: the validation error bottoms out early.
# With anneal=0 a run of k epochs is the first k epochs of a longer one.
@test "pn-fit -f mlp with --val keeps the weights of its best validation epoch" {
	fit es.model -v "$M/val.tsv" -p patience=10 -p anneal=0 "$M/small.tsv"
	body es.model >es.body
	best=
	for k in $(seq 1 290); do
		fit k.model -p epochs="$k" -p anneal=0 "$M/small.tsv"
		rmse[k]=$(rmse_of k.model "$M/val.tsv")
		if [ -z "$best" ] && cmp -s es.body <(body k.model); then
			best=$k
		fi
		[ -z "$best" ] || [ "$k" -lt $((best + 10)) ] || break
	done
	# kept an epoch, stopped 10 epochs after it, none of them better
	[ -n "$best" ]
	[ "$k" -eq $((best + 10)) ]
	for j in $(seq 1 "$k"); do
		awk -v a="${rmse[j]}" -v b="${rmse[best]}" 'BEGIN { exit !(a >= b) }'
	done
}

@test "pn-fit -f mlp model cut anywhere never loads in pn-eval" {
	family_truncated mlp -p hidden=4-4 -p epochs=1
}

@test "pn-fit -f mlp model names the feature column that pn-eval rows lack" {
	family_missing_feature mlp -p epochs=1
}

@test "pn-fit -f mlp model cut after a whole line is a clear error in pn-eval" {
	fit a.model -p epochs=1 "$M/smooth.tsv"
	head -n 40 a.model >cut.model
	run_io pn-eval -m cut.model "$M/test.tsv"
	[ "$status" -eq 1 ]
	[ ! -s out ]
	echo "pn-eval: cut.model:40: corrupt model: unexpected end of file, want 'w'" |
		diff - err
}

@test "pn-fit -f mlp model cut inside a line is a clear error in pn-eval" {
	fit a.model -p epochs=1 "$M/smooth.tsv"
	head -n 40 a.model >cut.model
	sed -n 41p a.model | head -c 20 >>cut.model
	run_io pn-eval -m cut.model "$M/test.tsv"
	[ "$status" -eq 1 ]
	echo "pn-eval: cut.model:41: corrupt model: truncated file (last line has no newline)" |
		diff - err
}

@test "pn-fit -f mlp model with a weight that is not a number is a clear error" {
	fit a.model -p epochs=1 "$M/smooth.tsv"
	line=$(grep -n '^w ' a.model | sed -n '5s/:.*//p')
	sed "${line}s/^w [^ ]* /w 0.5x /" a.model >bad.model
	run_io pn-eval -m bad.model "$M/test.tsv"
	[ "$status" -eq 1 ]
	echo "pn-eval: bad.model:$line: corrupt model: 'w' value 1: '0.5x' is not a number" |
		diff - err
}

@test "pn-fit -f mlp model whose network has the wrong input width is a clear error" {
	fit a.model -p hidden=2 -p epochs=1 "$M/smooth.tsv"
	sed 's/^sizes 3 2 1$/sizes 4 2 1/' a.model >bad.model
	line=$(grep -n '^sizes' bad.model | cut -d: -f1)
	run_io pn-eval -m bad.model "$M/test.tsv"
	[ "$status" -eq 1 ]
	echo "pn-eval: bad.model:$line: corrupt model: mlp: network has 4 inputs, the model lists 3 features" |
		diff - err
}

@test "pn-fit -f mlp rejects a hidden layer list that is not widths joined by dashes" {
	run_io pn-fit -f mlp -F x1,x2,x3 --no-by-layer -o a.model -p hidden=32--64 "$M/smooth.tsv"
	[ "$status" -eq 2 ]
	[ ! -e a.model ]
	[ "$(head -1 err)" = "pn-fit: mlp: invalid --param hidden=32--64: want widths 1-65536 joined by '-', at most 63 layers" ]
}

@test "pn-fit -f mlp anneals the step size over the last fifth of its steps by default" {
	fit a.model -p epochs=20 "$M/smooth.tsv"
	fit b.model -p epochs=20 -p anneal=0.2 "$M/smooth.tsv"
	fit c.model -p epochs=20 -p anneal=0 "$M/smooth.tsv"
	cmp <(body a.model) <(body b.model)
	! cmp -s <(body a.model) <(body c.model)
}

# constant-lr Adam ends wherever its last steps threw it; annealing settles
@test "pn-fit -f mlp with anneal ends nearer the function than with a constant step size" {
	for s in 1 2 3 4 5; do
		for a in 0 0.2; do
			fit "$s-$a.model" -s "$s" -p epochs=100 -p anneal="$a" "$M/smooth.tsv"
			rmse_of "$s-$a.model" "$M/test.tsv" >>"rmse-$a"
		done
	done
	const=$(awk '{ s += $1 } END { print s / NR }' rmse-0)
	cool=$(awk '{ s += $1 } END { print s / NR }' rmse-0.2)
	awk -v a="$cool" -v b="$const" 'BEGIN { exit !(a < 0.9 * b) }'
}

@test "pn-fit -f mlp rejects an anneal above 1" {
	run_io pn-fit -f mlp -F x1,x2,x3 --no-by-layer -o a.model -p anneal=1.5 "$M/smooth.tsv"
	[ "$status" -eq 2 ]
	[ ! -e a.model ]
	[ "$(head -1 err)" = "pn-fit: mlp: invalid --param: anneal must be 0 to 1" ]
}

@test "pn-fit -f mlp refuses a learning rate out of range as a usage error, naming its range" {
	run_io pn-fit -f mlp -F x1,x2,x3 --no-by-layer -o a.model -p lr=1e9 "$M/smooth.tsv"
	[ "$status" -eq 2 ]
	[ "$(head -1 err)" = "pn-fit: mlp: invalid --param: lr must be above 0 and below 1000" ]
	[ ! -e a.model ]
}

@test "pn-fit -f mlp rejects a dropout of 1" {
	run_io pn-fit -f mlp -F x1,x2,x3 --no-by-layer -o a.model -p dropout=1 "$M/smooth.tsv"
	[ "$status" -eq 2 ]
	[ "$(head -1 err)" = "pn-fit: mlp: invalid --param: dropout must be at least 0 and below 1" ]
}
