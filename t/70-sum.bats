#!/usr/bin/env bats
# pn-sum: summing layer predictions into iteration and epoch time.
load test_helper

F="$FIX/sum"
G="--gpuspecs $FIX/sum/gpus.tsv"
# net.tsv on GPU UNIT (1024 GB/s, 1024 GFLOP/s), per sample:
#   copy  mem fwd, 2^28 elements: 4 * 2^28 B / (1024 * 2^30 B/s) = 0.9765625 ms
#   grad  elementwise bwd, traffic_bytes 1.024e9: / 1e9 / 1024   = 1 ms
#   fc    dense acc x3, 1000 x 512 x 1000 (compute bound): 2*1000*512*1000
#         FLOP / 1024 GFLOP/s = 1 ms, M = batch grows with the batch
# HALF has half of UNIT's throughput and bandwidth, NOPRICE twice.

# run_io's files ($T/out, $T/err): the test's own directory, not /
setup() { T=$BATS_TEST_TMPDIR; }

setup_file() {
	# a linear model for bmm: time_ms = flops / 1e9, fitted exactly
	pn-featurize $G "$F/bmm-train.tsv" |
		pn-fit -f lr --no-log-target -F flops -o "$BATS_FILE_TMPDIR/bmm.model"
}


@test "pn-sum adds every row times its repeat into its phase and the iteration" {
	run pn-sum --fallback roofline $G -d UNIT "$F/net.tsv"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(printf 'rank\tdevice\tsource\tfwd_ms\tbwd_ms\tacc_ms\topt_ms\ttrain_ms\titeration_ms\titerations\tepoch_s\tprice_usd_h\tcost_usd\tcost_rank\tpeak_gb\tmem_gb\tfits')" ]
	[ "${lines[1]}" = "$(printf '1\tUNIT\troofline\t0.9765625\t1\t3\t0\t0\t4.9765625\t1\t0.0049765625\t3.6\t4.9765625e-06\t1\t2.3115234375\t16\tyes')" ]
	[ "${#lines[@]}" -eq 2 ]
}

@test "pn-sum multiplies every row's batch dimension by --batch" {
	pn-sum --fallback roofline $G -d UNIT -b 4 "$F/net.tsv" >"$BATS_TEST_TMPDIR/o"
	[ "$(col "$BATS_TEST_TMPDIR/o" fwd_ms 1)" = 3.90625 ]
	[ "$(col "$BATS_TEST_TMPDIR/o" bwd_ms 1)" = 4 ]
	[ "$(col "$BATS_TEST_TMPDIR/o" acc_ms 1)" = 12 ]
	[ "$(col "$BATS_TEST_TMPDIR/o" iteration_ms 1)" = 19.90625 ]
}

@test "pn-sum counts the last partial batch of an epoch at its own size" {
	# 5 samples at batch 2: two iterations of 9.953125 ms and one of 1
	# sample, 4.9765625 ms
	pn-sum --fallback roofline $G -d UNIT -b 2 -n 5 "$F/net.tsv" >"$BATS_TEST_TMPDIR/o"
	[ "$(col "$BATS_TEST_TMPDIR/o" iteration_ms 1)" = 9.953125 ]
	[ "$(col "$BATS_TEST_TMPDIR/o" iterations 1)" = 3 ]
	[ "$(col "$BATS_TEST_TMPDIR/o" epoch_s 1)" = 0.0248828125 ]
}

@test "pn-sum runs an epoch that is a whole number of batches without a last batch" {
	pn-sum --fallback roofline $G -d UNIT -b 2 -n 6 "$F/net.tsv" >"$BATS_TEST_TMPDIR/o"
	[ "$(col "$BATS_TEST_TMPDIR/o" iterations 1)" = 3 ]
	[ "$(col "$BATS_TEST_TMPDIR/o" epoch_s 1)" = 0.029859375 ]
}

@test "pn-sum prices an epoch by the GPU's hourly price" {
	pn-sum --fallback roofline $G -d HALF -b 2 -n 5 "$F/net.tsv" >"$BATS_TEST_TMPDIR/o"
	# 0.049765625 s at 0.9 USD/h
	near "$(col "$BATS_TEST_TMPDIR/o" cost_usd 1)" 1.244140625e-05
}

@test "pn-sum --devices all ranks every GPU by epoch time and by cost" {
	run pn-sum --fallback roofline $G --devices all -b 2 -n 5 "$F/net.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | cut -f1,2,11,12,14 | tail -n +2 | tr '\t\n' ' ;')" = "1 NOPRICE 0.01244140625 NA NA;2 UNIT 0.0248828125 3.6 2;3 HALF 0.049765625 0.9 1;" ]
}

