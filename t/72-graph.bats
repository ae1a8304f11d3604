#!/usr/bin/env bats
# pn-graph: NeuSight op graphs to pn networks.
load test_helper

G="$FIX/graph"
O="$PN_ROOT/samples/neusight/opgraph"
setup() { T=$BATS_TEST_TMPDIR; }
S="$PN_ROOT/samples/neusight/graphs"

# pn-graph FILE LAYERS... must equal the shipped conversion of FILE
same_as_shipped() {
	local tag=$1
	shift
	pn-graph "$@" "$O/$tag.csv.gz" >"$BATS_TEST_TMPDIR/out"
	zcat "$S/$tag.tsv.gz" | diff - "$BATS_TEST_TMPDIR/out"
}

@test "pn-graph --neusight maps every op kind of a small graph as the reviewed file says" {
	run pn-graph --neusight -l 3 "$G/tiny.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$G/tiny.expected"
}

@test "pn-graph gives VEC rows NeuSight's MemPerO traffic" {
	pn-graph -l 3 "$G/tiny.csv" >"$BATS_TEST_TMPDIR/o"
	# add_15: two inputs and one output of 64: MemPerO 12, 16 * 4 * 12
	[ "$(awk -F'\t' '$1 == "add_15" && $3 == "fwd" {print $17}' "$BATS_TEST_TMPDIR/o")" = 768 ]
}

@test "pn-graph --neusight gives an AccOps add its node's MemPerO traffic" {
	pn-graph --neusight -l 3 "$G/tiny.csv" >"$BATS_TEST_TMPDIR/o"
	# addmm: inputs 12 + 16*4 + 4*12, output 16*12 elements:
	# MemPerO = 4 * (124 + 192) / 192; VECadd [1, 48] moves 48 * MemPerO
	[ "$(awk -F'\t' '$1 == "addmm" && $3 == "acc" && $9 == 48 {print $17}' "$BATS_TEST_TMPDIR/o")" = 316 ]
}

@test "pn-graph gives an AccOps add 12 bytes an element: the gradient kept and the new one in, the sum out" {
	pn-graph -l 3 "$G/tiny.csv" >"$BATS_TEST_TMPDIR/o"
	[ "$(awk -F'\t' '$1 == "addmm" && $3 == "acc" {print $9 ":" $17}' "$BATS_TEST_TMPDIR/o" | tr '\n' ,)" = "48:576,12:144," ]
}

@test "pn-graph repeats only the block's rows num_layer times" {
	pn-graph -l 3 "$G/tiny.csv" >"$BATS_TEST_TMPDIR/o"
	[ "$(awk -F'\t' 'NR > 1 {print $1, $4}' "$BATS_TEST_TMPDIR/o" | LC_ALL=C sort -u | tr '\n' ,)" = "add_15 3,addmm 3,drop 3,ln_f 1,matmul 3,softmax 3,transformer_h_0_ln_1 3,wte 1," ]
}

@test "pn-graph writes no row for nodes without ops" {
	pn-graph -l 3 "$G/tiny.csv" >"$BATS_TEST_TMPDIR/o"
	! cut -f1 "$BATS_TEST_TMPDIR/o" | grep -qx -e input_ids -e view -e output
}

# node_rows FIXTURE NODE [OPTION]: the kind, phase, op and elements (or,
# without them, traffic bytes) of NODE's rows in the network of
# t/fixtures/graph/FIXTURE.csv
node_rows() {
	pn-graph ${3:+"$3"} "$G/$1.csv" | awk -F'\t' -v n="$2" '$1 == n {print $2, $3, $6, ($16 == "NA" ? $17 : $16)}' | paste -sd,
}
misc_rows() { node_rows autograd "$1"; }
grad_rows() { node_rows grad "$1" "${2:-}"; }

@test "pn-graph makes a misc max over a tensor a memory pass and PyTorch's five backward passes" {
	# 16 + 1 elements read, 16 written; backward: grad / 2 (32), self == other
	# (4 x 17 + 16 bytes / 4), where (13 x 16 / 4), self < other, masked_fill_ (9 x 16 / 4)
	[ "$(misc_rows max_1)" = "misc fwd mem 33,misc bwd mem 32,misc bwd mem 21,misc bwd mem 52,misc bwd mem 21,misc bwd mem 36" ]
}

