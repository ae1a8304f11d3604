#!/usr/bin/env bats
# pn-time: every layer type on the cpu backend, bad rows, memory limits
# (oversized rows of every type), the check mode, the CPU spec row, the
# cuda backend where there is one, and -o FILE.part and --resume after a
# run was killed.
load test_helper

TYPES="dense bmm conv2d attention embedding rnn lstm gru layernorm softmax elementwise posenc batchnorm pool xent"
# the types the cuda backend times (not batchnorm, pool, xent)
CUDA_TYPES="dense bmm conv2d attention embedding rnn lstm gru layernorm softmax elementwise posenc"

# small sizes of every layer type, so that a row takes milliseconds
small() {
	case $1 in
	dense) echo "-r batch=1:4 -r in_features=1:32 -r out_features=1:32" ;;
	bmm) echo "-r batch=1:4 -r m=1:16 -r n=1:16 -r k=1:16" ;;
	conv2d) echo "-r batch=1:2 -r image=1:12 -r in_channels=1:4 -r out_channels=1:4" ;;
	attention) echo "-r batch=1:2 -r seq_len=1:8 -r embed_dim=4:32 -r heads=1:4" ;;
	embedding) echo "-r batch=1:2 -r seq_len=1:8 -r vocab=10:100 -r embed_dim=1:32" ;;
	rnn|lstm|gru) echo "-r batch=1:2 -r seq_len=1:6 -r input_size=1:8 -r hidden=1:8 -r layers=1:2" ;;
	layernorm|softmax|elementwise|xent) echo "-r batch=1:2 -r seq_len=1:8 -r dim=1:64" ;;
	posenc) echo "-r batch=1:2 -r seq_len=1:8 -r embed_dim=1:32" ;;
	batchnorm) echo "-r batch=1:4 -r image=1:12 -r in_channels=1:8" ;;
	pool) echo "-r batch=1:2 -r image=1:12 -r in_channels=1:4" ;;
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

@test "pn-time makes a row whose library code raises SIGILL an error and measures the next rows" {
	pn-sample --layer dense -n 3 --seed 4 $(small dense) >"$BATS_TEST_TMPDIR/in"
	PN_TIME_SIGILL_ROW=2 pn-time -q -r 1 -w 0 "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" status | paste -sd' ')" = "ok error ok" ]
	[[ "$(column "$BATS_TEST_TMPDIR/o" message | sed -n 2p)" == "illegal instruction (SIGILL)"* ]]
	[ "$(column "$BATS_TEST_TMPDIR/o" time_ms | sed -n 2p)" = NA ]
}

@test "pn-time --check counts a row whose library code raises SIGILL as failed" {
	pn-sample --layer dense -n 2 --seed 4 $(small dense) >"$BATS_TEST_TMPDIR/in"
	run env PN_TIME_SIGILL_ROW=1 pn-time -q -r 1 -w 0 --check "$BATS_TEST_TMPDIR/in" -o "$BATS_TEST_TMPDIR/o"
	[ "$status" -eq 1 ]
	[[ "$output" == *"check dense: FAIL"* ]]
	[ "$(column "$BATS_TEST_TMPDIR/o" status | paste -sd' ')" = "error ok" ]
}

@test "pn-time names the CPU and its thread count in the device column" {
	printf 'layer\tbatch\tm\tn\tk\nbmm\t2\t3\t4\t5\n' >"$BATS_TEST_TMPDIR/in"
	pn-time -q -r 1 "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	column "$BATS_TEST_TMPDIR/o" device | grep -qE '^[A-Za-z0-9._-]+-1t$'
	pn-time -q -r 1 --device mybox "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" device)" = mybox ]
}

@test "pn-time refuses a --device name that would break its rows: empty, with a tab or a newline" {
	for d in '' $'a\tb' $'a\nb'; do
		run pn-time -d "$d" </dev/null
		[ "$status" -eq 2 ]
		[ "${lines[0]}" = "pn-time: --device needs a non-empty name without tabs or newlines" ]
	done
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

@test "pn-time sums a dense layer's bias gradient with a jit kernel, never oneDNN's reference reduction" {
	printf 'layer\tbatch\tin_features\tout_features\tbias\tpass\toptimizer\ndense\t8\t64\t32\t1\ttrain\tsgd\n' |
		pn-time -q -r 2 -w 1 >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" status)" = ok ]
	[[ "$(column "$BATS_TEST_TMPDIR/o" message)" != *ref:* ]]
}

