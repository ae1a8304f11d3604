#!/usr/bin/env bats
# pipelines/gpu-run and pipelines/gpu-kit, the GPU machine's one command
# and its kit, tried here on the CPU backend (BACKEND=cpu, a dry run of the
# same flow) with a few tiny dense rows.

load test_helper

# gpurun OUT [VAR=VALUE...]: dense only, N=3, one check row a precision
gpurun() {
	local out=$1
	shift
	env -u OUT PN_NO_MAKE=1 BACKEND=cpu N=3 CHECK_N=1 TYPES=dense REPS=1 WARMUP=0 \
		MAX_FLOPS=1e6 MAX_BYTES=1e7 STAGES="check collect" "$@" \
		"$PN_ROOT/pipelines/gpu-run" "$out" >"$BATS_TEST_TMPDIR/stdout" 2>"$BATS_TEST_TMPDIR/err"
}

device() { printf 'layer\tbatch\tm\tn\tk\nbmm\t1\t1\t1\t1\n' | pn-time -q -r 1 -w 0 | column device /dev/stdin; }

@test "pipelines/gpu-run checks every precision of each type against the reference" {
	gpurun "$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o/check.tsv" precision | paste -sd,)" = fp32,tf32,fp16,bf16 ]
	[ "$(col "$BATS_TEST_TMPDIR/o/check.tsv" verdict 1)" = PASS ]
	[ "$(col "$BATS_TEST_TMPDIR/o/check.tsv" ok 1)" = 1 ]
}

@test "pipelines/gpu-run runs one pn-time on every file's first row, then every file's second" {
	gpurun "$BATS_TEST_TMPDIR/o" TYPES="dense softmax" CHECK_N=2 STAGES=check
	f=$BATS_TEST_TMPDIR/o/check/all.in
	[ "$(paste -d: <(column "$f" layer) <(column "$f" precision) | paste -sd' ')" = \
	  "dense:fp32 dense:tf32 dense:fp16 dense:bf16 softmax:fp32 softmax:tf32 softmax:fp16 softmax:bf16 dense:fp32 dense:tf32 dense:fp16 dense:bf16 softmax:fp32 softmax:tf32 softmax:fp16 softmax:bf16" ]
	# each type's rows keep their columns, NA under the other's
	[ "$(column "$f" in_features | sed -n 5p)" = NA ]
	[ "$(column "$BATS_TEST_TMPDIR/o/check/softmax-fp32.tsv" layer | sort -u)" = softmax ]
}

@test "pipelines/gpu-run collects N training rows with an optimizer into samples/DEVICE" {
	gpurun "$BATS_TEST_TMPDIR/o"
	d=$BATS_TEST_TMPDIR/o/samples/$(device)
	zcat "$d/dense.tsv.gz" >"$BATS_TEST_TMPDIR/d.tsv"
	[ "$(rows_where_prec fp32 | wc -l)" -eq 3 ]
	[ "$(column "$BATS_TEST_TMPDIR/d.tsv" pass | sort -u)" = train ]
	! column "$BATS_TEST_TMPDIR/d.tsv" optimizer | grep -qx none
	grep -q '^| dense-fp32 | 3 | done |' "$d/README.md"
	grep -qx '| dense-fp32 | 3 | done | ok 3 |' "$d/README.md"
}

