/* arch.h - networks from architectures: the rows of one training step of a
 * model described by a Hugging Face config.json, a named convolutional
 * family, or a convolution stack, written as a pn network (network.h) for
 * ONE sample, with the model's parameter count.
 *
 * Rows follow samples/networks/README.md: phase train (or fwd), one
 * sample (pn-sum multiplies batch, mem: elements), the layers of a
 * transformer's blocks one set of rows repeated over the blocks; the dense
 * layers of a transformer have batch = tokens of one sample (seq).
 *
 * ---- transformers (pn_arch_hf) -------------------------------------------
 * The config's model_type picks the family; the keys read, with the
 * defaults of the Hugging Face classes where a key is absent:
 *
 *   bert roberta   num_hidden_layers hidden_size num_attention_heads
 *                  intermediate_size vocab_size max_position_embeddings
 *                  (512) type_vocab_size (2) hidden_act (gelu)
 *                  hidden_dropout_prob (0.1) attention_probs_dropout_prob
 *                  (0.1) tie_word_embeddings (true):
 *                  post-norm blocks, the masked-LM head (transform, GELU,
 *                  layer norm, decoder to the vocabulary; its weight tied
 *                  to the word embedding, its bias not)
 *   gpt2           n_layer n_embd n_head n_inner (4 n_embd) vocab_size
 *                  n_positions activation_function (gelu_new) resid_pdrop
 *                  embd_pdrop attn_pdrop (0.1) tie_word_embeddings (true)
 *   gpt_neox       num_hidden_layers hidden_size num_attention_heads
 *                  intermediate_size vocab_size hidden_act (gelu)
 *                  attention_bias (true) hidden_dropout attention_dropout
 *                  (0)
 *                  tie_word_embeddings (false); rotary positions
 *   opt            num_hidden_layers hidden_size num_attention_heads ffn_dim
 *                  vocab_size max_position_embeddings (its table holds 2
 *                  more) activation_function (relu) dropout (0.1)
 *                  attention_dropout activation_dropout (0)
 *                  enable_bias (true) do_layer_norm_before (true)
 *                  tie_word_embeddings (true) word_embed_proj_dim
 *                  (hidden_size; when it differs, as in opt-350m, the
 *                  word embedding and the head are that wide, with
 *                  project_in and project_out dense layers without bias)
 *   llama mistral qwen2 mixtral gemma gemma2 phi3
 *                  num_hidden_layers hidden_size num_attention_heads
 *                  num_key_value_heads (= heads) head_dim (hidden / heads)
 *                  intermediate_size vocab_size hidden_act (silu)
 *                  attention_bias (false; qwen2: q, k, v biased, o not)
 *                  attention_dropout (0) mlp_bias (false)
 *                  tie_word_embeddings (false); RMSNorm, gated MLP, rotary
 *                  positions; mixtral (or any of these with
 *                  num_local_experts): num_local_experts
 *                  num_experts_per_tok, a router and that many experts;
 *                  gemma: hidden_activation (else hidden_act;
 *                  gelu_pytorch_tanh), tie_word_embeddings (true), the
 *                  embeddings times sqrt(hidden_size) (embed.scale, an
 *                  elementwise mul); gemma2: gemma's, a norm after the
 *                  attention and after the MLP too (ln_attn_post,
 *                  ln_mlp_post), attn_logit_softcapping and
 *                  final_logit_softcapping (on; null or 0: off): cap x
 *                  tanh(x / cap) on the scores and on the logits, two
 *                  elementwise mulu and a tanh; phi3: resid_pdrop
 *                  embd_pdrop (0), one
 *                  qkv_proj dense for q, k and v and one gate_up dense
 *                  for the gate and up projections
 *   falcon         num_hidden_layers hidden_size num_attention_heads
 *                  multi_query (true: one key/value head) or, with
 *                  new_decoder_architecture (false), num_kv_heads (=
 *                  heads) ffn_hidden_size (4 hidden) vocab_size bias
 *                  (false) alibi (false: rotary positions; true: ALiBi's
 *                  bias added to the scores) parallel_attn (true)
 *                  hidden_dropout attention_dropout (0)
 *                  tie_word_embeddings (true) max_position_embeddings
 *                  (2048): one qkv_proj dense, a GELU MLP; with
 *                  parallel_attn the attention and the MLP both read the
 *                  block's input (one layer norm, or ln_1 and ln_mlp with
 *                  new_decoder_architecture) and both outputs are added
 *                  to it
 *   phi            num_hidden_layers hidden_size num_attention_heads
 *                  num_key_value_heads (= heads) intermediate_size
 *                  vocab_size hidden_act (gelu_new) partial_rotary_factor
 *                  (0.5: rotary on that share of each head's dimensions)
 *                  resid_pdrop embd_pdrop attention_dropout (0)
 *                  tie_word_embeddings (false) qk_layernorm (false; true
 *                  is refused, not modelled): falcon's parallel blocks
 *                  with one layer norm, biased projections, a dropout on
 *                  each branch, an LM head with a bias
 *   bloom          n_layer (or num_hidden_layers) hidden_size n_head (or
 *                  num_attention_heads) vocab_size hidden_dropout
 *                  attention_dropout (0) tie_word_embeddings (true)
 *                  seq_length (2048): a layer norm on the word embeddings
 *                  (embed.ln), pre-norm blocks, one biased qkv_proj,
 *                  ALiBi's bias added to the scores, a GELU MLP of 4
 *                  hidden
 *   t5             num_layers num_decoder_layers (= num_layers) d_model
 *                  d_kv num_heads d_ff vocab_size feed_forward_proj (relu;
 *                  gated-gelu) relative_attention_num_buckets (32)
 *                  dropout_rate (0.1; also on attention's probabilities
 *                  and after the MLP's activation) tie_word_embeddings
 *                  (true):
 *                  encoder-decoder, RMSNorm without bias, relative position
 *                  bias in the first block of each stack; the decoder's
 *                  sequence is dec_seq (default seq), its cross-attention
 *                  reads the encoder's seq tokens
 *
 * Every model ends in its loss head: the LM head (dense to the
 * vocabulary, without bias; its weights counted once when tied) and, in
 * training, the loss (`xent`, cross-entropy over the vocabulary, row
 * lm.loss or mlm.loss); in a forward pass the softmax over the vocabulary
 * (lm.softmax, mlm.softmax).
 *
 * Attention: one `attention` row when the block's attention is the one
 * pn-featurize counts (as many key/value heads as heads, heads x head_dim
 * = hidden, biases on the four projections, no rotary or relative
 * position; BERT, GPT-2, OPT); else its parts: q, k and v projections
 * (grouped-query attention: k and v of num_key_value_heads x head_dim),
 * rotary embedding (two `mul` and an `add`), scores (bmm), position bias
 * (add), softmax, context (bmm) and the output projection.
 * RMSNorm is a `layernorm` row (its weights: dim, no bias); SiLU is
 * sigmoid then mul; a gated MLP of SiLU or GELU is one gated op
 * (`silu_mul`, `gelu_mul`: the activation of the gate times the up
 * projection, one fused kernel as vLLM's SiluAndMul), of ReLU its relu
 * and a mul;
 * a mixture of experts is a router (dense and softmax) and each expert's
 * MLP at ceil(seq x experts_per_tok / experts) tokens, repeated over the
 * experts (all of whose weights are trained), and a weighted sum.
 * Dropout rows appear where the config's probability is above 0 and the
 * phase is train.
 *
 * ---- convolutional networks (pn_arch_named, pn_arch_convstack) -----------
 * resnet18 resnet34 resnet50 resnet101 resnet152 vgg11 vgg13 vgg16 vgg19
 * mobilenet_v2 as torchvision builds them (ResNet v1.5: stride on the 3x3
 * conv), at image x image x 3 and classes outputs; lstm-seq2seq (Sutskever
 * et al. 2014: 4+4 LSTM layers of 1000 cells, vocabularies 160000 and
 * 80000; seq tokens a side, default 30).  Batch normalisation is a
 * `batchnorm` row, pooling a `pool` row (max: 3x3/2 pad 1 in ResNet, 2x2/2
 * in VGG; avg: global, kernel = stride = the image; VGG's adaptive pool to
 * 7 x 7 where the image is not 224: windows of stride floor(x / 7), kernel
 * x - 6 stride); ReLU (ReLU6) after a normalisation an
 * `elementwise` relu, else the conv's activation; a depthwise conv a
 * conv2d of one channel in and out with batch = channels.
 *
 * A conv stack (pn_arch_convstack) is a comma-separated list of:
 *   C[kK][sS]   a K x K conv (default 3) to C channels, stride S (default
 *               1), padding K/2, bias and ReLU
 *   M           2 x 2 max-pool of stride 2
 *   A           global average pool
 *   fN          a dense layer of N outputs with ReLU (after the convs)
 * then a dense layer to the classes and the loss (training: `xent`, row
 * loss; forward: a softmax, row softmax); the first conv reads 3
 * channels.  The torchvision networks and lstm-seq2seq end the same way.
 *
 * ---- parameters --------------------------------------------------------
 * A row's parameters are its weights as pn_layer_work counts them, but for
 * rows that stand for a layer of other weights: RMSNorm (dim), a tied
 * head (0; BERT's: its bias), a depthwise conv (channels x K x K), an
 * attention's parts (each projection's own).  pn_arch_params sums them
 * times repeat: the count of the framework's model (model.parameters()).
 *
 * ---- errors --------------------------------------------------------------
 * The functions return 0, or -1 with e filled in: line is the config's line
 * (0: none), msg without file or line:
 *   the config is no JSON object
 *   no model_type
 *   unknown model_type 'xlnet' (one of: bert, roberta, ...)
 *   no 'hidden_size'
 *   'n_head' must be a whole number of at least 1, not a string
 *   'tie_word_embeddings' must be true or false
 *   'dropout' must be a probability from 0 to 1
 *   'dropout' must be a dropout rate below 1, not 1
 *   unknown hidden_act 'mish' (one of: gelu, gelu_new, ...)
 *   gated-gelu is a feed_forward_proj of t5 only
 *   the 7 heads do not divide the hidden size 768
 *   the 32 heads are no multiple of the 5 key/value heads
 *   num_experts_per_tok 9 is more than num_local_experts 8
 *   no sequence length in the config (no max_position_embeddings or
 *     n_positions): give --seq
 *   seq 2048 is longer than the position table of 1024
 *   --dec-seq is for an encoder-decoder (model_type t5)
 *   unknown architecture 'resnet20' (one of: resnet18, ...)
 *   image 16 is too small: the feature map vanishes
 *   bad item '3x3' (C[kK][sS], M, A or fN)        (a conv stack)
 *   no conv in 'M,f10'
 */