@test "pn-sum predicts on the GPUs --device lists, by alias too" {
	run pn-sum --fallback roofline $G -d 'half,Unit GPU' "$F/net.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | cut -f2 | tail -n +2 | tr '\n' ' ')" = "UNIT HALF " ]
}

@test "pn-sum --per-layer prints every row for every GPU, batch-scaled" {
	run pn-sum --fallback roofline $G -d UNIT,HALF -b 2 --per-layer "$F/net.tsv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$F/net-per-layer.expected"
}

@test "pn-sum predicts a layer type by its model" {
	run pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" $G -d UNIT -b 2 --per-layer "$F/bmm.tsv"
	[ "$status" -eq 0 ]
	# batch 2 x 1000 x 500 x 1000 bmm: 2e9 FLOP, so 2 ms by the model
	near "$(col <(printf '%s\n' "$output") time_ms 1)" 2
	[ "$(col <(printf '%s\n' "$output") source 1)" = model ]
}

@test "pn-sum flags the rows the roofline predicts beside a model" {
	run pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" --fallback roofline $G -d UNIT -b 2 --per-layer "$F/mixed.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | cut -f1,10 | tail -n +2 | tr '\t\n' ' ;')" = "mm model;copy roofline;" ]
}

@test "pn-sum reports a mixed source when models and the roofline share a network" {
	pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" --fallback roofline $G -d UNIT -b 2 "$F/mixed.tsv" >"$BATS_TEST_TMPDIR/o"
	[ "$(col "$BATS_TEST_TMPDIR/o" source 1)" = mixed ]
	near "$(col "$BATS_TEST_TMPDIR/o" fwd_ms 1)" 3.953125
}

@test "pn-sum names every layer type without a model" {
	run bash -c "pn-sum -m '$BATS_FILE_TMPDIR/bmm.model' $G -d UNIT '$F/net.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-sum: $BATS_FILE_TMPDIR/bmm.model: no model for layer types 'mem', 'elementwise', 'dense' of $F/net.tsv (--fallback roofline predicts them by the roofline)" ]
}

@test "pn-sum names one layer type without a model" {
	run bash -c "pn-sum -m '$BATS_FILE_TMPDIR/bmm.model' $G -d UNIT '$F/mixed.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-sum: $BATS_FILE_TMPDIR/bmm.model: no model for layer type 'mem' of $F/mixed.tsv (--fallback roofline predicts it by the roofline)" ]
}

@test "pn-sum refuses a time below 0 from a model fitted without a log target, naming the row, the GPU and the batch, and writes nothing" {
	# a linear model falling with the flops: time_ms = 10 - flops / 1e9
	awk -F'\t' -v OFS='\t' 'NR == 1 { print; next } { $NF = 10 - 2 * $2 * $3 * $4 * $5 / 1e9; print }' "$F/bmm-train.tsv" |
		pn-featurize $G | pn-fit -f lr --no-log-target -F flops -o "$T/down.model"
	printf 'name\tlayer\tphase\tbatch\tm\tn\tk\nok\tbmm\tfwd\t1\t64\t64\t64\nbig\tbmm\tfwd\t1\t4096\t4096\t4096\n' >"$T/n.tsv"
	run_io pn-sum -m "$T/down.model" $G -d UNIT -o "$T/sum.tsv" "$T/n.tsv"
	[ "$status" -eq 1 ]
	[[ "$(cat "$T/err")" == "pn-sum: $T/n.tsv:3: predicted -"*" ms on UNIT at batch 1: no time (below 0 or beyond a double; a model fitted without a log target, pn-fit --no-log-target, can go below 0)" ]]
	[ ! -e "$T/sum.tsv" ]
}

@test "pn-sum refuses a part of a training step predicted below 0 ms, naming the part" {
	awk -F'\t' -v OFS='\t' 'NR == 1 { print; next } { $NF = 10 - 2 * $2 * $3 * $4 * $5 / 1e9; print }' "$F/bmm-train.tsv" |
		pn-featurize $G | pn-fit -f lr --no-log-target -F flops -o "$T/down.model"
	printf 'name\tlayer\tphase\tbatch\tm\tn\tk\nbig\tbmm\ttrain\t1\t4096\t4096\t4096\n' >"$T/n.tsv"
	run_io pn-sum -m "$T/down.model" --fallback roofline $G -d UNIT -o "$T/sum.tsv" "$T/n.tsv"
	[ "$status" -eq 1 ]
	[[ "$(cat "$T/err")" == "pn-sum: $T/n.tsv:2: "*" of the training step predicted -"*" ms on UNIT at batch 1: no time"* ]]
	[ ! -e "$T/sum.tsv" ]
}

