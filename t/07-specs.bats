#!/usr/bin/env bats
# pn-specs and the shipped GPU table.
load test_helper

@test "pn-specs prints every row of the shipped table" {
	run pn-specs
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq "$(wc -l <"$PN_ROOT/gpuspecs/gpus.tsv")" ]
}

@test "the shipped table has at least 25 accelerators" {
	[ "$(tail -n +2 "$PN_ROOT/gpuspecs/gpus.tsv" | wc -l)" -ge 25 ]
}

@test "the shipped table knows every GPU of PreNeT and NeuSight by its CUDA name" {
	for n in 'Tesla P4' 'Tesla P100-PCIE-16GB' 'Tesla T4' 'Tesla V100-PCIE-32GB' \
		'NVIDIA RTX A4000' 'NVIDIA L4' 'NVIDIA GeForce RTX 4090' \
		'NVIDIA A100-PCIE-40GB' 'NVIDIA A100-SXM4-40GB' 'NVIDIA A100 80GB PCIe' \
		'NVIDIA H100 80GB HBM3' 'AMD Instinct MI100' 'AMD Instinct MI210' \
		'AMD Instinct MI250' P4 P100 T4 V100 RTXA4000 L4 RTX4090; do
		pn-specs "$n" >/dev/null || { echo "$n"; return 1; }
	done
}

@test "pn-specs finds a row by alias, ignoring case, punctuation and brand" {
	run pn-specs tesla_t4
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[1]}" | cut -f1)" = T4 ]
}

@test "pn-specs keeps the order of the names given" {
	run pn-specs L4 T4
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | cut -f1 | paste -sd,)" = name,L4,T4 ]
}

@test "pn-specs suggests the closest names for an unknown GPU" {
	run bash -c 'pn-specs A100-80 2>&1 >/dev/null'
	[ "$status" -eq 1 ]
	[[ "$output" == "pn-specs: unknown device 'A100-80' in "*" (closest: "* ]]
	[[ "$output" == *A100-PCIE-80GB* ]]
	[[ "$output" == *A100-SXM4-80GB* ]]
}

@test "pn-specs reads another table with --gpuspecs" {
	run pn-specs --gpuspecs "$FIX/featurize/gpus.tsv"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | cut -f1 | paste -sd,)" = name,TESTGPU,SLOWGPU ]
}

@test "pn-specs round-trips the table it reads" {
	run pn-specs --gpuspecs "$FIX/featurize/gpus.tsv" -o "$BATS_TEST_TMPDIR/out"
	[ "$status" -eq 0 ]
	cmp "$BATS_TEST_TMPDIR/out" "$FIX/featurize/gpus.tsv"
}

@test "pn-specs rejects a table row without a required value" {
	sed '2s/\t100\t6400\t/\tNA\t6400\t/' "$FIX/featurize/gpus.tsv" >"$BATS_TEST_TMPDIR/g"
	run bash -c "pn-specs --gpuspecs '$BATS_TEST_TMPDIR/g' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-specs: $BATS_TEST_TMPDIR/g:2: column 'sms': 'TESTGPU' needs a value" ]
}

@test "pn-specs rejects a table where two rows share a name" {
	{ cat "$FIX/featurize/gpus.tsv"; sed -n 2p "$FIX/featurize/gpus.tsv" | sed 's/^TESTGPU\tTest GPU One;TG1/OTHER\ttest-gpu-one/'; } >"$BATS_TEST_TMPDIR/g"
	run bash -c "pn-specs --gpuspecs '$BATS_TEST_TMPDIR/g' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-specs: $BATS_TEST_TMPDIR/g:4: 'OTHER' shares a name with 'TESTGPU'" ]
}

@test "pn-specs rejects every impossible value in the table, naming file, line and column" {
	run "$FIX/specs/reject" "$FIX/featurize/gpus.tsv" "$BATS_TEST_TMPDIR" pn-specs
	[ "$status" -eq 0 ]
}