@test "pn-time runs fp32 softmax, the loss, attention's softmax and layer norm as PyTorch's loops, both passes" {
	# ATen's own kernels, not oneDNN's primitives (rowwise.c): c:softmax
	# and c:softmax_bwd, c:layernorm; never oneDNN's reference
	printf 'layer\tbatch\tseq_len\tdim\tembed_dim\theads\tdropout\tpass\toptimizer\n' >"$BATS_TEST_TMPDIR/in"
	printf 'softmax\t2\t8\t100\tNA\tNA\tNA\ttrain\tnone\n' >>"$BATS_TEST_TMPDIR/in"
	printf 'xent\t2\t8\t100\tNA\tNA\tNA\ttrain\tnone\n' >>"$BATS_TEST_TMPDIR/in"
	printf 'attention\t2\t8\tNA\t32\t2\t0\ttrain\tsgd\n' >>"$BATS_TEST_TMPDIR/in"
	printf 'layernorm\t2\t8\t100\tNA\tNA\tNA\ttrain\tsgd\n' >>"$BATS_TEST_TMPDIR/in"
	pn-time -q -r 2 -w 1 "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" status | paste -sd,)" = ok,ok,ok,ok ]
	column "$BATS_TEST_TMPDIR/o" message >"$BATS_TEST_TMPDIR/m"
	[ "$(sed -n 1p "$BATS_TEST_TMPDIR/m")" = c:softmax,c:softmax_bwd ]
	[ "$(sed -n 2p "$BATS_TEST_TMPDIR/m")" = c:softmax,c:softmax_bwd ]
	[[ "$(sed -n 3p "$BATS_TEST_TMPDIR/m")" == *c:softmax,*c:softmax_bwd* ]]
	[ "$(sed -n 4p "$BATS_TEST_TMPDIR/m")" = c:layernorm ]
	! grep -q ref: "$BATS_TEST_TMPDIR/m"
}

@test "pn-time --check passes layer norm and softmax rows shorter than a vector, with a tail, and of many Welford chunks" {
	# 8 lanes a vector, 16 vectors a chunk of the layer norm's moments
	printf 'layer\tbatch\tseq_len\tdim\tpass\toptimizer\n' >"$BATS_TEST_TMPDIR/in"
	for t in layernorm softmax xent; do
		for d in 1 7 8 129 300 2051; do
			printf '%s\t1\t3\t%s\ttrain\tsgd\n' "$t" "$d" >>"$BATS_TEST_TMPDIR/in"
		done
	done
	pn-time --check -q -r 1 -w 0 "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o" 2>"$BATS_TEST_TMPDIR/err"
	grep -q "check layernorm: PASS (6 rows" "$BATS_TEST_TMPDIR/err"
	grep -q "check softmax: PASS (6 rows" "$BATS_TEST_TMPDIR/err"
	grep -q "check xent: PASS (6 rows" "$BATS_TEST_TMPDIR/err"
}

@test "pn-time --check passes softmax, the loss and attention, both passes, on this CPU" {
	for t in softmax xent attention; do
		pn-sample -l "$t" -n 4 --seed 9 -t 1 -r batch=1:3 -r seq_len=1:40 >"$BATS_TEST_TMPDIR/$t"
		pn-time --check -q "$BATS_TEST_TMPDIR/$t" >/dev/null 2>"$BATS_TEST_TMPDIR/err"
		grep -q "check $t: PASS" "$BATS_TEST_TMPDIR/err"
	done
}

@test "pn-time runs an fp32 dense layer's products on OpenBLAS, as PyTorch's Linear does" {
	printf 'layer\tbatch\tin_features\tout_features\tbias\tpass\toptimizer\ndense\t8\t64\t32\t1\ttrain\tsgd\n' |
		pn-time -q -r 2 -w 1 >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" status)" = ok ]
	[[ "$(column "$BATS_TEST_TMPDIR/o" message)" == openblas:sgemm:?* ]]
}

@test "pn-time runs fp32 bmm and attention's products on OpenBLAS, as PyTorch's bmm and addmm do" {
	printf 'layer\tbatch\tseq_len\tembed_dim\theads\tdropout\tm\tn\tk\tpass\toptimizer\n' >"$BATS_TEST_TMPDIR/in"
	printf 'bmm\t2\tNA\tNA\tNA\tNA\t16\t8\t12\ttrain\tnone\n' >>"$BATS_TEST_TMPDIR/in"
	printf 'attention\t2\t8\t32\t2\t0\tNA\tNA\tNA\ttrain\tsgd\n' >>"$BATS_TEST_TMPDIR/in"
	pn-time -q -r 2 -w 1 "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" status | paste -sd,)" = ok,ok ]
	[[ "$(column "$BATS_TEST_TMPDIR/o" message | sed -n 1p)" == openblas:sgemm:?* ]]
	[[ "$(column "$BATS_TEST_TMPDIR/o" message | sed -n 2p)" == openblas:sgemm:?*,c:softmax* ]]
	! column "$BATS_TEST_TMPDIR/o" message | grep -qE '(^|,)(brg|gemm):'
}

