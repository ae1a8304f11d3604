#!/usr/bin/env bats
# pn-split: train/validation/test sets by a hash of the configuration.

load test_helper

setup() {
	T="$BATS_TEST_TMPDIR"
	S="$FIX/split"
	cd "$T"
}

# rows FILE: the data rows of FILE (no header).
rows() {
	tail -n +2 "$1"
}

# gen N: a layer TSV with N distinct configurations, one row each.
gen() {
	awk -v n="$1" 'BEGIN {
		OFS = "\t"
		print "layer", "batch", "in_features", "out_features", "device", "time_ms"
		for (i = 1; i <= n; i++)
			print "dense", i, 64, 128, "T4", i / 1000
	}'
}

@test "pn-split keeps every input row exactly once" {
	run pn-split -o p "$S/runs.tsv"
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
	cat p-train.tsv p-val.tsv p-test.tsv | grep -v '^layer' | LC_ALL=C sort >got
	rows "$S/runs.tsv" | LC_ALL=C sort >want
	diff -u want got
	[ "$(wc -l <got)" -eq 54 ]
}

@test "pn-split starts every part with the input header" {
	run pn-split -o p "$S/runs.tsv"
	[ "$status" -eq 0 ]
	head -1 "$S/runs.tsv" >want
	for part in train val test; do
		head -1 "p-$part.tsv" | diff -u want -
	done
}

@test "pn-split gives byte-identical parts for the same seed" {
	mkdir a b
	run pn-split --seed 7 -o a/p "$S/runs.tsv"
	[ "$status" -eq 0 ]
	run pn-split --seed 7 -o b/p "$S/runs.tsv"
	[ "$status" -eq 0 ]
	for part in train val test; do
		cmp "a/p-$part.tsv" "b/p-$part.tsv"
	done
}

@test "pn-split assigns rows differently with another seed" {
	mkdir a b
	run pn-split --seed 1 -o a/p "$S/runs.tsv"
	[ "$status" -eq 0 ]
	run pn-split --seed 2 -o b/p "$S/runs.tsv"
	[ "$status" -eq 0 ]
	! cmp -s a/p-train.tsv b/p-train.tsv
}

@test "pn-split uses seed 1 by default" {
	mkdir a b
	run pn-split -o a/p "$S/runs.tsv"
	[ "$status" -eq 0 ]
	run pn-split -s 1 -o b/p "$S/runs.tsv"
	[ "$status" -eq 0 ]
	cmp a/p-train.tsv b/p-train.tsv
	cmp a/p-val.tsv b/p-val.tsv
}

@test "pn-split gives about 80/10/10 percent of 10000 configurations" {
	gen 10000 >in.tsv
	run pn-split -o p in.tsv
	[ "$status" -eq 0 ]
	train=$(rows p-train.tsv | wc -l)
	val=$(rows p-val.tsv | wc -l)
	test=$(rows p-test.tsv | wc -l)
	echo "train $train val $val test $test"
	[ "$((train + val + test))" -eq 10000 ]
	[ "$train" -ge 7800 ] && [ "$train" -le 8200 ]
	[ "$val" -ge 800 ] && [ "$val" -le 1200 ]
	[ "$test" -ge 800 ] && [ "$test" -le 1200 ]
}

@test "pn-split accepts decimal fractions" {
	gen 10000 >in.tsv
	run pn-split --fractions 50.5/24.75/24.75 -o p in.tsv
	[ "$status" -eq 0 ]
	train=$(rows p-train.tsv | wc -l)
	val=$(rows p-val.tsv | wc -l)
	test=$(rows p-test.tsv | wc -l)
	echo "train $train val $val test $test"
	[ "$train" -ge 4850 ] && [ "$train" -le 5250 ]
	[ "$val" -ge 2275 ] && [ "$val" -le 2675 ]
	[ "$test" -ge 2275 ] && [ "$test" -le 2675 ]
}

