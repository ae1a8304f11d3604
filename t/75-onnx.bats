#!/usr/bin/env bats
# pn-onnx: networks from ONNX models (fixtures: t/fixtures/onnx, made by its
# make-fixtures.py with torch; params.tsv holds torch's parameter counts).
load test_helper

F="$FIX/onnx"

setup() {
	T=$BATS_TEST_TMPDIR
	if [ "${BATS_TEST_DESCRIPTION#*without protobuf-c}" = "$BATS_TEST_DESCRIPTION" ]; then
		onnx_built || skip "built without ONNX support"
	fi
}

# onnx_built: pn-onnx has its reader (exit 3 means it was built without).
onnx_built() {
	local rc=0
	pn-onnx --params "$F/cnn.onnx" >/dev/null 2>&1 || rc=$?
	[ "$rc" -ne 3 ]
}

# field FILE ROWNAME COLUMN...: the columns of the row called ROWNAME.
field() {
	local f=$1 r=$2
	shift 2
	local c
	for c in "$@"; do
		awk -F'\t' -v r="$r" -v c="$c" 'NR==1{for(i=1;i<=NF;i++)if($i==c)k=i} $1==r{print $k}' "$f"
	done | paste -sd' '
}

@test "pn-onnx counts each fixture's parameters as torch does" {
	n=0
	while IFS=$'\t' read -r m want; do
		[ "$m" = model ] && continue
		run pn-onnx --params --seq 12 "$F/$m.onnx"
		[ "$status" -eq 0 ] || { echo "$m: $output"; return 1; }
		[ "${lines[-1]}" = "$want" ] || { echo "$m: ${lines[-1]}, torch $want"; return 1; }
		n=$((n + 1))
	done <"$F/params.tsv"
	[ "$n" = 8 ]
}

@test "pn-onnx writes the CNN's conv, batch norm, relu, pool and gemm rows" {
	run_io pn-onnx "$F/cnn.onnx"
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	diff "$F/cnn.tsv" "$T/out"
}

@test "pn-onnx writes a grouped conv as in/g to out/g channels at batch x g" {
	pn-onnx "$F/cnn.onnx" >"$T/o"
	[ "$(field "$T/o" /conv2/Conv batch in_channels out_channels kernel image stride padding)" = "8 1 1 3 8 2 1" ]
}

@test "pn-onnx gives a symbolic batch the value 1: one sample" {
	pn-onnx "$F/cnn-batch.onnx" >"$T/o"
	diff "$F/cnn.tsv" "$T/o"
}

@test "pn-onnx's torchvision resnet18 with pn-net's loss row predicts within 0.1% of pn-net's resnet18" {
	# an ONNX file holds no loss: pn-net's last row (softmax, the loss)
	# is appended, as the training loop holds the logits it reads
	pn-net --arch resnet18 >"$T/net.tsv"
	{ pn-onnx "$F/resnet18.onnx"; tail -n 1 "$T/net.tsv"; } | pn-sum --fallback roofline -d L4 -b 32 >"$T/onnx"
	pn-sum --fallback roofline -d L4 -b 32 "$T/net.tsv" >"$T/net"
	a=$(col "$T/onnx" train_ms 1) b=$(col "$T/net" train_ms 1)
	NEAR_TOL=1e-3 near "$a" "$b" || { echo "onnx $a, pn-net $b"; return 1; }
	[ "$(col "$T/onnx" peak_gb 1)" = "$(col "$T/net" peak_gb 1)" ]
}

@test "pn-onnx maps the encoder's Gather, MatMul, LayerNormalization and Softmax" {
	pn-onnx "$F/encoder.onnx" >"$T/o"
	[ "$(field "$T/o" /wte/Gather layer batch seq_len vocab embed_dim)" = "embedding 1 16 100 32" ]
	[ "$(field "$T/o" /blocks.0/qkv/MatMul layer batch in_features out_features bias)" = "dense 16 32 96 0" ]
	[ "$(field "$T/o" /blocks.0/MatMul layer batch m n k)" = "bmm 4 16 8 16" ]
	[ "$(field "$T/o" /blocks.0/Softmax layer batch seq_len dim)" = "softmax 1 64 16" ]
	[ "$(field "$T/o" /blocks.0/ln1/LayerNormalization layer batch seq_len dim)" = "layernorm 1 16 32" ]
	[ "$(field "$T/o" /blocks.0/Erf layer op)" = "elementwise tanh" ]
	[ "$(field "$T/o" /blocks.0/Div layer op)" = "elementwise divu" ]
	[ "$(field "$T/o" /head/MatMul layer batch in_features out_features)" = "dense 16 32 100" ]
}

@test "pn-onnx reads a tied head's transposed embedding as a dense layer of the same weights" {
	pn-onnx "$F/encoder-tied.onnx" >"$T/o"
	[ "$(field "$T/o" /head/MatMul layer batch in_features out_features)" = "dense 16 32 100" ]
	[ "$(pn-onnx --params "$F/encoder-tied.onnx")" = 20800 ]
}

@test "pn-onnx maps each LSTM node to an lstm row of one layer" {
	pn-onnx "$F/lstm.onnx" >"$T/o"
	[ "$(awk -F'\t' '$2 == "lstm"' "$T/o" | wc -l)" = 2 ]
	[ "$(field "$T/o" /lstm/LSTM_1 batch seq_len input_size hidden layers bidirectional)" = "1 12 24 24 1 0" ]
}