@test "pn-time --check passes bmm rows of one element, below 400 multiply-adds a matrix and above, and thin ones" {
	# below 400 a scalar loop, as PyTorch's bmm; above, sgemm per matrix
	printf 'layer\tbatch\tm\tn\tk\tpass\toptimizer\n' >"$BATS_TEST_TMPDIR/in"
	for s in '1 1 1 1' '3 5 7 9' '2 8 8 8' '2 17 33 9' '4 100 1 50' '1 1 300 20' '3 40 2 1'; do
		set -- $s
		printf 'bmm\t%s\t%s\t%s\t%s\ttrain\tnone\n' "$1" "$2" "$3" "$4" >>"$BATS_TEST_TMPDIR/in"
	done
	pn-time --check -q -r 1 -w 0 "$BATS_TEST_TMPDIR/in" >/dev/null 2>"$BATS_TEST_TMPDIR/err"
	grep -q "check bmm: PASS (7 rows" "$BATS_TEST_TMPDIR/err"
}

# Prescott's SSE3 kernels run on every x86-64 CPU
@test "pn-time names the kernels OpenBLAS runs a dense layer's products on in its message" {
	printf 'layer\tbatch\tin_features\tout_features\tbias\tpass\toptimizer\ndense\t8\t64\t32\t1\tfwd\tnone\n' |
		OPENBLAS_CORETYPE=Prescott pn-time -q -r 2 -w 1 >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" message)" = openblas:sgemm:Prescott ]
}

@test "pn-time runs a conv2d on plain tensors and times the reorders into the primitive's layouts, as a framework does" {
	# 16 channels: every x86 jit kernel blocks them (nChw16c or nChw8c);
	# the message lists the reorders' implementations beside the conv's
	printf 'layer\tbatch\tin_channels\tout_channels\tkernel\timage\tstride\tpadding\tbias\nconv2d\t2\t16\t16\t3\t8\t1\t1\t0\n' |
		pn-time -q -r 1 -w 0 >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" status)" = ok ]
	[[ "$(column "$BATS_TEST_TMPDIR/o" message)" == *,* ]]
}

@test "pn-time draws a dropout's noise as a tensor of the input's type, as PyTorch's CPU dropout does, and keeps it for the backward pass" {
	# 4 x 16 x 64 = 4096 fp32 elements: x, the noise and y forward; dy
	# and dx besides in training, the noise kept
	printf 'layer\top\tbatch\tseq_len\tdim\tdropout\tpass\toptimizer\n' >"$BATS_TEST_TMPDIR/in"
	printf 'elementwise\tdropout\t4\t16\t64\t0.3\t%s\tnone\n' fwd train >>"$BATS_TEST_TMPDIR/in"
	pn-time -q -r 1 -w 0 "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" mem_bytes | paste -sd' ')" = "49152 81920" ]
	run pn-time --check -q -r 1 -w 0 "$BATS_TEST_TMPDIR/in"
	[ "$status" -eq 0 ]
}

@test "pn-time times the loss as PyTorch's cross-entropy runs it, the likelihood's gradient a tensor of the logits' size" {
	# 2 x 2 tokens of 8 classes, fp32: the logits and the log-probabilities
	# (128 bytes each), the loss (4) and the int32 targets (16) forward;
	# in training also the likelihood's gradient and the logits' (128 each)
	printf 'layer\tbatch\tseq_len\tdim\tpass\toptimizer\n' >"$BATS_TEST_TMPDIR/in"
	printf 'xent\t2\t2\t8\t%s\tnone\n' fwd train >>"$BATS_TEST_TMPDIR/in"
	pn-time -q -r 1 -w 0 "$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" mem_bytes | paste -sd' ')" = "276 532" ]
	[ "$(column "$BATS_TEST_TMPDIR/o" status | paste -sd' ')" = "ok ok" ]
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
	[ "$(column "$BATS_TEST_TMPDIR/o" message)" = "precision fp16 is not supported by the cpu backend (fp32 and bf16)" ]
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

@test "pn-time times the gated ops silu_mul and gelu_mul, forward and train, and --check passes them" {
	pn-sample --layer elementwise -n 3 --seed 2 --grid op=silu_mul,gelu_mul --grid optimizer=none,sgd $(small elementwise) >"$BATS_TEST_TMPDIR/g"
	run bash -c "pn-time -q -r 1 -w 0 --check '$BATS_TEST_TMPDIR/g' 2>&1 >'$BATS_TEST_TMPDIR/o'"
	[ "$status" -eq 0 ]
	[[ "$output" == "pn-time: check elementwise: PASS (12 rows, max relative error "* ]]
	[ "$(column "$BATS_TEST_TMPDIR/o" status | sort -u)" = ok ]
	# as PyTorch runs act(x1) * x2 on the CPU: oneDNN's eltwise and binary
	run column "$BATS_TEST_TMPDIR/o" message
	[[ "$(sort -u <<<"$output")" == jit:*,jit:* ]]
	# a train row times its backward too
	[ "$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		{ b = $c["time_bwd_ms"]; print $c["pass"], (b == "NA" ? b : (b + 0 > 0)) }' "$BATS_TEST_TMPDIR/o" | sort -u | paste -sd,)" = "fwd NA,train 1" ]
}

