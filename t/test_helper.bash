# Shared by every t/*.bats: the fresh bin/ first on PATH, fixtures at hand,
# and the helpers that more than one test file needs (defined here once).
PN_ROOT="$(cd "$(dirname "${BATS_TEST_FILENAME}")/.." && pwd)"
PATH="$PN_ROOT/bin:$PATH"
FIX="$PN_ROOT/t/fixtures"
export PN_ROOT PATH FIX
unset PN_GPUSPECS

# tools: the name of every tool, one a line (from src/pn-*.c).
tools() { for s in "$PN_ROOT"/src/pn-*.c; do basename "$s" .c; done; }

# run_io CMD...: run CMD with its stdout in $T/out and its stderr in $T/err.
run_io() {
	run bash -c 'o=$1 e=$2; shift 2; "$@" >"$o" 2>"$e"' _ "$T/out" "$T/err" "$@"
}

# column NAME FILE, or column FILE NAME: the values of a TSV column, one a
# line, no header (the argument that is a file is the file).
column() {
	local c=$1 f=$2
	[ ! -e "$1" ] || [ -e "$2" ] || { c=$2; f=$1; }
	awk -F'\t' -v c="$c" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
		{ print $k }' "$f"
}

# col FILE NAME ROW: the value of column NAME in data row ROW (from 1).
col() { awk -F'\t' -v c="$2" -v r="$3" 'NR==1{for(i=1;i<=NF;i++)if($i==c)k=i} NR==r+1{print $k}' "$1"; }

# near A B: exit 0 when the numbers A and B agree to NEAR_TOL relative
# (default 1e-9; a test file may set its own).
near() {
	awk -v a="$1" -v b="$2" -v tol="${NEAR_TOL:-1e-9}" \
		'BEGIN{d=a-b; if(d<0)d=-d; m=(b<0?-b:b); exit !(d<=tol*m || d==0)}'
}

# same_as_rel SET BASE [GPUSPECS]: a linear model of the fit fixture's rows
# (T4, V100) featurized anew (with GPUSPECS if given) on feature set SET
# relative to BASE predicts every test row as rel relative to roofline_ms
same_as_rel() {
	cd "$BATS_TEST_TMPDIR"
	local s g=() n
	[ -z "${3:-}" ] || g=(--gpuspecs "$3")
	for s in train test; do
		cut -f1-10,34 "$FIX/fit/$s.tsv" | pn-featurize "${g[@]}" >"$s.tsv"
	done
	pn-fit -f lr -F rel -r -o rel.model train.tsv
	pn-fit -f lr -F "$1" --relative="$2" -o set.model train.tsv
	n=$(($(head -1 test.tsv | awk -F'\t' '{ print NF }') + 1))
	pn-eval -m rel.model --metrics /dev/null test.tsv | cut -f "$n" >rel.pred
	pn-eval -m set.model --metrics /dev/null test.tsv | cut -f "$n" >set.pred
	[ "$(head -1 rel.pred)" = pred_ms ]
	[ "$(wc -l <rel.pred)" -gt 10 ]
	diff rel.pred set.pred
}

# body MODEL: a model file from its "body" line on.
body() { sed -n '/^body$/,$p' "$1"; }

# fit OUT ARGS...: pn-fit -f $FIT_FAMILY on x1..x3 of t/fixtures/fit-mlp, the
# target itself (--no-log-target),
# one model for all rows.
fit() {
	local out=$1
	shift
	pn-fit -f "$FIT_FAMILY" -F x1,x2,x3 --no-by-layer --no-log-target -o "$out" "$@"
}

# fake_gnuplot: a gnuplot first on PATH that keeps its script in
# $BATS_TEST_TMPDIR/script and makes its output file empty
fake_gnuplot() {
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	printf '#!/bin/sh\ntee "%s/script" | sed -n "s/^set output .\\(.*\\).$/\\1/p" | while read -r f; do : >"$f"; done\n' \
		"$BATS_TEST_TMPDIR" >"$BATS_TEST_TMPDIR/bin/gnuplot"
	chmod +x "$BATS_TEST_TMPDIR/bin/gnuplot"
	PATH="$BATS_TEST_TMPDIR/bin:$PATH"
}
