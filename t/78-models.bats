#!/usr/bin/env bats
# The model set shipped in samples/models (pipelines/fit-models, `make
# models`): it is up to date with the shipped data, the method's commands
# and the fitting code, and pn reads it gzipped.

load test_helper

SET="$PN_ROOT/samples/models/neusight-gpu.models.gz"

setup() {
	T=$BATS_TEST_TMPDIR
	cd "$T"
	# the shipped set's settings, whatever the caller's environment says
	unset FAMILY SEED LAYERS
}

# model SET LAYER: the model of op type LAYER in the (gzipped) SET
model() {
	zcat "$1" | awk -v l="$2" '$0 == "pn-model 1" { m = "" } { m = m $0 "\n" }
		$0 == "end" && m ~ "\nlayer " l "\n" { printf "%s", m }'
}

@test "the shipped model set records the data, commands and pn-fit of a fit now" {
	"$PN_ROOT/pipelines/fit-models" --provenance >expected
	zcat "$SET" | grep -E '^(layer |info (created-by|made-by|data|prepared-by|command) )' >recorded
	diff -u expected recorded || {
		echo "samples/models is out of date: run 'make models'"
		return 1
	}
}

@test "a refit of the layernorm model is the shipped one byte for byte" {
	run_io env LAYERS=layernorm "$PN_ROOT/pipelines/fit-models" "$T/layernorm.models"
	[ "$status" -eq 0 ] || { cat "$T/err"; return 1; }
	[ "$(cat "$T/err")" = "fit-models: fitted layernorm (6854 rows)" ]
	model "$SET" layernorm >shipped
	[ -s shipped ]
	cmp shipped layernorm.models || {
		echo "a refit now differs from the shipped set: run 'make models'"
		return 1
	}
}

@test "pn-sum predicts a network on every GPU with the shipped set" {
	pn-net --hf "$PN_ROOT/samples/networks/configs/gpt2-medium.json" --seq 512 >net.tsv
	run_io pn-sum -m "$SET" --fallback roofline --interval --devices all net.tsv
	[ "$status" -eq 0 ]
	# NeuSight's rows are forward passes: the train rows are split into
	# forward parts (step.h); the elementwise rows' parts are its rows
	# (batch x seq_len folded, modelset.h), some parts of the other rows
	# lie outside (Adam's passes, bias gradients), and pn-sum says so
	[ "$(cat "$T/err")" = "pn-sum: warning: net.tsv: 10 of 17 rows predicted outside their model's domain on some of the devices, extrapolated (the first, line 2, embedding: adam.addcdiv_: ai<0.0833333); --per-layer names them, --strict refuses them" ]
	# one row per GPU of the spec table, each with a finite time
	[ "$(($(wc -l <"$T/out") - 1))" -eq "$(($(wc -l <"$PN_ROOT/gpuspecs/gpus.tsv") - 1))" ]
	[ "$(column train_ms "$T/out" | grep -cvE '^[0-9.e+-]+$')" -eq 0 ]
}

@test "pn-eval reads a gzipped model file as the plain one" {
	pn-fit -f lr -o m "$FIX/fit/train.tsv"
	gzip -c m >m.gz
	pn-eval -m m -o plain.tsv "$FIX/fit/test.tsv" 2>plain.err
	run_io pn-eval -m m.gz -o gz.tsv "$FIX/fit/test.tsv"
	[ "$status" -eq 0 ]
	[ ! -s "$T/out" ]
	cmp plain.err "$T/err"
	cmp plain.tsv gz.tsv
}

@test "a truncated gzipped model file is refused" {
	pn-fit -f lr -o m "$FIX/fit/train.tsv"
	gzip -c m | head -c 200 >m.gz
	run_io pn-eval -m m.gz "$FIX/fit/test.tsv"
	[ "$status" -eq 1 ]
	[ ! -s "$T/out" ]
	[ "$(cat "$T/err")" = "pn-eval: m.gz: truncated gzip input" ]
}

@test "pipelines/predict predicts with the shipped set and fits nothing" {
	mkdir -p out.d
	echo stale >out.d/models
	run_io "$PN_ROOT/pipelines/predict" "$T/out.d"
	[ "$status" -eq 0 ] || { cat "$T/err"; return 1; }
	# nothing fitted: stderr holds only pn-sum's warnings (the amp-bf16
	# epoch's bf16 rows), no line of pipelines/fit-models
	! grep -v '^pn-sum: warning: ' "$T/err"
	[ ! -e out.d/models ]
	pn-sum -m "$SET" --fallback roofline --interval --devices all -n 100000 --optimizer adam \
		"$PN_ROOT/samples/neusight/graphs/bert_large-train-512-8.tsv.gz" >expected
	cmp expected out.d/epoch.tsv
}

@test "pipelines/predict refuses a REFIT other than 0 or 1" {
	run_io env REFIT=yes "$PN_ROOT/pipelines/predict" "$T/out.d"
	[ "$status" -eq 1 ]
	[ ! -e out.d ]
	[ "$(cat "$T/err")" = "predict: REFIT must be 0 or 1, not 'yes'" ]
}