@test "pn-time --check adds the relative error of every row" {
	pn-sample --layer dense -n 2 $(small dense) | pn-time -q -r 1 --check 2>/dev/null >"$BATS_TEST_TMPDIR/o"
	column "$BATS_TEST_TMPDIR/o" check_rel_err | awk '!($1 >= 0 && $1 < 1e-3) {exit 1}'
}

@test "pn-time --check compares the cuda backend with the cpu backend" {
	if ! has_cuda_device; then
		skip "no CUDA device"
	fi
	for t in $CUDA_TYPES; do
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
	# the spec row's columns are the shipped table's first columns (the
	# table's later per-unit peak columns are optional: found by name)
	[[ "$(head -1 "$PN_ROOT/gpuspecs/gpus.tsv")"$'\t' == "$(head -1 "$BATS_TEST_TMPDIR/spec")"$'\t'* ]]
	[ "$(wc -l <"$BATS_TEST_TMPDIR/spec")" -eq 2 ]
	# cached: the second call reads the same row back
	[ -f "$XDG_CACHE_HOME/pn/cpu-spec-1t.tsv" ]
	pn-time --cpu-spec | cmp - "$BATS_TEST_TMPDIR/spec"
	pn-sample --layer bmm -n 2 $(small bmm) | pn-time -q -r 1 |
		pn-featurize --gpuspecs "$BATS_TEST_TMPDIR/spec" >"$BATS_TEST_TMPDIR/f"
	column "$BATS_TEST_TMPDIR/f" gpu_fp32_gflops | awk '!($1 > 0) {exit 1}'
}

@test "pn-time --cpu-spec writes the spec table's whole header, measuring again a row cached under another" {
	export XDG_CACHE_HOME="$BATS_TEST_TMPDIR/cache"
	mkdir -p "$XDG_CACHE_HOME/pn"
	name=$(pn-time --cpu-spec | awk -F'\t' 'NR == 2 { print $1 }')
	# a row cached by an older pn-time, under the 22 first columns only
	{ head -1 "$PN_ROOT/gpuspecs/gpus.tsv" | cut -f1-22
	  printf '%s\tx\tAMD\tCPU\tNA\t1\t1\tNA\t1000\t1\tNA\tNA\t1\t1\t1.5\tNA\tNA\tNA\tNA\tNA\tNA\told\n' "$name"
	} >"$XDG_CACHE_HOME/pn/cpu-spec-1t.tsv"
	# measured again: stderr may say what OpenBLAS chose (not this test's)
	run bash -c 'pn-time --cpu-spec 2>/dev/null'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(head -1 "$PN_ROOT/gpuspecs/gpus.tsv")" ]
	[ "$(printf '%s\n' "${lines[1]}" | cut -f22)" != old ]
	[ "$(printf '%s\n' "${lines[1]}" | cut -f23-32)" = "$(printf 'NA\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA')" ]
}

# listed_llc: the size in MB of cpu0's last-level cache as sysfs lists it
# (the highest level's), as pn writes numbers; empty if none
listed_llc() {
	local d best= top=0
	for d in /sys/devices/system/cpu/cpu0/cache/index*; do
		[ -r "$d/level" ] && [ -r "$d/size" ] || continue
		[ "$(cat "$d/level")" -ge "$top" ] || continue
		top=$(cat "$d/level")
		best=$(awk '{ v = $1 + 0; if ($1 ~ /K$/) v /= 1024; if ($1 ~ /G$/) v *= 1024; printf "%.3g\n", v }' "$d/size")
	done
	echo "$best"
}

@test "pn-time --cpu-spec measures the last-level cache one thread gets, at most the size the system lists" {
	export XDG_CACHE_HOME="$BATS_TEST_TMPDIR/cache"
	pn-time --cpu-spec >"$BATS_TEST_TMPDIR/spec" 2>/dev/null
	l2=$(column "$BATS_TEST_TMPDIR/spec" l2_mb)
	src=$(column "$BATS_TEST_TMPDIR/spec" source)
	listed=$(listed_llc)
	sys=${listed:+$listed MB}
	sys=${sys:-no size}
	if [[ "$src" == *"l2_mb the last-level cache one thread reads from"* ]]; then
		[[ "$src" == *"the system lists $sys)"* ]]
		awk -v c="$l2" -v l="${listed:-1e300}" 'BEGIN { exit !(c > 0 && c <= l) }'
	else
		[[ "$src" == *"l2_mb the last-level cache as the system lists it ($sys: "* ]]
		[ "$l2" = "${listed:-1}" ]
	fi
}

