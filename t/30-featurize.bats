#!/usr/bin/env bats
# pn-featurize: features of every layer type, device handling, bad rows.
load test_helper

G="--gpuspecs $FIX/featurize/gpus.tsv"
L="$FIX/featurize/layers.tsv"

# near (test_helper) to 1e-12 relative
NEAR_TOL=1e-12

@test "pn-featurize output for every layer type matches the reviewed file" {
	run pn-featurize $G "$L"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$FIX/featurize/layers.expected"
}

@test "pn-featurize works out a recurrent row of any count of layers in closed form" {
	# 4,444,444,444,444 lstm layers (fuzz_layer timed out on the loop over
	# them): 4 gates x 4 bytes x (53 x 288 + 288^2 + 2 x 288 for the first,
	# 288^2 + 288^2 + 2 x 288 for each other) = 11837439999997733376 bytes
	printf 'layer\tbatch\tseq_len\tinput_size\thidden\tlayers\tbidirectional\tpass\toptimizer\tdevice\nlstm\t18\t25\t53\t288\t4444444444444\t0\tfwd\tnone\tV100-PCIE-32GB\n' >"$BATS_TEST_TMPDIR/l.tsv"
	run timeout 10 pn-featurize "$BATS_TEST_TMPDIR/l.tsv"
	[ "$status" -eq 0 ]
	NEAR_TOL=1e-12 near "$(printf '%s\n' "$output" | column cm_weights /dev/stdin)" 11837439999997733376
}

@test "pn-featurize dense features equal the hand-computed values" {
	pn-featurize $G "$L" >"$BATS_TEST_TMPDIR/o"
	# B=128 I=256 O=512 bias: 2*128*256*512 + 128*512
	[ "$(col "$BATS_TEST_TMPDIR/o" flops 1)" = 33619968 ]
	[ "$(col "$BATS_TEST_TMPDIR/o" co 1)" = 33554432 ]
	# weights (256*512+512)*4, in 128*256*4, out 128*512*4
	[ "$(col "$BATS_TEST_TMPDIR/o" cm_weights 1)" = 526336 ]
	[ "$(col "$BATS_TEST_TMPDIR/o" cm_in 1)" = 131072 ]
	[ "$(col "$BATS_TEST_TMPDIR/o" cm_out 1)" = 262144 ]
	[ "$(col "$BATS_TEST_TMPDIR/o" cm_total 1)" = 919552 ]
	# ct = co / 10 TFLOP/s in ms; roofline = flops / peak (compute bound)
	near "$(col "$BATS_TEST_TMPDIR/o" ct_ms 1)" 0.0033554432
	near "$(col "$BATS_TEST_TMPDIR/o" roofline_ms 1)" 0.0033619968
	# ceil(128/128)*ceil(512/128) = 4 tiles on 100 SMs: one wave, 4% busy
	[ "$(col "$BATS_TEST_TMPDIR/o" tiles 1)" = 4 ]
	[ "$(col "$BATS_TEST_TMPDIR/o" waves 1)" = 1 ]
	near "$(col "$BATS_TEST_TMPDIR/o" wave_eff 1)" 0.04
	# ai = 33619968 / 919552 FLOP/B over the ridge 10 TFLOP/s / 1 TB/s
	near "$(col "$BATS_TEST_TMPDIR/o" ridge_ratio 1)" "$(awk 'BEGIN { printf "%.17g", 33619968 / 919552 / 10 }')"
}

@test "pn-featurize writes the per-SM and per-wave columns of a dense layer" {
	pn-featurize $G "$L" >"$BATS_TEST_TMPDIR/o"
	# 4 tiles on 100 SMs: one wave whose roofline is that of 100 tiles,
	# 0.0033619968 ms x 100 / 4; each tile's 33619968 / 4 FLOP at one
	# SM's 100 GFLOP/s, its 919552 / 4 bytes at one SM's 10 GB/s
	near "$(col "$BATS_TEST_TMPDIR/o" wave_roofline_ms 1)" 0.08404992
	near "$(col "$BATS_TEST_TMPDIR/o" sm_compute_ms 1)" 0.08404992
	near "$(col "$BATS_TEST_TMPDIR/o" sm_memory_ms 1)" 0.0229888
	# 919552 bytes against 8 MB of L2, all of them in the one wave
	near "$(col "$BATS_TEST_TMPDIR/o" l2_ratio 1)" 0.114944
	near "$(col "$BATS_TEST_TMPDIR/o" wave_l2_ratio 1)" 0.114944
}

