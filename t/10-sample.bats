#!/usr/bin/env bats
# pn-sample: configurations of every layer type, ranges, grids, seeds.
load test_helper

TYPES="dense bmm conv2d attention embedding rnn lstm gru layernorm softmax elementwise posenc batchnorm pool xent"

@test "pn-sample writes the columns of the layer contract for every layer type" {
	for t in $TYPES; do
		pn-sample --layer "$t" -n 1 | head -1 | tr '\t' ' '
	done >"$BATS_TEST_TMPDIR/h"
	diff "$BATS_TEST_TMPDIR/h" - <<'EOF'
layer batch in_features out_features bias activation precision pass optimizer learning_rate
layer batch m n k precision pass optimizer learning_rate
layer batch in_channels out_channels kernel image stride padding bias activation precision pass optimizer learning_rate
layer batch seq_len embed_dim heads dropout precision pass optimizer learning_rate
layer batch seq_len vocab embed_dim precision pass optimizer learning_rate
layer batch seq_len input_size hidden layers bidirectional activation dropout precision pass optimizer learning_rate
layer batch seq_len input_size hidden layers bidirectional activation dropout precision pass optimizer learning_rate
layer batch seq_len input_size hidden layers bidirectional activation dropout precision pass optimizer learning_rate
layer batch seq_len dim precision pass optimizer learning_rate
layer batch seq_len dim precision pass optimizer learning_rate
layer op batch seq_len dim dropout precision pass optimizer learning_rate
layer batch seq_len embed_dim precision pass optimizer learning_rate
layer batch in_channels image precision pass optimizer learning_rate
layer op batch in_channels image kernel stride padding precision pass optimizer learning_rate
layer batch seq_len dim precision pass optimizer learning_rate
EOF
}

@test "pn-sample writes the reviewed rows for a seed on every platform" {
	run pn-sample --layer dense -n 5 --seed 7
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$FIX/sample/dense-seed7.tsv"
	pn-sample --layer attention -n 5 --seed 7 --log-uniform -p fp32,fp16 |
		diff - "$FIX/sample/attention-seed7-log.tsv"
}

@test "pn-sample gives the same rows for the same seed and others for another" {
	pn-sample --layer conv2d -n 50 --seed 3 >"$BATS_TEST_TMPDIR/a"
	pn-sample --layer conv2d -n 50 --seed 3 >"$BATS_TEST_TMPDIR/b"
	pn-sample --layer conv2d -n 50 --seed 4 >"$BATS_TEST_TMPDIR/c"
	cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	! cmp -s "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/c"
}

@test "pn-sample with a smaller count writes the first rows of a larger one" {
	pn-sample --layer lstm -n 10 --seed 9 >"$BATS_TEST_TMPDIR/small"
	pn-sample --layer lstm -n 100 --seed 9 | head -11 | cmp - "$BATS_TEST_TMPDIR/small"
}

@test "pn-sample never writes an impossible configuration" {
	# small images make kernels larger than the padded image likely
	pn-sample --layer conv2d -n 2000 -r image=1:8 -r padding=0:0 >"$BATS_TEST_TMPDIR/c"
	awk -F'\t' 'NR>1 && $5 > $6 + 2*$8 {bad++} END {exit bad > 0}' "$BATS_TEST_TMPDIR/c"
	pn-sample --layer attention -n 2000 >"$BATS_TEST_TMPDIR/a"
	awk -F'\t' 'NR>1 && $4 % $5 != 0 {bad++} END {exit bad > 0}' "$BATS_TEST_TMPDIR/a"
	# pn-featurize dies on an impossible row
	pn-featurize --device T4 "$BATS_TEST_TMPDIR/c" >/dev/null
	pn-featurize --device T4 "$BATS_TEST_TMPDIR/a" >/dev/null
}

