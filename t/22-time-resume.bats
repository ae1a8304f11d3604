#!/usr/bin/env bats
# pn-time -o FILE keeps the rows of a run that is killed or dies in
# FILE.part, and pn-time --resume FILE measures only the rest.
load test_helper

# the values of column $2 in TSV file $1, one a line
column() { awk -F'\t' -v c="$2" 'NR==1{for(i=1;i<=NF;i++)if($i==c)k=i; next} {print $k}' "$1"; }

# dense rows: $1 rows, then the lines given as more arguments
dense_rows() {
	local n=$1
	shift
	printf 'layer\tbatch\tin_features\tout_features\n'
	for i in $(seq "$n"); do printf 'dense\t%d\t%d\t8\n' $((i % 3 + 1)) $((i + 3)); done
	for l in "$@"; do printf '%s\n' "$l"; done
}

# a run that dies at a bad line after 3 rows: out.tsv.part keeps them
died_after_3() {
	T=$BATS_TEST_TMPDIR
	dense_rows 3 "dense	1	2" >"$T/bad"
	dense_rows 5 >"$T/in"
	run bash -c "pn-time -q -r 1 -w 0 -o '$T/out.tsv' '$T/bad' 2>&1"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-time: $T/bad:5: expected 4 fields, found 3" ]
}

@test "pn-time -o keeps the rows a run measured before it died in FILE.part" {
	died_after_3
	[ ! -e "$T/out.tsv" ]
	[ "$(wc -l <"$T/out.tsv.part")" -eq 4 ]
	[ "$(column "$T/out.tsv.part" in_features | paste -sd,)" = 4,5,6 ]
	[ "$(column "$T/out.tsv.part" status | paste -sd,)" = ok,ok,ok ]
	[ "$(cat "$T/out.tsv.part.settings")" = "pn-time 0.1.0: backend cpu, threads 1, reps 1, warmup 0, seed 1, warm, rep-ms 1, clock cpu, mem-limit auto" ]
}

@test "pn-time --resume measures only the rows not yet in FILE.part" {
	died_after_3
	cp "$T/out.tsv.part" "$T/kept"
	run bash -c "pn-time -q -r 1 -w 0 --resume '$T/out.tsv' '$T/in' 2>&1"
	[ "$status" -eq 0 ]
	[ "$output" = "pn-time: $T/out.tsv.part: resuming after 3 rows" ]
	[ ! -e "$T/out.tsv.part" ]
	[ ! -e "$T/out.tsv.part.settings" ]
	[ "$(column "$T/out.tsv" in_features | paste -sd,)" = 4,5,6,7,8 ]
	head -4 "$T/out.tsv" | cmp - "$T/kept"
}

@test "pn-time --resume drops a last line cut short and measures its row again" {
	died_after_3
	truncate -s -9 "$T/out.tsv.part"
	run bash -c "pn-time -q -r 1 -w 0 --resume '$T/out.tsv' '$T/in' 2>&1"
	[ "$status" -eq 0 ]
	[ "$output" = "pn-time: $T/out.tsv.part: resuming after 2 rows (a last line cut short dropped)" ]
	[ "$(column "$T/out.tsv" in_features | paste -sd,)" = 4,5,6,7,8 ]
	[ "$(column "$T/out.tsv" status | paste -sd,)" = ok,ok,ok,ok,ok ]
}

@test "pn-time --resume refuses an input whose rows are not those of FILE.part" {
	died_after_3
	dense_rows 5 | sed '3s/\t5\t/\t9\t/' >"$T/other"
	run bash -c "pn-time -q -r 1 -w 0 --resume '$T/out.tsv' '$T/other' 2>&1"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-time: $T/out.tsv.part:3: column 'in_features': '5', but '9' in $T/other:3: not the rows of this input" ]
	[ "$(wc -l <"$T/out.tsv.part")" -eq 4 ]
}

@test "pn-time --resume refuses an input with fewer rows than FILE.part" {
	died_after_3
	dense_rows 2 >"$T/short"
	run bash -c "pn-time -q -r 1 -w 0 --resume '$T/out.tsv' '$T/short' 2>&1"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-time: $T/out.tsv.part:4: more rows than the input $T/short" ]
}

@test "pn-time --resume refuses other settings" {
	died_after_3
	run bash -c "pn-time -q -r 2 -w 0 --resume '$T/out.tsv' '$T/in' 2>&1"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-time: $T/out.tsv.part: made with other settings: 'pn-time 0.1.0: backend cpu, threads 1, reps 1, warmup 0, seed 1, warm, rep-ms 1, clock cpu, mem-limit auto', not 'pn-time 0.1.0: backend cpu, threads 1, reps 2, warmup 0, seed 1, warm, rep-ms 1, clock cpu, mem-limit auto'; resume with the same options" ]
}