@test "pn-featurize's wave roofline of a many-wave op counts whole waves" {
	pn-featurize $G "$L" >"$BATS_TEST_TMPDIR/o"
	# relu on SLOWGPU: 977 blocks on 10 SMs, 98 waves of 10; a wave moves
	# 10 blocks' bytes of the 2 MB L2
	[ "$(col "$BATS_TEST_TMPDIR/o" waves 12)" = 98 ]
	r=$(col "$BATS_TEST_TMPDIR/o" roofline_ms 12)
	b=$(col "$BATS_TEST_TMPDIR/o" traffic 12)
	near "$(col "$BATS_TEST_TMPDIR/o" wave_roofline_ms 12)" "$(awk -v r="$r" 'BEGIN { printf "%.17g", r * 980 / 977 }')"
	near "$(col "$BATS_TEST_TMPDIR/o" wave_l2_ratio 12)" "$(awk -v b="$b" 'BEGIN { printf "%.17g", b / 977 * 10 / 2e6 }')"
	near "$(col "$BATS_TEST_TMPDIR/o" l2_ratio 12)" "$(awk -v b="$b" 'BEGIN { printf "%.17g", b / 2e6 }')"
}

@test "pn-featurize conv2d features equal the hand-computed values" {
	pn-featurize $G "$L" >"$BATS_TEST_TMPDIR/o"
	# B=2 C=3 C'=16 k=3 X=32 s=1 p=1 -> Y=32; 2*2*32*32*16*3*9
	[ "$(col "$BATS_TEST_TMPDIR/o" flops 3)" = 1769472 ]
	[ "$(col "$BATS_TEST_TMPDIR/o" co 3)" = 884736 ]
	[ "$(col "$BATS_TEST_TMPDIR/o" cm_weights 3)" = 1728 ]
	[ "$(col "$BATS_TEST_TMPDIR/o" cm_out 3)" = 131072 ]
	[ "$(col "$BATS_TEST_TMPDIR/o" tiles 3)" = 16 ]
}

@test "pn-featurize elementwise rows are memory bound at the table's bandwidth" {
	pn-featurize $G "$L" >"$BATS_TEST_TMPDIR/o"
	# add of two 1000x1000 fp32 tensors: 12 MB at 1000 GB/s = 0.012 ms
	near "$(col "$BATS_TEST_TMPDIR/o" roofline_ms 11)" 0.012
	# relu on SLOWGPU: 8 MB at 100 GB/s; 977 blocks on 10 SMs = 98 waves
	near "$(col "$BATS_TEST_TMPDIR/o" roofline_ms 12)" 0.08
	[ "$(col "$BATS_TEST_TMPDIR/o" waves 12)" = 98 ]
}

@test "pn-featurize uses the fp16 tensor peak for fp16 rows" {
	pn-featurize $G "$L" >"$BATS_TEST_TMPDIR/o"
	[ "$(col "$BATS_TEST_TMPDIR/o" gpu_peak_gflops 8)" = 40000 ]
	[ "$(col "$BATS_TEST_TMPDIR/o" gpu_peak_gflops 1)" = 10000 ]
}

@test "pn-featurize triples the work of training rows" {
	pn-featurize $G "$L" >"$BATS_TEST_TMPDIR/o"
	# row 14 is row 1 with relu, pass=train: 3 * (33619968 + 65536)
	[ "$(col "$BATS_TEST_TMPDIR/o" flops 14)" = 101056512 ]
	[ "$(col "$BATS_TEST_TMPDIR/o" cm_total 14)" = 1839104 ]
}

