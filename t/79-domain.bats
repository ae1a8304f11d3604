#!/usr/bin/env bats
# A model's domain (domain.h): pn-fit records what a model was fitted on;
# pn-eval -m and pn-sum mark the rows predicted outside it, name the
# dimensions, and --strict refuses them.

load test_helper
load fit_helper

S="$FIX/sum"
G="-g $S/gpus.tsv"

setup_file() {
	# the fit fixture with an optimizer column: sgd on every other row
	awk -F'\t' -v OFS='\t' '{ print $0, NR == 1 ? "optimizer" : NR % 2 ? "sgd" : "none" }' \
		"$FIX/fit/train.tsv" >"$BATS_FILE_TMPDIR/train.tsv"
	pn-fit -f lr -o "$BATS_FILE_TMPDIR/m.model" "$BATS_FILE_TMPDIR/train.tsv"
	# a linear bmm model of one GPU's forward rows (t/70-sum.bats's)
	pn-featurize $G "$S/bmm-train.tsv" |
		pn-fit -f lr --no-log-target -F flops -o "$BATS_FILE_TMPDIR/bmm.model"
	# a linear lstm model of forward rows (an lstm train row stays whole:
	# step.h)
	awk 'BEGIN { OFS = "\t"; print "layer", "batch", "seq_len", "input_size", "hidden", "layers", "bidirectional", "device", "time_ms"
		for (b = 1; b <= 64; b *= 4) for (h = 32; h <= 512; h *= 2) print "lstm", b, 8, h, h, 1, 0, "UNIT", b * h / 1000 }' |
		pn-featurize $G | pn-fit -f lr --no-log-target -F flops -o "$BATS_FILE_TMPDIR/lstm.model"
}

setup() {
	fit_setup
	M="$BATS_FILE_TMPDIR/m.model"
}

# dense_row [COL VALUE]...: the header and the first dense training row,
# each COL set to VALUE
dense_row() {
	awk -F'\t' -v OFS='\t' -v sets="$*" '
	NR == 1 { for (i = 1; i <= NF; i++) k[$i] = i; n = split(sets, s, " ")
		print; next }
	$1 == "dense" { for (j = 1; j < n; j += 2) $k[s[j]] = s[j + 1]; print; exit }' \
		"$BATS_FILE_TMPDIR/train.tsv"
}

# eval_row [COL VALUE]...: pn-eval -m the model on dense_row's row (run_io)
eval_row() {
	dense_row "$@" >row.tsv
	run_io pn-eval -m "$M" row.tsv
}

# range MODEL LAYER FEATURE: "LO HI" of the feature's info range line
range() {
	sed -n "/^layer $2\$/,/^body\$/p" "$1" | awk -v f="$3" '$1 == "info" && $2 == "range" && $3 == f { print $4, $5 }'
}

# ---- pn-fit writes the domain ---------------------------------------------

@test "pn-fit records the layers, passes, precisions and optimizers of the training rows" {
	sed -n '/^layer dense$/,/^body$/p' "$M" | grep -E '^info (layers|passes|precisions|optimizers) ' >actual
	printf '%s\n' 'info layers dense' 'info precisions fp32' 'info passes fwd' \
		'info optimizers none,sgd' >expected
	diff -u expected actual
}

