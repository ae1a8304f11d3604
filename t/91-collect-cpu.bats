#!/usr/bin/env bats
# pipelines/collect-cpu on a few tiny dense rows (REPS=1, no warm-up).

load test_helper

# collect OUT [VAR=VALUE...]: three dense rows of at most 1e6 flops
collect() {
	local out=$1
	shift
	env N=3 TYPES=dense REPS=1 WARMUP=0 MAX_FLOPS=1e6 "$@" \
		"$PN_ROOT/pipelines/collect-cpu" "$out" 2>"$BATS_TEST_TMPDIR/err"
}

@test "pipelines/collect-cpu draws from the ranges in RANGES and says so in its README" {
	collect "$BATS_TEST_TMPDIR/o" RANGES="batch=100:100"
	zcat "$BATS_TEST_TMPDIR/o/dense.tsv.gz" >"$BATS_TEST_TMPDIR/d.tsv"
	[ "$(column "$BATS_TEST_TMPDIR/d.tsv" batch | sort -u)" = 100 ]
	grep -q 'with the ranges batch=100:100' "$BATS_TEST_TMPDIR/o/README.md"
}

@test "pipelines/collect-cpu without RANGES draws PreNeT's Table 3 batch of 1 to 64" {
	collect "$BATS_TEST_TMPDIR/o"
	zcat "$BATS_TEST_TMPDIR/o/dense.tsv.gz" >"$BATS_TEST_TMPDIR/d.tsv"
	[ "$(column "$BATS_TEST_TMPDIR/d.tsv" batch | wc -l)" = 3 ]
	column "$BATS_TEST_TMPDIR/d.tsv" batch | awk '!($1 >= 1 && $1 <= 64) { exit 1 }'
	! grep -q 'with the ranges' "$BATS_TEST_TMPDIR/o/README.md"
}

@test "pipelines/collect-cpu draws the values in CHOICES and says so in its README" {
	collect "$BATS_TEST_TMPDIR/o" CHOICES="input_grad=0"
	zcat "$BATS_TEST_TMPDIR/o/dense.tsv.gz" >"$BATS_TEST_TMPDIR/d.tsv"
	# 0 on the train rows (all three of seed 1's), NA on forward rows
	[ "$(column "$BATS_TEST_TMPDIR/d.tsv" input_grad | sort -u)" = 0 ]
	grep -q 'and the values input_grad=0 drawn' "$BATS_TEST_TMPDIR/o/README.md"
}

@test "pipelines/collect-cpu's README names its own spec row for pn-featurize" {
	collect "$BATS_TEST_TMPDIR/d"
	grep -qF "pn-featurize --gpuspecs $BATS_TEST_TMPDIR/d/cpu-spec.tsv" "$BATS_TEST_TMPDIR/d/README.md"
}

@test "pipelines/collect-cpu's README names the CPU's family and model, never an empty parenthesis" {
	fam=$(awk -F': *' '/^cpu family/ { print $2; exit }' /proc/cpuinfo)
	[ -n "$fam" ] || skip "/proc/cpuinfo names no cpu family"
	collect "$BATS_TEST_TMPDIR/o"
	grep -q "^- CPU: .* (family $fam, model [0-9]*), $(nproc) cores" "$BATS_TEST_TMPDIR/o/README.md"
	! grep -q '()' "$BATS_TEST_TMPDIR/o/README.md"
}

@test "pipelines/collect-cpu names the device and the spec row DEVICE" {
	collect "$BATS_TEST_TMPDIR/o" DEVICE=box-1t
	zcat "$BATS_TEST_TMPDIR/o/dense.tsv.gz" >"$BATS_TEST_TMPDIR/d.tsv"
	[ "$(column "$BATS_TEST_TMPDIR/d.tsv" device | sort -u)" = box-1t ]
	[ "$(column "$BATS_TEST_TMPDIR/o/cpu-spec.tsv" name)" = box-1t ]
}

@test "pipelines/collect-cpu aligns the widths by ALIGN and says so in its README" {
	collect "$BATS_TEST_TMPDIR/o" ALIGN=8 N=6
	zcat "$BATS_TEST_TMPDIR/o/dense.tsv.gz" >"$BATS_TEST_TMPDIR/d.tsv"
	[ "$(column "$BATS_TEST_TMPDIR/d.tsv" in_features | awk '$1 % 8' | wc -l)" -eq 0 ]
	[ "$(column "$BATS_TEST_TMPDIR/d.tsv" out_features | awk '$1 % 8' | wc -l)" -eq 0 ]
	grep -q 'widths aligned by `pn-sample --align 8`' "$BATS_TEST_TMPDIR/o/README.md"
}