@test "pn-split --fractions 90/10/0 leaves the test part with only the header" {
	gen 1000 >in.tsv
	run pn-split --fractions 90/10/0 -o p in.tsv
	[ "$status" -eq 0 ]
	head -1 in.tsv | diff -u - p-test.tsv
	[ "$(rows p-train.tsv | wc -l)" -gt 850 ]
	[ "$(rows p-val.tsv | wc -l)" -gt 50 ]
}

@test "pn-split keeps one configuration measured on several devices in one part" {
	run pn-split -o p "$S/runs.tsv"
	[ "$status" -eq 0 ]
	# columns 1-5 are the configuration; column 6 the device
	for part in train val test; do
		rows "p-$part.tsv" | cut -f1-5 | sort -u
	done | sort | uniq -d >shared
	[ ! -s shared ]
	# every configuration is there on its three devices
	for part in train val test; do
		[ $(($(rows "p-$part.tsv" | wc -l) % 3)) -eq 0 ]
	done
}

@test "pn-split --key keeps rows with equal key values together" {
	run pn-split --key batch -o p "$S/runs.tsv"
	[ "$status" -eq 0 ]
	for part in train val test; do
		rows "p-$part.tsv" | cut -f2 | sort -u
	done | sort | uniq -d >shared
	[ ! -s shared ]
}

@test "pn-split --key fails on a column the input lacks" {
	run pn-split --key batch,kernel -o p "$S/runs.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-split: $S/runs.tsv:1: missing column 'kernel'" ]
	[ "$(ls)" = "" ]
}

@test "pn-split keys on the whole row but the device without configuration columns" {
	awk 'BEGIN { OFS = "\t"; print "model", "device", "time_ms"
		for (i = 1; i <= 300; i++) { print "m" i, "T4", i; print "m" i, "A100", i } }' >in.tsv
	run pn-split -o p in.tsv
	[ "$status" -eq 0 ]
	for part in train val test; do
		[ "$(rows "p-$part.tsv" | wc -l)" -gt 0 ]
		rows "p-$part.tsv" | cut -f1,3 | sort -u
	done | sort | uniq -d >shared
	[ ! -s shared ]
}

@test "pn-split --hold-out sends exactly the named device's rows to test" {
	run pn-split --hold-out A100 --gpuspecs "$S/gpus.tsv" -o p "$S/runs.tsv"
	[ "$status" -eq 0 ]
	rows "$S/runs.tsv" | awk -F"\t" '$6 == "A100"' | LC_ALL=C sort >want
	rows p-test.tsv | LC_ALL=C sort >got
	diff -u want got
	! cut -f6 p-train.tsv p-val.tsv | grep -qx A100
}

@test "pn-split --hold-out matches devices by their aliases" {
	run pn-split --hold-out 'nvidia t4' --gpuspecs "$S/gpus.tsv" -o p "$S/runs.tsv"
	[ "$status" -eq 0 ]
	printf '%s\n' T4 'Tesla T4' >want
	rows p-test.tsv | cut -f6 | sort -u | diff -u want -
	[ "$(rows p-test.tsv | wc -l)" -eq 18 ]
	! cut -f6 p-train.tsv p-val.tsv | grep -q T4
}

@test "pn-split --hold-out takes a list of devices" {
	run pn-split --hold-out T4,V100-SXM2-16GB --gpuspecs "$S/gpus.tsv" -o p "$S/runs.tsv"
	[ "$status" -eq 0 ]
	printf '%s\n' T4 'Tesla T4' V100 >want
	rows p-test.tsv | cut -f6 | sort -u | diff -u want -
	[ "$(rows p-test.tsv | wc -l)" -eq 36 ]
	printf '%s\n' A100 >want
	rows p-train.tsv | cut -f6 | sort -u | diff -u want -
}

@test "pn-split --hold-out splits the other rows by --fractions when given" {
	run pn-split --hold-out A100 --fractions 0/0/100 --gpuspecs "$S/gpus.tsv" -o p "$S/runs.tsv"
	[ "$status" -eq 0 ]
	[ "$(rows p-test.tsv | wc -l)" -eq 54 ]
	[ "$(rows p-train.tsv | wc -l)" -eq 0 ]
}

