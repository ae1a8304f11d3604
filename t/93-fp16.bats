#!/usr/bin/env bats
# pipelines/fp16 on small inputs (t/fixtures/fp16: every 200th row of
# samples/neusight, but test/elementwise: three of its rows, each measured
# on all seven GPUs; and samples/vidur's Llama-2-7b rows at one shard and
# 15 token counts): it runs once, in setup_file, with its outputs kept.

load test_helper

setup_file() {
	local d=$BATS_FILE_TMPDIR
	NEUSIGHT="$FIX/fp16/neusight" VIDUR="$FIX/fp16/vidur" LAYERS="dense layernorm posenc" \
		"$PN_ROOT/pipelines/fp16" "$d/fp16" >"$d/out" 2>"$d/err" &&
		echo 0 >"$d/rc" || echo $? >"$d/rc"
}

setup() {
	D=$BATS_FILE_TMPDIR
}

@test "pipelines/fp16 succeeds on the small samples and writes its four files" {
	[ "$(cat "$D/rc")" -eq 0 ]
	[ -s "$D/fp16/mape.tsv" ] && [ -s "$D/fp16/streaming.tsv" ]
	# the header line, mape.md, a blank line, the header line, streaming.md
	n=$(wc -l <"$D/fp16/mape.md")
	diff <(sed -n "2,$((n + 1))p" "$D/out") "$D/fp16/mape.md"
	diff <(tail -n +$((n + 4)) "$D/out") "$D/fp16/streaming.md"
}

@test "pipelines/fp16 reports every operator of each held-out GPU, and the A100 without its fp32 rows for the vector types NeuSight has" {
	cut -f1-3 "$D/fp16/mape.tsv" >"$BATS_TEST_TMPDIR/got"
	{
		printf 'held_out\tlayer\tvidur_op\n'
		for g in A40 A100-PCIE-80GB; do
			for op in attn_pre_proj attn_post_proj mlp_up_proj mlp_down_proj "(all)"; do
				printf '%s\tdense\t%s\n' "$g" "$op"
			done
			printf '%s\tlayernorm\t%s\n' "$g" input_layernorm "$g" post_attention_layernorm "$g" "(all)"
			printf '%s\tposenc\t%s\n' "$g" attn_rope "$g" "(all)"
		done
		g="A100-PCIE-80GB, no fp32"
		printf '%s\tlayernorm\t%s\n' "$g" input_layernorm "$g" post_attention_layernorm "$g" "(all)"
	} | diff - "$BATS_TEST_TMPDIR/got"
}

@test "pipelines/fp16 fits the fp16 GEMMs on the other GPU's fp16 rows only, the vector ops on NeuSight's FP32 rows too" {
	# dense: the A100's 60 fp16 rows; layernorm: its 30 and NeuSight's
	[ "$(awk -F'\t' '$1 == "A40" && $3 == "(all)" { print $2, $11 }' "$D/fp16/mape.tsv" | head -2)" = "$(printf 'dense 60\nlayernorm %s' $((30 + $(zcat "$FIX"/fp16/neusight/*/layernorm.tsv.gz | awk -F'\t' '$1 != "layer"' | wc -l))))" ]
}

