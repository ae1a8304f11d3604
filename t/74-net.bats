#!/usr/bin/env bats
# pn-net: networks from model configs, named architectures and conv stacks.
load test_helper

C="$PN_ROOT/samples/networks/configs"
N="$FIX/net"

setup() { T=$BATS_TEST_TMPDIR; }

# params ARGS... EXPECTED: pn-net --params ARGS prints EXPECTED (the
# reference count of bench/net-params.py)
params() {
	local want=${!#}
	run pn-net --params "${@:1:$#-1}"
	[ "$status" -eq 0 ]
	[ "$output" = "$want" ]
}

# ---- parameter counts: torch's, from bench/net-params.py -----------------

@test "pn-net counts BERT-base's parameters as BertForMaskedLM does" {
	params --hf "$C/bert-base-uncased.json" 109514298
}

@test "pn-net counts BERT-large's parameters as BertForMaskedLM does" {
	params --hf "$C/bert-large-uncased.json" 335174458
}

@test "pn-net counts RoBERTa-base's parameters as RobertaForMaskedLM does" {
	params --hf "$C/roberta-base.json" 124697433
}

@test "pn-net counts GPT-2 small, medium and large as GPT2LMHeadModel does" {
	params --hf "$C/gpt2.json" 124439808
	params --hf "$C/gpt2-medium.json" 354823168
	params --hf "$C/gpt2-large.json" 774030080
}

@test "pn-net counts Gemma-2B (one key/value head, head_dim 256, tied head) as torch does" {
	params --hf "$C/gemma-2b.json" 2506172416
}

@test "pn-net counts Gemma-2-2B (four norms a block) as torch does" {
	params --hf "$C/gemma-2-2b.json" 2614341888
}

@test "pn-net counts Falcon-7B (multi-query, parallel blocks, tied head) as torch does" {
	params --hf "$C/falcon-7b.json" 6921720704
}

@test "pn-net counts Phi-2 (parallel blocks, biased LM head) as torch does" {
	params --hf "$C/phi-2.json" 2779683840
}

@test "pn-net counts BLOOM-560M (embedding norm, ALiBi, tied head) as torch does" {
	params --hf "$C/bloom-560m.json" 559214592
}

@test "pn-net counts Phi-3-mini (fused projections, untied head) as torch does" {
	params --hf "$C/phi-3-mini-4k.json" 3821079552
}

@test "pn-net counts Pythia-70M (GPT-NeoX, untied head) as torch does" {
	params --hf "$C/pythia-70m.json" 70426624
}

@test "pn-net counts OPT-125M, whose position table has 2 more rows" {
	params --hf "$C/opt-125m.json" 125239296
}

@test "pn-net counts OPT-350M, whose embedding is projected in and out" {
	params --hf "$C/opt-350m.json" 331196416
}

@test "pn-net counts TinyLlama-1.1B (grouped-query attention, RMSNorm, gated MLP)" {
	params --hf "$C/tinyllama-1.1b.json" 1100048384
}

@test "pn-net counts Mistral-7B as MistralForCausalLM does" {
	params --hf "$C/mistral-7b.json" 7241732096
}

@test "pn-net counts Qwen2-0.5B with its q, k, v biases and tied head" {
	params --hf "$C/qwen2-0.5b.json" 494032768
}

@test "pn-net counts every expert of Mixtral-8x7B" {
	params --hf "$C/mixtral-8x7b.json" 46702792704
}

@test "pn-net counts T5-small (tied) and Flan-T5-small (gated, untied)" {
	params --hf "$C/t5-small.json" 60506624
	params --hf "$C/flan-t5-small.json" 76961152
}

@test "pn-net counts the ResNets as torchvision does" {
	params --arch resnet18 11689512
	params --arch resnet34 21797672
	params --arch resnet50 25557032
	params --arch resnet101 44549160
	params --arch resnet152 60192808
}

@test "pn-net counts the VGGs as torchvision does" {
	params --arch vgg11 132863336
	params --arch vgg13 133047848
	params --arch vgg16 138357544
	params --arch vgg19 143667240
}

@test "pn-net counts MobileNetV2's depthwise convs as torchvision does" {
	params --arch mobilenet_v2 3504872
}

@test "pn-net counts the LSTM seq2seq model's 384M parameters" {
	params --arch lstm-seq2seq 384144000
}

@test "pn-net counts an untied LM head once more than a tied one" {
	sed 's/"vocab_size": 1000/"vocab_size": 1000, "tie_word_embeddings": false/' \
		"$N/tiny-gpt2.json" >"$T/untied.json"
	params --hf "$N/tiny-gpt2.json" 172288
	params --hf "$T/untied.json" 236288
}

@test "pn-net's parameter count does not depend on seq, image, precision or phase" {
	params --hf "$N/tiny-gpt2.json" --seq 7 --precision bf16 --phase fwd 172288
	params --arch resnet50 --image 160 25557032
}

# ---- rows ------------------------------------------------------------------

@test "pn-net writes a small GPT-2 as the reviewed rows" {
	run pn-net --hf "$N/tiny-gpt2.json" --seq 16
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | cut -f1,2,3,4,5,6,7,8,9,10,11,22,23,24,31 | tr '\t' ' ')" = "$(cat <<'X'
name layer op phase repeat batch seq_len dim in_features out_features bias embed_dim heads vocab optimizer
wte embedding embedding train 1 1 16 NA NA NA NA 64 NA 1000 adam
wpe embedding embedding train 1 1 16 NA NA NA NA 64 NA 128 adam
embed.add elementwise add train 1 1 16 64 NA NA NA NA NA NA none
embed.dropout elementwise dropout train 1 1 16 64 NA NA NA NA NA NA none
h.0-1.ln_1 layernorm layernorm train 2 1 16 64 NA NA NA NA NA NA adam
h.0-1.attn attention attention train 2 1 16 NA NA NA NA 64 4 NA adam
h.0-1.attn.dropout elementwise dropout train 2 1 16 64 NA NA NA NA NA NA none
h.0-1.attn.add elementwise add train 2 1 16 64 NA NA NA NA NA NA none
h.0-1.ln_2 layernorm layernorm train 2 1 16 64 NA NA NA NA NA NA adam
h.0-1.mlp.fc dense dense train 2 16 NA NA 64 256 1 NA NA NA adam
h.0-1.mlp.gelu elementwise gelu train 2 1 16 256 NA NA NA NA NA NA none
h.0-1.mlp.proj dense dense train 2 16 NA NA 256 64 1 NA NA NA adam
h.0-1.mlp.dropout elementwise dropout train 2 1 16 64 NA NA NA NA NA NA none
h.0-1.mlp.add elementwise add train 2 1 16 64 NA NA NA NA NA NA none
ln_f layernorm layernorm train 1 1 16 64 NA NA NA NA NA NA adam
lm_head dense dense train 1 16 NA NA 64 1000 0 NA NA NA adam
lm.loss xent xent train 1 1 16 1000 NA NA NA NA NA NA none
X
)" ]
}