@test "pn-time --cpu-spec measures again a row cached by a pn that read its cache size from the system" {
	export XDG_CACHE_HOME="$BATS_TEST_TMPDIR/cache"
	pn-time --cpu-spec >"$BATS_TEST_TMPDIR/spec" 2>/dev/null
	f=$XDG_CACHE_HOME/pn/cpu-spec-1t.tsv
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; print; next }
		{ $c["l2_mb"] = 12345; sub(/l2_mb the last-level cache [^)]*\)/, "l2_mb holds the last-level cache", $c["source"]); print }' \
		"$BATS_TEST_TMPDIR/spec" >"$f"
	grep -q 'l2_mb holds the last-level cache' "$f"
	pn-time --cpu-spec >"$BATS_TEST_TMPDIR/again" 2>/dev/null
	[ "$(column "$BATS_TEST_TMPDIR/again" l2_mb)" != 12345 ]
	[[ "$(column "$BATS_TEST_TMPDIR/again" source)" == *"l2_mb the last-level cache "* ]]
}

@test "pn-time --cpu-spec measures again a cached row whose measurement no measurement gives: below 0, nan" {
	export XDG_CACHE_HOME="$BATS_TEST_TMPDIR/cache"
	pn-time --cpu-spec >"$BATS_TEST_TMPDIR/spec" 2>/dev/null
	f=$XDG_CACHE_HOME/pn/cpu-spec-1t.tsv
	for v in -5 nan; do
		awk -F'\t' -v OFS='\t' -v v="$v" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; print; next }
			{ $c["fp32_gflops"] = v; print }' "$BATS_TEST_TMPDIR/spec" >"$f"
		pn-time --cpu-spec >"$BATS_TEST_TMPDIR/again" 2>/dev/null
		awk -v x="$(column "$BATS_TEST_TMPDIR/again" fp32_gflops)" 'BEGIN { exit !(x ~ /^[0-9.]+$/ && x + 0 > 0) }'
	done
}

@test "pn-time --cpu-spec gives OpenBLAS's sgemm rate, named in its source, in blas_fp32_gflops" {
	export XDG_CACHE_HOME="$BATS_TEST_TMPDIR/cache"
	pn-time --cpu-spec >"$BATS_TEST_TMPDIR/spec" 2>/dev/null
	b=$(column "$BATS_TEST_TMPDIR/spec" blas_fp32_gflops)
	src=$(column "$BATS_TEST_TMPDIR/spec" source)
	[[ "$src" == *", OpenBLAS $b (its "*" kernels"* ]]
	awk -v b="$b" -v f="$(column "$BATS_TEST_TMPDIR/spec" fp32_gflops)" 'BEGIN { exit !(b > 0 && b <= f) }'
}

# spec_on CORE: pn-time --cpu-spec measured afresh with OpenBLAS's kernels
# forced to CORE (OPENBLAS_CORETYPE): Prescott's are SSE3 only, as on a CPU
# that OpenBLAS 0.3.21 does not know; Haswell's use AVX2.  Output and
# stderr in $T/out and $T/err.
spec_on() {
	grep -qw avx2 /proc/cpuinfo || skip "this CPU has no AVX2"
	export XDG_CACHE_HOME="$BATS_TEST_TMPDIR/cache" OPENBLAS_CORETYPE=$1
	T=$BATS_TEST_TMPDIR
	run_io pn-time --cpu-spec --remeasure
}

@test "pn-time --cpu-spec warns when OpenBLAS runs kernels without the CPU's AVX2" {
	spec_on Prescott
	[ "$status" -eq 0 ]
	[ "$(wc -l <"$T/err")" -eq 1 ]
	[[ "$(cat "$T/err")" == "pn-time: warning: OpenBLAS runs its Prescott kernels on this CPU, which has AVX2 "*"OPENBLAS_CORETYPE=SkylakeX (AVX-512) or Haswell (AVX2)"*"selects faster kernels" ]]
	[[ "$(column "$T/out" source)" == *"(its Prescott kernels, without the CPU's AVX2; in blas_fp32_gflops)"* ]]
}