@test "pn-graph sums the gradient of a broadcast input of a misc maximum back to its shape" {
	# x (16) and y (1 x 8, broadcast) both feed a gradient: five passes each, y's
	# sum back reads the 16 and writes its 8
	[ "$(misc_rows maximum | tr , '\n' | grep -c bwd)" -eq 11 ]
	[ "$(misc_rows maximum | tr , '\n' | tail -1)" = "misc bwd mem 24" ]
}

@test "pn-graph gives a misc max over a dimension (a reduction) only its forward pass" {
	[ "$(misc_rows max_2)" = "misc fwd mem 19" ]
}

@test "pn-graph gives a misc min no backward when nothing it reads has one" {
	[ "$(misc_rows min)" = "misc fwd mem 33" ]
}

@test "pn-graph makes a misc fill write its output and a misc comparison read its inputs" {
	[ "$(misc_rows full)" = "misc fwd mem 16" ]
	[ "$(misc_rows lt)" = "misc fwd mem 36" ]
}

@test "pn-graph writes no row for misc views, casts and numbers" {
	pn-graph "$G/autograd.csv" >"$BATS_TEST_TMPDIR/o"
	! cut -f1 "$BATS_TEST_TMPDIR/o" | grep -qx -e view -e to -e size -e add_1 -e tensor -e input_ids
}

@test "pn-graph gives the backward of an add and of contiguous no row" {
	# autograd passes the gradient through: NeuSight's two MEM passes each go
	[ "$(misc_rows x)" = "VECaddu fwd addu 128" ]
	[ "$(misc_rows contiguous)" = "MEM fwd mem 32" ]
	pn-graph -l 3 "$G/tiny.csv" >"$BATS_TEST_TMPDIR/o"
	[ "$(awk -F'\t' '$1 == "add_15" {print $3}' "$BATS_TEST_TMPDIR/o" | paste -sd,)" = fwd ]
}

@test "pn-graph --neusight keeps NeuSight's backward of add and contiguous and adds no misc rows" {
	pn-graph --neusight "$G/autograd.csv" >"$BATS_TEST_TMPDIR/o"
	[ "$(awk -F'\t' '$1 == "contiguous" || $1 == "x" {print $1, $3}' "$BATS_TEST_TMPDIR/o" | paste -sd,)" = "x fwd,x bwd,contiguous fwd,contiguous bwd,contiguous bwd" ]
	! cut -f2 "$BATS_TEST_TMPDIR/o" | grep -qx misc
}

@test "pn-graph makes a division by a number a divu with one backward pass" {
	# truediv reads emb and full (torch.full: a number, no gradient):
	# autograd keeps the number, not emb (pn-sum's memory: divu keeps none)
	[ "$(grad_rows truediv)" = "VECdiv fwd divu 516,VECdiv bwd divu 516" ]
}

@test "pn-graph --neusight keeps a division by a number a div" {
	pn-graph --neusight "$G/grad.csv" >"$BATS_TEST_TMPDIR/o"
	[ "$(awk -F'\t' '$1 == "truediv" && $3 == "fwd" {print $6}' "$BATS_TEST_TMPDIR/o")" = div ]
}

@test "pn-graph keeps both backward passes of a division by a weight" {
	[ "$(grad_rows scaled)" = "VECdiv fwd div 516,VECdiv bwd div 516,VECdiv bwd div 516" ]
}

@test "pn-graph makes an activation's backward one pass of 12 bytes an element" {
	# gradient and saved tensor read, the input's gradient written: 64 x 12
	[ "$(grad_rows tanh)" = "VECtanh fwd tanh 512,VECmul bwd mul 768" ]
	[ "$(grad_rows relu)" = "VECrelu fwd relu 512,VECmul bwd mul 768" ]
}

@test "pn-graph gives no backward to a tensor made from a buffer and numbers" {
	[ "$(grad_rows mask)" = "MEM fwd mem 129" ]
}