@test "pn-net gives grouped-query attention k and v projections of the key/value heads" {
	pn-net --hf "$C/tinyllama-1.1b.json" --seq 256 >"$T/o"
	# 4 key/value heads of 64: 256 outputs; 32 query heads: 2048
	[ "$(awk -F'\t' '$1 ~ /attn\.[qkv]_proj$/ {print $1, $6, $9, $10, $11}' "$T/o" | tr '\n' ,)" = \
	  "h.0-21.attn.q_proj 256 2048 2048 0,h.0-21.attn.k_proj 256 2048 256 0,h.0-21.attn.v_proj 256 2048 256 0," ]
	[ "$(awk -F'\t' '$1 ~ /attn\.(scores|context)$/ {print $6, $13, $14, $15}' "$T/o" | tr '\n' ,)" = \
	  "32 256 64 256,32 256 256 64," ]
}

@test "pn-net routes each token to num_experts_per_tok of the experts" {
	pn-net --hf "$C/mixtral-8x7b.json" --seq 1000 >"$T/o"
	# 1000 tokens x 2 of 8 experts: 250 tokens an expert, 32 x 8 times
	[ "$(awk -F'\t' '$1 ~ /mlp\.experts\.(gate|up|proj)$/ {print $5, $6, $9, $10}' "$T/o" | tr '\n' ,)" = \
	  "256 250 4096 14336,256 250 4096 14336,256 250 14336 4096," ]
	[ "$(col "$T/o" out_features "$(awk -F'\t' '$1 == "h.0-31.mlp.router" {print NR - 1}' "$T/o")")" = 8 ]
}

@test "pn-net writes RMSNorm as a layernorm row and a gated SiLU MLP as one silu_mul row" {
	pn-net --hf "$C/mistral-7b.json" --seq 64 >"$T/o"
	[ "$(awk -F'\t' '$1 ~ /(ln_1|mul|sigmoid)$/ && $1 !~ /rotary/ {print $1, $2, $3, $7, $8}' "$T/o" | tr '\n' ,)" = \
	  "h.0-31.ln_1 layernorm layernorm 64 4096,h.0-31.mlp.silu_mul elementwise silu_mul 64 14336," ]
}

@test "pn-net writes a gated-gelu MLP (Flan-T5) as one gelu_mul row" {
	pn-net --hf "$C/flan-t5-small.json" --seq 32 >"$T/o"
	[ "$(awk -F'\t' '$3 ~ /gelu|mul/ {print $1, $3, $7, $8}' "$T/o" | tr '\n' ,)" = \
	  "encoder.block.0-7.mlp.gelu_mul gelu_mul 32 1024,decoder.block.0-7.mlp.gelu_mul gelu_mul 32 1024," ]
}