@test "pn-sample keeps every drawn value inside its --range" {
	pn-sample --layer rnn -n 500 -r hidden=5:9 -r seq_len=100:100 -r dropout=0.1:0.2 >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" hidden | sort -n | uniq | paste -sd,)" = 5,6,7,8,9 ]
	[ "$(column "$BATS_TEST_TMPDIR/o" seq_len | sort -u)" = 100 ]
	column "$BATS_TEST_TMPDIR/o" dropout | awk '$1 < 0.1 || $1 > 0.2 {exit 1}'
}

@test "pn-sample keeps PreNeT's default ranges" {
	pn-sample --layer embedding -n 1000 >"$BATS_TEST_TMPDIR/o"
	column "$BATS_TEST_TMPDIR/o" batch | awk '$1 < 1 || $1 > 64 {exit 1}'
	column "$BATS_TEST_TMPDIR/o" vocab | awk '$1 < 10000 || $1 > 500000 {exit 1}'
	column "$BATS_TEST_TMPDIR/o" embed_dim | awk '$1 < 64 || $1 > 1024 {exit 1}'
	column "$BATS_TEST_TMPDIR/o" seq_len | awk '$1 < 64 || $1 > 512 {exit 1}'
}

@test "pn-sample --log-uniform draws small sizes as often as large ones" {
	pn-sample --layer dense -n 2000 -r in_features=1:4096 >"$BATS_TEST_TMPDIR/u"
	pn-sample --layer dense -n 2000 -r in_features=1:4096 --log-uniform >"$BATS_TEST_TMPDIR/l"
	# uniform: median near 2048; log-uniform: near sqrt(4096) = 64
	column "$BATS_TEST_TMPDIR/u" in_features | sort -n | awk '{a[NR]=$1} END {exit !(a[1000] > 1500)}'
	column "$BATS_TEST_TMPDIR/l" in_features | sort -n | awk '{a[NR]=$1} END {exit !(a[1000] > 30 && a[1000] < 130)}'
}

@test "pn-sample --grid writes every combination, the first option slowest" {
	run pn-sample --layer bmm --grid m=1,2 --grid k=3,4,5 --seed 2
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | awk -F'\t' 'NR>1{print $3 "x" $5}' | paste -sd' ')" = "1x3 1x4 1x5 2x3 2x4 2x5" ]
}

@test "pn-sample --grid with a count writes that many rows for each grid point" {
	run pn-sample --layer softmax --grid dim=8,16 -n 3
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 7 ]
	[ "$(printf '%s\n' "$output" | awk -F'\t' 'NR>1{print $4}' | paste -sd,)" = 8,8,8,16,16,16 ]
}

@test "pn-sample --grid skips a grid point no draw makes possible, with a warning" {
	run bash -c "pn-sample --layer conv2d --grid kernel=7 --grid image=3,9 -r padding=0:0 2>&1 >/dev/null"
	[ "$status" -eq 0 ]
	[ "$output" = "pn-sample: warning: grid point kernel=7 image=3 skipped: kernel 7 is larger than the padded image 3" ]
}

@test "pn-sample --grid on the optimizer may hold none" {
	run pn-sample --layer layernorm --grid optimizer=none,adam
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | awk -F'\t' 'NR == 2 && !($6 == "fwd" && $7 == "none" && $8 == "NA") {exit 1}
		NR == 3 && !($6 == "train" && $7 == "adam" && $8 > 0) {exit 1} END {exit NR != 3}'
}

@test "pn-sample --precision draws from the listed precisions" {
	pn-sample --layer bmm -n 300 -p fp16,bf16 >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" precision | sort -u | paste -sd,)" = bf16,fp16 ]
}

@test "pn-sample --choice draws a column from the listed values" {
	pn-sample --layer elementwise -n 300 --choice op=relu,add >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" op | sort -u | paste -sd,)" = add,relu ]
}

