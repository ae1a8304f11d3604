#!/usr/bin/env bats
# pn-time: every layer type on the cpu backend, bad rows, memory limits,
# the check mode, the CPU spec row, the cuda backend where there is one.
load test_helper

TYPES="dense bmm conv2d attention embedding rnn lstm gru layernorm softmax elementwise posenc"

# small sizes of every layer type, so that a row takes milliseconds
small() {
	case $1 in
	dense) echo "-r batch=1:4 -r in_features=1:32 -r out_features=1:32" ;;
	bmm) echo "-r batch=1:4 -r m=1:16 -r n=1:16 -r k=1:16" ;;
	conv2d) echo "-r batch=1:2 -r image=1:12 -r in_channels=1:4 -r out_channels=1:4" ;;
	attention) echo "-r batch=1:2 -r seq_len=1:8 -r embed_dim=4:32 -r heads=1:4" ;;
	embedding) echo "-r batch=1:2 -r seq_len=1:8 -r vocab=10:100 -r embed_dim=1:32" ;;
	rnn|lstm|gru) echo "-r batch=1:2 -r seq_len=1:6 -r input_size=1:8 -r hidden=1:8 -r layers=1:2" ;;
	layernorm|softmax|elementwise) echo "-r batch=1:2 -r seq_len=1:8 -r dim=1:64" ;;
	posenc) echo "-r batch=1:2 -r seq_len=1:8 -r embed_dim=1:32" ;;
	esac
}

has_cuda_device() {
	printf 'layer\tbatch\tm\tn\tk\nbmm\t1\t1\t1\t1\n' | pn-time -q --backend cuda >/dev/null 2>&1
}

@test "pn-time times every layer type on the cpu backend" {
	for t in $TYPES; do
		pn-sample --layer "$t" -n 3 --seed 4 $(small "$t") | pn-time -q -r 2 -w 1 >"$BATS_TEST_TMPDIR/$t"
		[ "$(column "$BATS_TEST_TMPDIR/$t" status | sort -u)" = ok ] || { echo "$t"; cat "$BATS_TEST_TMPDIR/$t"; return 1; }
		column "$BATS_TEST_TMPDIR/$t" time_ms | awk '!($1 > 0) {exit 1}' || { echo "$t time_ms"; return 1; }
		column "$BATS_TEST_TMPDIR/$t" time_fwd_ms | awk '!($1 > 0) {exit 1}' || { echo "$t fwd"; return 1; }
		column "$BATS_TEST_TMPDIR/$t" mem_bytes | awk '!($1 > 0) {exit 1}' || { echo "$t mem"; return 1; }
	done
}

@test "pn-time appends its columns to the input's" {
	printf 'layer\tbatch\tm\tn\tk\tnote\nbmm\t2\t3\t4\t5\tkept\n' >"$BATS_TEST_TMPDIR/in"
	run pn-time -q -r 1 "$BATS_TEST_TMPDIR/in"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(printf 'layer\tbatch\tm\tn\tk\tnote\tdevice\tbackend\tlib_versions\ttime_fwd_ms\ttime_bwd_ms\ttime_opt_ms\ttime_ms\ttime_min_ms\ttime_median_ms\ttime_max_ms\ttime_std_ms\tmem_bytes\tstatus\tmessage')" ]
	[ "$(printf '%s\n' "${lines[1]}" | cut -f1-6,8)" = "$(printf 'bmm\t2\t3\t4\t5\tkept\tcpu')" ]
	[[ "$(printf '%s\n' "${lines[1]}" | cut -f9)" == "oneDNN "* ]]
}

@test "pn-time names the CPU and its thread count in the device column" {
	printf 'layer\tbatch\tm\tn\tk\nbmm\t2\t3\t4\t5\n' >"$BATS_TEST_TMPDIR/in"
	pn-time -q -r 1 "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	column "$BATS_TEST_TMPDIR/o" device | grep -qE '^[A-Za-z0-9._-]+-1t$'
	pn-time -q -r 1 --device mybox "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" device)" = mybox ]
}

@test "pn-time times the backward pass and the optimizer of training rows only" {
	printf 'layer\tbatch\tin_features\tout_features\tpass\toptimizer\tlearning_rate\n' >"$BATS_TEST_TMPDIR/in"
	printf 'dense\t4\t16\t16\tfwd\tnone\tNA\ndense\t4\t16\t16\ttrain\tnone\tNA\ndense\t4\t16\t16\ttrain\tadam\t0.001\n' >>"$BATS_TEST_TMPDIR/in"
	pn-time -q -r 2 "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" time_bwd_ms | sed 's/^[0-9].*/n/' | paste -sd,)" = NA,n,n ]
	[ "$(column "$BATS_TEST_TMPDIR/o" time_opt_ms | sed 's/^[0-9].*/n/' | paste -sd,)" = NA,NA,n ]
	# time_ms is the whole step: never less than its forward pass
	awk -F'\t' 'NR==1{for(i=1;i<=NF;i++)h[$i]=i; next} $h["time_ms"] < $h["time_fwd_ms"] * 0.999 {exit 1}' "$BATS_TEST_TMPDIR/o"
}