@test "pipelines/fp16 with FP32_GEMM=1 fits the GEMMs on NeuSight's FP32 rows too" {
	NEUSIGHT="$FIX/fp16/neusight" VIDUR="$FIX/fp16/vidur" LAYERS=dense FP32_GEMM=1 \
		run "$PN_ROOT/pipelines/fp16" "$BATS_TEST_TMPDIR/o"
	[ "$status" -eq 0 ]
	[ "$(awk -F'\t' '$1 == "A40" && $3 == "(all)" { print $11 }' "$BATS_TEST_TMPDIR/o/mape.tsv")" -eq $((60 + $(zcat "$FIX"/fp16/neusight/*/dense.tsv.gz | awk -F'\t' '$1 != "layer"' | wc -l))) ]
}

@test "pipelines/fp16 carries NeuSight's streaming rows to each unseen GPU by roofline_ms and by l2_ms" {
	[ "$(cut -f1-2 "$D/fp16/streaming.tsv" | paste -sd,)" = "$(printf 'unseen\tcolumn,L4\troofline_ms,A100-PCIE-80GB\troofline_ms,L4\tl2_ms,A100-PCIE-80GB\tl2_ms')" ]
	[ "$(awk -F'\t' 'NR > 1 && !($3 > 0 && $4 ~ /^[0-9.]+$/) { n++ } END { print n + 0 }' "$D/fp16/streaming.tsv")" -eq 0 ]
}

@test "pipelines/fp16 tests on every fp16 row of the held-out GPU" {
	# 15 token counts (4096 twice) of Llama-2-7b at one shard
	[ "$(awk -F'\t' '$1 == "A40" && $3 == "(all)" { print $2, $4 }' "$D/fp16/mape.tsv")" = "$(printf 'dense 60\nlayernorm 30\nposenc 15')" ]
}

@test "pipelines/fp16 writes the method before and both transfers beside the chosen method" {
	[ "$(head -1 "$D/fp16/mape.tsv")" = "$(printf 'held_out\tlayer\tvidur_op\tn\tmape\tmape_before\ttransfer\ttransfer_col\tgoal\tmet\ttrain_rows')" ]
	# every row has a number in each MAPE column (the A100 without its
	# fp32 rows has no transfer of its own: NA there)
	[ "$(awk -F'\t' 'NR > 1 && ($5 !~ /^[0-9.]+$/ || $6 !~ /^[0-9.]+$/) { n++ } END { print n + 0 }' "$D/fp16/mape.tsv")" -eq 0 ]
	[ "$(awk -F'\t' 'NR > 1 && $1 !~ /no fp32/ && ($7 !~ /^[0-9.]+$/ || $8 !~ /^[0-9.]+$/) { n++ } END { print n + 0 }' "$D/fp16/mape.tsv")" -eq 0 ]
}

@test "pipelines/fp16 fits by default the feature set l2 relative to l2_ms" {
	[ "$(grep -c '^fp16: A40 held out: fitted [a-z]* (l2, l2_ms) on [0-9]* rows$' "$D/err")" -eq 3 ]
	[ "$(grep -c 'lat_ms' "$D/err")" -eq 0 ]
}

@test "pipelines/fp16 with FEATURES=lat REL=lat_ms gives the default's MAPE where no kernel streams" {
	# l2_ms is lat_ms but for streaming kernels: posenc's rows are alike
	NEUSIGHT="$FIX/fp16/neusight" VIDUR="$FIX/fp16/vidur" LAYERS=posenc FEATURES=lat REL=lat_ms \
		run "$PN_ROOT/pipelines/fp16" "$BATS_TEST_TMPDIR/o"
	[ "$status" -eq 0 ]
	diff <(awk -F'\t' '$2 == "posenc"' "$D/fp16/mape.tsv" | cut -f1-7) \
		<(tail -n +2 "$BATS_TEST_TMPDIR/o/mape.tsv" | cut -f1-7)
}

@test "pipelines/fp16 with FEATURES=rel REL=roofline_ms is the method before" {
	NEUSIGHT="$FIX/fp16/neusight" VIDUR="$FIX/fp16/vidur" LAYERS=posenc FEATURES=rel REL=roofline_ms \
		run "$PN_ROOT/pipelines/fp16" "$BATS_TEST_TMPDIR/o"
	[ "$status" -eq 0 ]
	[ "$(awk -F'\t' 'NR > 1 && ($5 != $6 || $7 != $8) { n++ } END { print n + 0 }' "$BATS_TEST_TMPDIR/o/mape.tsv")" -eq 0 ]
	[ "$(tail -n +2 "$BATS_TEST_TMPDIR/o/mape.tsv" | wc -l)" -eq 4 ]
}

@test "pipelines/fp16 refuses a MAX_NS that is not a number" {
	MAX_NS=all run "$PN_ROOT/pipelines/fp16" "$BATS_TEST_TMPDIR/o"
	[ "$status" -eq 1 ]
	[ "$output" = "fp16: MAX_NS must be a whole number, not 'all'" ]
}