@test "pn-sum refuses a model whose features name a dimension its rows' type does not have, as pn-eval does" {
	# a bmm model on m and flops, relabelled as dense's: a dense row has no m
	pn-featurize $G "$F/bmm-train.tsv" | pn-fit -f lr --no-log-target -F m,flops -o "$T/b.model"
	sed 's/^layer bmm$/layer dense/; s/^info layers bmm$/info layers dense/' "$T/b.model" >"$T/d.model"
	printf 'name\tlayer\tphase\tbatch\tin_features\tout_features\nfc\tdense\ttrain\t4\t64\t64\n' >"$T/n.tsv"
	run_io pn-sum -m "$T/d.model" --fallback roofline $G -d UNIT "$T/n.tsv"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-sum: $T/n.tsv:2: column 'm': value is NA (forward of the training step)" ]
}

# ---- a precision no model was fitted on ---------------------------------

# in_precision P: mixed.tsv (one bmm row, one mem row) in precision P
in_precision() {
	awk -F'\t' -v OFS='\t' -v p="$1" '{ print $0, NR == 1 ? "precision" : p }' "$F/mixed.tsv"
}

@test "pn-sum says once that fp16 rows predicted by the roofline were never checked at that precision" {
	in_precision fp16 >"$BATS_TEST_TMPDIR/n.tsv"
	run_io pn-sum --fallback roofline $G -d UNIT,HALF "$BATS_TEST_TMPDIR/n.tsv"
	[ "$status" -eq 0 ]
	[ "$(cat "$T/err")" = "pn-sum: warning: $BATS_TEST_TMPDIR/n.tsv: no model was fitted on precision fp16: 2 rows predicted by the roofline alone (checked against fp32 measurements only), 0 by models, extrapolated in precision" ]
	[ "$(wc -l <"$T/out")" -eq 3 ]
}

@test "pn-sum says nothing about fp32 rows" {
	in_precision fp32 >"$BATS_TEST_TMPDIR/n.tsv"
	run_io pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" --fallback roofline $G -d UNIT "$BATS_TEST_TMPDIR/n.tsv"
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
}

@test "pn-sum counts rows that a model without recorded precisions extrapolates to bf16" {
	in_precision bf16 >"$BATS_TEST_TMPDIR/n.tsv"
	run_io pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" --fallback roofline $G -d UNIT "$BATS_TEST_TMPDIR/n.tsv"
	[ "$status" -eq 0 ]
	[ "$(cat "$T/err")" = "pn-sum: warning: $BATS_TEST_TMPDIR/n.tsv: no model was fitted on precision bf16: 1 row predicted by the roofline alone (checked against fp32 measurements only), 1 by models, extrapolated in precision
pn-sum: warning: $BATS_TEST_TMPDIR/n.tsv: 1 of 2 rows predicted outside their model's domain on UNIT, extrapolated (the first, line 2, bmm: precision=bf16 via its fp32 twin); --per-layer names them, --strict refuses them" ]
}

@test "pn-sum takes a model's 'info precisions' line as the precisions it was fitted on" {
	sed 's/^body$/info precisions fp16,fp32\nbody/' "$BATS_FILE_TMPDIR/bmm.model" >"$BATS_TEST_TMPDIR/m"
	grep -qx 'info precisions fp16,fp32' "$BATS_TEST_TMPDIR/m"
	awk -F'\t' -v OFS='\t' '{ print $0, NR == 1 ? "precision" : "fp16" }' "$F/bmm.tsv" >"$BATS_TEST_TMPDIR/n.tsv"
	run_io pn-sum -m "$BATS_TEST_TMPDIR/m" $G -d UNIT "$BATS_TEST_TMPDIR/n.tsv"
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	sed 's/^body$/info precisions fp32\nbody/' "$BATS_FILE_TMPDIR/bmm.model" >"$BATS_TEST_TMPDIR/m"
	run_io pn-sum -m "$BATS_TEST_TMPDIR/m" $G -d UNIT "$BATS_TEST_TMPDIR/n.tsv"
	[ "$status" -eq 0 ]
	[ "$(cat "$T/err")" = "pn-sum: warning: $BATS_TEST_TMPDIR/n.tsv: no model was fitted on precision fp16: 0 rows predicted by the roofline alone (checked against fp32 measurements only), 1 by models, extrapolated in precision
pn-sum: warning: $BATS_TEST_TMPDIR/n.tsv: 1 of 1 rows predicted outside their model's domain on UNIT, extrapolated (the first, line 2, bmm: precision=fp16 via its fp32 twin); --per-layer names them, --strict refuses them" ]
}

@test "pn-sum runs a traced network at its traced batch" {
	pn-graph -l 3 "$FIX/graph/tiny.csv" >"$BATS_TEST_TMPDIR/net.tsv"
	pn-sum --fallback roofline $G -d UNIT "$BATS_TEST_TMPDIR/net.tsv" >"$BATS_TEST_TMPDIR/a"
	pn-sum --fallback roofline $G -d UNIT -b 2 -n 6 "$BATS_TEST_TMPDIR/net.tsv" >"$BATS_TEST_TMPDIR/b"
	[ "$(col "$BATS_TEST_TMPDIR/a" iteration_ms 1)" = "$(col "$BATS_TEST_TMPDIR/b" iteration_ms 1)" ]
	[ "$(col "$BATS_TEST_TMPDIR/b" iterations 1)" = 3 ]
}

@test "pn-sum refuses another batch for a traced network" {
	pn-graph -l 3 "$FIX/graph/tiny.csv" >"$BATS_TEST_TMPDIR/net.tsv"
	run bash -c "pn-sum --fallback roofline $G -d UNIT -b 4 '$BATS_TEST_TMPDIR/net.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-sum: $BATS_TEST_TMPDIR/net.tsv: the network is traced at batch 2: it cannot run at --batch 4" ]
}

@test "pn-sum refuses a partial last batch for a traced network" {
	pn-graph -l 3 "$FIX/graph/tiny.csv" >"$BATS_TEST_TMPDIR/net.tsv"
	run bash -c "pn-sum --fallback roofline $G -d UNIT -n 5 '$BATS_TEST_TMPDIR/net.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-sum: $BATS_TEST_TMPDIR/net.tsv: the network is traced at batch 2: it cannot run the last batch of 1 samples (give a --dataset-size that is a multiple of 2)" ]
}