#ifndef PN_ARCH_H
#define PN_ARCH_H

#include <stdio.h>

#include "json.h"
#include "layer.h"

/* What every row takes from the command line. */
typedef struct {
	int optimizer;      /* of rows with weights; -1: the family's (adam
			       for transformers, sgd for the others) */
	pn_prec prec;
	int phase;          /* PN_PH_TRAIN or PN_PH_FWD (network.h) */
	long seq;           /* 0: the config's context */
	long dec_seq;       /* t5: the decoder's tokens (0: seq) */
	long image;         /* CNNs: input side (default 224) */
	long classes;       /* CNNs: outputs (default 1000) */
} pn_arch_opts;

typedef struct {
	char name[96];
	pn_layer l;
	double repeat;
	double params;      /* per repeat; -1: l's weights */
} pn_arch_row;

typedef struct {
	pn_arch_opts o;
	pn_arch_row *r;
	long n, cap;
} pn_arch;

typedef struct {
	long line;
	char msg[240];
} pn_arch_err;

/* ---- the options every network writer takes (pn-net, pn-onnx) ---------
 * Their long options (PN_ARCH_LONGOPTS, inside a getopt_long table) and
 * the lines of --help for --precision and --phase (each tool words its own
 * --optimizer and --seq defaults); pn_arch_option reads one into o. */