@test "pn-time --cpu-spec says nothing of OpenBLAS when its kernels use the CPU's AVX2" {
	spec_on Haswell
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	[[ "$(column "$T/out" source)" == *"(its Haswell kernels; in blas_fp32_gflops)"* ]]
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

# ---- oversized rows: status oom, and the run goes on ----------------------

# three rows of layer type $1, the middle one with batch $2; training
# rows, so that the backward pass is built too
three() {
	pn-sample --layer "$1" -n 3 --seed 2 --train-ratio 1 $(small "$1") |
		awk -F'\t' -v OFS='\t' -v b="$2" 'NR==1{for(i=1;i<=NF;i++)if($i=="batch")k=i} NR==3{$k=b} {print}'
}

# pn-time on three rows of $1 with a middle row of batch 1e12, options $2...
oversized() {
	local t=$1
	shift
	three "$t" 1000000000000 >"$BATS_TEST_TMPDIR/in"
	[ "$(column "$BATS_TEST_TMPDIR/in" batch | sed -n 2p)" = 1000000000000 ]
	run pn-time -q -r 1 -w 0 "$@" "$BATS_TEST_TMPDIR/in"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}

oom_in_the_middle() {
	local f=$1
	[ "$(column "$f" status | paste -sd,)" = ok,oom,ok ] || { cat "$f"; return 1; }
	[ "$(column "$f" message | sed -n 2p)" = "needs more than --mem-limit 1000000000 bytes" ]
	column "$f" mem_bytes | sed -n 2p | awk '!($1 > 1e9) {exit 1}'
}

@test "pn-time gives an oversized dense row status oom and goes on" {
	oversized dense -m 1G -o "$BATS_TEST_TMPDIR/o"
	oom_in_the_middle "$BATS_TEST_TMPDIR/o"
}

@test "pn-time gives an oversized bmm row status oom and goes on" {
	oversized bmm -m 1G -o "$BATS_TEST_TMPDIR/o"
	oom_in_the_middle "$BATS_TEST_TMPDIR/o"
}

@test "pn-time gives an oversized layernorm row status oom and goes on" {
	oversized layernorm -m 1G -o "$BATS_TEST_TMPDIR/o"
	oom_in_the_middle "$BATS_TEST_TMPDIR/o"
}

@test "pn-time gives an oversized softmax row status oom and goes on" {
	oversized softmax -m 1G -o "$BATS_TEST_TMPDIR/o"
	oom_in_the_middle "$BATS_TEST_TMPDIR/o"
}

@test "pn-time gives an oversized row of every layer type status oom" {
	for t in $TYPES; do
		oversized "$t" -m 1G -o "$BATS_TEST_TMPDIR/o" || { echo "$t"; return 1; }
		oom_in_the_middle "$BATS_TEST_TMPDIR/o" || { echo "$t"; return 1; }
	done
}

@test "pn-time gives an oversized row status oom under its default memory limit" {
	oversized dense
	[ "$(printf '%s\n' "${lines[@]}" | column /dev/stdin status | paste -sd,)" = ok,oom,ok ]
	[[ "$(printf '%s\n' "${lines[@]}" | column /dev/stdin message | sed -n 2p)" == "needs more than --mem-limit "*" bytes" ]]
}

@test "pn-time --check gives an oversized row status oom, not a failed check" {
	three dense 1000000000000 >"$BATS_TEST_TMPDIR/in"
	run bash -c "pn-time -q -r 1 -w 0 -m 1G --check '$BATS_TEST_TMPDIR/in' 2>'$BATS_TEST_TMPDIR/err' >'$BATS_TEST_TMPDIR/o'"
	[ "$status" -eq 0 ]
	oom_in_the_middle "$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" check_rel_err | sed -n 2p)" = NA ]
	[[ "$(cat "$BATS_TEST_TMPDIR/err")" == "pn-time: check dense: PASS (2 rows, max relative error "* ]]
}

@test "pn-time gives a row too large to size status oom with the bytes it needs" {
	# 4e15 x 4e15 floats: beyond 64-bit sizes
	printf 'layer\tbatch\tin_features\tout_features\tpass\ndense\t4\t4000000000000000\t4000000000000000\ttrain\n' >"$BATS_TEST_TMPDIR/in"
	run pn-time -q -r 1 -w 0 -m 0 "$BATS_TEST_TMPDIR/in"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[1]}" | cut -f17-)" = "$(printf '6.4000000000000145e+31\toom\tneeds 6.4e+31 bytes')" ]
}

# ---- -o FILE.part and --resume ---------------------------------------------

# dense rows: $1 rows, then the lines given as more arguments
dense_rows() {
	local n=$1
	shift
	printf 'layer\tbatch\tin_features\tout_features\n'
	for i in $(seq "$n"); do printf 'dense\t%d\t%d\t8\n' $((i % 3 + 1)) $((i + 3)); done
	for l in "$@"; do printf '%s\n' "$l"; done
}

# a run that dies at a bad line after 3 rows: out.tsv.part keeps them
died_after_3() {
	T=$BATS_TEST_TMPDIR
	dense_rows 3 "dense	1	2" >"$T/bad"
	dense_rows 5 >"$T/in"
	run bash -c "pn-time -q -r 1 -w 0 -o '$T/out.tsv' '$T/bad' 2>&1"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-time: $T/bad:5: expected 4 fields, found 3" ]
}