@test "pn-graph keeps the backward after a module it does not know" {
	# wpe is misc with an unknown name: it may own weights
	[ "$(grad_rows drop)" = "MEM fwd mem 128,MEM bwd mem 64,MEM bwd mem 64" ]
}

@test "pn-graph keeps the backward of a module with weights whose input has none" {
	[ "$(grad_rows emb)" = "MEM fwd mem 80,MEM bwd mem 64,MEM bwd mem 64" ]
}

@test "pn-graph keeps the backward of a node whose OpName it does not know" {
	# RMSNorm may own weights: its output and its consumer's carry a gradient
	[ "$(grad_rows norm)" = "VECmul fwd mul 320,VECmul bwd mul 320" ]
	[ "$(grad_rows act)" = "VECsigmoid fwd sigmoid 512,VECmul bwd mul 768" ]
}

@test "pn-graph --neusight keeps every listed backward pass" {
	[ "$(grad_rows truediv -N)" = "VECdiv fwd div 516,VECdiv bwd div 516,VECdiv bwd div 516" ]
	[ "$(grad_rows tanh -N)" = "VECtanh fwd tanh 512,VECmulu bwd mulu 512,VECaddu bwd addu 512" ]
	[ "$(grad_rows mask -N)" = "MEM fwd mem 129,MEM bwd mem 65,MEM bwd mem 65" ]
}

@test "pn-graph gives no misc backward in a graph without backward ops" {
	# autograd.csv with its backward lists emptied: an inference graph
	sed "s/\"\[\['MEM', (([0-9]*, [0-9]*),)\]\(, \['MEM', (([0-9]*, [0-9]*),)\]\)*\]\"/[]/" \
	    "$G/autograd.csv" >"$BATS_TEST_TMPDIR/inf.csv"
	! grep -q "),)]" "$BATS_TEST_TMPDIR/inf.csv"
	pn-graph "$BATS_TEST_TMPDIR/inf.csv" >"$BATS_TEST_TMPDIR/o"
	[ "$(awk -F'\t' '$1 == "max_1" {print $3}' "$BATS_TEST_TMPDIR/o" | paste -sd,)" = fwd ]
}

@test "pn-graph keeps the listed backward of every node with ops without a Prev column" {
	printf '%s\n' 'Name,OpName,FwOps,BwOps,AccOps,InputShapes,OutputShape' \
		'input_ids,misc,[],[],[],"[(2, 8)]","(2, 8)"' \
		"mask,getitem,\"[['MEM', ((8,), (8,))]]\",\"[['MEM', ((8,),)], ['MEM', ((8,),)]]\",[],\"[(8,)]\",\"(8,)\"" \
		>"$BATS_TEST_TMPDIR/noprev.csv"
	pn-graph "$BATS_TEST_TMPDIR/noprev.csv" >"$BATS_TEST_TMPDIR/o"
	[ "$(awk -F'\t' '$1 == "mask" {print $3}' "$BATS_TEST_TMPDIR/o" | paste -sd,)" = fwd,bwd,bwd ]
}

@test "pn-graph takes the traced batch from input_ids" {
	pn-graph -l 3 "$G/tiny.csv" >"$BATS_TEST_TMPDIR/o"
	[ "$(cut -f19 "$BATS_TEST_TMPDIR/o" | LC_ALL=C sort -u | tr '\n' ' ')" = "2 traced_batch " ]
}

@test "pn-graph converts the BERT-large graph to the shipped network" {
	same_as_shipped bert_large-train-512-2 --layers 24
}

@test "pn-graph converts the GPT-2 large graph to the shipped network" {
	same_as_shipped gpt2_large-train-1024-1 --layers 36
}

@test "pn-graph converts the GPT-3 XL graph to the shipped network" {
	same_as_shipped gpt3_xl-train-2048-1 --layers 24
}

@test "pn-graph converts the GPT-3 2.7B graph to the shipped network" {
	same_as_shipped gpt3_27-train-2048-1 --layers 32
}

@test "pn-graph converts the OPT-1.3B graph to the shipped network" {
	same_as_shipped opt_13-train-2048-1 --layers 24
}