@test "pn-time gives bigger dense layers longer times on average" {
	printf 'layer\tbatch\tin_features\tout_features\n' >"$BATS_TEST_TMPDIR/in"
	for i in 1 2 3 4; do printf 'dense\t1\t8\t8\ndense\t32\t512\t512\n' >>"$BATS_TEST_TMPDIR/in"; done
	pn-time -q -r 3 "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	awk -F'\t' 'NR==1{for(i=1;i<=NF;i++)h[$i]=i; next} {s[$2] += $h["time_ms"]} END {exit !(s[32] > 10 * s[1])}' "$BATS_TEST_TMPDIR/o"
}

@test "pn-time marks an impossible configuration invalid and goes on" {
	printf 'layer\tbatch\tin_channels\tout_channels\tkernel\timage\tstride\tpadding\n' >"$BATS_TEST_TMPDIR/in"
	printf 'conv2d\t1\t3\t8\t7\t4\t1\t1\nconv2d\t1\t3\t8\t3\t4\t1\t1\n' >>"$BATS_TEST_TMPDIR/in"
	run pn-time -q -r 1 "$BATS_TEST_TMPDIR/in"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[1]}" | cut -f19-)" = "$(printf 'NA\tNA\tinvalid\timpossible conv2d: kernel 7 is larger than the padded image 6')" ]
	[ "$(printf '%s\n' "${lines[2]}" | cut -f21)" = ok ]
}

@test "pn-time marks an unknown layer type invalid and goes on" {
	printf 'layer\tbatch\tm\tn\tk\nconv3d\t1\t2\t3\t4\nbmm\t1\t2\t3\t4\n' >"$BATS_TEST_TMPDIR/in"
	pn-time -q -r 1 "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" status | paste -sd,)" = invalid,ok ]
	[ "$(column "$BATS_TEST_TMPDIR/o" message | head -1)" = "unknown layer type 'conv3d'" ]
}

@test "pn-time marks a row with a bad number invalid" {
	printf 'layer\tbatch\tm\tn\tk\nbmm\tx\t2\t3\t4\n' >"$BATS_TEST_TMPDIR/in"
	pn-time -q -r 1 "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" status)" = invalid ]
	[ "$(column "$BATS_TEST_TMPDIR/o" message)" = "column 'batch': 'x' is not a whole number" ]
}

@test "pn-time marks fp16 rows invalid on the cpu backend" {
	printf 'layer\tbatch\tm\tn\tk\tprecision\nbmm\t1\t2\t3\t4\tfp16\n' >"$BATS_TEST_TMPDIR/in"
	pn-time -q -r 1 "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" status)" = invalid ]
	[ "$(column "$BATS_TEST_TMPDIR/o" message)" = "precision fp16 is not supported by the cpu backend (fp32 only)" ]
}

@test "pn-time gives a layer over --mem-limit status oom and goes on" {
	printf 'layer\tbatch\tseq_len\tvocab\tembed_dim\tpass\toptimizer\tlearning_rate\n' >"$BATS_TEST_TMPDIR/in"
	printf 'embedding\t64\t512\t500000\t1024\ttrain\tadam\t0.001\nembedding\t2\t3\t10\t4\ttrain\tadam\t0.001\n' >>"$BATS_TEST_TMPDIR/in"
	run pn-time -q -r 1 --mem-limit 100M "$BATS_TEST_TMPDIR/in"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[1]}" | cut -f20-)" = "$(printf '2048000000\toom\tneeds more than --mem-limit 100000000 bytes')" ]
	[ "$(printf '%s\n' "${lines[2]}" | cut -f21)" = ok ]
}

@test "pn-time needs a layer column" {
	printf 'batch\tm\n1\t2\n' >"$BATS_TEST_TMPDIR/in"
	run bash -c "pn-time -q '$BATS_TEST_TMPDIR/in' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-time: $BATS_TEST_TMPDIR/in:1: missing column 'layer'" ]
}

@test "pn-time refuses input without data rows" {
	printf 'layer\tbatch\tm\tn\tk\n' >"$BATS_TEST_TMPDIR/in"
	run bash -c "pn-time -q '$BATS_TEST_TMPDIR/in' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-time: $BATS_TEST_TMPDIR/in: no data rows" ]
}

