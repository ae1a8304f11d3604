#!/usr/bin/env bats
# pipelines/retime-cpu on a few tiny bmm rows of samples/cpu (REPS=1, no
# warm-up).

load test_helper

setup() {
	T=$BATS_TEST_TMPDIR
	mkdir -p "$T/d"
	cp "$PN_ROOT/samples/cpu/cpu-spec.tsv" "$T/d/"
	# eight bmm rows of under 2e4 multiply-adds, forward and train
	zcat "$PN_ROOT/samples/cpu/bmm.tsv.gz" |
		awk -F'\t' 'NR == 1 || ($2 * $3 * $4 * $5 < 2e4)' | head -9 |
		gzip -9n >"$T/d/bmm.tsv.gz"
	zcat "$T/d/bmm.tsv.gz" >"$T/before.tsv"
}

# retime [CONDITION]: pipelines/retime-cpu bmm on $T/d, quickly
retime() {
	DATA="$T/d" REPS=1 WARMUP=0 run_io "$PN_ROOT/pipelines/retime-cpu" bmm "$@"
}

@test "pipelines/retime-cpu times again only the rows of the condition" {
	retime '$h["pass"] == "fwd"'
	[ "$status" -eq 0 ]
	zcat "$T/d/bmm.tsv.gz" >"$T/after.tsv"
	# the train rows byte for byte as they were, in their places
	diff <(awk -F'\t' '$7 != "fwd"' "$T/before.tsv") <(awk -F'\t' '$7 != "fwd"' "$T/after.tsv")
	# the forward rows: the same configurations, in the same order, new times
	diff <(awk -F'\t' '$7 == "fwd"' "$T/before.tsv" | cut -f1-9) \
		<(awk -F'\t' '$7 == "fwd"' "$T/after.tsv" | cut -f1-9)
	[ "$(awk -F'\t' '$7 == "fwd"' "$T/before.tsv" | cut -f16 | md5sum)" != \
	  "$(awk -F'\t' '$7 == "fwd"' "$T/after.tsv" | cut -f16 | md5sum)" ]
}

@test "pipelines/retime-cpu keeps the data set's device name and columns" {
	sed -i '2s/^[^\t]*/TESTCPU/' "$T/d/cpu-spec.tsv"
	retime
	[ "$status" -eq 0 ]
	zcat "$T/d/bmm.tsv.gz" >"$T/after.tsv"
	[ "$(head -1 "$T/after.tsv")" = "$(head -1 "$T/before.tsv")" ]
	[ "$(column "$T/after.tsv" device | sort -u)" = TESTCPU ]
	[ "$(column "$T/after.tsv" status | sort -u)" = ok ]
	[ "$(wc -l <"$T/after.tsv")" -eq 9 ]
}

@test "pipelines/retime-cpu says how many rows it timed and their time ratio" {
	retime '$h["optimizer"] == "sgd"'
	[ "$status" -eq 0 ]
	n=$(awk -F'\t' '$8 == "sgd"' "$T/before.tsv" | wc -l)
	grep -Eq "^retime-cpu: bmm: $n rows timed again in [0-9]+ s; new / old time_ms, geometric mean [0-9.]+$" "$T/out"
}

@test "pipelines/retime-cpu fails when no row matches, and writes nothing" {
	retime '$h["batch"] == 123456'
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "retime-cpu: bmm: no row matches the condition" ]
	zcat "$T/d/bmm.tsv.gz" | cmp - "$T/before.tsv"
}

@test "pipelines/retime-cpu fails on a type the data set lacks" {
	retime_missing() { DATA="$T/d" run_io "$PN_ROOT/pipelines/retime-cpu" conv2d; }
	retime_missing
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "retime-cpu: no $T/d/conv2d.tsv.gz" ]
}

@test "pipelines/retime-cpu wants a type" {
	run "$PN_ROOT/pipelines/retime-cpu"
	[ "$status" -eq 2 ]
	[ "$output" = "usage: pipelines/retime-cpu TYPE [CONDITION]" ]
}