@test "pn-graph converts the whole Switch graph without repeating it" {
	same_as_shipped switchxl4-inf-512-1
	[ "$(cut -f4 "$BATS_TEST_TMPDIR/out" | LC_ALL=C sort -u | tr '\n' ' ')" = "1 repeat " ]
}

@test "pn-graph converts a torch.compile graph one kernel per fused node" {
	same_as_shipped gpt2_large-inf-1024-4-fusion
	# node add_434~...~view_433 fuses four ops; its row is the last one
	[ "$(grep -c '^add_434~' "$BATS_TEST_TMPDIR/out")" -eq 1 ]
}

@test "pn-graph reads num_layer from a model config" {
	printf '{\n  "model_type": "gpt2",\n  "n_layer": 3,\n  "n_embd": 4\n}\n' >"$BATS_TEST_TMPDIR/config.json"
	run pn-graph --neusight --config "$BATS_TEST_TMPDIR/config.json" "$G/tiny.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$G/tiny.expected"
}

@test "pn-graph repeats the --block range" {
	pn-graph --block matmul,softmax -l 5 "$G/tiny.csv" >"$BATS_TEST_TMPDIR/o"
	[ "$(awk -F'\t' '$4 == 5 {print $1}' "$BATS_TEST_TMPDIR/o" | LC_ALL=C sort -u | tr '\n' ,)" = "matmul,softmax," ]
}

@test "pn-graph reads standard input" {
	run bash -c "pn-graph -N -l 3 <'$G/tiny.csv'"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$G/tiny.expected"
}

@test "pn-graph needs num_layer for a graph with a block" {
	run bash -c "pn-graph '$G/tiny.csv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-graph: $G/tiny.csv: the graph holds one GPT block (transformer_h_0_ln_1..add_15): give num_layer with --layers or --config" ]
}

@test "pn-graph rejects num_layer for a whole-model graph" {
	run bash -c "pn-graph -l 24 '$O/switchxl4-inf-512-1.csv.gz' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-graph: $O/switchxl4-inf-512-1.csv.gz: the graph is a whole model with no block to repeat, but --layers gives num_layer 24" ]
}

@test "pn-graph names an unknown op kind" {
	sed 's/VECtanh/VECexp/g' "$G/tiny.csv" >"$BATS_TEST_TMPDIR/g.csv"
	run bash -c "pn-graph -l 3 '$BATS_TEST_TMPDIR/g.csv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-graph: $BATS_TEST_TMPDIR/g.csv:11: column 'FwOps': unknown op kind 'VECexp' (one of: Linear, BMM, MEM, VECln, VECsoftmax, VECadd, VECaddu, VECsub, VECsubu, VECmul, VECmulu, VECdiv, VECdivu, VECpow, VECpowu, VECrelu, VECgelu, VECtanh, VECsigmoid)" ]
}

@test "pn-graph rejects the ALLREDUCE ops of a distributed graph" {
	sed "s/\[\['MEM', ((10, 4),)\]\]/[['ALLREDUCE', (40,)]]/" "$G/tiny.csv" >"$BATS_TEST_TMPDIR/g.csv"
	run bash -c "pn-graph -l 3 '$BATS_TEST_TMPDIR/g.csv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[[ "$output" == "pn-graph: $BATS_TEST_TMPDIR/g.csv:3: column 'BwOps': unknown op kind 'ALLREDUCE' (one of: "* ]]
}

@test "pn-graph names the character where an op list is malformed" {
	sed "s/\[\['BMM', (4, 8, 2, 8)\]\]/[['BMM', (4, 8; 2, 8)]]/" "$G/tiny.csv" >"$BATS_TEST_TMPDIR/g.csv"
	run bash -c "pn-graph -l 3 '$BATS_TEST_TMPDIR/g.csv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-graph: $BATS_TEST_TMPDIR/g.csv:7: column 'FwOps': expected ',' or a closing bracket at character 15" ]
}