@test "pn-split --hold-out fails on an unknown device and names the closest" {
	run pn-split --hold-out T5 --gpuspecs "$S/gpus.tsv" -o p "$S/runs.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-split: unknown device 'T5' in $S/gpus.tsv (closest: T4, A100, V100); pass --gpuspecs FILE with a table that has it (pn-time --cpu-spec -o FILE writes one for a CPU)" ]
	[ "$(ls)" = "" ]
}

@test "pn-split --hold-out fails on input without a device column" {
	cut -f1-5,7 "$S/runs.tsv" >in.tsv
	run pn-split --hold-out T4 --gpuspecs "$S/gpus.tsv" -o p in.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-split: in.tsv:1: missing column 'device'" ]
}

@test "pn-split -o names the parts PREFIX-train.tsv, PREFIX-val.tsv and PREFIX-test.tsv" {
	cp "$S/runs.tsv" .
	mkdir out
	run pn-split -o out/p runs.tsv
	[ "$status" -eq 0 ]
	[ "$(ls out | tr '\n' ' ')" = "p-test.tsv p-train.tsv p-val.tsv " ]
}

@test "pn-split --test overrides the name that -o gives the test part" {
	cp "$S/runs.tsv" .
	run pn-split -o p --test held.tsv runs.tsv
	[ "$status" -eq 0 ]
	[ "$(ls | tr '\n' ' ')" = "held.tsv p-train.tsv p-val.tsv runs.tsv " ]
}

@test "pn-split writes a part named - to standard output" {
	run pn-split -o p "$S/runs.tsv"
	[ "$status" -eq 0 ]
	run bash -c 'pn-split --train - --val v.tsv --test t.tsv "$1" >stdout.tsv' _ "$S/runs.tsv"
	[ "$status" -eq 0 ]
	cmp p-train.tsv stdout.tsv
	cmp p-val.tsv v.tsv
}

@test "pn-split --train, --val and --test need no -o" {
	run pn-split --train a.tsv --val b.tsv --test c.tsv "$S/runs.tsv"
	[ "$status" -eq 0 ]
	[ "$(cat a.tsv b.tsv c.tsv | wc -l)" -eq 57 ]
}

@test "pn-split fails without any output named" {
	run pn-split "$S/runs.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-split: no output named: use -o PREFIX or --train, --val and --test" ]
	[ "${lines[1]}" = "Try 'pn-split --help' for more information." ]
}

@test "pn-split fails when a part that gets rows has no output" {
	run pn-split --train a.tsv --val b.tsv "$S/runs.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-split: no output for the test rows: use --test FILE or -o PREFIX" ]
	[ "$(ls)" = "" ]
}

@test "pn-split needs no output for a part with a share of 0" {
	run pn-split --fractions 90/10/0 --train a.tsv --val b.tsv "$S/runs.tsv"
	[ "$status" -eq 0 ]
	[ "$(cat a.tsv b.tsv | wc -l)" -eq 56 ]
}

@test "pn-split fails when two parts go to one file" {
	run pn-split -o p --val p-train.tsv "$S/runs.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-split: the train and val rows both go to 'p-train.tsv'" ]
}

@test "pn-split fails when two parts go to one file by two names: ./x and x, a link and its target" {
	run pn-split --train x.tsv --val ./x.tsv -f 50/50/0 "$S/runs.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-split: the train and val rows both go to './x.tsv'" ]
	ln -s y.tsv link.tsv
	run pn-split --train y.tsv --val link.tsv -f 50/50/0 "$S/runs.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-split: the train and val rows both go to 'link.tsv'" ]
	[ ! -e x.tsv ] && [ ! -e y.tsv ]
	# two files of one name in two directories are two files
	mkdir d
	pn-split --train x.tsv --val d/x.tsv -f 50/50/0 "$S/runs.tsv"
	[ -s x.tsv ] && [ -s d/x.tsv ]
}

