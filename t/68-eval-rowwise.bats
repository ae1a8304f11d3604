#!/usr/bin/env bats
# A row-wise layer (elementwise, layernorm, softmax, xent: batch x seq_len
# rows of dim elements, layer.h's pn_layer_rowwise) predicted by a model
# that saw seq_len 1 alone, as NeuSight's per-op rows are, is read as the
# row of batch x seq_len rows and seq_len 1 (modelset.h): how a row splits
# its rows between batch and seq_len does not change its prediction.

load test_helper

G="-g $FIX/sum/gpus.tsv"

setup_file() {
	# layernorm rows of one GPU: seq_len 1 alone, and seq_len 1, 2 and 4
	awk 'BEGIN { OFS = "\t"; print "layer", "batch", "seq_len", "dim", "device", "time_ms"
		for (b = 1; b <= 4096; b *= 2) for (d = 16; d <= 4096; d *= 4)
			print "layernorm", b, 1, d, "UNIT", 0.01 + b * d / 1e6 + (b < 64) * 0.02 }' |
		pn-featurize $G >"$BATS_FILE_TMPDIR/one.tsv"
	pn-fit -f xgb -p rounds=50 -s 1 -o "$BATS_FILE_TMPDIR/one.model" "$BATS_FILE_TMPDIR/one.tsv"
	awk -F'\t' -v OFS='\t' 'NR == 1 { print; next } { s = 2 ^ (NR % 3); if ($2 >= s) { $2 /= s; $3 = s } print }' \
		"$BATS_FILE_TMPDIR/one.tsv" | pn-fit -f xgb -p rounds=50 -s 1 -o "$BATS_FILE_TMPDIR/some.model"
}

setup() {
	T=$BATS_TEST_TMPDIR
	cd "$T"
}

# rows B S [B S]...: layernorm rows of dim 256 on UNIT, featurized
rows() {
	{ printf 'layer\tbatch\tseq_len\tdim\tdevice\ttime_ms\n'
	  while [ $# -gt 1 ]; do printf 'layernorm\t%s\t%s\t256\tUNIT\t1\n' "$1" "$2"; shift 2; done
	} | pn-featurize $G
}

@test "pn-eval -m predicts a row-wise row of batch 8 and seq_len 16 as the row of batch 128, inside a seq_len-1 model's domain" {
	rows 8 16 128 1 2 64 >r.tsv
	run_io pn-eval -m "$BATS_FILE_TMPDIR/one.model" r.tsv
	[ "$status" -eq 0 ]
	p=$(column pred_ms "$T/out")
	[ "$(printf '%s\n' "$p" | sort -u | wc -l)" -eq 1 ]
	[ "$(column domain "$T/out" | sort -u)" = "-" ]
}

@test "pn-sum predicts a row-wise network row by its batch x seq_len rows on a model that saw seq_len 1 alone" {
	printf 'name\tlayer\tphase\tbatch\tseq_len\tdim\tprecision\toptimizer\n' >net.tsv
	printf 'a\tlayernorm\tfwd\t8\t16\t256\tfp32\tnone\nb\tlayernorm\tfwd\t128\t1\t256\tfp32\tnone\n' >>net.tsv
	run_io pn-sum $G -m "$BATS_FILE_TMPDIR/one.model" -d UNIT --per-layer net.tsv
	[ "$status" -eq 0 ]
	[ "$(column time_ms "$T/out" | sort -u | wc -l)" -eq 1 ]
	[ "$(column source "$T/out" | sort -u)" = model ]
}

@test "pn-eval -m reads a row's seq_len as it is on a model that saw several" {
	rows 8 16 >r.tsv
	run_io pn-eval -m "$BATS_FILE_TMPDIR/some.model" r.tsv
	[ "$status" -eq 0 ]
	[[ "$(column domain "$T/out")" == *"seq_len>4"* ]]
}

@test "pn-eval --logo reads a row-wise row as its batch x seq_len rows by the fold model too, whose model saw seq_len 1 alone" {
	# the seq_len-1 rows on three GPUs, a fold model for each
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "device") k = i; print; next }
		{ print; $k = "HALF"; print; $k = "NOPRICE"; print }' "$BATS_FILE_TMPDIR/one.tsv" |
		cut -f1-6 | pn-featurize $G >three.tsv
	pn-fit -f xgb -p rounds=20 -s 1 --logo --keep-folds -o logo.model three.tsv
	rows 8 16 128 1 >r.tsv
	run_io pn-eval -m logo.model --logo r.tsv
	[ "$status" -eq 0 ]
	[ "$(column pred_ms "$T/out" | sort -u | wc -l)" -eq 1 ]
	[ "$(column domain "$T/out" | sort -u)" = "-" ]
}