@test "pn-graph rejects a Linear op with the wrong number of dimensions" {
	sed "s/\[\['Linear', (16, 4, 12)\]\]/[['Linear', (16, 4)]]/" "$G/tiny.csv" >"$BATS_TEST_TMPDIR/g.csv"
	run bash -c "pn-graph -l 3 '$BATS_TEST_TMPDIR/g.csv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-graph: $BATS_TEST_TMPDIR/g.csv:6: column 'FwOps': Linear needs 3 dimensions" ]
}

@test "pn-graph names a missing column" {
	cut -d, -f1-8 "$G/tiny.csv" | head -1 >"$BATS_TEST_TMPDIR/g.csv"
	run bash -c "pn-graph -l 3 '$BATS_TEST_TMPDIR/g.csv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-graph: $BATS_TEST_TMPDIR/g.csv:1: missing column 'OutputShape'" ]
}

@test "pn-graph needs an input_ids node for the traced batch" {
	grep -v '^input_ids,' "$G/tiny.csv" >"$BATS_TEST_TMPDIR/g.csv"
	run bash -c "pn-graph -l 3 '$BATS_TEST_TMPDIR/g.csv' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-graph: $BATS_TEST_TMPDIR/g.csv: no node 'input_ids' to take the traced batch from" ]
}

@test "pn-graph rejects --layers and --config together" {
	run bash -c "pn-graph -l 3 -c x.json '$G/tiny.csv' 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-graph: --layers and --config both give num_layer" ]
}

@test "pn-graph rejects a --layers that is not a whole number" {
	run bash -c "pn-graph -l 2.5 '$G/tiny.csv' 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-graph: --layers: '2.5' is not a whole number" ]
}

@test "pn-graph says which limit a --layers passes" {
	run bash -c "pn-graph -l 0 '$G/tiny.csv' 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-graph: --layers: '0' is too small (at least 1)" ]
	run bash -c "pn-graph -l 1e6 '$G/tiny.csv' 2>&1 >/dev/null"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-graph: --layers: '1e6' is too large (at most 100000)" ]
}

@test "pn-graph takes a --layers with an exponent" {
	pn-graph -l 24 "$G/tiny.csv" >"$BATS_TEST_TMPDIR/a"
	pn-graph -l 2.4e1 "$G/tiny.csv" >"$BATS_TEST_TMPDIR/b"
	cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
}

@test "pn-graph leaves no output file behind when it fails" {
	sed 's/VECtanh/VECexp/g' "$G/tiny.csv" >"$BATS_TEST_TMPDIR/g.csv"
	run pn-graph -l 3 -o "$BATS_TEST_TMPDIR/net.tsv" "$BATS_TEST_TMPDIR/g.csv"
	[ "$status" -eq 1 ]
	[ ! -e "$BATS_TEST_TMPDIR/net.tsv" ]
	[ -z "$(ls "$BATS_TEST_TMPDIR" | grep net.tsv)" ]
}

# gpt2_large_cfg FILE N_EMBD: GPT-2 large's sizes (36 blocks, n_inner null)
# with the hidden size N_EMBD
gpt2_large_cfg() {
	printf '{\n  "n_layer": 36,\n  "n_embd": %s,\n  "n_head": 20,\n  "n_inner": null,\n  "vocab_size": 50257\n}\n' "$2" >"$1"
}

@test "pn-graph -c checks every size of a config that matches the graph" {
	gpt2_large_cfg "$BATS_TEST_TMPDIR/c.json" 1280
	run_io pn-graph -c "$BATS_TEST_TMPDIR/c.json" "$O/gpt2_large-train-1024-1.csv.gz"
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	pn-graph -l 36 "$O/gpt2_large-train-1024-1.csv.gz" | cmp - "$T/out"
}

@test "pn-graph -c reads a model hub's config.json" {
	run pn-graph -c "$PN_ROOT/samples/networks/configs/gpt2-large.json" "$O/gpt2_large-train-1024-1.csv.gz"
	[ "$status" -eq 0 ]
}

@test "pn-graph -c refuses a hidden size that is not the graph's" {
	printf '{\n  "n_layer": 36,\n  "n_embd": 4096\n}\n' >"$BATS_TEST_TMPDIR/c.json"
	run_io pn-graph -c "$BATS_TEST_TMPDIR/c.json" "$O/gpt2_large-train-1024-1.csv.gz"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-graph: $BATS_TEST_TMPDIR/c.json:3: n_embd 4096 is not the graph's hidden size (the graph is of another model: pn-net --hf writes this config's network)" ]
	[ ! -s "$T/out" ]
}