@test "pn-sample draws the gated ops silu_mul and gelu_mul among the elementwise ops" {
	pn-sample --layer elementwise -n 400 >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" op | grep -E '^(silu|gelu)_mul$' | sort -u | paste -sd,)" = gelu_mul,silu_mul ]
}

@test "pn-sample sets pass and learning_rate from the optimizer" {
	pn-sample --layer gru -n 400 >"$BATS_TEST_TMPDIR/o"
	awk -F'\t' 'NR>1 && !(($12=="none" && $11=="fwd" && $13=="NA") || ($12!="none" && $11=="train" && $13!="NA")) {exit 1}' "$BATS_TEST_TMPDIR/o"
	# about half the rows train, as PreNeT's collection
	n=$(column "$BATS_TEST_TMPDIR/o" pass | grep -c train)
	[ "$n" -gt 150 ] && [ "$n" -lt 250 ]
}

@test "pn-sample --train-ratio 0 writes forward rows only" {
	pn-sample --layer dense -n 200 --train-ratio 0 >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" pass | sort -u)" = fwd ]
}

@test "pn-sample --max-flops redraws configurations above the cap" {
	pn-sample --layer dense -n 300 --max-flops 1e7 | pn-featurize --device T4 >"$BATS_TEST_TMPDIR/o"
	column "$BATS_TEST_TMPDIR/o" flops | awk '$1 > 1e7 {exit 1}'
}

@test "pn-sample --ranges prints the columns of a type with the options applied" {
	run pn-sample --layer posenc --ranges -r batch=2:8 -p fp16
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") - <<'EOF'
column	kind	lo	hi	values
batch	size	2	8	NA
seq_len	size	1	512	NA
embed_dim	width	32	1024	NA
precision	enum	NA	NA	fp16
optimizer	enum	NA	NA	sgd,adam,adagrad,adadelta,rmsprop
learning_rate	logreal	1e-05	0.1	NA
EOF
}

@test "pn-sample fails when no configuration is possible" {
	run bash -c "pn-sample --layer conv2d -n 1 -r image=1:1 -r kernel=7:7 -r padding=0:0 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-sample: no possible conv2d configuration in 10000 draws (last: kernel 7 is larger than the padded image 1)" ]
}

@test "pn-sample rejects an unknown layer type" {
	run bash -c "pn-sample --layer conv3d -n 1 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sample: --layer: unknown layer type 'conv3d' (one of: dense, bmm, conv2d, attention, embedding, rnn, lstm, gru, layernorm, softmax, elementwise, posenc, batchnorm, pool, xent)" ]
	[ "${lines[1]}" = "Try 'pn-sample --help' for more information." ]
}

@test "pn-sample rejects a range of a column the layer type does not have" {
	run bash -c "pn-sample --layer dense -n 1 -r kernel=1:3 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sample: --range: layer 'dense' has no column 'kernel'" ]
}

@test "pn-sample rejects a range whose low end is above its high end" {
	run bash -c "pn-sample --layer dense -n 1 -r batch=5:2 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sample: --range: batch: 5 is above 2" ]
}

@test "pn-sample rejects a fractional size in a range" {
	run bash -c "pn-sample --layer bmm -n 1 -r m=1.5:4 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sample: --range: m: '1.5' is not a whole number" ]
}

@test "pn-sample rejects none in the optimizers of training rows" {
	run bash -c "pn-sample --layer dense -n 1 --choice optimizer=none,sgd 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sample: --choice: optimizer none is drawn by --train-ratio" ]
}

@test "pn-sample needs a count without a grid" {
	run bash -c "pn-sample --layer dense 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sample: missing --count" ]
}

@test "pn-sample needs a layer type" {
	run bash -c "pn-sample -n 3 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sample: missing --layer" ]
}

@test "pn-sample takes whole numbers with an exponent in --count, --seed and --range" {
	pn-sample --layer dense -n 10 -s 7 -r batch=1000:10000 >"$BATS_TEST_TMPDIR/a"
	pn-sample --layer dense -n 1e1 -s 0.7e1 -r batch=1e3:1e4 >"$BATS_TEST_TMPDIR/b"
	cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
}

