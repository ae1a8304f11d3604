#!/usr/bin/env bats
# Inputs that the fuzz harnesses (fuzz/) found crashing a reader, run
# through the real tools: each must be a clean error, exit 1, with
# "pn-x: file:line: ..." on stderr, never a crash.  Fixtures in
# t/fixtures/fuzz/, each named after what it breaks.

load test_helper

# One line on stderr, exit 1, that starts "pn-x: FILE:LINE: " and then
# matches the regular expression want.
clean_error() {
	local prog=$1 file=$2 want=$3
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" =~ ^$prog:\ $file:[0-9]+:\ $want ]]
}

@test "pn-sum rejects an unknown optimizer name without reading past the name table (fuzz_layer, fuzz_network)" {
	run pn-sum -d T4 --fallback roofline "$FIX/fuzz/optimizer-lion.tsv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-sum: $FIX/fuzz/optimizer-lion.tsv:2: column 'optimizer': unknown value 'lion' (one of: none, sgd, adam, adagrad, adadelta, rmsprop)" ]
}

@test "pn-eval rejects an xgb body whose UBJ string length runs past the body (fuzz_model)" {
	run pn-eval -m "$FIX/fuzz/xgb-decodestr.model" "$FIX/fit-mlp/small.tsv"
	clean_error pn-eval "$FIX/fuzz/xgb-decodestr.model" "corrupt model: "
}

@test "pn-eval rejects an xgb body that declares a 100 TB array (fuzz_model)" {
	run pn-eval -m "$FIX/fuzz/xgb-huge-alloc.model" "$FIX/fit-mlp/small.tsv"
	clean_error pn-eval "$FIX/fuzz/xgb-huge-alloc.model" "corrupt model: "
}

@test "pn-eval rejects an xgb body of 2e96 bytes without converting the count to a size (fuzz_model)" {
	run pn-eval -m "$FIX/fuzz/xgb-bytes-beyond-size.model" "$FIX/fit-mlp/small.tsv"
	clean_error pn-eval "$FIX/fuzz/xgb-bytes-beyond-size.model" "corrupt model: xgb: bytes must be a positive integer"
}

@test "pn-eval rejects an rf tree of 2000000000 nodes before allocating them (fuzz_model)" {
	run pn-eval -m "$FIX/fuzz/rf-tree-nodes.model" "$FIX/fit-mlp/small.tsv"
	clean_error pn-eval "$FIX/fuzz/rf-tree-nodes.model" "corrupt model: "
}

@test "pn-eval rejects a gbdt tree of 2000000000 nodes before allocating them (fuzz_model)" {
	run pn-eval -m "$FIX/fuzz/gbdt-tree-nodes.model" "$FIX/fit-mlp/small.tsv"
	clean_error pn-eval "$FIX/fuzz/gbdt-tree-nodes.model" "corrupt model: "
}

@test "pn-eval rejects an xgb body whose UBJ array count runs past the body (fuzz_model)" {
	run pn-eval -m "$FIX/fuzz/xgb-parsearray.model" "$FIX/fit-mlp/small.tsv"
	clean_error pn-eval "$FIX/fuzz/xgb-parsearray.model" "corrupt model: "
}

@test "pn-eval rejects at once an xgb body that makes XGBoost allocate without end (fuzz_model)" {
	run timeout 20 pn-eval -m "$FIX/fuzz/xgb-endless.model" "$FIX/fit-mlp/small.tsv"
	clean_error pn-eval "$FIX/fuzz/xgb-endless.model" "corrupt model: "
}

@test "pn-eval rejects a model whose logo device holds a control character (fuzz_model)" {
	run pn-eval -m "$FIX/fuzz/logo-control-char.model" "$FIX/fit-mlp/small.tsv"
	clean_error pn-eval "$FIX/fuzz/logo-control-char.model" "corrupt model: control character 0x0d in line"
}

@test "pn-onnx skips an Identity node that has no input rather than reading a null list (fuzz_onnx)" {
	local rc=0
	pn-onnx --params "$FIX/onnx/cnn.onnx" >/dev/null 2>&1 || rc=$?
	[ "$rc" -ne 3 ] || skip "built without ONNX support"
	# its other 64 nodes map as they did; stderr aside
	run bash -c "pn-onnx '$FIX/fuzz/onnx-identity-no-input.onnx' 2>/dev/null"
	[ "$status" -eq 0 ]
	[ "${lines[0]%%$'\t'*}" = name ]
	[ "${#lines[@]}" -eq 65 ]
}

@test "pn-eval checks a row without a layer column against a model's layers without reading before the list (fuzz_model)" {
	run_io pn-eval -m "$FIX/fuzz/domain-no-layer.model" "$FIX/fit-mlp/small.tsv"
	[ "$status" -eq 0 ]
	[ "$(head -1 "$T/out" | cut -f6)" = "domain" ]
	[ "$(sed -n 2p "$T/out" | cut -f6)" = "layer=" ]
}

@test "pn-eval reads a model whose passes line lists only empty items without writing past its list (fuzz review)" {
	run_io pn-eval -m "$FIX/fuzz/domain-empty-passes.model" "$FIX/fit-mlp/small.tsv"
	[ "$status" -eq 0 ]
	[ "$(sed -n 2p "$T/out" | cut -f6)" = "-" ]
}