@test "pn-time -o keeps the rows a run measured before it died in FILE.part" {
	died_after_3
	[ ! -e "$T/out.tsv" ]
	[ "$(wc -l <"$T/out.tsv.part")" -eq 4 ]
	[ "$(column "$T/out.tsv.part" in_features | paste -sd,)" = 4,5,6 ]
	[ "$(column "$T/out.tsv.part" status | paste -sd,)" = ok,ok,ok ]
	[ "$(cat "$T/out.tsv.part.settings")" = "pn-time 0.1.0: backend cpu, threads 1, reps 1, warmup 0, seed 1, warm, rep-ms 1, clock cpu, mem-limit auto" ]
}

@test "pn-time --resume measures only the rows not yet in FILE.part" {
	died_after_3
	cp "$T/out.tsv.part" "$T/kept"
	run bash -c "pn-time -q -r 1 -w 0 --resume '$T/out.tsv' '$T/in' 2>&1"
	[ "$status" -eq 0 ]
	[ "$output" = "pn-time: $T/out.tsv.part: resuming after 3 rows" ]
	[ ! -e "$T/out.tsv.part" ]
	[ ! -e "$T/out.tsv.part.settings" ]
	[ "$(column "$T/out.tsv" in_features | paste -sd,)" = 4,5,6,7,8 ]
	head -4 "$T/out.tsv" | cmp - "$T/kept"
}

@test "pn-time --resume drops a last line cut short and measures its row again" {
	died_after_3
	truncate -s -9 "$T/out.tsv.part"
	run bash -c "pn-time -q -r 1 -w 0 --resume '$T/out.tsv' '$T/in' 2>&1"
	[ "$status" -eq 0 ]
	[ "$output" = "pn-time: $T/out.tsv.part: resuming after 2 rows (a last line cut short dropped)" ]
	[ "$(column "$T/out.tsv" in_features | paste -sd,)" = 4,5,6,7,8 ]
	[ "$(column "$T/out.tsv" status | paste -sd,)" = ok,ok,ok,ok,ok ]
}

@test "pn-time --resume refuses an input whose rows are not those of FILE.part" {
	died_after_3
	dense_rows 5 | sed '3s/\t5\t/\t9\t/' >"$T/other"
	run bash -c "pn-time -q -r 1 -w 0 --resume '$T/out.tsv' '$T/other' 2>&1"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-time: $T/out.tsv.part:3: column 'in_features': '5', but '9' in $T/other:3: not the rows of this input" ]
	[ "$(wc -l <"$T/out.tsv.part")" -eq 4 ]
}

@test "pn-time --resume refuses an input with fewer rows than FILE.part" {
	died_after_3
	dense_rows 2 >"$T/short"
	run bash -c "pn-time -q -r 1 -w 0 --resume '$T/out.tsv' '$T/short' 2>&1"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-time: $T/out.tsv.part:4: more rows than the input $T/short" ]
}

@test "pn-time --resume refuses other settings" {
	died_after_3
	run bash -c "pn-time -q -r 2 -w 0 --resume '$T/out.tsv' '$T/in' 2>&1"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-time: $T/out.tsv.part: made with other settings: 'pn-time 0.1.0: backend cpu, threads 1, reps 1, warmup 0, seed 1, warm, rep-ms 1, clock cpu, mem-limit auto', not 'pn-time 0.1.0: backend cpu, threads 1, reps 2, warmup 0, seed 1, warm, rep-ms 1, clock cpu, mem-limit auto'; resume with the same options" ]
}

@test "pn-time --resume refuses a partial output made without --check" {
	died_after_3
	run bash -c "pn-time -q -r 1 -w 0 --check --resume '$T/out.tsv' '$T/in' 2>&1"
	[ "$status" -eq 1 ]
	[[ "$output" == "pn-time: $T/out.tsv.part: made with other settings: "*"mem-limit auto', not "*"mem-limit auto, check'; resume with the same options" ]]
}

@test "pn-time -o refuses to start beside the FILE.part of another run" {
	died_after_3
	run bash -c "pn-time -q -r 1 -w 0 -o '$T/out.tsv' '$T/in' 2>&1"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-time: $T/out.tsv.part: the rows of a run that did not finish: continue it with --resume $T/out.tsv, or remove it" ]
	[ "$(wc -l <"$T/out.tsv.part")" -eq 4 ]
}

@test "pn-time -o into a directory that does not exist names the output FILE" {
	T=$BATS_TEST_TMPDIR
	dense_rows 1 >"$T/in"
	run bash -c "pn-time -q -r 1 -w 0 -o '$T/nodir/out.tsv' '$T/in' 2>&1"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-time: $T/nodir/out.tsv: No such file or directory" ]
}