@test "pn-specs finds no row for a name without a letter or digit" {
	run bash -c "pn-specs --gpuspecs '$FIX/featurize/gpus.tsv' - 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-specs: unknown device '-' in $FIX/featurize/gpus.tsv (closest: TESTGPU, SLOWGPU); pass --gpuspecs FILE with a table that has it (pn-time --cpu-spec -o FILE writes one for a CPU)" ]
}

@test "pn-specs prints a row for every name given, however many" {
	run pn-specs --gpuspecs "$FIX/featurize/gpus.tsv" $(for i in $(seq 70); do echo TG1; done) SLOWGPU
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 72 ]
	[ "$(printf '%s\n' "${lines[71]}" | cut -f1)" = SLOWGPU ]
}

@test "pn-specs --detect exits 3 when no CUDA device or backend is there" {
	if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
		skip "a CUDA device is present"
	fi
	run bash -c 'pn-specs --detect 2>&1 >/dev/null'
	[ "$status" -eq 3 ]
	[[ "$output" == "pn-specs: "*"CUDA"* ]]
}

@test "pn-specs --detect prints this machine's GPU" {
	command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 ||
		skip "no CUDA device"
	run pn-specs --detect
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -ge 2 ]
}

@test "pn-specs --detect takes no names" {
	run pn-specs --detect T4
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-specs: --detect takes no NAME" ]
}

# ---- the per-unit peak columns and the unit each op runs on ---------------

U="$FIX/featurize/units-gpus.tsv"

@test "pn-specs prints the nine per-unit peak columns after source, then fp32_lanes and blas_fp32_gflops" {
	run pn-specs --gpuspecs "$U" CDNA
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(head -1 "$PN_ROOT/gpuspecs/gpus.tsv")" ]
	[ "$(printf '%s\n' "${lines[1]}" | cut -f22-)" = "$(printf 'made up: a CDNA2 GPU with FP32 matrix cores\t22000\tNA\tNA\t44000\t44000\tNA\tNA\t180000\t1700\tNA\tNA')" ]
}

@test "pn-specs round-trips a table with every per-unit peak column" {
	run pn-specs --gpuspecs "$U" -o "$BATS_TEST_TMPDIR/out"
	[ "$status" -eq 0 ]
	cmp "$BATS_TEST_TMPDIR/out" "$U"
}

@test "pn-specs reads a table without the per-unit columns as NA in each" {
	cut -f1-22 "$U" >"$BATS_TEST_TMPDIR/g"
	run pn-specs --gpuspecs "$BATS_TEST_TMPDIR/g" AMPERE
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "${lines[1]}" | cut -f15-18,23-)" = "$(printf '19000\t150000\t300000\t290000\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA\tNA')" ]
}

@test "pn-specs rejects a table without a column that is not a per-unit peak" {
	cut -f1-20,22- "$U" >"$BATS_TEST_TMPDIR/g"
	run bash -c "pn-specs --gpuspecs '$BATS_TEST_TMPDIR/g' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-specs: $BATS_TEST_TMPDIR/g:1: missing column 'price_usd_h'" ]
}

# units.tsv gives, per GPU, kind (gemm: dense bmm conv2d attention rnn lstm
# gru; vector: the other types) and precision, the column and peak that
# gpuspecs/README.md's rules pick: tensor/matrix cores for half-precision
# GEMMs, TF32 only for tf32 rows, CDNA's FP32 matrix cores for fp32 GEMMs,
# the half vector rate only where it beats FP32.
@test "pn-specs --units gives each layer type and precision the unit of gpuspecs/README.md" {
	run pn-specs --gpuspecs "$U" --units
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(printf 'device\tlayer\tprecision\tcolumn\tpeak_gflops')" ]
	[ "${#lines[@]}" -eq $((1 + 3 * 16 * 4)) ]
	tail -n +2 "$FIX/featurize/units.tsv" | awk -F'\t' -v OFS='\t' '
		{ n = split($2 == "gemm" ? "dense bmm conv2d attention rnn lstm gru" :
			    "embedding layernorm softmax elementwise posenc mem batchnorm pool xent", t, " ")
		  for (i = 1; i <= n; i++) print $1, t[i], $3, $4, $5 }' |
		sort >"$BATS_TEST_TMPDIR/want"
	printf '%s\n' "${lines[@]:1}" | sort | diff - "$BATS_TEST_TMPDIR/want"
}