@test "pn-net gives T5's decoder a cross-attention and both stacks a position bias" {
	pn-net --hf "$C/t5-small.json" --seq 32 >"$T/o"
	[ "$(grep -c 'relative_attention_bias' "$T/o")" = 2 ]
	[ "$(awk -F'\t' '$1 ~ /cross\.attn\.q_proj$/ {print $1, $5}' "$T/o")" = "decoder.block.0-5.cross.attn.q_proj 6" ]
	! grep -q '^encoder.*cross' "$T/o"
}

@test "pn-net --dec-seq gives T5's decoder its own tokens, its cross-attention the encoder's" {
	pn-net --hf "$C/t5-small.json" --seq 32 --dec-seq 8 >"$T/o"
	[ "$(awk -F'\t' '$1 ~ /^(encoder.block.0-5.attn.q_proj|decoder.block.0-5.attn.q_proj|decoder.block.0-5.cross.attn.q_proj|decoder.block.0-5.cross.attn.k_proj|lm_head)$/ {print $1, $6}' "$T/o" | tr '\n' ,)" = \
	  "encoder.block.0-5.attn.q_proj 32,decoder.block.0-5.attn.q_proj 8,decoder.block.0-5.cross.attn.q_proj 8,decoder.block.0-5.cross.attn.k_proj 32,lm_head 8," ]
	[ "$(awk -F'\t' '$1 == "decoder.block.0-5.cross.attn.scores" {print $6, $13, $14, $15}' "$T/o")" = "8 8 64 32" ]
}

@test "pn-net's decoder sequence is --seq when --dec-seq is absent" {
	pn-net --hf "$C/t5-small.json" --seq 32 >"$T/a"
	pn-net --hf "$C/t5-small.json" --seq 32 --dec-seq 32 >"$T/b"
	cmp "$T/a" "$T/b"
}

@test "pn-net refuses --dec-seq for a model without a decoder" {
	run_io pn-net --hf "$N/tiny-gpt2.json" --dec-seq 8
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-net: $N/tiny-gpt2.json: --dec-seq is for an encoder-decoder (model_type t5)" ]
	run_io pn-net --arch resnet18 --dec-seq 8
	[ "$status" -eq 2 ]
	[ "$(head -1 "$T/err")" = "pn-net: --dec-seq is for --hf (a t5 config)" ]
}

@test "pn-net writes a depthwise conv as one channel with batch = channels" {
	pn-net --arch mobilenet_v2 >"$T/o"
	[ "$(awk -F'\t' '$1 == "features.2.dw" {print $6, $16, $17, $18, $19, $20}' "$T/o")" = "96 1 1 3 112 2" ]
}

@test "pn-net --seq sets the tokens of every row" {
	pn-net --hf "$N/tiny-gpt2.json" --seq 8 >"$T/o"
	[ "$(awk -F'\t' 'NR > 1 && $6 != "NA" && $2 == "dense" {print $6}' "$T/o" | sort -u)" = 8 ]
	[ "$(awk -F'\t' 'NR > 1 && $7 != "NA" {print $7}' "$T/o" | sort -u)" = 8 ]
}

@test "pn-net takes the sequence from the config when --seq is absent" {
	pn-net --hf "$N/tiny-gpt2.json" >"$T/o"
	[ "$(col "$T/o" seq_len 1)" = 128 ]
}

@test "pn-net refuses a sequence longer than the position table" {
	run_io pn-net --hf "$N/tiny-gpt2.json" --seq 129
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-net: $N/tiny-gpt2.json: seq 129 is longer than the position table of 128" ]
	[ ! -s "$T/out" ]
}

@test "pn-net --precision and --optimizer set every row's" {
	pn-net --hf "$N/tiny-gpt2.json" --precision bf16 --optimizer sgd >"$T/o"
	[ "$(column precision "$T/o" | sort -u)" = bf16 ]
	[ "$(awk -F'\t' 'NR > 1 {print $2, $31}' "$T/o" | sort -u | tr '\n' ,)" = \
	  "attention sgd,dense sgd,elementwise none,embedding sgd,layernorm sgd,xent none," ]
}

@test "pn-net --phase fwd writes forward rows without optimizer or dropout" {
	pn-net --hf "$N/tiny-gpt2.json" --phase fwd >"$T/o"
	[ "$(column phase "$T/o" | sort -u)" = fwd ]
	[ "$(column optimizer "$T/o" | sort -u)" = none ]
	! grep -q dropout "$T/o"
}

@test "pn-net ends a training network in its loss and a forward one in a softmax" {
	[ "$(pn-net --hf "$N/tiny-gpt2.json" | tail -1 | cut -f1-2,7-8)" = "$(printf 'lm.loss\txent\t128\t1000')" ]
	[ "$(pn-net --hf "$N/tiny-gpt2.json" --phase fwd | tail -1 | cut -f1-2,7-8)" = "$(printf 'lm.softmax\tsoftmax\t128\t1000')" ]
	[ "$(pn-net --arch resnet18 --classes 10 | tail -1 | cut -f1-2,8)" = "$(printf 'loss\txent\t10')" ]
}