@test "pn-featurize matches devices by alias, ignoring case and punctuation" {
	pn-featurize $G "$L" >"$BATS_TEST_TMPDIR/o"
	[ "$(col "$BATS_TEST_TMPDIR/o" gpu_sms 13)" = 100 ]
	[ "$(col "$BATS_TEST_TMPDIR/o" gpu_sms 14)" = 100 ]
}

@test "pn-featurize is idempotent: featurizing twice gives the same columns" {
	pn-featurize $G "$L" >"$BATS_TEST_TMPDIR/once"
	pn-featurize $G "$BATS_TEST_TMPDIR/once" >"$BATS_TEST_TMPDIR/twice"
	cmp "$BATS_TEST_TMPDIR/once" "$BATS_TEST_TMPDIR/twice"
}

@test "pn-featurize --device rewrites the device column and its specs" {
	run pn-featurize $G --device SLOWGPU "$L"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | awk -F'\t' 'NR>1{print $29}' | sort -u)" = SLOWGPU ]
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/o"
	[ "$(column "$BATS_TEST_TMPDIR/o" gpu_sms | sort -u)" = 10 ]
}

@test "pn-featurize --device adds a device column when the input has none" {
	printf 'layer\tbatch\tm\tn\tk\nbmm\t1\t2\t3\t4\n' >"$BATS_TEST_TMPDIR/in"
	run pn-featurize $G -d tg1 "$BATS_TEST_TMPDIR/in"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | head -1 | cut -f1-7)" = "$(printf 'layer\tbatch\tm\tn\tk\tdevice\tflops')" ]
	[ "$(printf '%s\n' "$output" | sed -n 2p | cut -f6,7)" = "$(printf 'TESTGPU\t48')" ]
}

@test "pn-featurize names an unknown GPU and suggests the closest" {
	printf 'layer\tbatch\tm\tn\tk\tdevice\nbmm\t1\t2\t3\t4\tTESTGPX\n' >"$BATS_TEST_TMPDIR/in"
	run bash -c "pn-featurize $G '$BATS_TEST_TMPDIR/in' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $BATS_TEST_TMPDIR/in:2: unknown device 'TESTGPX' in $FIX/featurize/gpus.tsv (closest: TESTGPU, SLOWGPU); pass --gpuspecs FILE with a table that has it (pn-time --cpu-spec -o FILE writes one for a CPU)" ]
}

@test "pn-featurize rejects an unknown --device with exit 1" {
	run bash -c "pn-featurize $G --device nosuch '$L' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[[ "$output" == "pn-featurize: unknown device 'nosuch' in "* ]]
}

@test "pn-featurize rejects a conv2d kernel larger than the padded image" {
	printf 'layer\tbatch\tin_channels\tout_channels\tkernel\timage\tstride\tpadding\tdevice\nconv2d\t1\t3\t8\t7\t4\t1\t1\tTESTGPU\n' >"$BATS_TEST_TMPDIR/in"
	run bash -c "pn-featurize $G '$BATS_TEST_TMPDIR/in' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $BATS_TEST_TMPDIR/in:2: impossible conv2d: kernel 7 is larger than the padded image 6" ]
}

@test "pn-featurize rejects attention heads that do not divide embed_dim" {
	printf 'layer\tbatch\tseq_len\tembed_dim\theads\tdevice\nattention\t1\t8\t100\t3\tTESTGPU\n' >"$BATS_TEST_TMPDIR/in"
	run bash -c "pn-featurize $G '$BATS_TEST_TMPDIR/in' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $BATS_TEST_TMPDIR/in:2: impossible attention: embed_dim 100 is not divisible by heads 3" ]
}