@test "pn-sum rejects an unknown GPU and suggests the closest" {
	run bash -c "pn-sum --fallback roofline $G -d UNITT '$F/net.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-sum: unknown device 'UNITT' in $F/gpus.tsv (closest: UNIT, HALF, NOPRICE); pass --gpuspecs FILE with a table that has it (pn-time --cpu-spec -o FILE writes one for a CPU)" ]
}

@test "pn-sum rejects an empty network" {
	head -1 "$F/net.tsv" >"$BATS_TEST_TMPDIR/empty.tsv"
	run bash -c "pn-sum --fallback roofline $G -d UNIT '$BATS_TEST_TMPDIR/empty.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-sum: $BATS_TEST_TMPDIR/empty.tsv: no layer rows" ]
}

@test "pn-sum rejects an unknown phase" {
	sed 's/\tbwd\t/\tback\t/' "$F/net.tsv" >"$BATS_TEST_TMPDIR/n.tsv"
	run bash -c "pn-sum --fallback roofline $G -d UNIT '$BATS_TEST_TMPDIR/n.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-sum: $BATS_TEST_TMPDIR/n.tsv:3: column 'phase': unknown phase 'back' (one of: fwd, bwd, acc, train)" ]
}

@test "pn-sum rejects a repeat below 1" {
	sed 's/\tacc\t3\t/\tacc\t0\t/' "$F/net.tsv" >"$BATS_TEST_TMPDIR/n.tsv"
	run bash -c "pn-sum --fallback roofline $G -d UNIT '$BATS_TEST_TMPDIR/n.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-sum: $BATS_TEST_TMPDIR/n.tsv:4: column 'repeat': repeat must be at least 1, not 0" ]
}

@test "pn-sum rejects a network row of an unknown layer type" {
	sed 's/\tmem\tmem\t/\tconv3d\tmem\t/' "$F/net.tsv" >"$BATS_TEST_TMPDIR/n.tsv"
	run bash -c "pn-sum --fallback roofline $G -d UNIT '$BATS_TEST_TMPDIR/n.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[[ "$output" == "pn-sum: $BATS_TEST_TMPDIR/n.tsv:2: column 'layer': unknown layer type 'conv3d' (one of: "* ]]
}

@test "pn-sum rejects a pass column in a network" {
	awk -F'\t' -v OFS='\t' '{print $0, (NR == 1 ? "pass" : "fwd")}' "$F/net.tsv" >"$BATS_TEST_TMPDIR/n.tsv"
	run bash -c "pn-sum --fallback roofline $G -d UNIT '$BATS_TEST_TMPDIR/n.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-sum: $BATS_TEST_TMPDIR/n.tsv:1: column 'pass' has no place in a network: its rows give phase" ]
}