@test "pn-time --resume refuses a partial output made without --check" {
	died_after_3
	run bash -c "pn-time -q -r 1 -w 0 --check --resume '$T/out.tsv' '$T/in' 2>&1"
	[ "$status" -eq 1 ]
	[[ "$output" == "pn-time: $T/out.tsv.part: made with other settings: "*"mem-limit auto', not "*"mem-limit auto, check'; resume with the same options" ]]
}

@test "pn-time -o refuses to start beside the FILE.part of another run" {
	died_after_3
	run bash -c "pn-time -q -r 1 -w 0 -o '$T/out.tsv' '$T/in' 2>&1"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-time: $T/out.tsv.part: the rows of a run that did not finish: continue it with --resume $T/out.tsv, or remove it" ]
	[ "$(wc -l <"$T/out.tsv.part")" -eq 4 ]
}

@test "pn-time --resume without a partial output says so" {
	T=$BATS_TEST_TMPDIR
	dense_rows 2 >"$T/in"
	run bash -c "pn-time -q -r 1 -w 0 --resume '$T/out.tsv' '$T/in' 2>&1"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-time: $T/out.tsv.part: No such file or directory" ]
	pn-time -q -r 1 -w 0 -o "$T/out.tsv" "$T/in"
	run bash -c "pn-time -q -r 1 -w 0 --resume '$T/out.tsv' '$T/in' 2>&1"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-time: $T/out.tsv: complete: there is nothing to resume (no $T/out.tsv.part)" ]
}

@test "pn-time --resume and -o must name the same file" {
	run bash -c "pn-time --resume a.tsv -o b.tsv 2>&1 </dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-time: -o b.tsv: --resume a.tsv writes to a.tsv itself" ]
}

@test "pn-time -o leaves only FILE after a run that succeeds" {
	T=$BATS_TEST_TMPDIR
	dense_rows 2 >"$T/in"
	pn-time -q -r 1 -w 0 -o "$T/out.tsv" "$T/in"
	[ "$(ls "$T")" = "$(printf 'in\nout.tsv')" ]
	[ "$(wc -l <"$T/out.tsv")" -eq 3 ]
}

@test "pn-time -o leaves nothing after a run that dies before its first row" {
	T=$BATS_TEST_TMPDIR
	dense_rows 0 >"$T/in"
	run pn-time -q -r 1 -w 0 -o "$T/out.tsv" "$T/in"
	[ "$status" -eq 1 ]
	[ "$(ls "$T")" = in ]
}

@test "pn-time keeps the rows of a run killed with SIGKILL and --resume measures each other row once" {
	T=$BATS_TEST_TMPDIR
	# 400 rows of about 20 ms each
	pn-sample --layer dense -n 400 --seed 3 -r batch=1:4 -r in_features=1:32 -r out_features=1:32 >"$T/in"
	pn-time -q -r 10 -w 1 --rep-ms 2 -o "$T/out.tsv" "$T/in" &
	pid=$!
	for i in $(seq 300); do
		[ -f "$T/out.tsv.part" ] && [ "$(wc -l <"$T/out.tsv.part")" -gt 10 ] && break
		sleep 0.1
	done
	kill -9 "$pid"
	wait "$pid" || true
	[ ! -e "$T/out.tsv" ]
	# the complete lines the killed run left
	n=$(wc -l <"$T/out.tsv.part")
	head -n "$n" "$T/out.tsv.part" >"$T/kept"
	[ "$n" -gt 10 ] && [ "$n" -lt 401 ]
	run bash -c "pn-time -q -r 10 -w 1 --rep-ms 2 --resume '$T/out.tsv' '$T/in' 2>&1"
	[ "$status" -eq 0 ]
	[[ "$output" == "pn-time: $T/out.tsv.part: resuming after $((n - 1)) rows"* ]]
	# every input row once, in order; the kept rows as they were (a row
	# measured again would have other times)
	[ "$(wc -l <"$T/out.tsv")" -eq 401 ]
	diff <(cut -f1-10 "$T/in") <(cut -f1-10 "$T/out.tsv")
	head -n "$n" "$T/out.tsv" | cmp - "$T/kept"
	[ "$(column "$T/out.tsv" status | sort -u)" = ok ]
}

@test "pn-time --check --resume counts the kept rows in its check report" {
	T=$BATS_TEST_TMPDIR
	dense_rows 3 "dense	1	2" >"$T/bad"
	dense_rows 5 >"$T/in"
	run bash -c "pn-time -q -r 1 -w 0 --check -o '$T/out.tsv' '$T/bad' 2>/dev/null"
	[ "$status" -eq 1 ]
	run bash -c "pn-time -q -r 1 -w 0 --check --resume '$T/out.tsv' '$T/in' 2>&1"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "pn-time: $T/out.tsv.part: resuming after 3 rows" ]
	[[ "${lines[1]}" == "pn-time: check dense: PASS (5 rows, max relative error "* ]]
	[ "$(column "$T/out.tsv" check_rel_err | awk '$1 >= 0' | wc -l)" -eq 5 ]
}