@test "pn-net uses adam for configs and sgd for CNNs by default" {
	[ "$(pn-net --hf "$N/tiny-gpt2.json" | col /dev/stdin optimizer 1)" = adam ]
	[ "$(pn-net --arch resnet18 | col /dev/stdin optimizer 1)" = sgd ]
}

@test "pn-net --image and --classes size a CNN" {
	pn-net --arch resnet18 --image 160 --classes 10 >"$T/o"
	# the global average pool: 512 channels of 5 x 5 (160 / 32), one window
	[ "$(awk -F'\t' '$1 == "conv1" {print $19}; $1 == "avgpool" {print $3, $16, $19, $18, $20}; $1 == "fc" {print $10}' "$T/o" | tr '\n' ,)" = \
	  "160,avg 512 5 5 5,10," ]
}

@test "pn-net gives VGG an average pool only where the feature map is not 7 x 7" {
	! pn-net --arch vgg11 | grep -q avgpool
	# 8 x 8 to 7 x 7: windows of 2, stride 1
	[ "$(pn-net --arch vgg11 --image 256 | awk -F'\t' '$1 == "avgpool" {print $3, $16, $19, $18, $20, $21}')" = "avg 512 8 2 1 0" ]
}

@test "pn-net spreads a VGG feature map below 7 x 7 over the 7 x 7 of its average pool as a copy that pn-sum takes" {
	# a 32 x 32 image leaves 1 x 1 after five pools: AdaptiveAvgPool2d(7)
	# writes 512 x 49 values a sample, then fc6 reads 25088
	pn-net --arch vgg16 --image 32 >"$T/o"
	[ "$(awk -F'\t' '$1 == "avgpool" {print $2, $3, $6, $7, $8}; $1 == "fc6" {print $9}' "$T/o" | tr '\n' ,)" = "elementwise copy 1 49 512,25088," ]
	run pn-sum --fallback roofline -d A100 "$T/o"
	[ "$status" -eq 0 ]
}

@test "pn-net builds a conv stack" {
	run pn-net --conv-stack 8k5s2,M,16,A,f32 --image 32 --classes 10
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | awk -F'\t' 'NR > 1 {print $1, $2, $3, $9, $10, $16, $17, $18, $19, $20, $21, $29}' | tr '\n' ,)" = \
	  "conv1 conv2d conv2d NA NA 3 8 5 32 2 2 NA,pool2 pool max NA NA 8 NA 2 16 2 0 NA,conv3 conv2d conv2d NA NA 8 16 3 8 1 1 NA,avgpool4 pool avg NA NA 16 NA 8 8 8 0 NA,fc5 dense dense 16 32 NA NA NA NA NA NA NA,fc dense dense 32 10 NA NA NA NA NA NA NA,loss xent xent NA NA NA NA NA NA NA NA NA," ]
}

