#!/usr/bin/env bats
# pn-time --cpu-spec against a stored spec row of the same name (drift.h):
# the machine measured now differs from the one the row describes.  The row
# is measured once per file and then read from pn-time's cache, so every
# test compares the same numbers: none depends on a measurement's noise.

load test_helper

setup_file() {
	export XDG_CACHE_HOME="$BATS_FILE_TMPDIR/cache"
	pn-time --cpu-spec -o "$BATS_FILE_TMPDIR/now.tsv"
}

setup() {
	T=$BATS_TEST_TMPDIR
	cd "$T"
	export XDG_CACHE_HOME="$BATS_FILE_TMPDIR/cache"
	NOW="$BATS_FILE_TMPDIR/now.tsv"
}

# val FILE COL: the value of COL in FILE's row as pn writes numbers (108.0
# is 108)
val() { column "$2" "$1" | awk '{ print $1 + 0 }'; }

# stored COL EXPR: the measured row with column COL set to EXPR of its
# value v (awk), as a stored spec table
stored() {
	awk -F'\t' -v OFS='\t' -v c="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; print; next }
		{ v = $k; $k = '"$2"'; print }' "$NOW" >stored.tsv
}

@test "pn-time --cpu-spec says nothing when the stored row is the one measured" {
	run_io pn-time --cpu-spec -g "$NOW"
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	cmp "$NOW" "$T/out"
}

@test "pn-time --cpu-spec warns when the stored row's sgemm rate is 10x the one measured" {
	stored fp32_gflops 'v * 10'
	name=$(column name "$NOW")
	v=$(val "$NOW" fp32_gflops)
	w=$(val stored.tsv fp32_gflops)
	run_io pn-time --cpu-spec -g stored.tsv
	[ "$status" -eq 0 ]
	cmp "$NOW" "$T/out"
	[ "$(cat "$T/err")" = "pn-time: warning: stored.tsv: this machine differs from the row '$name' beyond the tolerance (pn-time(1), DRIFT): fp32_gflops $v now, $w stored (-90%); re-measure with pn-time --cpu-spec --remeasure, store the row (-o FILE) and re-time what was timed on the old machine" ]
}

@test "pn-time --cpu-spec warns when the stored row's BLAS sgemm rate is 4x the one measured" {
	stored blas_fp32_gflops 'v * 4'
	run_io pn-time --cpu-spec -g stored.tsv
	[ "$status" -eq 0 ]
	[[ "$(cat "$T/err")" == *"(pn-time(1), DRIFT): blas_fp32_gflops $(val "$NOW" blas_fp32_gflops) now, $(val stored.tsv blas_fp32_gflops) stored (-75%); re-measure"* ]]
}

@test "pn-time --cpu-spec takes a bandwidth within 15% of the stored one as the same machine" {
	stored mem_bw_gbs 'v * 1.1'
	run_io pn-time --cpu-spec -g stored.tsv
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	stored mem_bw_gbs 'v * 1.25'
	run_io pn-time --cpu-spec -g stored.tsv
	[[ "$(cat "$T/err")" == *": mem_bw_gbs $(val "$NOW" mem_bw_gbs) now, $(val stored.tsv mem_bw_gbs) stored (-20%); re-measure"* ]]
}

@test "pn-time --cpu-spec takes a last-level cache within 2x of the stored one either way as the same machine" {
	for f in 'v * 1.9' 'v / 1.9'; do
		stored l2_mb "$f"
		run_io pn-time --cpu-spec -g stored.tsv
		[ "$status" -eq 0 ]
		[ ! -s "$T/err" ]
	done
	stored l2_mb 'v * 3'
	run_io pn-time --cpu-spec -g stored.tsv
	[ "$status" -eq 0 ]
	[[ "$(cat "$T/err")" == *": l2_mb $(val "$NOW" l2_mb) now, $(val stored.tsv l2_mb) stored (-67%); re-measure"* ]]
	stored l2_mb 'v / 3'
	run_io pn-time --cpu-spec -g stored.tsv
	[[ "$(cat "$T/err")" == *": l2_mb $(val "$NOW" l2_mb) now, $(val stored.tsv l2_mb) stored (+200%); re-measure"* ]]
}

@test "pn-time --cpu-spec takes another core count as another machine" {
	stored cores 'v + 1'
	run_io pn-time --cpu-spec -g stored.tsv
	[ "$status" -eq 0 ]
	[[ "$(cat "$T/err")" == *": cores $(val "$NOW" cores) now, $(val stored.tsv cores) stored ("*"%); re-measure"* ]]
}

@test "pn-time --cpu-spec --strict refuses a machine that differs from its stored row and writes nothing" {
	stored fp32_gflops 'v * 10'
	run_io pn-time --cpu-spec --strict -g stored.tsv -o row.tsv
	[ "$status" -eq 1 ]
	[[ "$(cat "$T/err")" == "pn-time: stored.tsv: this machine differs from the row '$(column name "$NOW")' beyond the tolerance (pn-time(1), DRIFT): fp32_gflops "* ]]
	[ ! -e row.tsv ]
}

@test "pn-time --cpu-spec compares with \$PN_GPUSPECS when no -g is given" {
	stored fp32_gflops 'v * 10'
	PN_GPUSPECS=stored.tsv run_io pn-time --cpu-spec
	[ "$status" -eq 0 ]
	[[ "$(cat "$T/err")" == "pn-time: warning: stored.tsv: this machine differs from the row "* ]]
}

@test "pn-time --cpu-spec without a stored table compares nothing" {
	run_io pn-time --cpu-spec
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	cmp "$NOW" "$T/out"
}

@test "pn-time --cpu-spec says that a stored table without this CPU's row is not compared" {
	run_io pn-time --cpu-spec -g "$PN_ROOT/t/fixtures/sum/gpus.tsv"
	[ "$status" -eq 0 ]
	[ "$(cat "$T/err")" = "pn-time: warning: $PN_ROOT/t/fixtures/sum/gpus.tsv has no row '$(column name "$NOW")': the spec row is not compared" ]
	cmp "$NOW" "$T/out"
}
