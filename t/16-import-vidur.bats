#!/usr/bin/env bats
# pn-import: Vidur's per-operator CSV (compute/<gpu>/<model>/mlp.csv) to
# layer TSV, one row per operator of the --layer type, and its errors.  The
# vidur-*.csv fixtures are written by hand in Vidur's layout: a gated model
# (n_head 4, n_kv_head 2, n_embd 64, n_expanded_embd 160, vocab 512) at 8
# tokens on 2 shards and 16 tokens on 1, and a parallel-block one (phi-2's
# layout: no post_attention_layernorm columns, GELU, not gated).  Their
# expected shapes were checked by hand against vidur.h's table.
load test_helper

I="$FIX/import"

setup() {
	export PN_GPUSPECS="$I/gpus.tsv"
	T="$BATS_TEST_TMPDIR"
}

# vidur_import LAYER: both fixtures on the A100 as rows of LAYER
vidur_import() {
	run pn-import --device A100 --layer "$1" "$I/vidur-gated.csv" "$I/vidur-parallel.csv"
}

# A copy of the gated fixture with field FIELD (1-based) of data line LINE
# (2 or 3) set to VALUE, in $T/bad.csv.
vidur_bad() {
	awk -F, -v OFS=, -v l="$1" -v f="$2" -v v="$3" 'NR == l { $f = v } { print }' \
		"$I/vidur-gated.csv" >"$T/bad.csv"
}

@test "pn-import maps Vidur's four GEMMs to dense rows with their shards" {
	vidur_import dense
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$I/vidur-dense.expected"
}

@test "pn-import maps Vidur's emb to embedding rows over the vocabulary shard" {
	vidur_import embedding
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$I/vidur-embedding.expected"
}

@test "pn-import maps Vidur's norms to layernorm rows and skips an absent post_attention_layernorm" {
	vidur_import layernorm
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$I/vidur-layernorm.expected"
}

@test "pn-import maps SiluAndMul to silu_mul, GELU to gelu and a gated block's add to add" {
	vidur_import elementwise
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$I/vidur-elementwise.expected"
}

@test "pn-import maps Vidur's rotary embedding to posenc rows over the q and k heads" {
	vidur_import posenc
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$I/vidur-posenc.expected"
}

@test "pn-import reads Vidur rows with --format vidur" {
	run pn-import --format vidur --device A100 --layer posenc "$I/vidur-gated.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") <(head -3 "$I/vidur-posenc.expected")
}

@test "pn-import --source names the model of Vidur rows" {
	run pn-import --device A100 --layer embedding --source vidur:tiny "$I/vidur-gated.csv"
	[ "$status" -eq 0 ]
	[ "$(cut -f14 <<<"$output")" = "$(printf 'source\nvidur:tiny\nvidur:tiny')" ]
}

@test "pn-import needs --layer for a Vidur file" {
	run pn-import --device A100 "$I/vidur-gated.csv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-import: $I/vidur-gated.csv: a Vidur file holds several layer types; give --layer (dense, embedding, layernorm, elementwise or posenc)" ]
	[ "${lines[1]}" = "Try 'pn-import --help' for more information." ]
}

@test "pn-import needs --device for a Vidur file" {
	run pn-import --layer dense "$I/vidur-gated.csv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-import: $I/vidur-gated.csv: no GPU column; give --device NAME" ]
}

@test "pn-import rejects a --layer that no Vidur operator is" {
	run pn-import --device A100 --layer softmax "$I/vidur-gated.csv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-import: --layer softmax: no Vidur operator is one" ]
}

@test "pn-import reports a missing Vidur time column" {
	cut -d, -f16-20 --complement "$I/vidur-gated.csv" >"$T/bad.csv"
	run pn-import --device A100 --layer posenc "$T/bad.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $T/bad.csv:1: missing column 'time_stats.attn_rope.median'" ]
}

@test "pn-import reports a Vidur num_tokens that is not a whole number" {
	vidur_bad 2 57 16.5
	run pn-import --device A100 --layer dense "$T/bad.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $T/bad.csv:2: column 'num_tokens': '16.5' is not a whole number" ]
}

@test "pn-import reports a Vidur use_gated_mlp that is not a boolean" {
	vidur_bad 2 56 maybe
	run pn-import --device A100 --layer dense "$T/bad.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $T/bad.csv:2: column 'use_gated_mlp': 'maybe' is not a boolean (True, False, 1 or 0)" ]
}

@test "pn-import rejects a Vidur model whose heads do not split over the shards" {
	vidur_bad 2 58 3
	run pn-import --device A100 --layer dense "$T/bad.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $T/bad.csv:2: impossible model: n_head 4 is not divisible by num_tensor_parallel_workers 3" ]
}

@test "pn-import rejects a Vidur median time that is not a number" {
	vidur_bad 2 14 x
	run pn-import --device A100 --layer dense "$T/bad.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $T/bad.csv:2: column 'time_stats.attn_pre_proj.median': 'x' is not a number" ]
}

@test "pn-import rejects a negative Vidur std" {
	vidur_bad 2 15 -1
	run pn-import --device A100 --layer dense "$T/bad.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $T/bad.csv:2: column 'time_stats.attn_pre_proj.std': '-1' is negative" ]
}

@test "pn-import --skip-bad skips a Vidur operator without a positive time" {
	vidur_bad 2 14 0
	pn-import --skip-bad --device A100 --layer dense "$T/bad.csv" >"$T/out" 2>"$T/err"
	[ "$(cat "$T/err")" = "pn-import: warning: skipped 1 row without a positive time" ]
	diff "$T/out" <(head -9 "$I/vidur-dense.expected" | sed 2d)
}