@test "pn-net's networks read in pn-sum for every family" {
	for f in "$C"/*.json; do
		pn-net --hf "$f" --seq 128 >"$T/net" || { echo "$f"; return 1; }
		pn-sum --fallback roofline --devices all -b 16 "$T/net" >"$T/sum" || { echo "$f"; return 1; }
	done
	for a in resnet18 vgg11 mobilenet_v2 lstm-seq2seq; do
		pn-net --arch "$a" >"$T/net"
		pn-sum --fallback roofline -d L4 -b 16 "$T/net" >"$T/sum" || { echo "$a"; return 1; }
	done
}

@test "pn-net -o writes the network to a file" {
	run pn-net --arch resnet18 -o "$T/o"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	pn-net --arch resnet18 | cmp - "$T/o"
}

# ---- errors ----------------------------------------------------------------

@test "pn-net names the line of a JSON syntax error" {
	run_io pn-net --hf "$N/trailing-comma.json"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-net: $N/trailing-comma.json:8: expected a string key" ]
	[ ! -s "$T/out" ]
}

@test "pn-net names the line of a key of the wrong type" {
	run_io pn-net --hf "$N/heads-string.json"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-net: $N/heads-string.json:5: 'n_head' must be a whole number of at least 1, not a string" ]
}

@test "pn-net's JSON reader refuses what RFC 8259 does not allow" {
	for bad in '{"a": 01}|bad number '\''01'\''' '{"a": NaN}|unexpected character '\''N'\''' \
		'{"a": 1} x|trailing characters after the value' '// c|unexpected character '\''/'\''' \
		'{"a": "x\q"}|bad escape '\''\q'\''' '{"a": "x|unterminated string' \
		'{"a": 1, "a": 2}|duplicate key '\''a'\''' '{"a" 1}|expected '\'':'\'' after a key' \
		'[1 2]|expected '\'','\'' or '\'']'\'' after an element' '{"a": 1.}|bad number '\''1.'\''' \
		'{"a": "\ud800"}|bad \u escape' '{"a": tru}|unexpected character '\''t'\'''; do
		printf '%s' "${bad%%|*}" >"$T/j.json"
		run_io pn-net --hf "$T/j.json"
		[ "$status" -eq 1 ] || { echo "$bad"; return 1; }
		[ "$(cat "$T/err")" = "pn-net: $T/j.json:1: ${bad#*|}" ] || { echo "$bad: $(cat "$T/err")"; return 1; }
	done
}

@test "pn-net's JSON reader reads escapes, nesting and numbers" {
	printf '{"model_type": "gpt\\u0032", "n_layer": 2, "n_embd": 6.4e1, "n_head": 4,\n "n_positions": 128, "vocab_size": 1000, "x": [{"y": [null, true, false, -0.5E-3, "\\"\\\\\\/\\b\\f\\n\\r\\t\\ud83d\\ude00"]}]}' >"$T/j.json"
	params --hf "$T/j.json" 172288
}

@test "pn-net refuses an empty config" {
	: >"$T/j.json"
	run_io pn-net --hf "$T/j.json"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-net: $T/j.json: empty input" ]
}

@test "pn-net refuses an unknown model_type, listing the known ones" {
	printf '{"model_type": "xlnet"}' >"$T/j.json"
	run_io pn-net --hf "$T/j.json"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-net: $T/j.json:1: unknown model_type 'xlnet' (one of: bert, roberta, gpt2, gpt_neox, opt, llama, mistral, qwen2, mixtral, t5, gemma, phi3, gemma2, falcon, phi, bloom)" ]
}

@test "pn-net refuses a config without a size it needs" {
	grep -v n_embd "$N/tiny-gpt2.json" >"$T/j.json"
	run_io pn-net --hf "$T/j.json"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-net: $T/j.json: no 'n_embd'" ]
}

@test "pn-net refuses heads that do not divide the hidden size" {
	sed 's/"n_head": 4/"n_head": 5/' "$N/tiny-gpt2.json" >"$T/j.json"
	run_io pn-net --hf "$T/j.json"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-net: $T/j.json: the 5 heads do not divide the hidden size 64" ]
}

@test "pn-net refuses heads that are no multiple of the key/value heads" {
	sed 's/"num_key_value_heads": 4/"num_key_value_heads": 5/' "$C/tinyllama-1.1b.json" >"$T/j.json"
	run_io pn-net --hf "$T/j.json"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-net: $T/j.json: the 32 heads are no multiple of the 5 key/value heads" ]
}

@test "pn-net refuses more active experts than experts" {
	sed 's/"num_experts_per_tok": 2/"num_experts_per_tok": 9/' "$C/mixtral-8x7b.json" >"$T/j.json"
	run_io pn-net --hf "$T/j.json"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-net: $T/j.json: num_experts_per_tok 9 is more than num_local_experts 8" ]
}

@test "pn-net refuses an unknown activation, naming its line" {
	sed 's/"hidden_act": "silu"/"hidden_act": "mish"/' "$C/tinyllama-1.1b.json" >"$T/j.json"
	run_io pn-net --hf "$T/j.json"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-net: $T/j.json:8: unknown hidden_act 'mish' (one of: gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, quick_gelu, relu, silu, swish, gated-gelu)" ]
}

@test "pn-net asks for --seq when the config gives no context" {
	grep -v n_positions "$C/t5-small.json" >"$T/j.json"
	run_io pn-net --hf "$T/j.json"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-net: $T/j.json: no sequence length in the config (no max_position_embeddings or n_positions): give --seq" ]
	pn-net --hf "$T/j.json" --seq 64 >/dev/null
}

@test "pn-net projects OPT-350M's 512-wide embedding in and out of its 1024-wide blocks" {
	pn-net --hf "$C/opt-350m.json" --seq 16 >"$T/o"
	[ "$(awk -F'\t' '$1 ~ /^(wte|project_in|project_out|lm_head)$/ {print $1, $6, $9, $10, $22}' "$T/o" | tr '\n' ,)" = \
	  "wte 1 NA NA 512,project_in 16 512 1024 NA,project_out 16 1024 512 NA,lm_head 16 512 50272 NA," ]
	! grep -q '^ln_f' "$T/o"
}

@test "pn-net refuses a missing config file" {
	run_io pn-net --hf "$T/none.json"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/err")" = "pn-net: $T/none.json: cannot open: No such file or directory" ]
}

@test "pn-net needs exactly one model" {
	run pn-net
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-net: give one of --hf, --arch and --conv-stack" ]
	run pn-net --arch vgg16 --conv-stack 8
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-net: give one of --hf, --arch and --conv-stack" ]
}

@test "pn-net refuses an unknown architecture, listing the known ones" {
	run pn-net --arch resnet20
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-net: --arch: unknown architecture 'resnet20' (one of: resnet18, resnet34, resnet50, resnet101, resnet152, vgg11, vgg13, vgg16, vgg19, mobilenet_v2, lstm-seq2seq)" ]
}

@test "pn-net refuses an image too small for the network" {
	run pn-net --arch resnet18 --image 16
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-net: --arch: image 16 is too small: the feature map vanishes" ]
}

@test "pn-net refuses a bad conv stack item" {
	run pn-net --conv-stack 8,3x3
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-net: --conv-stack: bad item '3x3' (C[kK][sS], M, A or fN)" ]
	run pn-net --conv-stack M,f10
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-net: --conv-stack: no conv in 'M,f10'" ]
}

@test "pn-net says a conv or a pool after a dense layer of a conv stack is out of place, not a bad item" {
	run pn-net --conv-stack 32,f10,32
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-net: --conv-stack: item '32': a conv after a dense layer (fN flattens the map; convs and pools come before it)" ]
	run pn-net --conv-stack 32,f10,M
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-net: --conv-stack: item 'M': a pool after a dense layer (fN flattens the map; convs and pools come before it)" ]
}

@test "pn-net refuses CNN options with a config and bad option values" {
	run pn-net --hf "$N/tiny-gpt2.json" --classes 10
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-net: --classes is for CNNs, not --hf" ]
	run pn-net --arch vgg16 --precision fp8
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-net: --precision: unknown value 'fp8' (one of: fp32, tf32, fp16, bf16)" ]
	run pn-net --arch vgg16 --phase bwd
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-net: --phase: unknown value 'bwd' (one of: train, fwd)" ]
	run pn-net --hf "$N/tiny-gpt2.json" --seq 0
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-net: --seq: '0' is too small (at least 1)" ]
}

# ---- dropout ---------------------------------------------------------------

# rate FILE NAME: the dropout column of the row named NAME
rate() { awk -F'\t' -v n="$2" 'NR==1{for(i=1;i<=NF;i++)if($i=="dropout")k=i} k && $1==n{print $k}' "$1"; }

@test "pn-net writes each dropout's rate from the config: attention, sublayer, embeddings" {
	sed 's/"vocab_size": 1000/"vocab_size": 1000, "attn_pdrop": 0.3, "resid_pdrop": 0.2, "embd_pdrop": 0.4/' \
		"$N/tiny-gpt2.json" >"$T/c.json"
	pn-net --hf "$T/c.json" --seq 16 >"$T/o"
	[ "$(rate "$T/o" h.0-1.attn)" = 0.3 ]
	[ "$(rate "$T/o" h.0-1.attn.dropout)" = 0.2 ]
	[ "$(rate "$T/o" h.0-1.mlp.dropout)" = 0.2 ]
	[ "$(rate "$T/o" embed.dropout)" = 0.4 ]
}

@test "pn-net refuses a dropout rate of 1, which pn-sum's rows refuse too, naming the key and its line" {
	sed 's/"vocab_size": 1000/"vocab_size": 1000,\n"resid_pdrop": 1/' "$N/tiny-gpt2.json" >"$T/c.json"
	run pn-net --hf "$T/c.json" --seq 16
	[ "$status" -eq 1 ]
	[ "$output" = "pn-net: $T/c.json:$(grep -n resid_pdrop "$T/c.json" | cut -d: -f1): 'resid_pdrop' must be a dropout rate below 1, not 1" ]
	sed 's/"vocab_size": 1000/"vocab_size": 1000, "resid_pdrop": 0.99/' "$N/tiny-gpt2.json" >"$T/c.json"
	pn-net --hf "$T/c.json" --seq 16 | pn-sum --fallback roofline -d A100 >/dev/null
}

@test "pn-net writes NA as the dropout of a row that draws no mask" {
	pn-net --hf "$N/tiny-gpt2.json" --seq 16 >"$T/o"
	[ "$(rate "$T/o" h.0-1.ln_1)" = NA ]
	[ "$(rate "$T/o" h.0-1.mlp.gelu)" = NA ]
	[ "$(rate "$T/o" h.0-1.mlp.fc)" = NA ]
}

@test "pn-net writes no dropout column for a model without dropout" {
	pn-net --arch resnet50 >"$T/o"
	! head -1 "$T/o" | grep -q dropout
	sed 's/"vocab_size": 1000/"vocab_size": 1000, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0/' \
		"$N/tiny-gpt2.json" >"$T/c.json"
	pn-net --hf "$T/c.json" >"$T/o"
	! grep -q dropout "$T/o"
}

@test "pn-net gives T5's attention probabilities and MLP activation their own dropout rows" {
	pn-net --hf "$C/t5-small.json" --seq 64 >"$T/o"
	# 8 heads of 64 x 64 scores; d_ff 2048
	[ "$(awk -F'\t' '$1 == "encoder.block.0-5.attn.attn_dropout" {print $3, $6, $7, $8}' "$T/o")" = "dropout 8 64 64" ]
	[ "$(awk -F'\t' '$1 == "encoder.block.0-5.mlp.act_dropout" {print $3, $6, $7, $8}' "$T/o")" = "dropout 1 64 2048" ]
	[ "$(rate "$T/o" encoder.block.0-5.attn.attn_dropout)" = 0.1 ]
	[ "$(awk -F'\t' 'NR > 1 {print $1}' "$T/o" | sort | uniq -d)" = "" ]
}

@test "pn-net drops VGG's classifier at 0.5 and MobileNetV2's at 0.2" {
	pn-net --arch vgg16 >"$T/o"
	[ "$(rate "$T/o" drop6),$(rate "$T/o" drop7)" = 0.5,0.5 ]
	pn-net --arch mobilenet_v2 >"$T/o"
	[ "$(rate "$T/o" dropout)" = 0.2 ]
}

@test "pn-sum keeps a network's attention dropout mask in memory" {
	for p in 0 0.1; do
		sed "s/\"vocab_size\": 1000/\"vocab_size\": 1000, \"attn_pdrop\": $p/" \
			"$N/tiny-gpt2.json" | pn-net --hf - --seq 128 >"$T/n$p"
		pn-sum --fallback roofline --device T4 -b 8 "$T/n$p" 2>/dev/null |
			col /dev/stdin peak_gb 1 >"$T/m$p"
	done
	awk -v a="$(cat "$T/m0")" -v b="$(cat "$T/m0.1")" 'BEGIN { exit !(b > a) }'
}

@test "pn-net scales Gemma's embeddings and gates its MLP with GELU" {
	pn-net --hf "$C/gemma-2b.json" --seq 64 >"$T/o"
	[ "$(awk -F'\t' '$1 == "embed.scale" {print $3, $6, $7, $8}' "$T/o")" = "mul 1 64 2048" ]
	[ "$(awk -F'\t' '$1 ~ /mlp\.gelu_mul$/ {print $8}' "$T/o")" = 16384 ]
	pn-net --hf "$C/tinyllama-1.1b.json" --seq 64 >"$T/l"
	! grep -q embed.scale "$T/l"
}

@test "pn-net takes Gemma's hidden_activation before its hidden_act" {
	sed 's/"hidden_act": "gelu",/"hidden_act": "gelu", "hidden_activation": "silu",/' \
		"$C/gemma-2b.json" >"$T/c.json"
	pn-net --hf "$T/c.json" --seq 64 >"$T/o"
	grep -q 'mlp\.silu_mul' "$T/o"
}

@test "pn-net gives Phi-3 one qkv_proj and one gate_up dense layer" {
	pn-net --hf "$C/phi-3-mini-4k.json" --seq 64 >"$T/o"
	# q, k and v of 32 heads of 96: 3 x 3072; gate and up: 2 x 8192
	[ "$(awk -F'\t' '$1 ~ /\.(qkv_proj|gate_up)$/ {print $6, $9, $10}' "$T/o" | tr '\n' ,)" = \
	  "64 3072 9216,64 3072 16384," ]
	! grep -q -e q_proj -e '\.up\b' "$T/o"
}

@test "pn-net soft-caps Gemma 2's attention scores and logits, and norms after each sublayer" {
	pn-net --hf "$C/gemma-2-2b.json" --seq 64 >"$T/o"
	# 8 heads of 64 x 64 scores: cap x tanh(x / cap), two mulu and a tanh
	[ "$(awk -F'\t' '$1 ~ /softcap/ {print $1, $3, $5, $6, $7, $8}' "$T/o" | tr '\n' ,)" = \
	  "h.0-25.attn.softcap.mulu mulu 52 8 64 64,h.0-25.attn.softcap.tanh tanh 26 8 64 64,lm.softcap.mulu mulu 2 1 64 256000,lm.softcap.tanh tanh 1 1 64 256000," ]
	grep -q 'ln_attn_post' "$T/o"
	grep -q 'ln_mlp_post' "$T/o"
}

@test "pn-net leaves Gemma 2's soft-capping out where the config sets it null" {
	sed 's/"attn_logit_softcapping": 50.0/"attn_logit_softcapping": null/; s/"final_logit_softcapping": 30.0/"final_logit_softcapping": 0/' \
		"$C/gemma-2-2b.json" >"$T/c.json"
	pn-net --hf "$T/c.json" --seq 64 >"$T/o"
	! grep -q softcap "$T/o"
	sed 's/"attn_logit_softcapping": 50.0/"attn_logit_softcapping": "x"/' \
		"$C/gemma-2-2b.json" >"$T/c.json"
	run pn-net --hf "$T/c.json"
	[ "$status" -eq 1 ]
	[[ "$output" == *"'attn_logit_softcapping' must be a number of at least 0 or null"* ]]
}

@test "pn-net runs Falcon's attention and MLP side by side on one norm" {
	pn-net --hf "$C/falcon-7b.json" --seq 64 >"$T/o"
	# ln_1, then both branches, then the two adds; no second norm
	[ "$(awk -F'\t' '$1 ~ /^h\./ {sub(/^h\.0-31\./, "", $1); print $1}' "$T/o" | tr '\n' ,)" = \
	  "ln_1,attn.qkv_proj,attn.rotary.mul,attn.rotary.add,attn.scores,attn.softmax,attn.context,attn.o_proj,mlp.fc,mlp.gelu,mlp.proj,attn.add,mlp.add," ]
	# 71 query heads and one key/value head of 64: 4544 + 2 x 64
	[ "$(awk -F'\t' '$1 ~ /qkv_proj$/ {print $10}' "$T/o")" = 4672 ]
}

@test "pn-net gives Falcon's new decoder architecture a norm for each branch and its key/value heads" {
	sed 's/"new_decoder_architecture": false/"new_decoder_architecture": true, "num_kv_heads": 8/; s/"num_attention_heads": 71/"num_attention_heads": 64/; s/"hidden_size": 4544/"hidden_size": 4096/' \
		"$C/falcon-7b.json" >"$T/c.json"
	pn-net --hf "$T/c.json" --seq 64 >"$T/o"
	grep -q 'ln_mlp' "$T/o"
	# 64 query heads and 8 key/value heads of 64: (64 + 2 x 8) x 64
	[ "$(awk -F'\t' '$1 ~ /qkv_proj$/ {print $10}' "$T/o")" = 5120 ]
}

@test "pn-net adds ALiBi's bias to Falcon's scores instead of rotary positions" {
	sed 's/"alibi": false/"alibi": true/' "$C/falcon-7b.json" >"$T/c.json"
	pn-net --hf "$T/c.json" --seq 64 >"$T/o"
	grep -q 'position_bias.add' "$T/o"
	! grep -q rotary "$T/o"
	# the same in sequential blocks (falcon-rw: parallel_attn false)
	sed 's/"alibi": false/"alibi": true/; s/"parallel_attn": true/"parallel_attn": false/' \
		"$C/falcon-7b.json" >"$T/c.json"
	pn-net --hf "$T/c.json" --seq 64 >"$T/o"
	grep -q 'position_bias.add' "$T/o"
	grep -q 'ln_2' "$T/o"
}

@test "pn-net rotates partial_rotary_factor of Phi's head dimensions and drops out both branches" {
	pn-net --hf "$C/phi-2.json" --seq 64 >"$T/o"
	# 32 heads of 80 for q and k, 0.4 x 80 = 32 dimensions rotated
	[ "$(awk -F'\t' '$1 ~ /rotary\.mul$/ {print $8}' "$T/o")" = 2048 ]
	[ "$(rate "$T/o" h.0-31.attn.dropout),$(rate "$T/o" h.0-31.mlp.dropout)" = 0.1,0.1 ]
	[ "$(awk -F'\t' '$1 == "lm_head" {print $11}' "$T/o")" = 1 ]
}

@test "pn-net refuses Phi's qk_layernorm, which it does not model" {
	sed 's/"qk_layernorm": false/"qk_layernorm": true/' "$C/phi-2.json" >"$T/c.json"
	run pn-net --hf "$T/c.json"
	[ "$status" -eq 1 ]
	[[ "$output" == *"qk_layernorm is not modelled"* ]]
}

@test "pn-net rotates nothing where Phi's partial_rotary_factor is 0" {
	sed 's/"partial_rotary_factor": 0.4/"partial_rotary_factor": 0/' "$C/phi-2.json" >"$T/c.json"
	pn-net --hf "$T/c.json" --seq 64 >"$T/o"
	! grep -q rotary "$T/o"
}

@test "pn-net normalises BLOOM's word embeddings and adds ALiBi's bias over its default context" {
	pn-net --hf "$C/bloom-560m.json" >"$T/o"
	[ "$(awk -F'\t' 'NR == 3 {print $1, $2, $8}' "$T/o")" = "embed.ln layernorm 1024" ]
	# no positions in the config: seq_length's default, 2048 tokens
	[ "$(awk -F'\t' '$1 == "wte" {print $7}' "$T/o")" = 2048 ]
	grep -q 'position_bias.add' "$T/o"
	! grep -q -e rotary -e wpe "$T/o"
}

@test "pn-net reads BLOOM's sizes under their num_ names too" {
	sed 's/"n_layer": 24/"num_hidden_layers": 24/; s/"n_head": 16/"num_attention_heads": 16/' \
		"$C/bloom-560m.json" >"$T/c.json"
	params --hf "$T/c.json" 559214592
}