rows_where_prec() { awk -F'\t' -v p="$1" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
	$h["precision"] == p' "$BATS_TEST_TMPDIR/d.tsv"; }

@test "pipelines/gpu-run times nothing its deadline leaves no time for and says so" {
	gpurun "$BATS_TEST_TMPDIR/o" BUDGET=16
	grep -q '^| dense-fp32 | 0 | cut after ' "$BATS_TEST_TMPDIR/o/samples/$(device)/README.md"
	[ ! -e "$BATS_TEST_TMPDIR/o/samples/$(device)/dense.tsv.gz" ]
}

@test "pipelines/gpu-run with OUT set leaves one archive and the summary there" {
	mkdir "$BATS_TEST_TMPDIR/dev"
	env OUT="$BATS_TEST_TMPDIR/dev" PN_NO_MAKE=1 BACKEND=cpu N=1 CHECK_N=1 TYPES=dense REPS=1 WARMUP=0 \
		MAX_FLOPS=1e6 STAGES=check "$PN_ROOT/pipelines/gpu-run" "$BATS_TEST_TMPDIR/o" >/dev/null 2>&1
	[ "$(cd "$BATS_TEST_TMPDIR/dev" && echo *)" = "gpu-run.tar.gz summary.txt" ]
	tar -tzf "$BATS_TEST_TMPDIR/dev/gpu-run.tar.gz" | grep -qx './check.tsv'
}

@test "pipelines/gpu-run that ends early still leaves its archive in OUT, saying why" {
	mkdir "$BATS_TEST_TMPDIR/dev"
	run env OUT="$BATS_TEST_TMPDIR/dev" PN_NO_MAKE=1 BACKEND=cpu N=1 CHECK_N=1 TYPES=nosuchtype REPS=1 \
		WARMUP=0 STAGES=check "$PN_ROOT/pipelines/gpu-run" "$BATS_TEST_TMPDIR/o"
	[ "$status" -ne 0 ]
	[ "$(cd "$BATS_TEST_TMPDIR/dev" && echo *)" = gpu-run.tar.gz ]
	tar -xzOf "$BATS_TEST_TMPDIR/dev/gpu-run.tar.gz" ./INCOMPLETE | grep -q '^pipelines/gpu-run ended early, status [1-9]'
}

@test "pipelines/gpu-run refuses an unknown backend (exit 2)" {
	run env PN_NO_MAKE=1 BACKEND=tpu "$PN_ROOT/pipelines/gpu-run" "$BATS_TEST_TMPDIR/o"
	[ "$status" -eq 2 ]
	[ "$output" = "gpu-run: BACKEND must be cuda or cpu, not 'tpu'" ]
}

@test "pipelines/gpu-run exits 3 when the cuda backend cannot run here" {
	if printf 'layer\tbatch\tm\tn\tk\nbmm\t1\t1\t1\t1\n' | pn-time -q -b cuda >/dev/null 2>&1; then
		skip "this machine runs the cuda backend"
	fi
	run env PN_NO_MAKE=1 BACKEND=cuda KIT=/nonexistent "$PN_ROOT/pipelines/gpu-run" "$BATS_TEST_TMPDIR/o"
	[ "$status" -eq 3 ]
	[[ $output == "gpu-run: the cuda backend cannot run here: pn-time: "* ]]
}

@test "pipelines/gpu-kit packs the tools and their libraries but not CUDA's, or exits 3 without CUDA" {
	PN_NO_MAKE=1 run "$PN_ROOT/pipelines/gpu-kit" "$BATS_TEST_TMPDIR/kit"
	if ! ldd "$PN_ROOT/bin/pn-time" | grep -q libcudart; then
		[ "$status" -eq 3 ]
		return
	fi
	[ "$status" -eq 0 ]
	[ "$(cd "$BATS_TEST_TMPDIR/kit/bin" && echo *)" = "pn-featurize pn-sample pn-time" ]
	xz -dc "$BATS_TEST_TMPDIR/kit/libs.tar.xz" | tar -tf - >"$BATS_TEST_TMPDIR/libs"
	grep -qx './libdnnl.so.2' "$BATS_TEST_TMPDIR/libs"
	! grep -Eq 'lib(cudart|cublas|cudnn|c)\.so' "$BATS_TEST_TMPDIR/libs"
	grep -q '^CUDA libraries the GPU machine must have: .*libcudart' "$BATS_TEST_TMPDIR/kit/KIT"
}

@test "pipelines/gpu-run runs the kit's tools" {
	ldd "$PN_ROOT/bin/pn-time" | grep -q libcudart || skip "no CUDA backend in this build: no kit"
	PN_NO_MAKE=1 "$PN_ROOT/pipelines/gpu-kit" "$BATS_TEST_TMPDIR/kit" 2>/dev/null
	gpurun "$BATS_TEST_TMPDIR/o" KIT="$BATS_TEST_TMPDIR/kit"
	grep -q "tools: kit $BATS_TEST_TMPDIR/kit" "$BATS_TEST_TMPDIR/err"
	[ "$(col "$BATS_TEST_TMPDIR/o/check.tsv" verdict 1)" = PASS ]
}
