#!/usr/bin/env bats
# pipelines/table4, pipelines/unseen-gpu and pipelines/ablation on the small inputs of
# t/fixtures/pipelines (see its README): each runs once, in setup_file,
# with its stdout, stderr and exit status kept for the tests below.

load test_helper

LAYERS_ALL="dense bmm conv2d layernorm softmax elementwise"

setup_file() {
	local d=$BATS_FILE_TMPDIR
	# table4: subsampled (ROWS) and with short fits so that it stays quick
	PN_SAMPLES="$FIX/pipelines" ROWS=150 EPOCHS=20 TREES=10 \
		"$PN_ROOT/pipelines/table4" "$d/table4" >"$d/table4.out" 2>"$d/table4.err" &&
		echo 0 >"$d/table4.rc" || echo $? >"$d/table4.rc"
	PN_SAMPLES="$FIX/pipelines" ROWS=150 EPOCHS=20 \
		"$PN_ROOT/pipelines/unseen-gpu" "$d/unseen" >"$d/unseen.out" 2>"$d/unseen.err" &&
		echo 0 >"$d/unseen.rc" || echo $? >"$d/unseen.rc"
	PN_SAMPLES="$FIX/pipelines" ROWS=120 EPOCHS=5 LAYERS="dense conv2d" \
		VARIANTS="roofline prenet-xgb rel-xgb relall-xgb nswall-xgb powerall-xgb rel-mlp" \
		"$PN_ROOT/pipelines/ablation" "$d/ablation" >"$d/ablation.out" 2>"$d/ablation.err" &&
		echo 0 >"$d/ablation.rc" || echo $? >"$d/ablation.rc"
}

setup() {
	D=$BATS_FILE_TMPDIR
	T=$BATS_TEST_TMPDIR
	cd "$T"
}

# columns FILE NAME...: the named columns of a TSV, without its header
columns() {
	local f=$1
	shift
	awk -F'\t' -v want="$*" '
		NR == 1 { n = split(want, w, " "); for (j = 1; j <= n; j++) for (i = 1; i <= NF; i++) if ($i == w[j]) c[j] = i
			  for (j = 1; j <= n; j++) if (!c[j]) { print "no column " w[j] >"/dev/stderr"; exit 1 }; next }
		{ line = $c[1]; for (j = 2; j <= n; j++) line = line "\t" $c[j]; print line }' "$f"
}

# finite FILE NAME...: every value of the named columns is a finite number
finite() {
	local f=$1
	shift
	columns "$f" "$@" | awk -F'\t' '
		{ for (i = 1; i <= NF; i++) if ($i !~ /^-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/) { print "not finite: " $0; bad = 1 } }
		END { exit bad || NR == 0 }'
}

# is_png FILE: FILE starts with the PNG signature
is_png() {
	[ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]
}

@test "pipelines/table4 succeeds on the small samples and writes its three files" {
	[ "$(cat "$D/table4.rc")" -eq 0 ]
	[ -s "$D/table4/table4.tsv" ]
	[ -s "$D/table4/table4.md" ]
	if command -v gnuplot >/dev/null; then is_png "$D/table4/table4.png"; fi
}

@test "pipelines/table4 prints table4.md" {
	diff -u "$D/table4/table4.md" "$D/table4.out"
}

@test "pipelines/table4 has one row per layer type, family and feature set" {
	for l in $LAYERS_ALL; do for f in lr rf gbdt xgb mlp; do for s in baseline co cocm cocmct; do
		printf '%s\t%s\t%s\tlog\n' "$l" "$f" "$s"
	done; done; done | sort >expected
	columns "$D/table4/table4.tsv" layer family features target | sort >actual
	diff -u expected actual
	[ "$(wc -l <actual)" -eq 120 ]
}

@test "pipelines/table4 reports finite errors and gains" {
	finite "$D/table4/table4.tsv" rows n rmse mae mape mdape r2 rmse_gain mape_gain
}