@test "pn-onnx asks for --seq when a dim is symbolic, and --seq sets it" {
	run_io pn-onnx "$F/lstm-seq.onnx"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-onnx: $F/lstm-seq.onnx: tensor 'input' has symbolic dim 'seq': give --seq" ]
	pn-onnx --seq 30 "$F/lstm-seq.onnx" >"$T/o"
	[ "$(field "$T/o" /lstm/LSTM seq_len)" = 30 ]
	[ "$(field "$T/o" /emb/Gather seq_len)" = 30 ]
}

@test "pn-onnx lists the ops it does not map by name and count, and still writes the rest" {
	run_io pn-onnx "$F/unknown.onnx"
	[ "$status" -eq 0 ]
	[ "$(cat "$T/err")" = "pn-onnx: warning: $F/unknown.onnx: 3 nodes of 2 op types not mapped: CumSum (2), HardSwish (1)" ]
	[ "$(cut -f1,2 "$T/out" | tr '\t\n' ' ,')" = "name layer,/fc/MatMul dense,/fc/Add elementwise," ]
}

@test "pn-onnx --strict exits 1 on an op it does not map, writing nothing" {
	run_io pn-onnx --strict -o "$T/net" "$F/unknown.onnx"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-onnx: $F/unknown.onnx: 3 nodes of 2 op types not mapped: CumSum (2), HardSwish (1)" ]
	[ ! -e "$T/net" ]
}

@test "pn-onnx names the tensor whose shape is missing" {
	run_io pn-onnx "$F/noshape.onnx"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-onnx: $F/noshape.onnx: no shape for tensor '/conv1/Conv_output_0' (node '/conv1/Conv'): run onnx.shape_inference.infer_shapes when exporting" ]
}

@test "pn-onnx gives every row the precision and phase, the optimizer to rows with weights" {
	pn-onnx --optimizer adam --precision bf16 "$F/cnn.onnx" >"$T/o"
	[ "$(column precision "$T/o" | sort -u)" = bf16 ]
	[ "$(field "$T/o" /conv1/Conv optimizer)" = adam ]
	[ "$(field "$T/o" /Relu optimizer)" = none ]
	pn-onnx --phase fwd "$F/cnn.onnx" >"$T/f"
	[ "$(column phase "$T/f" | sort -u)" = fwd ]
	[ "$(column optimizer "$T/f" | sort -u)" = none ]
}

@test "pn-onnx's network is what pn-sum predicts" {
	pn-onnx "$F/encoder.onnx" >"$T/net"
	run pn-sum --fallback roofline -d L4 -b 8 "$T/net"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" = 2 ]
	[ "$(col <(printf '%s\n' "${lines[@]}") device 1)" = L4 ]
}

@test "pn-onnx reads the model from standard input and writes -o" {
	pn-onnx -o "$T/net" - <"$F/cnn.onnx"
	diff "$F/cnn.tsv" "$T/net"
}

@test "pn-onnx refuses a file that is no ONNX model" {
	printf 'name\tlayer\n' >"$T/x.onnx"
	run_io pn-onnx "$T/x.onnx"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-onnx: $T/x.onnx: not an ONNX model (protobuf parse failed)" ]
	head -c 700 "$F/cnn.onnx" >"$T/cut.onnx"
	run_io pn-onnx "$T/cut.onnx"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-onnx: $T/cut.onnx: not an ONNX model (protobuf parse failed)" ]
}

@test "pn-onnx refuses a file that needs more memory than 16 times its size" {
	# a graph of 1.5 million empty nodes: 2 bytes each in the file, about
	# 100 in memory
	{ printf '\x3a\xc0\x8d\xb7\x01'; yes | head -n 1500000 | tr 'y\n' '\n\0'; } >"$T/many.onnx"
	run_io pn-onnx "$T/many.onnx"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-onnx: $T/many.onnx: reading the model needs more than 109 MiB (16 times its size, plus 64 MiB): a corrupt file?" ]
}

@test "pn-onnx refuses an empty model and a missing file" {
	: >"$T/empty.onnx"
	run_io pn-onnx "$T/empty.onnx"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-onnx: $T/empty.onnx: the model has no graph" ]
	run_io pn-onnx "$T/none.onnx"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-onnx: $T/none.onnx: cannot open: No such file or directory" ]
}

@test "pn-onnx's usage errors exit 2" {
	run_io pn-onnx
	[ "$status" -eq 2 ]
	[ "$(head -1 "$T/err")" = "pn-onnx: no model file" ]
	run_io pn-onnx "$F/cnn.onnx" "$F/lstm.onnx"
	[ "$status" -eq 2 ]
	[ "$(head -1 "$T/err")" = "pn-onnx: extra operand '$F/lstm.onnx'" ]
	run_io pn-onnx --seq 0 "$F/cnn.onnx"
	[ "$status" -eq 2 ]
	[ "$(head -1 "$T/err")" = "pn-onnx: --seq: '0' is too small (at least 1)" ]
	run_io pn-onnx --phase bwd "$F/cnn.onnx"
	[ "$status" -eq 2 ]
	[ "$(head -1 "$T/err")" = "pn-onnx: --phase: unknown value 'bwd' (one of: train, fwd)" ]
}

@test "pn-onnx without protobuf-c exits 3 and says so" {
	! onnx_built || skip "built with ONNX support (make NO_ONNX=1 builds without)"
	run_io pn-onnx "$F/cnn.onnx"
	[ "$status" -eq 3 ]
	[ "$(cat "$T/err")" = "pn-onnx: built without protobuf-c (ONNX support unavailable)" ]
}