@test "pn-sum needs a predictor" {
	run bash -c "pn-sum $G -d UNIT '$F/net.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sum: nothing to predict with: give --models FILE, --fallback roofline or both" ]
}

@test "pn-sum needs a GPU" {
	run bash -c "pn-sum --fallback roofline $G '$F/net.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sum: no GPU: give --device NAME[,NAME]... or --devices all" ]
}

@test "pn-sum accepts only all for --devices" {
	run bash -c "pn-sum --fallback roofline $G --devices UNIT '$F/net.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sum: invalid --devices 'UNIT': expected all (--device takes a list)" ]
}

@test "pn-sum rejects a batch that is not a whole number" {
	run bash -c "pn-sum --fallback roofline $G -d UNIT -b 0 '$F/net.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sum: --batch: '0' is too small (at least 1)" ]
}

# issue 14 item 8: options follow the rule of TSV fields ("1e12" is whole)
@test "pn-sum takes a dataset size written with an exponent" {
	run pn-sum --fallback roofline $G -d UNIT -b 2 -n 1e12 "$F/net.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | column /dev/stdin iterations)" = 500000000000 ]
}

@test "pn-sum says a batch beyond 2^53 is too large and names the limit" {
	run bash -c "pn-sum --fallback roofline $G -d UNIT -b 1e16 '$F/net.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sum: --batch: '1e16' is too large (at most 9007199254740991)" ]
}

@test "pn-sum accepts only the roofline as fallback" {
	run bash -c "pn-sum --fallback habitat $G -d UNIT '$F/net.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sum: invalid --fallback 'habitat': expected roofline" ]
}

@test "pn-sum reads the network from standard input" {
	run bash -c "pn-sum --fallback roofline $G -d UNIT <'$F/net.tsv'"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | cut -f9 | tail -1)" = 4.9765625 ]
}

@test "pn-sum --format md writes a markdown table" {
	run pn-sum --fallback roofline $G -d UNIT,HALF -b 2 -n 5 --format md "$F/net.tsv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$F/net-summary.md"
}

@test "pn-sum --plot draws a PNG chart" {
	command -v gnuplot >/dev/null || skip "no gnuplot"
	run pn-sum --fallback roofline $G --devices all --plot "$BATS_TEST_TMPDIR/c.png" "$F/net.tsv"
	[ "$status" -eq 0 ]
	[ "$(head -c 4 "$BATS_TEST_TMPDIR/c.png" | tail -c 3)" = PNG ]
	[ "$(ls "$BATS_TEST_TMPDIR")" = c.png ]
}

@test "pn-sum --plot gives the epoch axis in hours when an epoch lasts hours" {
	fake_gnuplot
	run pn-sum --fallback roofline $G -d UNIT -n 1e12 --plot "$BATS_TEST_TMPDIR/c.png" "$F/net.tsv"
	[ "$status" -eq 0 ]
	grep -qx "set ylabel 'epoch (h)'" "$BATS_TEST_TMPDIR/script"
	run pn-sum --fallback roofline $G -d UNIT -n 1 --plot "$BATS_TEST_TMPDIR/c.png" "$F/net.tsv"
	grep -qx "set ylabel 'epoch (s)'" "$BATS_TEST_TMPDIR/script"
}

@test "pn-sum --plot draws into a device file in place and leaves it a device" {
	command -v gnuplot >/dev/null || skip "no gnuplot"
	[ "$(id -u)" -eq 0 ] || skip "mknod needs root"
	mknod "$BATS_TEST_TMPDIR/null" c 1 3
	run pn-sum --fallback roofline $G --devices all --plot "$BATS_TEST_TMPDIR/null" -o "$BATS_TEST_TMPDIR/null" "$F/net.tsv"
	[ "$status" -eq 0 ]
	[ -c "$BATS_TEST_TMPDIR/null" ]
	[ "$(ls "$BATS_TEST_TMPDIR")" = null ]
}

@test "pn-sum --plot on a full device reports the write error" {
	command -v gnuplot >/dev/null || skip "no gnuplot"
	[ "$(id -u)" -eq 0 ] || skip "mknod needs root"
	mknod "$BATS_TEST_TMPDIR/full" c 1 7
	run bash -c "pn-sum --fallback roofline $G --devices all --plot '$BATS_TEST_TMPDIR/full' '$F/net.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-sum: write error: $BATS_TEST_TMPDIR/full: No space left on device" ]
	[ -c "$BATS_TEST_TMPDIR/full" ]
	[ "$(ls "$BATS_TEST_TMPDIR")" = full ]
}