@test "pn-graph -c refuses heads that are not the graph's" {
	printf '{\n  "num_hidden_layers": 24,\n  "num_attention_heads": 8\n}\n' >"$BATS_TEST_TMPDIR/c.json"
	run_io pn-graph -c "$BATS_TEST_TMPDIR/c.json" "$O/bert_large-train-512-2.csv.gz"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-graph: $BATS_TEST_TMPDIR/c.json:3: num_attention_heads 8 is not the graph's heads (the graph is of another model: pn-net --hf writes this config's network)" ]
}

@test "pn-graph -c refuses an intermediate size that is not the graph's" {
	printf '{\n  "num_hidden_layers": 24,\n  "ffn_dim": 4096\n}\n' >"$BATS_TEST_TMPDIR/c.json"
	run_io pn-graph -c "$BATS_TEST_TMPDIR/c.json" "$O/opt_13-train-2048-1.csv.gz"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-graph: $BATS_TEST_TMPDIR/c.json:3: ffn_dim 4096 is not the graph's intermediate size (the graph is of another model: pn-net --hf writes this config's network)" ]
}

@test "pn-graph -c takes GPT-2's null n_inner as 4 x n_embd" {
	# n_embd 1280 with n_inner 4 x 1280 = 5120 is the graph's; n_inner
	# 4000 is not
	printf '{\n  "n_layer": 36,\n  "n_embd": 1280,\n  "n_inner": 4000\n}\n' >"$BATS_TEST_TMPDIR/c.json"
	run_io pn-graph -c "$BATS_TEST_TMPDIR/c.json" "$O/gpt2_large-train-1024-1.csv.gz"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-graph: $BATS_TEST_TMPDIR/c.json:4: n_inner 4000 is not the graph's intermediate size (the graph is of another model: pn-net --hf writes this config's network)" ]
	# tiny's only Linear has 12 outputs: no MLP of 4 x 4
	printf '{\n  "n_layer": 3,\n  "n_embd": 4,\n  "n_inner": null\n}\n' >"$BATS_TEST_TMPDIR/c.json"
	run_io pn-graph -c "$BATS_TEST_TMPDIR/c.json" "$G/tiny.csv"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-graph: $BATS_TEST_TMPDIR/c.json:4: n_inner 16 is not the graph's intermediate size (the graph is of another model: pn-net --hf writes this config's network)" ]
}

@test "pn-graph -c refuses a vocabulary that is not the graph's" {
	printf '{\n  "n_layer": 36,\n  "vocab_size": 32000\n}\n' >"$BATS_TEST_TMPDIR/c.json"
	run_io pn-graph -c "$BATS_TEST_TMPDIR/c.json" "$O/gpt2_large-train-1024-1.csv.gz"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-graph: $BATS_TEST_TMPDIR/c.json:3: vocab_size 32000 is not the graph's vocabulary (the graph is of another model: pn-net --hf writes this config's network)" ]
}

@test "pn-graph -c says which sizes the graph cannot check" {
	printf '{\n  "n_layer": 5,\n  "n_embd": 4\n}\n' >"$BATS_TEST_TMPDIR/c.json"
	run_io pn-graph --block matmul,softmax -c "$BATS_TEST_TMPDIR/c.json" "$G/tiny.csv"
	[ "$status" -eq 0 ]
	[ "$(cat "$T/err")" = "pn-graph: warning: $BATS_TEST_TMPDIR/c.json: n_embd 4 not checked: the graph shows no hidden size" ]
}

@test "pn-graph -c names the line of a config that is no JSON" {
	printf '{\n  "n_layer": 3,\n}\n' >"$BATS_TEST_TMPDIR/c.json"
	run_io pn-graph -c "$BATS_TEST_TMPDIR/c.json" "$G/tiny.csv"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-graph: $BATS_TEST_TMPDIR/c.json:3: expected a string key" ]
}
