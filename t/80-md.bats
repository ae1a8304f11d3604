#!/usr/bin/env bats
# pn-md: a pn TSV as a markdown table, the pipelines' formatting stage.

load test_helper

setup() {
	T="$BATS_TEST_TMPDIR"
	M="$FIX/md"
	cd "$T"
}

@test "pn-md writes numbers to 4 significant digits, NA for empty cells and '|' escaped" {
	run_io pn-md -n n=%s -r n,ms,ratio "$M/runs.tsv"
	[ "$status" -eq 0 ]
	diff -u "$M/runs.md" "$T/out"
	[ ! -s "$T/err" ]
}

@test "pn-md writes what pn-eval --format md writes for pn-eval's TSV" {
	pn-eval --by device --total "$FIX/eval/runs.tsv" >metrics.tsv
	pn-eval --by device --total --format md "$FIX/eval/runs.tsv" >want.md
	run_io pn-md -r 2- -n n=%s metrics.tsv
	[ "$status" -eq 0 ]
	diff -u want.md "$T/out"
}

@test "pn-md writes what pn-sum --format md writes for pn-sum's TSV" {
	pn-sum --gpuspecs "$FIX/sum/gpus.tsv" --fallback roofline --devices all -b 8 -n 1000 "$FIX/sum/net.tsv" >sum.tsv
	pn-sum --gpuspecs "$FIX/sum/gpus.tsv" --fallback roofline --devices all -b 8 -n 1000 --format md "$FIX/sum/net.tsv" >want.md
	run_io pn-md -n rank,iterations,cost_rank=%s sum.tsv
	[ "$status" -eq 0 ]
	diff -u want.md "$T/out"
}

@test "pn-md leaves every column left-aligned by default" {
	printf 'a\tb\n1\t2\n' >in.tsv
	run pn-md in.tsv
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "|---|---|" ]
}

@test "pn-md --right takes names, positions and ranges" {
	printf 'a\tb\tc\td\te\n1\t2\t3\t4\t5\n' >in.tsv
	run pn-md -r a,3 -r 4- in.tsv
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "|---:|---|---:|---:|---:|" ]
	run pn-md --right=2-3 in.tsv
	[ "${lines[1]}" = "|---|---:|---:|---|---|" ]
}

@test "pn-md --auto right-aligns the columns whose cells are all numbers or NA" {
	printf 'name\tx\tmixed\tnone\nT4\t1.5\t2\tNA\nA100\tNA\tx\t\n' >in.tsv
	run pn-md --auto in.tsv
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "|---|---:|---|---:|" ]
}

@test "pn-md --number formats the numbers of the named columns and leaves text and NA" {
	printf 'a\tb\tc\n1.25\t1234567\tx\nNA\t0.5\t3\n' >in.tsv
	run pn-md -n a=%.1f -n b=%.3e in.tsv
	[ "$status" -eq 0 ]
	[ "${lines[2]}" = "| 1.2 | 1.235e+06 | x |" ]
	[ "${lines[3]}" = "| NA | 5.000e-01 | 3.000 |" ]
}

@test "pn-md --number without columns applies to every column, and the last naming a column wins" {
	printf 'a\tb\n1.25\t2.5\n' >in.tsv
	run pn-md -n %.2g -n b=%s in.tsv
	[ "$status" -eq 0 ]
	[ "${lines[2]}" = "| 1.2 | 2.5 |" ]
}

@test "pn-md --number %s writes cells exactly as they are" {
	printf 'n\tx\n0012\t1e3\n' >in.tsv
	run pn-md -n %s in.tsv
	[ "$status" -eq 0 ]
	[ "${lines[2]}" = "| 0012 | 1e3 |" ]
}

@test "pn-md reads standard input and gzip input" {
	gzip -c "$M/runs.tsv" >runs.tsv.gz
	run_io pn-md -n n=%s -r n,ms,ratio - <runs.tsv.gz
	[ "$status" -eq 0 ]
	diff -u "$M/runs.md" "$T/out"
}

@test "pn-md refuses a header without data rows" {
	printf 'a\tb\n' >in.tsv
	run_io pn-md in.tsv
	[ "$status" -eq 1 ]
	[ ! -s "$T/out" ]
	[ "$(cat "$T/err")" = "pn-md: in.tsv: no data rows" ]
}

@test "pn-md fails on a column the input lacks" {
	run_io pn-md -r nosuch "$M/runs.tsv"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-md: $M/runs.tsv:1: missing column 'nosuch'" ]
}

@test "pn-md fails on a position beyond the last column" {
	run_io pn-md -r 2-9 "$M/runs.tsv"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-md: $M/runs.tsv:1: no column 9 ('2-9'): the header has 5" ]
}

@test "pn-md refuses a --right of no columns and names a column number beyond any" {
	run pn-md -r '' "$M/runs.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-md: --right: no columns in ''" ]
	run pn-md -r , "$M/runs.tsv"
	[ "$status" -eq 2 ]
	run_io pn-md -r 99999999999999999999 "$M/runs.tsv"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-md: $M/runs.tsv:1: no column '99999999999999999999': the header has 5" ]
}

@test "pn-md rejects a --number format that is not %.Nf, %.Ne, %.Ng or %s with exit 2" {
	for f in %d %.18g %5.1f %.1fx %g 'a=' '=%.1f'; do
		run pn-md -n "$f" "$M/runs.tsv"
		[ "$status" -eq 2 ] || { echo "'$f': exit $status"; return 1; }
		[ "${lines[-1]}" = "Try 'pn-md --help' for more information." ]
	done
	run pn-md -n %d "$M/runs.tsv"
	[ "${lines[0]}" = "pn-md: invalid --number '%d': expected %.Nf, %.Ne, %.Ng (N from 0 to 17) or %s" ]
}

@test "pn-md fails on a row with the wrong field count" {
	printf 'a\tb\n1\n' >in.tsv
	run_io pn-md in.tsv
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-md: in.tsv:2: expected 2 fields, found 1" ]
}

@test "pn-md reports a write error on a full device" {
	run bash -c 'pn-md "$1" >/dev/full' _ "$M/runs.tsv"
	[ "$status" -eq 1 ]
	[[ "$output" == "pn-md: write error"* ]]
}