@test "pipelines/table4 gives the baseline rows a gain of 0" {
	columns "$D/table4/table4.tsv" features rmse_gain mape_gain |
		awk -F'\t' '$1 == "baseline" { n++; if ($2 != 0 || $3 != 0) bad = 1 } END { exit bad || n != 30 }'
}

@test "pipelines/table4 fits on at most ROWS rows per layer type" {
	columns "$D/table4/table4.tsv" rows | awk '{ if ($1 < 10 || $1 > 150) bad = 1 } END { exit bad }'
	grep -qx '\* rows: at most 150 per layer type (every k-th row, k = ceil(rows / 150))' "$D/table4/table4.md"
}

@test "pipelines/table4 states its reduced settings in the markdown" {
	grep -qx 'Reduced settings, not the paper.s (which fits every row, 300 MLP epochs):' "$D/table4/table4.md"
	grep -q 'rf: 10 trees' "$D/table4/table4.md"
	grep -q 'up to 20 epochs' "$D/table4/table4.md"
	grep -q '^\* target: log (pn-fit --log-target' "$D/table4/table4.md"
	[ "$(grep -c '^| dense | lr | ' "$D/table4/table4.md")" -eq 2 ]
}

@test "pipelines/table4 refuses an empty input directory" {
	mkdir empty
	PN_SAMPLES=$T/empty run_io "$PN_ROOT/pipelines/table4" o
	[ "$status" -eq 1 ]
	echo "table4: no $T/empty/collect/dense.tsv.gz: PN_SAMPLES must hold collect/<layer>.tsv.gz or <layer>.tsv.gz for every layer of '$LAYERS_ALL'" |
		diff -u - err
	[ ! -s out ]
	[ ! -e o ]
}

@test "pipelines/table4 refuses a header-only layer file" {
	mkdir -p hdr/collect
	zcat "$FIX/pipelines/collect/dense.tsv.gz" | head -1 | gzip >hdr/collect/dense.tsv.gz
	PN_SAMPLES=$T/hdr LAYERS=dense run_io "$PN_ROOT/pipelines/table4" o
	[ "$status" -eq 1 ]
	echo "pn-featurize: $T/hdr/collect/dense.tsv.gz: no data rows" | diff -u - err
	[ ! -e o/table4.tsv ]
}

@test "pipelines/table4 refuses a ROWS that is not a number" {
	ROWS=many run_io "$PN_ROOT/pipelines/table4" o
	[ "$status" -eq 1 ]
	echo "table4: ROWS must be a whole number, not 'many'" | diff -u - err
}

@test "pipelines/unseen-gpu succeeds on the small samples and writes its three files" {
	[ "$(cat "$D/unseen.rc")" -eq 0 ]
	[ -s "$D/unseen/unseen.tsv" ]
	[ -s "$D/unseen/unseen.md" ]
	if command -v gnuplot >/dev/null; then is_png "$D/unseen/unseen.png"; fi
}

@test "pipelines/unseen-gpu prints unseen.md" {
	diff -u "$D/unseen/unseen.md" "$D/unseen.out"
}

@test "pipelines/unseen-gpu has one row per op type, unseen GPU and predictor" {
	for l in $LAYERS_ALL; do
		devs="L4 A100-PCIE-80GB"
		[ "$l" != conv2d ] || devs=A100-PCIE-80GB
		for d in $devs; do
			printf '%s\t%s\troofline\t-\n' "$l" "$d"
			for f in mlp xgb; do for s in baseline cocmct rel; do
				printf '%s\t%s\t%s\t%s\n' "$l" "$d" "$f" "$s"
			done; done
		done
	done | sort >expected
	columns "$D/unseen/unseen.tsv" layer device family features | sort >actual
	diff -u expected actual
}

