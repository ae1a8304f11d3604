#!/usr/bin/env bats
# The layer contract's batchnorm and pool types (src/lib/layer.h): the
# reader accepts and refuses their columns, and every tool handles them.
load test_helper

G="--gpuspecs $FIX/featurize/gpus.tsv -d TESTGPU"
S="--gpuspecs $FIX/sum/gpus.tsv"

# a layer file with header $1 and rows $2... (fields given with \t)
layers() {
	local h=$1
	shift
	{ printf '%b\n' "$h"; for r in "$@"; do printf '%b\n' "$r"; done; } >"$BATS_TEST_TMPDIR/in.tsv"
}

# refused HEADER ROW: pn-featurize's stderr and status on that one row
refused() {
	layers "$1" "$2"
	run bash -c "pn-featurize $G '$BATS_TEST_TMPDIR/in.tsv' 2>&1 >/dev/null"
}

setup_file() {
	# a linear model for bmm only (t/70-sum.bats's): the new types have none
	pn-featurize $S "$FIX/sum/bmm-train.tsv" |
		pn-fit -f lr --no-log-target -F flops -o "$BATS_FILE_TMPDIR/bmm.model"
}

@test "pn-featurize gives batchnorm and pool rows their hand-computed work" {
	layers 'layer\top\tbatch\tin_channels\timage\tkernel\tstride\tpadding' \
		'batchnorm\tNA\t2\t4\t8\tNA\tNA\tNA' 'pool\tmax\t2\t4\t8\t2\t2\t0' \
		'pool\tavg\t2\t4\t8\t8\t8\t0'
	run pn-featurize $G "$BATS_TEST_TMPDIR/in.tsv"
	[ "$status" -eq 0 ]
	# batchnorm: n = 2 x 4 x 8 x 8 = 512, 8 n flops, weights 2 x 4 x 4,
	# in = out = 4 n; max 2x2/2: 2 x 4 x 4 x 4 = 128 outputs of 4 flops;
	# global avg: 8 outputs of 64
	[ "$(printf '%s\n' "$output" | cut -f10-16 | tail -n +2 | tr '\t\n' ' ;')" = "4096 4096 32 2048 2048 4128 4128;512 512 0 2048 512 2560 2560;512 512 0 2048 32 2080 2080;" ]
}

@test "the layer contract refuses a pool row without an op column" {
	refused 'layer\tbatch\tin_channels\timage\tkernel\tstride\tpadding' 'pool\t2\t4\t8\t2\t2\t0'
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $BATS_TEST_TMPDIR/in.tsv:2: missing column 'op' (needed by layer 'pool')" ]
}

@test "the layer contract refuses a pool op other than max and avg" {
	refused 'layer\top\tbatch\tin_channels\timage\tkernel\tstride\tpadding' 'pool\tmin\t2\t4\t8\t2\t2\t0'
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $BATS_TEST_TMPDIR/in.tsv:2: column 'op': unknown pool op 'min'" ]
}

@test "the layer contract refuses a pool padded by more than half its kernel, as PyTorch does" {
	refused 'layer\top\tbatch\tin_channels\timage\tkernel\tstride\tpadding' 'pool\tmax\t2\t4\t8\t3\t2\t2'
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $BATS_TEST_TMPDIR/in.tsv:2: impossible pool: padding 2 is more than half the kernel 3" ]
}

@test "the layer contract refuses a pool kernel larger than the padded image" {
	refused 'layer\top\tbatch\tin_channels\timage\tkernel\tstride\tpadding' 'pool\tavg\t2\t4\t8\t9\t1\t0'
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $BATS_TEST_TMPDIR/in.tsv:2: impossible pool: kernel 9 is larger than the padded image 8" ]
}

@test "the layer contract refuses a batchnorm row without its image column" {
	refused 'layer\tbatch\tin_channels' 'batchnorm\t2\t4'
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $BATS_TEST_TMPDIR/in.tsv:2: missing column 'image' (needed by layer 'batchnorm')" ]
}

@test "pn-time times batchnorm and pool rows beside other types' NA columns, and marks a mem row invalid" {
	layers 'layer\top\tbatch\tin_channels\timage\tkernel\tstride\tpadding\telements' \
		'batchnorm\tNA\t2\t4\t8\tNA\tNA\tNA\tNA' 'pool\tmax\t2\t4\t8\t2\t2\t0\tNA' \
		'mem\tNA\tNA\tNA\tNA\tNA\tNA\tNA\t1000'
	run pn-time -q -r 1 "$BATS_TEST_TMPDIR/in.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | column /dev/stdin status | tr '\n' ' ')" = "ok ok invalid " ]
	[ "$(printf '%s\n' "$output" | column /dev/stdin message | sed -n 3p)" = "pn-time does not time layer type 'mem'" ]
}