enum { PN_AO_OPT = 0x300, PN_AO_PREC, PN_AO_PHASE };
#define PN_ARCH_LONGOPTS \
	{"seq", required_argument, 0, 's'}, \
	{"optimizer", required_argument, 0, PN_AO_OPT}, \
	{"precision", required_argument, 0, PN_AO_PREC}, \
	{"phase", required_argument, 0, PN_AO_PHASE}
#define PN_ARCH_HELP_ROWS \
"      --precision NAME  fp32, tf32, fp16 or bf16 (default fp32)\n" \
"      --phase PHASE     train (forward, backward and optimizer; default) or\n" \
"                        fwd (inference: no optimizer, no dropout, a\n" \
"                        softmax where training has its loss)\n"
/* Option c (getopt_long's value) with argument arg into o: 1 when c is one
 * of these options, else 0; a bad value is a usage error (exit 2). */
int pn_arch_option(pn_arch_opts *o, int c, const char *arg);

/* Build into a (empty, with a->o set) from a config, a name or a stack
 * spec.  On an error a is left empty. */
int pn_arch_hf(pn_arch *a, const pn_json *cfg, pn_arch_err *e);
int pn_arch_named(pn_arch *a, const char *name, pn_arch_err *e);
int pn_arch_convstack(pn_arch *a, const char *spec, pn_arch_err *e);
/* The names pn_arch_named knows, NULL-terminated. */
extern const char *const pn_arch_names[];

/* ---- rows from elsewhere (pn-onnx) ----------------------------------- */
/* A new row of type t (batch 1, its type's default bias) named name (cut
 * at 95 bytes), counted repeat times with params parameters a repeat (-1:
 * its layer's weights). */
pn_layer *pn_arch_add(pn_arch *a, pn_layer_type t, double repeat,
		      double params, const char *name);
/* Give every row the options' precision and phase, and the optimizer
 * (family_opt when a->o.optimizer is -1) where its type has weights. */
void pn_arch_finish(pn_arch *a, int family_opt);
/* In the train phase, mark the first row with weights, which reads the
 * data, as skipping its input's gradient (layer.h's input_grad 0: no
 * framework computes the data's gradient) where its type can (dense,
 * conv2d; an embedding's input has no gradient anyway).  pn-net and
 * pn-onnx call it before they write. */
void pn_arch_data_grad(pn_arch *a);

/* The parameter count (see above). */
double pn_arch_params(const pn_arch *a);
/* Write a's rows as a network (network.h's writer), with the input_grad
 * column when a row skips its input's gradient. */
void pn_arch_write(const pn_arch *a, FILE *f);
/* What pn-net and pn-onnx print: the parameter count (params set) or the
 * network, to out (NULL or "-": standard output; pn_output_open's rules),
 * closed with its error checked. */
void pn_arch_emit(const pn_arch *a, const char *out, int params);
void pn_arch_free(pn_arch *a);

#endif