@test "pipelines/unseen-gpu tests on L4 and A100-PCIE-80GB rows only, all of them" {
	# the fixtures hold 30 rows of each, and 10 V100 rows to be left out
	columns "$D/unseen/unseen.tsv" layer device test n | sort -u >actual
	for l in bmm dense elementwise layernorm softmax; do
		printf '%s\tA100-PCIE-80GB\ttest\t30\n%s\tL4\ttest\t30\n' "$l" "$l"
	done >expected
	printf 'conv2d\tA100-PCIE-80GB\theld-out\t50\n' >>expected
	sort expected | diff -u - actual
}

@test "pipelines/unseen-gpu reports finite errors" {
	finite "$D/unseen/unseen.tsv" rows n beyond rmse mae mape mdape
}

@test "pipelines/unseen-gpu says that conv2d is reported on a held-out training GPU" {
	grep -q '^\* no test file for conv2d: reported on A100-PCIE-80GB instead, held out of its collect file' "$D/unseen/unseen.md"
	grep -q '^| conv2d | A100-PCIE-80GB (held out) | 50 | ' "$D/unseen/unseen.md"
}

@test "pipelines/unseen-gpu refuses an empty input directory" {
	mkdir empty
	PN_SAMPLES=$T/empty run_io "$PN_ROOT/pipelines/unseen-gpu" o
	[ "$status" -eq 1 ]
	echo "unseen-gpu: no $T/empty/collect/dense.tsv.gz: PN_SAMPLES must hold collect/<layer>.tsv.gz for every layer of '$LAYERS_ALL'" |
		diff -u - err
	[ ! -s out ]
	[ ! -e o ]
}

@test "pipelines/unseen-gpu refuses a test file without rows of the unseen GPUs" {
	mkdir -p old/collect old/test
	cp "$FIX/pipelines/collect/dense.tsv.gz" old/collect/
	zcat "$FIX/pipelines/test/dense.tsv.gz" |
		awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "device") c = i; print; next }
			$c == "V100-PCIE-32GB"' | gzip >old/test/dense.tsv.gz
	PN_SAMPLES=$T/old LAYERS=dense run_io "$PN_ROOT/pipelines/unseen-gpu" o
	[ "$status" -eq 1 ]
	echo "unseen-gpu: dense: no rows of an unseen GPU (L4,A100-PCIE-80GB in $T/old/test/dense.tsv.gz)" | diff -u - err
	[ ! -e o/unseen.tsv ]
}

@test "make table4 and make unseen-gpu run the pipelines" {
	run make -n -C "$PN_ROOT" table4 unseen-gpu
	[ "$status" -eq 0 ]
	[[ $output == *pipelines/table4* ]]
	[[ $output == *pipelines/unseen-gpu* ]]
}

@test "pipelines/ablation succeeds on the small samples and writes its three files" {
	[ "$(cat "$D/ablation.rc")" -eq 0 ] || cat "$D/ablation.err"
	# nothing on stderr but its own progress lines and gnuplot's word on
	# a panel of the tiny samples (a helper its jobs could not see once
	# fitted every xgb variant with pn-fit's defaults)
	run grep -v -e '^ablation: ' -e 'warning: Skipping data file with no valid points' "$D/ablation.err"
	[ "$status" -eq 1 ] || { echo "$output"; return 1; }
	[ -s "$D/ablation/ablation.tsv" ]
	diff -u "$D/ablation/ablation.md" "$D/ablation.out"
	if command -v gnuplot >/dev/null; then is_png "$D/ablation/ablation.png"; fi
}