@test "pn-sample says why a --count is refused" {
	while IFS=: read -r v m; do
		run pn-sample --layer dense -n "$v"
		[ "$status" -eq 2 ] && [ "${lines[0]}" = "pn-sample: --count: '$v' $m" ] ||
			{ echo "$v: $output"; return 1; }
	done <<-'EOF'
	x:is not a number
	1.5:is not a whole number
	0:is too small (at least 1)
	1e300:is too large (at most 9007199254740991)
	EOF
}

@test "pn-sample says why a --seed is refused" {
	run pn-sample --layer dense -n 1 --seed -1
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sample: --seed: '-1' is too small (at least 0)" ]
	run pn-sample --layer dense -n 1 --seed 18446744073709551616
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sample: --seed: '18446744073709551616' is too large (at most 18446744073709551615)" ]
}

@test "pn-sample takes every 64-bit --seed" {
	run pn-sample --layer dense -n 1 --seed 18446744073709551615
	[ "$status" -eq 0 ]
}

@test "pn-sample names the limit a --range value passes" {
	run pn-sample --layer dense -n 1 -r batch=0:4
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sample: --range: batch: '0' is too small (at least 1)" ]
	run pn-sample --layer dense -n 1 -r batch=1:1e30
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sample: --range: batch: '1e30' is too large (at most 4503599627370496)" ]
	run pn-sample --layer attention -n 1 -r dropout=0:1
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sample: --range: dropout: '1' is too large (at most 0.99)" ]
}

@test "pn-sample says why --train-ratio, --max-flops and --max-bytes are refused" {
	run pn-sample --layer dense -n 1 --train-ratio 1.5
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sample: --train-ratio: '1.5' is too large (at most 1)" ]
	run pn-sample --layer dense -n 1 --max-flops 0
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sample: --max-flops: '0' is too small (must be above 0)" ]
	run pn-sample --layer dense -n 1 --max-bytes x
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sample: --max-bytes: 'x' is not a size" ]
	run pn-sample --layer dense -n 1 --max-bytes 0
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sample: --max-bytes: '0' is too small (must be above 0)" ]
}

@test "pn-sample takes --max-bytes with a K, M, G or T suffix, as pn-time's --mem-limit" {
	[ "$(pn-sample --layer dense -n 20 --max-bytes 1M)" = "$(pn-sample --layer dense -n 20 --max-bytes 1e6)" ]
	pn-sample --layer dense -n 20 --max-bytes 1M | pn-featurize --gpuspecs "$FIX/featurize/gpus.tsv" -d TESTGPU |
		awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "cm_total") k = i; next } $k > 1e6 { exit 1 }'
}

@test "pn-sample draws a pool's stride from 1 to its kernel and its padding at most half the kernel" {
	pn-sample --layer pool -n 300 --seed 2 >"$BATS_TEST_TMPDIR/p"
	awk -F'\t' 'NR > 1 && !($7 >= 1 && $7 <= $6 && 2 * $8 <= $6 && $6 >= 2 && $6 <= 3) {exit 1}' "$BATS_TEST_TMPDIR/p"
	[ "$(cut -f2 "$BATS_TEST_TMPDIR/p" | tail -n +2 | sort -u | paste -sd,)" = avg,max ]
	[ "$(cut -f7 "$BATS_TEST_TMPDIR/p" | tail -n +2 | sort -u | paste -sd,)" = 1,2,3 ]
}

@test "pn-sample --ranges shows pool's kernel, stride, padding and ops" {
	run pn-sample --layer pool --ranges
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "${lines[@]}" | sed -n 2,7p) - <<'EOF2'
batch	size	1	64	NA
image	size	1	512	NA
kernel	int	2	3	NA
stride	int	1	3	NA
padding	int	0	1	NA
in_channels	width	1	512	NA
EOF2
	[ "${lines[7]}" = "$(printf 'op\tenum\tNA\tNA\tmax,avg')" ]
}