@test "pipelines/collect-cpu APPEND=1 adds the rows after the ones there and this run to the README" {
	collect "$BATS_TEST_TMPDIR/o" DEVICE=box-1t
	cp "$BATS_TEST_TMPDIR/o/README.md" "$BATS_TEST_TMPDIR/readme0"
	zcat "$BATS_TEST_TMPDIR/o/dense.tsv.gz" >"$BATS_TEST_TMPDIR/d0.tsv"
	collect "$BATS_TEST_TMPDIR/o" DEVICE=box-1t APPEND=1 SEED=2
	zcat "$BATS_TEST_TMPDIR/o/dense.tsv.gz" >"$BATS_TEST_TMPDIR/d.tsv"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/d.tsv")" -eq 7 ]
	diff "$BATS_TEST_TMPDIR/d0.tsv" <(head -4 "$BATS_TEST_TMPDIR/d.tsv")
	diff "$BATS_TEST_TMPDIR/readme0" <(head -n "$(wc -l <"$BATS_TEST_TMPDIR/readme0")" "$BATS_TEST_TMPDIR/o/README.md")
	grep -q '^## Rows added on .* (APPEND=1)$' "$BATS_TEST_TMPDIR/o/README.md"
	grep -q '^- 3 configurations per type, seed 2' "$BATS_TEST_TMPDIR/o/README.md"
}

@test "pipelines/collect-cpu APPEND=1 refuses a data set of another device before it times anything" {
	collect "$BATS_TEST_TMPDIR/o" DEVICE=box-1t
	run collect "$BATS_TEST_TMPDIR/o" DEVICE=other-1t APPEND=1
	[ "$status" -eq 2 ]
	grep -q 'names another device than this machine.s other-1t' "$BATS_TEST_TMPDIR/err"
	[ "$(zcat "$BATS_TEST_TMPDIR/o/dense.tsv.gz" | wc -l)" -eq 4 ]
	run collect "$BATS_TEST_TMPDIR/none" APPEND=1
	[ "$status" -eq 2 ]
	grep -q 'holds no data set' "$BATS_TEST_TMPDIR/err"
}

@test "pipelines/collect-cpu refuses an APPEND other than 0 or 1, which would replace the data set, and a JOBS of 0" {
	collect "$BATS_TEST_TMPDIR/o" DEVICE=box-1t
	run collect "$BATS_TEST_TMPDIR/o" DEVICE=box-1t APPEND=yes
	[ "$status" -eq 2 ]
	[ "$(cat "$BATS_TEST_TMPDIR/err")" = "collect-cpu: APPEND must be 0 or 1, not 'yes'" ]
	[ "$(zcat "$BATS_TEST_TMPDIR/o/dense.tsv.gz" | wc -l)" -eq 4 ]
	run collect "$BATS_TEST_TMPDIR/o" JOBS=0
	[ "$status" -eq 2 ]
	[ "$(cat "$BATS_TEST_TMPDIR/err")" = "collect-cpu: JOBS must be a positive whole number, not '0'" ]
}

# a network of one embedding and one dense row, batch 1 in the file
ranges_net() {
	printf 'name\tlayer\tphase\tbatch\tseq_len\tvocab\tembed_dim\tin_features\tout_features\tbias\n' >"$1"
	printf 'emb\tembedding\ttrain\t1\t7\t300\t16\tNA\tNA\tNA\n' >>"$1"
	printf 'fc\tdense\ttrain\t1\tNA\tNA\tNA\t16\t9\t1\n' >>"$1"
}

@test "pipelines/net-ranges gives each layer type's least and greatest values over the batches asked" {
	ranges_net "$BATS_TEST_TMPDIR/net.tsv"
	run "$PN_ROOT/pipelines/net-ranges" -b 2,300 "$BATS_TEST_TMPDIR/net.tsv"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(printf 'layer\tcolumn\tlo\thi\trows')" ]
	[[ "$output" == *"$(printf 'embedding\tbatch\t2\t300\t2')"* ]]
	[[ "$output" == *"$(printf 'embedding\tvocab\t300\t300\t2')"* ]]
	[[ "$output" == *"$(printf 'dense\tout_features\t9\t9\t2')"* ]]
}

@test "pipelines/net-ranges -t widens pn-sample's own ranges of a type to cover the networks', never narrows them" {
	ranges_net "$BATS_TEST_TMPDIR/net.tsv"
	run "$PN_ROOT/pipelines/net-ranges" -b 2,300 -t embedding "$BATS_TEST_TMPDIR/net.tsv"
	[ "$status" -eq 0 ]
	# pn-sample's embedding table: batch 1-64, seq_len 64-512, vocab
	# 10000-500000, embed_dim 64-1024
	[ "$output" = "batch=1:300 seq_len=7:512 vocab=300:500000 embed_dim=16:1024" ]
}

@test "pipelines/net-ranges refuses a batch that is not a positive whole number" {
	ranges_net "$BATS_TEST_TMPDIR/net.tsv"
	run "$PN_ROOT/pipelines/net-ranges" -b 2,0 "$BATS_TEST_TMPDIR/net.tsv"
	[ "$status" -eq 1 ]
	[[ "$output" == *"batch must be a positive whole number, not '0'"* ]]
}

@test "pipelines/net-ranges names a network that pn-sum cannot read" {
	printf 'name\tlayer\nx\tnosuchlayer\n' >"$BATS_TEST_TMPDIR/bad.tsv"
	run "$PN_ROOT/pipelines/net-ranges" "$BATS_TEST_TMPDIR/bad.tsv"
	[ "$status" -eq 1 ]
	[[ "$output" == *"bad.tsv: pn-sum cannot read it"* ]]
}