@test "pn-featurize rejects an unknown layer type" {
	printf 'layer\tbatch\tdevice\nconv3d\t1\tTESTGPU\n' >"$BATS_TEST_TMPDIR/in"
	run bash -c "pn-featurize $G '$BATS_TEST_TMPDIR/in' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $BATS_TEST_TMPDIR/in:2: column 'layer': unknown layer type 'conv3d' (one of: dense, bmm, conv2d, attention, embedding, rnn, lstm, gru, layernorm, softmax, elementwise, posenc, mem, batchnorm, pool, xent)" ]
}

@test "pn-featurize names a dimension column the layer type needs" {
	printf 'layer\tbatch\tm\tn\tdevice\nbmm\t1\t2\t3\tTESTGPU\n' >"$BATS_TEST_TMPDIR/in"
	run bash -c "pn-featurize $G '$BATS_TEST_TMPDIR/in' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $BATS_TEST_TMPDIR/in:2: missing column 'k' (needed by layer 'bmm')" ]
}

@test "pn-featurize rejects a fractional dimension" {
	printf 'layer\tbatch\tm\tn\tk\tdevice\nbmm\t1.5\t2\t3\t4\tTESTGPU\n' >"$BATS_TEST_TMPDIR/in"
	run bash -c "pn-featurize $G '$BATS_TEST_TMPDIR/in' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $BATS_TEST_TMPDIR/in:2: column 'batch': '1.5' is not a whole number" ]
}

@test "pn-featurize rejects a zero dimension" {
	printf 'layer\tbatch\tm\tn\tk\tdevice\nbmm\t0\t2\t3\t4\tTESTGPU\n' >"$BATS_TEST_TMPDIR/in"
	run bash -c "pn-featurize $G '$BATS_TEST_TMPDIR/in' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $BATS_TEST_TMPDIR/in:2: column 'batch': batch must be at least 1, not 0" ]
}

@test "pn-featurize rejects an unknown precision" {
	printf 'layer\tbatch\tm\tn\tk\tprecision\tdevice\nbmm\t1\t2\t3\t4\tfp8\tTESTGPU\n' >"$BATS_TEST_TMPDIR/in"
	run bash -c "pn-featurize $G '$BATS_TEST_TMPDIR/in' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $BATS_TEST_TMPDIR/in:2: column 'precision': unknown value 'fp8' (one of: fp32, tf32, fp16, bf16)" ]
}

@test "pn-featurize needs a device column unless --device is given" {
	printf 'layer\tbatch\tm\tn\tk\nbmm\t1\t2\t3\t4\n' >"$BATS_TEST_TMPDIR/in"
	run bash -c "pn-featurize $G '$BATS_TEST_TMPDIR/in' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $BATS_TEST_TMPDIR/in:1: missing column 'device'" ]
}

@test "pn-featurize rejects a second operand" {
	run bash -c "pn-featurize a b 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-featurize: extra operand 'b'" ]
}

@test "pn-featurize rejects every impossible value in the spec table" {
	run "$FIX/specs/reject" "$FIX/featurize/gpus.tsv" "$BATS_TEST_TMPDIR" pn-featurize "$FIX/featurize/layers.tsv"
	[ "$status" -eq 0 ]
}

@test "pn-featurize on CPU rows without their spec table says to pass --gpuspecs" {
	zcat "$PN_ROOT/samples/cpu/dense.tsv.gz" | head -3 >"$BATS_TEST_TMPDIR/cpu.tsv"
	run bash -c "pn-featurize '$BATS_TEST_TMPDIR/cpu.tsv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[[ "$output" == "pn-featurize: $BATS_TEST_TMPDIR/cpu.tsv:2: unknown device 'AMD-EPYC-1t' in "*" (closest: "*"); pass --gpuspecs FILE with a table that has it (pn-time --cpu-spec -o FILE writes one for a CPU)" ]]
	pn-featurize --gpuspecs "$PN_ROOT/samples/cpu/cpu-spec.tsv" "$BATS_TEST_TMPDIR/cpu.tsv" >/dev/null
}