@test "pn-sample never writes a batchnorm that trains on one value a channel" {
	run bash -c "pn-sample --layer batchnorm -n 1 -r batch=1:1 -r image=1:1 --train-ratio 1 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-sample: no possible batchnorm configuration in 10000 draws (last: batchnorm trains on one value a channel)" ]
}

# the widths of a row (channels, features, hidden and embedding sizes; an
# attention's per head) that are not multiples of $2, counted
odd_widths() {
	awk -F'\t' -v m="$2" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
		function odd(c, d) { return (c in h) && ($h[c] / d) % m != 0 }
		{ heads = ("heads" in h) ? $h["heads"] : 1
		  n += odd("in_features", 1) + odd("out_features", 1) + odd("in_channels", 1)
		  n += odd("out_channels", 1) + odd("hidden", 1) + odd("input_size", 1)
		  n += odd("dim", 1) + odd("embed_dim", heads) }
		END { print n + 0 }' "$1"
}

@test "pn-sample --align M draws every width as a multiple of M" {
	for t in dense conv2d attention embedding lstm layernorm posenc pool; do
		pn-sample --layer "$t" -n 200 --seed 4 --log-uniform --align 8 >"$BATS_TEST_TMPDIR/$t"
		[ "$(odd_widths "$BATS_TEST_TMPDIR/$t" 8)" -eq 0 ]
		pn-sample --layer "$t" -n 200 --seed 4 --log-uniform >"$BATS_TEST_TMPDIR/$t.plain"
		[ "$(odd_widths "$BATS_TEST_TMPDIR/$t.plain" 8)" -gt 0 ]
	done
}

@test "pn-sample --align M:SHARE aligns about SHARE of the rows and leaves sizes that are not widths alone" {
	pn-sample --layer dense -n 1000 --seed 5 --log-uniform --align 16:0.25 >"$BATS_TEST_TMPDIR/d"
	n=$(awk -F'\t' 'NR > 1 && $3 % 16 == 0 && $4 % 16 == 0' "$BATS_TEST_TMPDIR/d" | wc -l)
	[ "$n" -ge 200 ] && [ "$n" -le 320 ]
	# batch is no width
	[ "$(awk -F'\t' 'NR > 1 && $2 % 16 != 0' "$BATS_TEST_TMPDIR/d" | wc -l)" -gt 500 ]
}

@test "pn-sample --align keeps a width inside its range and the conv2d channel cap" {
	pn-sample --layer conv2d -n 300 --seed 6 --align 32 -r in_channels=40:100 -r image=100:150 >"$BATS_TEST_TMPDIR/c"
	awk -F'\t' 'NR > 1 && !($3 == 64 || $3 == 96) { exit 1 }' "$BATS_TEST_TMPDIR/c"
	awk -F'\t' 'NR > 1 && ($4 % 32 != 0 || $4 > 10000 / $6) { exit 1 }' "$BATS_TEST_TMPDIR/c"
}

@test "pn-sample --align M:0 aligns no row" {
	pn-sample --layer rnn -n 100 --seed 7 --align 8:0 | cut -f4,5 >"$BATS_TEST_TMPDIR/a"
	[ "$(awk -F'\t' 'NR > 1 && $1 % 8 != 0' "$BATS_TEST_TMPDIR/a" | wc -l)" -gt 50 ]
}

@test "pn-sample says why an --align is refused" {
	run pn-sample --layer dense -n 1 --align 0
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sample: --align: '0' is too small (at least 1)" ]
	run pn-sample --layer dense -n 1 --align 8:1.5
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-sample: --align: '1.5' is too large (at most 1)" ]
	run pn-sample --layer dense -n 1 --align 8:
	[ "$status" -eq 2 ]
}