@test "pn-time rejects an unknown backend" {
	run bash -c "pn-time --backend tpu 2>&1 >/dev/null </dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-time: --backend: unknown backend 'tpu' (one of: cpu, cuda)" ]
}

@test "pn-time --clock cpu needs one thread" {
	run bash -c "pn-time --clock cpu --threads 2 2>&1 >/dev/null </dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-time: --clock cpu needs --backend cpu and --threads 1" ]
}

@test "pn-time --backend cuda exits 3 without a CUDA build or device" {
	if has_cuda_device; then
		skip "a CUDA device is present"
	fi
	run bash -c "printf 'layer\tbatch\tm\tn\tk\nbmm\t1\t1\t1\t1\n' | pn-time --backend cuda 2>&1 >/dev/null"
	[ "$status" -eq 3 ]
	if ldd "$PN_ROOT/bin/pn-time" | grep -q libcudart; then
		[[ "$output" == "pn-time: no CUDA device"* ]]
	else
		[ "$output" = "pn-time: CUDA backend not built (rebuild with the CUDA toolkit and cuDNN installed)" ]
	fi
}

@test "pn-time --check passes every layer type against the plain-C reference" {
	for t in $TYPES; do
		pn-sample --layer "$t" -n 4 --seed 6 --train-ratio 0.75 $(small "$t") >"$BATS_TEST_TMPDIR/$t"
		run bash -c "pn-time -q -r 1 -w 0 --check '$BATS_TEST_TMPDIR/$t' 2>&1 >/dev/null"
		[ "$status" -eq 0 ] || { echo "$output"; return 1; }
		[[ "$output" == "pn-time: check $t: PASS (4 rows, max relative error "* ]] || { echo "$output"; return 1; }
	done
}

@test "pn-time --check adds the relative error of every row" {
	pn-sample --layer dense -n 2 $(small dense) | pn-time -q -r 1 --check 2>/dev/null >"$BATS_TEST_TMPDIR/o"
	column "$BATS_TEST_TMPDIR/o" check_rel_err | awk '!($1 >= 0 && $1 < 1e-3) {exit 1}'
}

@test "pn-time --check compares the cuda backend with the cpu backend" {
	if ! has_cuda_device; then
		skip "no CUDA device"
	fi
	for t in $TYPES; do
		for p in fp32 fp16; do
			pn-sample --layer "$t" -n 3 -p "$p" --train-ratio 0.75 $(small "$t") >"$BATS_TEST_TMPDIR/$t"
			run bash -c "pn-time -q -r 1 --backend cuda --check '$BATS_TEST_TMPDIR/$t' 2>&1 >/dev/null"
			[ "$status" -eq 0 ] || { echo "$t $p: $output"; return 1; }
			[[ "$output" == "pn-time: check $t: PASS"* ]] || { echo "$output"; return 1; }
		done
	done
}

@test "pn-time --cpu-spec writes a spec row that pn-featurize can use" {
	export XDG_CACHE_HOME="$BATS_TEST_TMPDIR/cache"
	pn-time --cpu-spec >"$BATS_TEST_TMPDIR/spec"
	[ "$(head -1 "$BATS_TEST_TMPDIR/spec")" = "$(head -1 "$PN_ROOT/gpuspecs/gpus.tsv")" ]
	[ "$(wc -l <"$BATS_TEST_TMPDIR/spec")" -eq 2 ]
	# cached: the second call reads the same row back
	[ -f "$XDG_CACHE_HOME/pn/cpu-spec-1t.tsv" ]
	pn-time --cpu-spec | cmp - "$BATS_TEST_TMPDIR/spec"
	pn-sample --layer bmm -n 2 $(small bmm) | pn-time -q -r 1 |
		pn-featurize --gpuspecs "$BATS_TEST_TMPDIR/spec" >"$BATS_TEST_TMPDIR/f"
	column "$BATS_TEST_TMPDIR/f" gpu_fp32_gflops | awk '!($1 > 0) {exit 1}'
}

@test "pn-sample | pn-time | pn-featurize works for every layer type" {
	export XDG_CACHE_HOME="$BATS_TEST_TMPDIR/cache"
	pn-time --cpu-spec >"$BATS_TEST_TMPDIR/spec"
	for t in $TYPES; do
		set -o pipefail
		pn-sample --layer "$t" -n 100 --seed 8 $(small "$t") | pn-time -q -r 1 -w 0 |
			pn-featurize --gpuspecs "$BATS_TEST_TMPDIR/spec" >"$BATS_TEST_TMPDIR/$t" || { echo "$t"; return 1; }
		[ "$(tail -n +2 "$BATS_TEST_TMPDIR/$t" | wc -l)" -eq 100 ]
		[ "$(column "$BATS_TEST_TMPDIR/$t" status | sort -u)" = ok ] || { echo "$t"; return 1; }
	done
}