@test "pipelines/ablation judges every variant on each training GPU left out, the unseen GPUs and the training GPUs' test rows" {
	for v in roofline prenet-xgb rel-xgb relall-xgb nswall-xgb powerall-xgb rel-mlp; do
		for g in P4 P100-PCIE-16GB T4 V100-PCIE-32GB A100-PCIE-40GB; do
			printf 'dense\t%s\tlogo\t%s\n' "$v" "$g"
		done
		printf 'dense\t%s\tunseen\t%s\n' "$v" L4 "$v" A100-PCIE-80GB
		# the fixture's test rows of training GPUs: 10 of V100; relall,
		# nswall and powerall fit them, so they have no shape row
		printf 'dense\t%s\tlogo-shape\tV100-PCIE-32GB\n' "$v"
		[[ $v == *all-xgb ]] || printf 'dense\t%s\tshape\tV100-PCIE-32GB\n' "$v"
		for g in P4 P100-PCIE-16GB T4 V100-PCIE-32GB; do
			printf 'conv2d\t%s\tlogo\t%s\n' "$v" "$g"
		done
		printf 'conv2d\t%s\tunseen\tA100-PCIE-80GB\n' "$v"
	done | sort >expected
	columns "$D/ablation/ablation.tsv" layer variant eval device | sort >actual
	diff -u expected actual
	finite "$D/ablation/ablation.tsv" n mape mdape
}