@test "pn-specs --units on the shipped table: A100 fp16 GEMMs on tensor cores, MI210 fp32 GEMMs on matrix cores, P4 fp16 in FP32" {
	run pn-specs --units A100-SXM4-40GB MI210 P4
	[ "$status" -eq 0 ]
	printf '%s\n' "${lines[@]}" | grep -Fx "$(printf 'A100-SXM4-40GB\tdense\tfp16\tfp16_gflops\t312000')"
	printf '%s\n' "${lines[@]}" | grep -Fx "$(printf 'A100-SXM4-40GB\tdense\tfp32\tfp32_gflops\t19492')"
	printf '%s\n' "${lines[@]}" | grep -Fx "$(printf 'A100-SXM4-40GB\tlayernorm\tbf16\tbf16_vec_gflops\t39000')"
	printf '%s\n' "${lines[@]}" | grep -Fx "$(printf 'MI210\tconv2d\tfp32\tfp32_tc_gflops\t45300')"
	printf '%s\n' "${lines[@]}" | grep -Fx "$(printf 'P4\tdense\tfp16\tfp32_gflops\t5500')"
}

# A CPU row (pn-time --cpu-spec) whose OpenBLAS is slower than oneDNN:
# PyTorch and pn-time run fp32 Linear and bmm through OpenBLAS, and their
# rooflines have OpenBLAS's rate; convolutions and pn-time's whole
# recurrences run on oneDNN at fp32_gflops, and a bf16 dense layer on
# oneDNN's bf16 matmul.
@test "pn-specs --units gives a CPU's fp32 dense, bmm and attention its BLAS rate (blas_fp32_gflops), conv2d and recurrences fp32_gflops" {
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; print; next }
		NR == 2 { $c["name"] = "cpu-x"; $c["aliases"] = "cpu x"; $c["fp32_gflops"] = 124
			  $c["bf16_gflops"] = 538; $c["blas_fp32_gflops"] = 33; print }' \
		"$PN_ROOT/samples/cpu/cpu-spec.tsv" >"$BATS_TEST_TMPDIR/g"
	run pn-specs --gpuspecs "$BATS_TEST_TMPDIR/g" --units
	[ "$status" -eq 0 ]
	printf '%s\n' "${lines[@]}" | grep -Fx "$(printf 'cpu-x\tdense\tfp32\tblas_fp32_gflops\t33')"
	for t in bmm attention; do
		printf '%s\n' "${lines[@]}" | grep -Fx "$(printf 'cpu-x\t%s\tfp32\tblas_fp32_gflops\t33' $t)"
	done
	for t in conv2d rnn lstm gru; do
		printf '%s\n' "${lines[@]}" | grep -Fx "$(printf 'cpu-x\t%s\tfp32\tfp32_gflops\t124' $t)"
	done
	# a CPU has no TF32: a tf32 GEMM is the same fp32 GEMM on its BLAS
	printf '%s\n' "${lines[@]}" | grep -Fx "$(printf 'cpu-x\tdense\ttf32\tblas_fp32_gflops\t33')"
	printf '%s\n' "${lines[@]}" | grep -Fx "$(printf 'cpu-x\tdense\tbf16\tbf16_gflops\t538')"
	printf '%s\n' "${lines[@]}" | grep -Fx "$(printf 'cpu-x\tlayernorm\tfp32\tfp32_gflops\t124')"
}

@test "pn-specs --units gives a CPU row without blas_fp32_gflops fp32_gflops for dense layers too" {
	cut -f1-32 "$PN_ROOT/samples/cpu/cpu-spec.tsv" >"$BATS_TEST_TMPDIR/g"
	run pn-specs --gpuspecs "$BATS_TEST_TMPDIR/g" --units
	[ "$status" -eq 0 ]
	printf '%s\n' "${lines[@]}" | grep -Fx "$(printf 'AMD-EPYC-1t\tdense\tfp32\tfp32_gflops\t108.8')"
}
