#!/usr/bin/env bats
# pn-time: a row that needs more memory than allowed gets status oom and
# the run goes on, for every layer type, with and without --mem-limit,
# --output and --check.
load test_helper

# the values of column $2 in TSV file $1, one a line
column() { awk -F'\t' -v c="$2" 'NR==1{for(i=1;i<=NF;i++)if($i==c)k=i; next} {print $k}' "$1"; }

# three rows of layer type $1, the middle one with batch $2; training
# rows, so that the backward pass is built too
three() {
	pn-sample --layer "$1" -n 3 --seed 2 --train-ratio 1 -r batch=1:2 $(small "$1") |
		awk -F'\t' -v OFS='\t' -v b="$2" 'NR==1{for(i=1;i<=NF;i++)if($i=="batch")k=i} NR==3{$k=b} {print}'
}

small() {
	case $1 in
	dense) echo "-r in_features=1:32 -r out_features=1:32" ;;
	bmm) echo "-r m=1:16 -r n=1:16 -r k=1:16" ;;
	conv2d) echo "-r image=4:12 -r in_channels=1:4 -r out_channels=1:4 -c kernel=1 -c stride=1" ;;
	attention) echo "-r seq_len=1:8 -r embed_dim=4:32 -r heads=1:4" ;;
	embedding) echo "-r seq_len=1:8 -r vocab=10:100 -r embed_dim=1:32" ;;
	rnn|lstm|gru) echo "-r seq_len=1:6 -r input_size=1:8 -r hidden=1:8 -r layers=1:2" ;;
	layernorm|softmax|elementwise) echo "-r seq_len=1:8 -r dim=1:64" ;;
	posenc) echo "-r seq_len=1:8 -r embed_dim=1:32" ;;
	esac
}

# pn-time on three rows of $1 with a middle row of batch 1e12, options $2...
oversized() {
	local t=$1
	shift
	three "$t" 1000000000000 >"$BATS_TEST_TMPDIR/in"
	[ "$(column "$BATS_TEST_TMPDIR/in" batch | sed -n 2p)" = 1000000000000 ]
	run pn-time -q -r 1 -w 0 "$@" "$BATS_TEST_TMPDIR/in"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}

oom_in_the_middle() {
	local f=$1
	[ "$(column "$f" status | paste -sd,)" = ok,oom,ok ] || { cat "$f"; return 1; }
	[ "$(column "$f" message | sed -n 2p)" = "needs more than --mem-limit 1000000000 bytes" ]
	column "$f" mem_bytes | sed -n 2p | awk '!($1 > 1e9) {exit 1}'
}

@test "pn-time gives an oversized dense row status oom and goes on" {
	oversized dense -m 1G -o "$BATS_TEST_TMPDIR/o"
	oom_in_the_middle "$BATS_TEST_TMPDIR/o"
}

@test "pn-time gives an oversized bmm row status oom and goes on" {
	oversized bmm -m 1G -o "$BATS_TEST_TMPDIR/o"
	oom_in_the_middle "$BATS_TEST_TMPDIR/o"
}

@test "pn-time gives an oversized layernorm row status oom and goes on" {
	oversized layernorm -m 1G -o "$BATS_TEST_TMPDIR/o"
	oom_in_the_middle "$BATS_TEST_TMPDIR/o"
}

@test "pn-time gives an oversized softmax row status oom and goes on" {
	oversized softmax -m 1G -o "$BATS_TEST_TMPDIR/o"
	oom_in_the_middle "$BATS_TEST_TMPDIR/o"
}

@test "pn-time gives an oversized row of every layer type status oom" {
	for t in dense bmm conv2d attention embedding rnn lstm gru layernorm softmax elementwise posenc; do
		oversized "$t" -m 1G -o "$BATS_TEST_TMPDIR/o" || { echo "$t"; return 1; }
		oom_in_the_middle "$BATS_TEST_TMPDIR/o" || { echo "$t"; return 1; }
	done
}

@test "pn-time gives an oversized row status oom under its default memory limit" {
	oversized dense
	[ "$(printf '%s\n' "${lines[@]}" | column /dev/stdin status | paste -sd,)" = ok,oom,ok ]
	[[ "$(printf '%s\n' "${lines[@]}" | column /dev/stdin message | sed -n 2p)" == "needs more than --mem-limit "*" bytes" ]]
}

@test "pn-time --check gives an oversized row status oom, not a failed check" {
	three dense 1000000000000 >"$BATS_TEST_TMPDIR/in"
	run bash -c "pn-time -q -r 1 -w 0 -m 1G --check '$BATS_TEST_TMPDIR/in' 2>'$BATS_TEST_TMPDIR/err' >'$BATS_TEST_TMPDIR/o'"
	[ "$status" -eq 0 ]
	oom_in_the_middle "$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" check_rel_err | sed -n 2p)" = NA ]
	[[ "$(cat "$BATS_TEST_TMPDIR/err")" == "pn-time: check dense: PASS (2 rows, max relative error "* ]]
}

@test "pn-time gives a row too large to size status oom with the bytes it needs" {
	# 4e15 x 4e15 floats: beyond 64-bit sizes
	printf 'layer\tbatch\tin_features\tout_features\tpass\ndense\t4\t4000000000000000\t4000000000000000\ttrain\n' >"$BATS_TEST_TMPDIR/in"
	run pn-time -q -r 1 -w 0 -m 0 "$BATS_TEST_TMPDIR/in"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[1]}" | cut -f17-)" = "$(printf '6.4000000000000145e+31\toom\tneeds 6.4e+31 bytes')" ]
}