@test "pn-split rejects --fractions that do not sum to 100 with exit 2" {
	run pn-split --fractions 50/30/10 -o p "$S/runs.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-split: invalid --fractions '50/30/10': the parts sum to 90, not 100" ]
	[ "${lines[1]}" = "Try 'pn-split --help' for more information." ]
	[ "$(ls)" = "" ]
}

@test "pn-split rejects --fractions that are not three percentages with exit 2" {
	for bad in 80/20 80/10/10/0 a/b/c 110/-5/-5 80//20 ''; do
		run pn-split --fractions "$bad" -o p "$S/runs.tsv"
		[ "$status" -eq 2 ]
		[ "${lines[0]}" = "pn-split: invalid --fractions '$bad': expected A/B/C, three percentages" ]
	done
}

@test "pn-split rejects a --seed that is not a whole number with exit 2" {
	run pn-split --seed -3 -o p "$S/runs.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-split: --seed: '-3' is too small (at least 0)" ]
}

@test "pn-split fails on empty input" {
	run pn-split -o p </dev/null
	[ "$status" -eq 1 ]
	[ "$output" = "pn-split: -: empty input (no header)" ]
	[ "$(ls)" = "" ]
}

@test "pn-split fails on a header without rows and leaves no part" {
	head -1 "$S/runs.tsv" >in.tsv
	run pn-split -o p in.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-split: in.tsv: no data rows" ]
	[ "$(ls)" = "in.tsv" ]
}

@test "pn-split fails on a row with the wrong field count" {
	printf 'layer\tbatch\tdevice\ndense\t1\tT4\ndense\t2\n' >in.tsv
	run pn-split -o p in.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-split: in.tsv:3: expected 3 fields, found 2" ]
	[ "$(ls)" = "in.tsv" ]
}

@test "pn-split leaves no part when the last row of a long input is bad" {
	gen 20000 >in.tsv
	printf 'dense\t1\n' >>in.tsv
	run pn-split -o p in.tsv
	[ "$status" -eq 1 ]
	[ "$output" = "pn-split: in.tsv:20002: expected 6 fields, found 2" ]
	[ "$(ls)" = "in.tsv" ]
}

@test "pn-split reads gzip input like plain input" {
	mkdir a b
	gzip -c "$S/runs.tsv" >runs.tsv.gz
	run pn-split -o a/p runs.tsv.gz
	[ "$status" -eq 0 ]
	run pn-split -o b/p "$S/runs.tsv"
	[ "$status" -eq 0 ]
	for part in train val test; do
		cmp "a/p-$part.tsv" "b/p-$part.tsv"
	done
}

@test "pn-split fails on truncated gzip input and leaves no part" {
	gen 20000 | gzip -c >full.gz
	head -c 20000 full.gz >in.tsv.gz
	run pn-split -o p in.tsv.gz
	[ "$status" -eq 1 ]
	[ "$output" = "pn-split: in.tsv.gz: truncated gzip input" ]
	[ "$(ls | tr '\n' ' ')" = "full.gz in.tsv.gz " ]
}

@test "pn-split fails when the output directory does not exist" {
	run pn-split -o /nonexistent/p "$S/runs.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-split: /nonexistent/p-train.tsv: No such file or directory" ]
	[ "$(ls)" = "" ]
}

@test "pn-split fails when the output directory is not writable" {
	[ "$(id -u)" -ne 0 ] || skip "running as root: permissions are not enforced"
	mkdir ro
	chmod 555 ro
	run pn-split -o ro/p "$S/runs.tsv"
	chmod 755 ro
	[ "$status" -eq 1 ]
	[ "$output" = "pn-split: ro/p-train.tsv: Permission denied" ]
	[ "$(ls ro)" = "" ]
}

@test "pn-split removes the parts it opened when a later one cannot be created" {
	touch file
	run pn-split --train a.tsv --val b.tsv --test file/c.tsv "$S/runs.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-split: file/c.tsv: Not a directory" ]
	[ "$(ls)" = "file" ]
}