# issue 14 item 4: the optimizer lookup read past its name list
# (global-buffer-overflow under make SANITIZE=1)
@test "pn-featurize rejects an optimizer name in capitals" {
	printf 'layer\tbatch\tm\tn\tk\toptimizer\tdevice\nbmm\t1\t2\t3\t4\tAdam\tTESTGPU\n' >"$BATS_TEST_TMPDIR/in"
	run bash -c "pn-featurize $G '$BATS_TEST_TMPDIR/in' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $BATS_TEST_TMPDIR/in:2: column 'optimizer': unknown value 'Adam' (one of: none, sgd, adam, adagrad, adadelta, rmsprop)" ]
}

@test "pn-featurize rejects an optimizer pn does not know" {
	printf 'layer\tbatch\tm\tn\tk\toptimizer\tdevice\nbmm\t1\t2\t3\t4\tlion\tTESTGPU\n' >"$BATS_TEST_TMPDIR/in"
	run bash -c "pn-featurize $G '$BATS_TEST_TMPDIR/in' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $BATS_TEST_TMPDIR/in:2: column 'optimizer': unknown value 'lion' (one of: none, sgd, adam, adagrad, adadelta, rmsprop)" ]
}

@test "pn-featurize takes each row's peak from the unit its op runs on at its precision" {
	run pn-featurize --gpuspecs "$FIX/featurize/units-gpus.tsv" "$FIX/featurize/units-layers.tsv"
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/o"
	paste <(column "$BATS_TEST_TMPDIR/o" layer) <(column "$BATS_TEST_TMPDIR/o" precision) \
		<(column "$BATS_TEST_TMPDIR/o" device) <(column "$BATS_TEST_TMPDIR/o" traffic) \
		<(column "$BATS_TEST_TMPDIR/o" gpu_peak_gflops) >"$BATS_TEST_TMPDIR/got"
	tail -n +2 "$FIX/featurize/units-layers.expected" | diff "$BATS_TEST_TMPDIR/got" -
}

@test "pn-featurize's compute time and CT are at the peak of the row's unit" {
	pn-featurize --gpuspecs "$FIX/featurize/units-gpus.tsv" "$FIX/featurize/units-layers.tsv" >"$BATS_TEST_TMPDIR/o"
	for r in $(seq 12); do
		p=$(col "$BATS_TEST_TMPDIR/o" gpu_peak_gflops "$r")
		near "$(col "$BATS_TEST_TMPDIR/o" compute_ms "$r")" "$(awk -v f="$(col "$BATS_TEST_TMPDIR/o" flops "$r")" -v p="$p" 'BEGIN { printf "%.17g", f / p / 1e6 }')" || { echo "row $r"; return 1; }
		near "$(col "$BATS_TEST_TMPDIR/o" ct_ms "$r")" "$(awk -v f="$(col "$BATS_TEST_TMPDIR/o" co "$r")" -v p="$p" 'BEGIN { printf "%.17g", f / p / 1e6 }')" || { echo "row $r"; return 1; }
	done
}

@test "pn-featurize writes the optimizer of a layer without weights as none and passes a weighted layer's through" {
	printf 'layer\top\tbatch\tseq_len\tdim\tin_features\tout_features\tpass\toptimizer\tdevice\n' >"$BATS_TEST_TMPDIR/o.tsv"
	printf 'elementwise\trelu\t2\t4\t8\tNA\tNA\ttrain\tadam\tT4\n' >>"$BATS_TEST_TMPDIR/o.tsv"
	printf 'dense\tNA\t2\tNA\tNA\t8\t8\ttrain\tadam\tT4\n' >>"$BATS_TEST_TMPDIR/o.tsv"
	pn-featurize "$BATS_TEST_TMPDIR/o.tsv" >"$BATS_TEST_TMPDIR/f.tsv"
	[ "$(col "$BATS_TEST_TMPDIR/f.tsv" optimizer 1)" = none ]
	[ "$(col "$BATS_TEST_TMPDIR/f.tsv" optimizer 2)" = adam ]
	[ "$(head -1 "$BATS_TEST_TMPDIR/f.tsv" | tr '\t' '\n' | grep -c '^optimizer$')" = 1 ]
}