@test "pn-fit records each numeric feature's range over the training rows, before the log" {
	pn-fit -f lr --log-features -o m.model "$BATS_FILE_TMPDIR/train.tsv"
	sed -n '/^layer dense$/,/^body$/p' m.model | awk '$1 == "info" && $2 == "range" { print $3, $4, $5 }' >ranges
	[ "$(wc -l <ranges)" -ge 10 ]
	# every numeric feature has its line, and no categorical one
	sed -n '/^layer dense$/,/^body$/p' m.model | awk '$1 == "feature" && $3 != "cat" { print $2 }' >want
	diff -u want <(cut -d' ' -f1 ranges)
	while read -r name lo hi; do
		want=$(awk -F'\t' -v c="$name" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
			$1 == "dense" { v = $k + 0; if (n++ == 0 || v < a) a = v; if (n == 1 || v > b) b = v }
			END { printf "%.17g %.17g\n", a, b }' "$BATS_FILE_TMPDIR/train.tsv")
		near "$lo" "${want% *}" || { echo "$name: lo $lo want ${want% *}"; return 1; }
		near "$hi" "${want#* }" || { echo "$name: hi $hi want ${want#* }"; return 1; }
	done <ranges
}

# ---- pn-eval -m marks rows ------------------------------------------------

@test "pn-eval -m marks a training row inside its model's domain with -" {
	eval_row
	[ "$status" -eq 0 ]
	[ "$(column domain "$T/out")" = "-" ]
}

@test "pn-eval -m marks a row in a pass the model never saw with pass=train" {
	eval_row pass train
	[ "$status" -eq 0 ]
	[ "$(column domain "$T/out")" = "pass=train" ]
}

@test "pn-eval -m marks a row with an optimizer the model never saw with optimizer=adam" {
	eval_row optimizer adam
	[ "$status" -eq 0 ]
	[ "$(column domain "$T/out")" = "optimizer=adam" ]
}

@test "pn-eval -m marks a row in a precision the model never saw with precision=bf16" {
	eval_row precision bf16
	[ "$status" -eq 0 ]
	[ "$(column domain "$T/out")" = "precision=bf16" ]
}

@test "pn-eval -m marks a row of a layer type a catch-all model never saw with layer=bmm" {
	awk -F'\t' 'NR == 1 || $1 == "dense"' "$BATS_FILE_TMPDIR/train.tsv" >dense.tsv
	pn-fit -f lr -F batch --no-by-layer -o any.model dense.tsv
	awk -F'\t' 'NR == 1 || $1 == "bmm"' "$BATS_FILE_TMPDIR/train.tsv" | head -2 >row.tsv
	run_io pn-eval -m any.model row.tsv
	[ "$status" -eq 0 ]
	[ "$(column domain "$T/out")" = "layer=bmm" ]
}

@test "pn-eval -m marks a feature above its range with NAME>MAX and below with NAME<MIN" {
	r=$(range "$M" dense batch)
	eval_row batch $((${r#* } + 1))
	[ "$status" -eq 0 ]
	[ "$(column domain "$T/out")" = "batch>${r#* }" ]
	eval_row batch 1
	[ "$(column domain "$T/out")" = "batch<${r% *}" ]
}

@test "pn-eval -m takes a value at the edge of its range as inside" {
	r=$(range "$M" dense batch)
	eval_row batch "${r#* }"
	[ "$status" -eq 0 ]
	[ "$(column domain "$T/out")" = "-" ]
}

@test "pn-eval -m names every dimension outside, categorical ones first" {
	r=$(range "$M" dense batch)
	eval_row batch $((${r#* } * 2)) optimizer adam pass train
	[ "$status" -eq 0 ]
	[ "$(column domain "$T/out")" = "pass=train,optimizer=adam,batch>${r#* }" ]
}

@test "pn-eval -m --strict refuses a row outside its model's domain, naming its line and dimension" {
	{ dense_row; dense_row pass train | tail -1; } >rows.tsv
	run_io pn-eval -m "$M" --strict -o out.tsv rows.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-eval: rows.tsv:3: the row lies outside the domain of the dense model: pass=train (--strict)" ]
	[ ! -e out.tsv ]
}

@test "pn-eval -m --strict writes rows inside their domain as without it" {
	dense_row >row.tsv
	pn-eval -m "$M" row.tsv >plain.tsv 2>/dev/null
	run_io pn-eval -m "$M" --strict row.tsv
	[ "$status" -eq 0 ]
	cmp plain.tsv "$T/out"
}

@test "pn-eval --strict without --model is a usage error" {
	run_io pn-eval --strict "$FIX/fit/test.tsv"
	[ "$status" -eq 2 ]
	[ "$(head -1 "$T/err")" = "pn-eval: --strict needs --model" ]
}

# ---- model files without the domain ----------------------------------------

@test "a model file without passes, optimizers or ranges loads: fwd and none only, ranges unchecked, and pn-eval says so" {
	grep -vE '^info (passes|optimizers|range) ' "$M" >old.model
	r=$(range "$M" dense batch)
	dense_row batch $((${r#* } * 2)) >row.tsv
	run_io pn-eval -m old.model row.tsv
	[ "$status" -eq 0 ]
	[ "$(column domain "$T/out")" = "-" ]
	[ "$(head -1 "$T/err")" = "pn-eval: warning: old.model: the models of layers bmm, dense record no feature ranges (an older pn-fit): their rows are not checked for range (refit them)" ]
	dense_row pass train optimizer sgd >row.tsv
	run_io pn-eval -m old.model row.tsv
	[ "$(column domain "$T/out")" = "pass=train,optimizer=sgd" ]
}

# ---- pn-sum ------------------------------------------------------------------

# a network of one bmm row in the training pass (split into forward-pass
# parts: step.h), and one of an lstm row in the training pass (whole)
train_net() { sed 's/\tfwd\t/\ttrain\t/' "$S/bmm.tsv" >net.tsv; }
lstm_net() {
	printf 'name\tlayer\tphase\tbatch\tseq_len\tinput_size\thidden\tlayers\tbidirectional\n' >lstm.tsv
	printf 'rnn\tlstm\ttrain\t1\t8\t64\t64\t1\t0\n' >>lstm.tsv
}

@test "pn-sum --per-layer says extrapolated for a row outside its model's domain and names the dimensions" {
	lstm_net
	run_io pn-sum -m "$BATS_FILE_TMPDIR/lstm.model" $G -d UNIT --per-layer lstm.tsv
	[ "$status" -eq 0 ]
	[ "$(column source "$T/out")" = extrapolated ]
	[ "$(column domain "$T/out")" = "pass=train" ]
}

@test "pn-sum --per-layer says extrapolated for a row whose features lie outside, with each feature's bound" {
	run_io pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" $G -d UNIT -b 4 --per-layer "$S/bmm.tsv"
	[ "$status" -eq 0 ]
	[ "$(column source "$T/out")" = extrapolated ]
	[ "$(column domain "$T/out")" = "flops>2.14748e+09" ]
}

@test "pn-sum checks a decomposed train row part by part: parts inside their model's domain make it model" {
	# the row (1e9 flops a part, 3e9 as one train row) split into three
	# forward bmm parts, each inside the model's range of forward rows
	train_net
	run_io pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" $G -d UNIT --per-layer net.tsv
	[ "$status" -eq 0 ]
	[ "$(cut -f8- "$T/out" | cut -f1-3,11)" = "$(printf 'device\tsource\trule\tdomain\nUNIT\tmodel\tdecomposed\t-')" ]
	[ ! -s "$T/err" ]
}

@test "pn-sum says extrapolated for a decomposed train row with a part outside its model's domain, with the part's name and dimensions" {
	train_net
	run_io pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" $G -d UNIT -b 4 --per-layer net.tsv
	[ "$status" -eq 0 ]
	[ "$(cut -f8- "$T/out" | cut -f1-3,11)" = "$(printf 'device\tsource\trule\tdomain\nUNIT\textrapolated\tdecomposed\tforward: flops>2.14748e+09')" ]
}

@test "pn-sum --strict names the part of a decomposed train row outside its model's domain" {
	train_net
	run_io pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" $G -d UNIT -b 4 --strict net.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-sum: net.tsv:2: the bmm row's forward part on UNIT lies outside its model's domain: flops>2.14748e+09 (--strict)" ]
}

@test "pn-sum --per-layer says model and domain - for a row inside" {
	run_io pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" $G -d UNIT --per-layer "$S/bmm.tsv"
	[ "$status" -eq 0 ]
	[ "$(column source "$T/out")" = model ]
	[ "$(column domain "$T/out")" = "-" ]
	[ ! -s "$T/err" ]
}

@test "pn-sum counts the rows outside on standard error and the summary says extrapolated" {
	lstm_net
	run_io pn-sum -m "$BATS_FILE_TMPDIR/lstm.model" $G -d UNIT lstm.tsv
	[ "$status" -eq 0 ]
	[ "$(column source "$T/out")" = extrapolated ]
	[ "$(cat "$T/err")" = "pn-sum: warning: lstm.tsv: 1 of 1 rows predicted outside their model's domain on UNIT, extrapolated (the first, line 2, lstm: pass=train); --per-layer names them, --strict refuses them" ]
}

@test "pn-sum gives each GPU the source of its own rows: a GPU is outside through its spec features" {
	# a model of roofline_ms, fitted on UNIT: at batch 2 the row's roofline
	# time is inside UNIT's range and twice over it on HALF, half as fast
	pn-featurize $G "$S/bmm-train.tsv" | pn-fit -f lr --no-log-target -F roofline_ms -o r.model
	run_io pn-sum -m r.model $G -d UNIT,HALF -b 2 "$S/bmm.tsv"
	[ "$status" -eq 0 ]
	[ "$(cut -f2,3 "$T/out")" = "$(printf 'device\tsource\nUNIT\tmodel\nHALF\textrapolated')" ]
	run_io pn-sum -m r.model $G -d UNIT,HALF -b 2 --per-layer "$S/bmm.tsv"
	[ "$(column domain "$T/out")" = "$(printf -- '-\nroofline_ms>%s' "$(range r.model bmm roofline_ms | awk '{ printf "%g", $2 }')")" ]
}

@test "pn-sum --strict refuses a row outside its model's domain, naming its line, GPU and dimension" {
	lstm_net
	run_io pn-sum -m "$BATS_FILE_TMPDIR/lstm.model" $G -d UNIT --strict -o out.tsv lstm.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-sum: lstm.tsv:2: the lstm row on UNIT lies outside its model's domain: pass=train (--strict)" ]
	[ ! -e out.tsv ]
}

@test "pn-sum --strict predicts rows inside their domain as without it" {
	pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" $G -d UNIT "$S/bmm.tsv" >plain.tsv
	run_io pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" $G -d UNIT --strict "$S/bmm.tsv"
	[ "$status" -eq 0 ]
	cmp plain.tsv "$T/out"
}

@test "pn-sum --strict also checks the last, smaller batch of the epoch" {
	# training rows of 1.5e9 to 2.5e9 flops: the row at batch 2 (2e9) is
	# inside, the epoch's last batch of 1 sample (1e9) below
	awk 'BEGIN { OFS = "\t"; print "layer", "batch", "m", "n", "k", "device", "time_ms"
		for (k = 1500; k <= 2500; k += 100) print "bmm", 1, 1000, 500, k, "UNIT", k / 1000 }' >big.tsv
	pn-featurize $G big.tsv | pn-fit -f lr --no-log-target -F flops -o big.model
	pn-sum -m big.model $G -d UNIT -b 2 -n 2 --strict "$S/bmm.tsv" >/dev/null
	lo=$(range big.model bmm flops | awk '{ printf "%g", $1 }')
	run_io pn-sum -m big.model $G -d UNIT -b 2 -n 3 --strict "$S/bmm.tsv"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-sum: $S/bmm.tsv:2: the bmm row on UNIT lies outside its model's domain: flops<$lo (--strict)" ]
}