@test "pn-split reports a write error on a full device" {
	run bash -c 'pn-split --train - --val v.tsv --test t.tsv "$1" 2>&1 >/dev/full' _ "$S/runs.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-split: write error: No space left on device" ]
	[ "$(ls)" = "" ]
}

@test "pn-split --verbose reports the rows of each part on stderr" {
	run bash -c 'pn-split --verbose -o p "$1" 2>err' _ "$S/runs.tsv"
	[ "$status" -eq 0 ]
	want="pn-split: train $(rows p-train.tsv | wc -l), val $(rows p-val.tsv | wc -l), test $(rows p-test.tsv | wc -l)"
	[ "$(cat err)" = "$want" ]
}

@test "pn-split --verbose counts the held-out rows" {
	run bash -c 'pn-split -v --hold-out A100 --gpuspecs "$2" -o p "$1" 2>err' _ "$S/runs.tsv" "$S/gpus.tsv"
	[ "$status" -eq 0 ]
	want="pn-split: train $(rows p-train.tsv | wc -l), val $(rows p-val.tsv | wc -l), test 18 (18 held out)"
	[ "$(cat err)" = "$want" ]
}

@test "pn-split --help prints the usage on stdout" {
	run bash -c 'pn-split --help 2>err'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "Usage: pn-split [OPTION]... [FILE]" ]
	[[ "$output" == *--hold-out* ]]
	[ ! -s err ]
}

@test "pn-split --version prints the version" {
	run pn-split --version
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^pn-split\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
}

@test "pn-split rejects an unknown option with exit 2" {
	run pn-split --bogus -o p "$S/runs.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-split: unrecognized option '--bogus'" ]
	[ "${lines[1]}" = "Try 'pn-split --help' for more information." ]
}


@test "pn-split --every 3 keeps data rows 1, 4, 7, ... and splits only those" {
	gen 10 >in.tsv
	run pn-split --every 3 -f 100/0/0 --train thin.tsv in.tsv
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
	awk -F'\t' 'NR > 1 { print $2 }' thin.tsv | paste -sd, >got
	[ "$(cat got)" = 1,4,7,10 ]
	[ "$(head -1 thin.tsv)" = "$(head -1 in.tsv)" ]
}

@test "pn-split --every 1 keeps every row" {
	run pn-split --every 1 -f 100/0/0 --train all.tsv "$S/runs.tsv"
	[ "$status" -eq 0 ]
	cmp all.tsv "$S/runs.tsv"
}

@test "pn-split --every thins the held-out rows too" {
	gen 6 | awk -F'\t' -v OFS='\t' 'NR == 2 || NR == 3 { $5 = "V100" } 1' >in.tsv
	run pn-split --every 2 --hold-out V100 --gpuspecs "$S/gpus.tsv" -f 100/0/0 --train tr.tsv --test te.tsv in.tsv
	[ "$status" -eq 0 ]
	[ "$(awk -F'\t' 'FNR > 1 { print $2 $5 }' tr.tsv te.tsv | paste -sd,)" = 3T4,5T4,1V100 ]
}

@test "pn-split --verbose counts the rows that --every dropped" {
	gen 10 >in.tsv
	run pn-split --every 4 -f 100/0/0 --train thin.tsv --verbose in.tsv
	[ "$status" -eq 0 ]
	[ "$output" = "pn-split: train 3, val 0, test 0; 7 dropped (--every 4)" ]
}

@test "pn-split rejects an --every that is not a whole number from 1 with exit 2" {
	for k in 0:"'0' is too small (at least 1)" -1:"'-1' is too small (at least 1)" \
		 1.5:"'1.5' is not a whole number" x:"'x' is not a number" \
		 :"'' is not a number"; do
		run pn-split --every "${k%%:*}" -o p "$S/runs.tsv"
		[ "$status" -eq 2 ] || { echo "--every '${k%%:*}': exit $status"; return 1; }
		[ "${lines[0]}" = "pn-split: --every: ${k#*:}" ]
	done
}
