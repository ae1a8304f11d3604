# pipelines/lib.sh - what every pipeline shares; sourced, never run.
#
#   . "$(dirname "$0")/lib.sh"
#
# sets root (the tree), puts its bin/ first on PATH, LC_ALL=C, and prog (the
# pipeline's name, for messages); answers -h and --help with the
# pipeline's header comment; and defines:
#
#   die MESSAGE...         "PROG: MESSAGE" on stderr, exit 1
#   need_whole NAME VALUE  die unless VALUE is a whole number (a setting)
#   need_positive NAME VALUE  die unless VALUE is a whole number from 1
#   rows FILE              the number of data rows of a TSV (lines - 1)
#   col FILE NAME          the position (from 1) of column NAME in the
#                          header of FILE; dies when there is none
#   pick FILE NAME...      the named columns of a TSV, in that order,
#                          without the header (FILE - : standard input)
#   as_network FILE        pn-time's rows as a network for pn-sum, a row
#                          each (r1, r2, ...: the layer contract's
#                          columns, pass as phase, no learning_rate)
#   retitle HEADER FILE    FILE with its header line replaced by HEADER
#                          (tab-separated names), for pn-md
#   devices ROLE           the devices of samples/neusight/devices.tsv
#                          with that role (train, unseen), comma-separated
#   every_k FILE MAX       the k of pn-split --every that keeps at most MAX
#                          data rows of FILE (k = ceil(rows / MAX); MAX 0:
#                          every row, k = 1)
#   case_rows CASE FIRST   pn-sum --per-layer rows (standard input) of a
#                          whole-model case behind the columns case_model
#                          case_mode case_seq case_batch case_variant (CASE:
#                          those five, tab-separated), the header only when
#                          FIRST is 1: pipelines/e2e-nodes' PER_LAYER
#   noded_cases NODES CASES  the header and the rows of CASES (device model
#                          mode seq batch variant first) that have nodes in
#                          NODES (plain TSV of label-nodes.tsv.gz's form)
#   method_features, method_base  pn's unseen-GPU method: pn-fit -F
#                          method_features --relative=method_base
#   interleave FILE...     TSVs of different columns as one: row 1 of
#                          each, then row 2 of each, ... (NA where a file
#                          lacks a column)
#   bars PNG WIDTH HEIGHT  the gnuplot lines a bar chart starts with: a PNG
#                          of that size, TSV data with NaN for no value,
#                          clustered bars, a log y axis
#
# A pipeline runs with set -euo pipefail; these helpers fail with it.

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PATH="$root/bin:$PATH"
export LC_ALL=C
prog=$(basename "$0")
# -h or --help as the pipeline's first argument: its header comment, the
# pipeline's manual, and exit 0 (before a pipeline takes it for OUTDIR)
case ${1:-} in
-h | --help)
	sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
	exit 0 ;;
esac

die() {
	echo "$prog: $*" >&2
	exit 1
}

need_whole() {
	[[ $2 =~ ^[0-9]+$ ]] || die "$1 must be a whole number, not '$2'"
}