@test "pipelines/ablation chooses per op type the variant with the lowest LOGO mean" {
	want=$(awk -F'\t' 'NR > 1 && $1 == "dense" && $3 == "logo" { s[$2] += $6; n[$2]++ }
		END { for (v in s) { m = s[v] / n[v]; if (b == "" || m < bm) { b = v; bm = m } }; print b }' "$D/ablation/ablation.tsv")
	grep -q "^| dense | $want | " <(sed -n '/^## Chosen/,/^## Mean/p' "$D/ablation/ablation.md")
}

@test "pipelines/ablation refuses an unknown variant" {
	VARIANTS="roofline magic" run_io "$PN_ROOT/pipelines/ablation" o
	[ "$status" -eq 1 ]
	grep -q "^ablation: unknown variant 'magic'" err
	[ ! -e o/ablation.tsv ]
}

@test "pipelines/table4 takes a flat sample directory and its cpu-spec.tsv" {
	PN_SAMPLES="$FIX/pipelines-cpu" LAYERS="dense layernorm" ROWS=100 EPOCHS=5 TREES=5 \
		run_io "$PN_ROOT/pipelines/table4" o
	[ "$status" -eq 0 ] || cat err
	[ "$(columns o/table4.tsv layer | sort -u | paste -sd' ')" = "dense layernorm" ]
	grep -q "^\* data: .*pipelines-cpu/<layer>.tsv.gz, devices: AMD-EPYC-1t (specs: .*pipelines-cpu/cpu-spec.tsv)$" o/table4.md
	finite o/table4.tsv rmse mape
}

@test "pipelines/table4 names a CPU device missing from GPUSPECS" {
	PN_SAMPLES="$FIX/pipelines-cpu" GPUSPECS="$PN_ROOT/gpuspecs/gpus.tsv" LAYERS=dense ROWS=100 \
		run_io "$PN_ROOT/pipelines/table4" o
	[ "$status" -eq 1 ]
	grep -q "AMD-EPYC-1t" err
	[ ! -e o/table4.tsv ]
}

# lib FUNCTION ARG...: run a function of pipelines/lib.sh as pipeline "p"
lib() {
	run_io bash -c '. "$PN_ROOT/pipelines/lib.sh"; "$@"' p "$@"
}

@test "pipelines/lib.sh col gives a column's position by name" {
	printf 'a\tbb\tc\n1\t2\t3\n' >in.tsv
	lib col in.tsv c
	[ "$status" -eq 0 ]
	[ "$(cat out)" = 3 ]
}

@test "pipelines/lib.sh col dies naming a column the file lacks" {
	printf 'a\tbb\n1\t2\n' >in.tsv
	lib col in.tsv b
	[ "$status" -eq 1 ]
	[ "$(cat err)" = "p: in.tsv: no column 'b'" ]
}

@test "pipelines/lib.sh as_network makes pn-time's rows a network pn-sum reads" {
	printf 'layer\tbatch\tin_features\tout_features\tpass\toptimizer\tlearning_rate\tdevice\ttime_ms\n' >in.tsv
	printf 'dense\t%b\ttrain\tadam\t0.01\tH200\t0.1\n' '2\t3\t4' '5\t6\t7' >>in.tsv
	lib as_network in.tsv
	[ "$status" -eq 0 ]
	[ "$(cat out)" = "$(printf 'name\tlayer\tbatch\tin_features\tout_features\tphase\toptimizer\nr1\tdense\t2\t3\t4\ttrain\tadam\nr2\tdense\t5\t6\t7\ttrain\tadam')" ]
	pn-sum --fallback roofline -d H100-SXM5-80GB out >/dev/null
}

@test "pipelines/lib.sh pick writes the named columns in the order asked, without the header" {
	printf 'a\tb\tc\n1\t2\t3\n4\t5\t6\n' >in.tsv
	lib pick in.tsv c a
	[ "$status" -eq 0 ]
	[ "$(cat out)" = "$(printf '3\t1\n6\t4')" ]
	lib pick - b <in.tsv
	[ "$(cat out)" = "$(printf '2\n5')" ]
}

@test "pipelines/lib.sh pick fails naming a column the file lacks" {
	printf 'a\tb\n1\t2\n' >in.tsv
	lib pick in.tsv a x
	[ "$status" -eq 1 ]
	[ "$(cat err)" = "p: in.tsv: no column 'x'" ]
	[ ! -s out ]
}

@test "pipelines/lib.sh devices lists NeuSight's training and unseen GPUs from samples/neusight/devices.tsv" {
	lib devices train
	[ "$(cat out)" = P4,P100-PCIE-16GB,T4,V100-PCIE-32GB,A100-PCIE-40GB ]
	lib devices unseen
	[ "$(cat out)" = L4,A100-PCIE-80GB ]
}

@test "samples/neusight/devices.tsv names only devices of gpuspecs/gpus.tsv, each with a role" {
	while IFS=$'\t' read -r d role; do
		pn-split --hold-out "$d" --gpuspecs "$PN_ROOT/gpuspecs/gpus.tsv" -f 100/0/0 \
			--train rest.tsv --test held.tsv "$PN_ROOT/samples/neusight/devices.tsv" 2>err ||
			{ cat err; return 1; }
		[ "$(columns held.tsv device)" = "$d" ] || { echo "$d: $(columns held.tsv device)"; return 1; }
		[[ $role == train || $role == unseen ]] || { echo "$d: role '$role'"; return 1; }
	done < <(columns "$PN_ROOT/samples/neusight/devices.tsv" device role)
}

@test "pipelines/lib.sh every_k keeps at most MAX rows, every row with MAX 0" {
	seq 0 10 >in.tsv
	for want in "10 1" "5 2" "4 3" "3 4" "0 1" "20 1"; do
		lib every_k in.tsv "${want% *}"
		[ "$(cat out)" = "${want#* }" ] || { echo "MAX ${want% *}: $(cat out)"; return 1; }
	done
}

@test "pipelines/lib.sh need_whole and need_positive refuse other settings" {
	lib need_whole ROWS 1x
	[ "$status" -eq 1 ]
	[ "$(cat err)" = "p: ROWS must be a whole number, not '1x'" ]
	lib need_positive EPOCHS 0
	[ "$status" -eq 1 ]
	[ "$(cat err)" = "p: EPOCHS must be a positive whole number, not '0'" ]
	lib need_whole ROWS 0
	[ "$status" -eq 0 ]
	lib need_positive EPOCHS 7
	[ "$status" -eq 0 ]
}

@test "a pipeline answers --help with its header comment and exit 0, making nothing" {
	cd "$BATS_TEST_TMPDIR"
	run "$BATS_TEST_DIRNAME/../pipelines/gpu-gap" --help
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "pipelines/gpu-gap - the whole-model gap on GPUs: how much a whole model's" ]
	[ -z "$(ls -A)" ]
}