@test "pn-sum predicts batchnorm and pool rows by the roofline beside a model" {
	layers 'name\tlayer\top\tphase\tbatch\tm\tn\tk\tin_channels\timage\tkernel\tstride\tpadding' \
		'mm\tbmm\tbmm\tfwd\t1\t8\t8\t8\tNA\tNA\tNA\tNA\tNA' \
		'bn\tbatchnorm\tbatchnorm\tfwd\t1\tNA\tNA\tNA\t4\t8\tNA\tNA\tNA' \
		'pool\tpool\tmax\tfwd\t1\tNA\tNA\tNA\t4\t8\t2\t2\t0'
	run pn-sum -m "$BATS_FILE_TMPDIR/bmm.model" --fallback roofline $S -d UNIT -b 2 --per-layer "$BATS_TEST_TMPDIR/in.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | column /dev/stdin source | tr '\n' ' ')" = "model roofline roofline " ]
}

@test "pn-sum without --fallback names batchnorm and pool as types without a model" {
	layers 'name\tlayer\top\tphase\tbatch\tin_channels\timage\tkernel\tstride\tpadding' \
		'bn\tbatchnorm\tbatchnorm\tfwd\t1\t4\t8\tNA\tNA\tNA' \
		'pool\tpool\tavg\tfwd\t1\t4\t8\t8\t8\t0'
	run bash -c "pn-sum -m '$BATS_FILE_TMPDIR/bmm.model' $S -d UNIT '$BATS_TEST_TMPDIR/in.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-sum: $BATS_FILE_TMPDIR/bmm.model: no model for layer types 'batchnorm', 'pool' of $BATS_TEST_TMPDIR/in.tsv (--fallback roofline predicts them by the roofline)" ]
}

@test "pn-net writes ResNet's batch norms and pools as batchnorm and pool rows" {
	pn-net --arch resnet18 --image 64 >"$BATS_TEST_TMPDIR/n.tsv"
	# the stem: conv 7x7/2 to 32, its batch norm, relu, max 3x3/2 pad 1 to
	# 16; the head: a global average pool of 512 channels of 2 x 2
	[ "$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$c["layer"] == "batchnorm" || $c["layer"] == "pool" { n[$c["layer"]]++ }
		$1 == "bn1" || $1 == "maxpool" || $1 == "avgpool" {
			printf "%s %s %s %s %s %s %s %s;", $1, $c["layer"], $c["op"], $c["in_channels"], $c["image"], $c["kernel"], $c["stride"], $c["padding"] }
		END { printf "%d %d", n["batchnorm"], n["pool"] }' "$BATS_TEST_TMPDIR/n.tsv")" = "bn1 batchnorm batchnorm 64 32 NA NA NA;maxpool pool max 64 32 3 2 1;avgpool pool avg 512 2 2 2 0;20 2" ]
	pn-sum --fallback roofline -d V100-SXM2-16GB -b 2 "$BATS_TEST_TMPDIR/n.tsv" >/dev/null
}

@test "the layer contract refuses an optimizer on a forward pass: pn-featurize exits 1, pn-time marks the row invalid" {
	h='layer\tbatch\tin_features\tout_features\tpass\toptimizer'
	refused "$h" 'dense\t4\t4\t4\tfwd\tadam'
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $BATS_TEST_TMPDIR/in.tsv:2: column 'optimizer': optimizer adam on a forward pass: an optimizer steps a row of pass train only" ]
	pn-time -q -r 1 "$BATS_TEST_TMPDIR/in.tsv" >"$BATS_TEST_TMPDIR/o"
	[ "$(column status "$BATS_TEST_TMPDIR/o")" = invalid ]
	# a network's rows say training by their phase, not by a pass column
	printf 'name\tlayer\tphase\tbatch\tin_features\tout_features\toptimizer\nfc\tdense\ttrain\t4\t4\t4\tadam\n' >"$BATS_TEST_TMPDIR/net.tsv"
	pn-sum --fallback roofline $S -d UNIT "$BATS_TEST_TMPDIR/net.tsv" >/dev/null
}