need_positive() {
	[[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive whole number, not '$2'"
}

rows() {
	echo $(($(wc -l <"$1") - 1))
}

# interleave FILE...: the rows of TSV files of different columns as one
# TSV: the union of their columns (in the order met), NA where a file
# lacks one; row 1 of every file, then row 2 of every file, and so on
# (pn-time takes rows of every layer type in one file)
interleave() {
	awk -F'\t' -v OFS='\t' '
		FNR == 1 { f++; for (i = 1; i <= NF; i++) { col[f, i] = $i
				if (!($i in at)) { at[$i] = ++nc; name[nc] = $i } }
			   nf[f] = NF; next }
		{ n[f]++; for (i = 1; i <= NF; i++) v[f, n[f], at[col[f, i]]] = $i
		  if (n[f] > most) most = n[f] }
		END {
			for (c = 1; c <= nc; c++) printf "%s%s", name[c], c < nc ? OFS : "\n"
			for (r = 1; r <= most; r++)
				for (g = 1; g <= f; g++) {
					if (r > n[g]) continue
					for (c = 1; c <= nc; c++)
						printf "%s%s", ((g, r, c) in v) ? v[g, r, c] : "NA", c < nc ? OFS : "\n"
				}
		}' "$@"
}

# cat_tsv FILE...: the rows of TSV files (gzipped or not) under the first
# one's header
cat_tsv() {
	local f first=1
	for f; do
		if [ $first = 1 ]; then zcat -f "$f"; else zcat -f "$f" | tail -n +2; fi
		first=0
	done
}

# rows_where FILE COL OP VALUE: the header and the rows whose COL is (OP
# ==) or is not (OP !=) VALUE
rows_where() {
	awk -F'\t' -v c="$(col "$1" "$2")" -v v="$4" -v eq="$3" \
		'NR == 1 || (eq == "==" ? $c == v : $c != v)' "$1"
}

col() {
	local k
	k=$(head -1 "$1" | tr '\t' '\n' | grep -nxF -- "$2" | cut -d: -f1)
	[ -n "$k" ] || die "$1: no column '$2'"
	echo "$k"
}

pick() {
	local f=$1
	shift
	awk -F'\t' -v OFS='\t' -v want="$*" -v prog="$prog" -v file="$f" '
		NR == 1 {
			n = split(want, w, " ")
			for (i = 1; i <= NF; i++) at[$i] = i
			for (j = 1; j <= n; j++) {
				if (!(w[j] in at)) { print prog ": " file ": no column '\''" w[j] "'\''" >"/dev/stderr"; bad = 1; exit 1 }
				c[j] = at[w[j]]
			}
			next
		}
		{ line = $c[1]; for (j = 2; j <= n; j++) line = line OFS $c[j]; print line }
		END { exit bad }' "$f"
}

# as_network FILE: pn-time's rows (FILE) as a network for pn-sum, a row
# each: a name (r1, r2, ...), then the layer contract's columns (those
# before device) less learning_rate, pass as phase
as_network() {
	awk -F'\t' -v OFS='\t' '
		NR == 1 { for (stop = 1; stop <= NF && $stop != "device"; stop++) ;
			  for (i = 1; i < stop; i++) keep[i] = $i != "learning_rate" }
		{ line = NR == 1 ? "name" : "r" NR - 1
		  for (i = 1; i < stop; i++)
			if (keep[i]) line = line OFS (NR == 1 && $i == "pass" ? "phase" : $i)
		  print line }' "$1"
}

retitle() {
	printf '%s\n' "$1"
	tail -n +2 "$2"
}

devices() {
	local f=$root/samples/neusight/devices.tsv
	pick "$f" device role | awk -F'\t' -v r="$1" '$2 == r { print $1 }' | paste -sd,
}

every_k() {
	local n
	n=$(rows "$1")
	if [ "$2" -eq 0 ] || [ "$n" -le "$2" ]; then
		echo 1
	else
		echo $(((n + $2 - 1) / $2))
	fi
}

case_rows() {
	awk -F'\t' -v OFS='\t' -v c="$1" -v first="$2" '
		NR == 1 { if (first) print "case_model", "case_mode", "case_seq", "case_batch", "case_variant", $0; next }
		{ print c, $0 }'
}

noded_cases() {
	pick "$1" device model mode seq batch variant |
		awk -F'\t' 'NR == FNR { k[$0] = 1; next }
			FNR == 1 || (($1 "\t" $2 "\t" $3 "\t" $4 "\t" $5 "\t" $6) in k)' - "$2"
}

bars() {
	cat <<GP
set terminal pngcairo size $2,$3 noenhanced
set output "$1"
set datafile separator "\t"
set datafile missing "NaN"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8
set logscale y
set grid ytics
GP
}

# xgb_params FAMILY: the xgb settings the pipelines' methods were chosen
# with, 300 rounds of depth 6 (pn-fit's own defaults grow 600 rounds of
# depth 8: see pn-fit(1)); nothing for another family
xgb_params() {
	[ "$1" != xgb ] || echo "-p depth=6 -p rounds=300"
}

# base_floor_opt TYPE: pn-fit's option for the base-floor of op type TYPE
# (pn-fit(1)): none, but --no-base-floor for mem, whose rows
# (pipelines/mem-rows) are cut above the launch time on purpose, so that a
# memory pass smaller than all of them (a read of a shape, which launches
# no kernel) is predicted by its own roofline, not as the smallest pass
base_floor_opt() {
	[ "$1" != mem ] || echo --no-base-floor
}

# pn's unseen-GPU method, in one place (pn-fit(1), "Unseen GPUs"): the
# feature set and the --relative column its models fit ln(time / column)
# on, chosen by leaving one training GPU out (pipelines/ablation,
# pipelines/e2e-logo): the roofline at the clock each GPU's power limit
# holds (pn-featurize(1), "Power limit").  The pipelines that fit it
# (fit-models, e2e, e2e-logo, interval-logo) take these; those that
# compare take FEATURES and BASE over them.
method_features=power
method_base=power_roofline_ms