@test "pn-time --resume without a partial output says so" {
	T=$BATS_TEST_TMPDIR
	dense_rows 2 >"$T/in"
	run bash -c "pn-time -q -r 1 -w 0 --resume '$T/out.tsv' '$T/in' 2>&1"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-time: $T/out.tsv.part: No such file or directory" ]
	pn-time -q -r 1 -w 0 -o "$T/out.tsv" "$T/in"
	run bash -c "pn-time -q -r 1 -w 0 --resume '$T/out.tsv' '$T/in' 2>&1"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-time: $T/out.tsv: complete: there is nothing to resume (no $T/out.tsv.part)" ]
}

@test "pn-time --resume and -o must name the same file" {
	run bash -c "pn-time --resume a.tsv -o b.tsv 2>&1 </dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-time: -o b.tsv: --resume a.tsv writes to a.tsv itself" ]
}

@test "pn-time -o leaves only FILE after a run that succeeds" {
	T=$BATS_TEST_TMPDIR
	dense_rows 2 >"$T/in"
	pn-time -q -r 1 -w 0 -o "$T/out.tsv" "$T/in"
	[ "$(ls "$T")" = "$(printf 'in\nout.tsv')" ]
	[ "$(wc -l <"$T/out.tsv")" -eq 3 ]
}

# issue 14 item 2: an output is written through a link, never replaces it
@test "pn-time -o writes through a symbolic link and keeps the link" {
	T=$BATS_TEST_TMPDIR
	dense_rows 2 >"$T/in"
	mkdir "$T/d"
	: >"$T/d/real.tsv"
	ln -s d/real.tsv "$T/link.tsv"
	pn-time -q -r 1 -w 0 -o "$T/link.tsv" "$T/in"
	[ -L "$T/link.tsv" ]
	[ "$(wc -l <"$T/d/real.tsv")" -eq 3 ]
	[ "$(ls "$T/d")" = real.tsv ]
}

@test "pn-time -o writes into a character device and leaves it one" {
	T=$BATS_TEST_TMPDIR
	dense_rows 2 >"$T/in"
	pn-time -q -r 1 -w 0 -o /dev/null "$T/in"
	[ -c /dev/null ]
	[ ! -e /dev/null.part ]
}

@test "pn-time -o leaves nothing after a run that dies before its first row" {
	T=$BATS_TEST_TMPDIR
	dense_rows 0 >"$T/in"
	run pn-time -q -r 1 -w 0 -o "$T/out.tsv" "$T/in"
	[ "$status" -eq 1 ]
	[ "$(ls "$T")" = in ]
}

@test "pn-time keeps the rows of a run killed with SIGKILL and --resume measures each other row once" {
	T=$BATS_TEST_TMPDIR
	# 400 rows of about 20 ms each
	pn-sample --layer dense -n 400 --seed 3 -r batch=1:4 -r in_features=1:32 -r out_features=1:32 >"$T/in"
	pn-time -q -r 10 -w 1 --rep-ms 2 -o "$T/out.tsv" "$T/in" &
	pid=$!
	for i in $(seq 300); do
		[ -f "$T/out.tsv.part" ] && [ "$(wc -l <"$T/out.tsv.part")" -gt 10 ] && break
		sleep 0.1
	done
	kill -9 "$pid"
	wait "$pid" || true
	[ ! -e "$T/out.tsv" ]
	# the complete lines the killed run left
	n=$(wc -l <"$T/out.tsv.part")
	head -n "$n" "$T/out.tsv.part" >"$T/kept"
	[ "$n" -gt 10 ] && [ "$n" -lt 401 ]
	run bash -c "pn-time -q -r 10 -w 1 --rep-ms 2 --resume '$T/out.tsv' '$T/in' 2>&1"
	[ "$status" -eq 0 ]
	[[ "$output" == "pn-time: $T/out.tsv.part: resuming after $((n - 1)) rows"* ]]
	# every input row once, in order; the kept rows as they were (a row
	# measured again would have other times)
	[ "$(wc -l <"$T/out.tsv")" -eq 401 ]
	diff <(cut -f1-10 "$T/in") <(cut -f1-10 "$T/out.tsv")
	head -n "$n" "$T/out.tsv" | cmp - "$T/kept"
	[ "$(column "$T/out.tsv" status | sort -u)" = ok ]
}

@test "pn-time --check --resume counts the kept rows in its check report" {
	T=$BATS_TEST_TMPDIR
	dense_rows 3 "dense	1	2" >"$T/bad"
	dense_rows 5 >"$T/in"
	run bash -c "pn-time -q -r 1 -w 0 --check -o '$T/out.tsv' '$T/bad' 2>/dev/null"
	[ "$status" -eq 1 ]
	run bash -c "pn-time -q -r 1 -w 0 --check --resume '$T/out.tsv' '$T/in' 2>&1"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "pn-time: $T/out.tsv.part: resuming after 3 rows" ]
	[[ "${lines[1]}" == "pn-time: check dense: PASS (5 rows, max relative error "* ]]
	[ "$(column "$T/out.tsv" check_rel_err | awk '$1 >= 0' | wc -l)" -eq 5 ]
}