@test "pn-sum --plot through a symbolic link draws into its target and keeps the link" {
	command -v gnuplot >/dev/null || skip "no gnuplot"
	ln -s c.png "$BATS_TEST_TMPDIR/link"
	run pn-sum --fallback roofline $G --devices all --plot "$BATS_TEST_TMPDIR/link" "$F/net.tsv"
	[ "$status" -eq 0 ]
	[ -L "$BATS_TEST_TMPDIR/link" ]
	[ "$(head -c 4 "$BATS_TEST_TMPDIR/c.png" | tail -c 3)" = PNG ]
}

@test "pn-sum --plot makes a PNG of mode 0666 less the umask, like -o" {
	command -v gnuplot >/dev/null || skip "no gnuplot"
	(umask 022 && pn-sum --fallback roofline $G --devices all --plot "$BATS_TEST_TMPDIR/c.png" -o "$BATS_TEST_TMPDIR/o.tsv" "$F/net.tsv")
	[ "$(stat -c %a "$BATS_TEST_TMPDIR/c.png")" = 644 ]
	[ "$(stat -c %a "$BATS_TEST_TMPDIR/o.tsv")" = 644 ]
}

@test "pn-sum --plot - writes the PNG to standard output" {
	command -v gnuplot >/dev/null || skip "no gnuplot"
	pn-sum --fallback roofline $G --devices all --plot - -o "$BATS_TEST_TMPDIR/o.tsv" "$F/net.tsv" >"$BATS_TEST_TMPDIR/c.png"
	[ "$(head -c 4 "$BATS_TEST_TMPDIR/c.png" | tail -c 3)" = PNG ]
	[ "$(ls "$BATS_TEST_TMPDIR" | tr '\n' ' ')" = "c.png o.tsv " ]
}

@test "pn-sum rejects every impossible value in the spec table" {
	run "$FIX/specs/reject" "$F/gpus.tsv" "$BATS_TEST_TMPDIR" pn-sum --fallback roofline -d HALF "$F/net.tsv"
	[ "$status" -eq 0 ]
}

@test "pn-sum leaves no output behind when it fails" {
	run pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" $G -d UNIT -o "$BATS_TEST_TMPDIR/o.tsv" --plot "$BATS_TEST_TMPDIR/c.png" "$F/net.tsv"
	[ "$status" -eq 1 ]
	[ -z "$(ls "$BATS_TEST_TMPDIR")" ]
}

@test "pn-sum reports a write error" {
	run bash -c "pn-sum --fallback roofline $G -d UNIT '$F/net.tsv' >/dev/full"
	[ "$status" -eq 1 ]
	[[ "$output" == "pn-sum: write error"* ]]
}

@test "pn-sum predicts every sample network on every GPU" {
	for n in "$PN_ROOT"/samples/networks/*.tsv; do
		pn-sum --fallback roofline --devices all -b 8 -n 100 "$n" >"$BATS_TEST_TMPDIR/o" ||
			{ echo "$n failed"; return 1; }
		[ "$(tail -n +2 "$BATS_TEST_TMPDIR/o" | wc -l)" -eq "$(($(wc -l <"$PN_ROOT/gpuspecs/gpus.tsv") - 1))" ]
	done
}

@test "the sample networks are what pipelines/gen-networks writes" {
	"$PN_ROOT/pipelines/gen-networks" "$BATS_TEST_TMPDIR/nets"
	for n in "$PN_ROOT"/samples/networks/*.tsv; do
		cmp "$n" "$BATS_TEST_TMPDIR/nets/$(basename "$n")"
	done
	[ "$(ls "$BATS_TEST_TMPDIR/nets" | wc -l)" -eq 7 ]
}

# logo_model: the bmm model with three leave-one-device-out records, biases
# 0.1, -0.1, 0.1 and sds 0.2: spread of a sum sqrt(0.01) = 0.1, of one row
# sqrt(0.01 + 0.04); at 90% with 3 degrees of freedom t = 2.3533634348
logo_model() {
	awk '$1 == "body" { print "logo A 10 0.1 0.2"; print "logo B 10 -0.1 0.2"; print "logo C 10 0.1 0.2" } { print }' \
		"$BATS_FILE_TMPDIR/bmm.model" >"$BATS_TEST_TMPDIR/logo.model"
}
K_SUM=$(awk 'BEGIN { printf "%.15g", exp(0.1 * 2.3533634348) }')
K_ONE=$(awk 'BEGIN { printf "%.15g", exp(sqrt(0.05) * 2.3533634348) }')
near6() { awk -v a="$1" -v b="$2" 'BEGIN{d=a-b; if(d<0)d=-d; m=(b<0?-b:b); exit !(d<=1e-6*m)}'; }

@test "pn-sum --interval appends the interval of the iteration and the epoch" {
	logo_model
	run pn-sum -m "$BATS_TEST_TMPDIR/logo.model" --interval $G -d UNIT -b 2 "$F/bmm.tsv"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(printf 'rank\tdevice\tsource\tfwd_ms\tbwd_ms\tacc_ms\topt_ms\ttrain_ms\titeration_ms\titerations\tepoch_s\tprice_usd_h\tcost_usd\tcost_rank\tpeak_gb\tmem_gb\tfits\titeration_lo_ms\titeration_hi_ms\tepoch_lo_s\tepoch_hi_s')" ]
	o=$(printf '%s\n' "$output")
	it=$(col <(echo "$o") iteration_ms 1)
	near6 "$(col <(echo "$o") iteration_lo_ms 1)" "$(awk -v a="$it" -v k="$K_SUM" 'BEGIN { printf "%.15g\n", a / k }')"
	near6 "$(col <(echo "$o") iteration_hi_ms 1)" "$(awk -v a="$it" -v k="$K_SUM" 'BEGIN { printf "%.15g\n", a * k }')"
	near6 "$(col <(echo "$o") epoch_hi_s 1)" "$(awk -v a="$it" -v k="$K_SUM" 'BEGIN { printf "%.15g\n", a * k / 1000 }')"
}

@test "pn-sum --interval counts the last partial batch in the epoch's bounds" {
	logo_model
	pn-sum -m "$BATS_TEST_TMPDIR/logo.model" -I $G -d UNIT -b 2 -n 5 "$F/bmm.tsv" >"$BATS_TEST_TMPDIR/o"
	pn-sum -m "$BATS_TEST_TMPDIR/logo.model" -I $G -d UNIT -b 1 "$F/bmm.tsv" >"$BATS_TEST_TMPDIR/one"
	# two batches of 2 and one of 1
	want=$(awk -v a="$(col "$BATS_TEST_TMPDIR/o" iteration_lo_ms 1)" -v b="$(col "$BATS_TEST_TMPDIR/one" iteration_lo_ms 1)" 'BEGIN { printf "%.15g\n", (2 * a + b) / 1000 }')
	near6 "$(col "$BATS_TEST_TMPDIR/o" epoch_lo_s 1)" "$want"
}

@test "pn-sum --interval gives roofline rows no width" {
	logo_model
	pn-sum -m "$BATS_TEST_TMPDIR/logo.model" --fallback roofline -I $G -d UNIT -b 2 --per-layer "$F/mixed.tsv" >"$BATS_TEST_TMPDIR/pl"
	pn-sum -m "$BATS_TEST_TMPDIR/logo.model" --fallback roofline -I $G -d UNIT -b 2 "$F/mixed.tsv" >"$BATS_TEST_TMPDIR/o"
	# row 1 (mm) by the model, row 2 (copy) by the roofline
	mm=$(col "$BATS_TEST_TMPDIR/pl" total_ms 1)
	copy=$(col "$BATS_TEST_TMPDIR/pl" total_ms 2)
	[ "$(col "$BATS_TEST_TMPDIR/pl" time_lo_ms 2)" = "$(col "$BATS_TEST_TMPDIR/pl" time_ms 2)" ]
	near6 "$(col "$BATS_TEST_TMPDIR/o" iteration_lo_ms 1)" "$(awk -v a="$mm" -v b="$copy" -v k="$K_SUM" 'BEGIN { printf "%.15g\n", a / k + b }')"
}

# lstm_row FILE: a network of one lstm training row (4 layers, 30 steps)
lstm_row() {
	printf 'name\tlayer\tphase\tbatch\tseq_len\tinput_size\thidden\tlayers\tbidirectional\tprecision\toptimizer\n' >"$1"
	printf 'enc\tlstm\ttrain\t1\t30\t1000\t1000\t4\t0\tfp32\tsgd\n' >>"$1"
}

@test "pn-sum --interval gives a recurrent roofline row on a GPU the spread of its step rule" {
	lstm_row "$T/l.tsv"
	pn-sum --fallback roofline --interval=95 -d A100-PCIE-40GB --per-layer "$T/l.tsv" >"$T/pl"
	t=$(col "$T/pl" time_ms 1)
	# exp(0.44 z), z the normal quantile of 0.975
	k=$(awk 'BEGIN { printf "%.15g\n", exp(0.44 * 1.959963984540054) }')
	near6 "$(col "$T/pl" time_hi_ms 1)" "$(awk -v a="$t" -v k="$k" 'BEGIN { printf "%.15g\n", a * k }')"
	near6 "$(col "$T/pl" time_lo_ms 1)" "$(awk -v a="$t" -v k="$k" 'BEGIN { printf "%.15g\n", a / k }')"
}

@test "pn-sum --interval bounds a network of a recurrent row on a GPU by the same factor" {
	lstm_row "$T/l.tsv"
	pn-sum --fallback roofline --interval=95 -d A100-PCIE-40GB -n 3 "$T/l.tsv" >"$T/o"
	it=$(col "$T/o" iteration_ms 1)
	k=$(awk 'BEGIN { printf "%.15g\n", exp(0.44 * 1.959963984540054) }')
	near6 "$(col "$T/o" iteration_hi_ms 1)" "$(awk -v a="$it" -v k="$k" 'BEGIN { printf "%.15g\n", a * k }')"
	near6 "$(col "$T/o" iteration_lo_ms 1)" "$(awk -v a="$it" -v k="$k" 'BEGIN { printf "%.15g\n", a / k }')"
	near6 "$(col "$T/o" epoch_hi_s 1)" "$(awk -v a="$it" -v k="$k" 'BEGIN { printf "%.15g\n", 3 * a * k / 1000 }')"
}

@test "pn-sum --interval gives a recurrent roofline row on a CPU no width" {
	lstm_row "$T/l.tsv"
	pn-sum --fallback roofline -I --gpuspecs "$PN_ROOT/samples/cpu/cpu-spec.tsv" -d AMD-EPYC-1t --per-layer "$T/l.tsv" >"$T/pl"
	[ "$(col "$T/pl" time_lo_ms 1)" = "$(col "$T/pl" time_ms 1)" ]
	[ "$(col "$T/pl" time_hi_ms 1)" = "$(col "$T/pl" time_ms 1)" ]
}

@test "pn-sum --interval --per-layer gives each row the interval of one prediction" {
	logo_model
	run pn-sum -m "$BATS_TEST_TMPDIR/logo.model" --interval=90 $G -d UNIT -b 2 --per-layer "$F/bmm.tsv"
	[ "$status" -eq 0 ]
	o=$(printf '%s\n' "$output")
	[ "$(echo "$o" | head -1 | awk -F'\t' '{ print $(NF - 7), $(NF - 6) }')" = "time_lo_ms time_hi_ms" ]
	t=$(col <(echo "$o") time_ms 1)
	near6 "$(col <(echo "$o") time_hi_ms 1)" "$(awk -v a="$t" -v k="$K_ONE" 'BEGIN { printf "%.15g\n", a * k }')"
	near6 "$(col <(echo "$o") time_lo_ms 1)" "$(awk -v a="$t" -v k="$K_ONE" 'BEGIN { printf "%.15g\n", a / k }')"
}

@test "pn-sum --interval=99 is wider than the default 90" {
	logo_model
	pn-sum -m "$BATS_TEST_TMPDIR/logo.model" -I $G -d UNIT -b 2 "$F/bmm.tsv" >"$BATS_TEST_TMPDIR/a"
	pn-sum -m "$BATS_TEST_TMPDIR/logo.model" --interval=99 $G -d UNIT -b 2 "$F/bmm.tsv" >"$BATS_TEST_TMPDIR/b"
	awk -v a="$(col "$BATS_TEST_TMPDIR/a" iteration_hi_ms 1)" -v b="$(col "$BATS_TEST_TMPDIR/b" iteration_hi_ms 1)" 'BEGIN { exit !(b > a) }'
}

@test "pn-sum --interval names a model without a record for the device" {
	run pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" --interval $G -d UNIT "$F/bmm.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-sum: $BATS_FILE_TMPDIR/bmm.model: the bmm model has no record for --interval on UNIT (fit it with pn-fit --logo, or --cv for the devices it is fitted on)" ]
}

@test "pn-sum rejects an interval level outside 0 to 100" {
	run pn-sum --fallback roofline --interval=100 $G -d UNIT "$F/net.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sum: --interval: '100' is too large (must be below 100)" ]
}

@test "pn-sum rejects an unknown --format with exit 2" {
	run pn-sum --fallback roofline $G -d UNIT --format csv "$F/net.tsv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sum: --format: unknown value 'csv' (one of: tsv, md)" ]
}
