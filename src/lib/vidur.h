/* vidur.h - Vidur's per-operator profiles as pn layers: which pn layer each
 * of its operators is, with its exact shape.
 *
 * Vidur (microsoft/vidur, MLSys 2024) publishes compute/<gpu>/<model>/
 * mlp.csv: each row times every operator of ONE transformer block of one
 * model (n_head, n_kv_head, n_embd h, n_expanded_embd f, vocab_size V,
 * use_gated_mlp) at num_tokens T and tensor-parallel degree p (the rank-0
 * shard, on one GPU, no collective), fp16, forward, GPU kernel time in ms
 * (time_stats.<op>.{min,max,mean,median,std} over 20 repeats).  Every
 * tensor has one row per token, so every pn row has batch = T and
 * seq_len = 1 where the type has one.  With d = h / n_head and g = 2 when
 * gated (gate and up projections fused), else 1:
 *
 *   Vidur op                  pn layer     shape
 *   emb                       embedding    vocab V/p, embed_dim h
 *   input_layernorm           layernorm    dim h
 *   attn_pre_proj             dense        in h, out (n_head + 2 n_kv_head) d/p
 *   attn_rope                 posenc       embed_dim (n_head + n_kv_head) d/p
 *   attn_post_proj            dense        in n_head d/p, out h
 *   post_attention_layernorm  layernorm    dim h         (optional column)
 *   mlp_up_proj               dense        in h, out g f/p
 *   mlp_act                   elementwise  gated: silu_mul, dim f/p
 *                                          (SiluAndMul reads [T x 2f/p],
 *                                          writes [T x f/p]); else gelu,
 *                                          dim f/p
 *   mlp_down_proj             dense        in f/p, out h
 *   add                       elementwise  add, dim h (gated only)
 *
 * Approximations, all documented in samples/vidur/README.md: the norms are
 * RMSNorm (phi-2, the one non-gated model: LayerNorm) and become layernorm
 * rows (the same traffic, less arithmetic); the rotary embedding becomes a
 * posenc row over the q and k heads it rotates in place; dense rows say
 * bias 0 (the CSV does not say which models have a QKV bias; Qwen and
 * phi-2 do); the add of a non-gated block (phi-2) times two adds (attention
 * and MLP run in parallel) in one value and has no pn row.  Attention
 * kernels are not in mlp.csv.
 */
#ifndef PN_VIDUR_H
#define PN_VIDUR_H

#include <stddef.h>

#include "layer.h"

/* One model configuration and operating point of an mlp.csv row. */
typedef struct {
	double n_head, n_kv_head, n_embd, n_expanded_embd, vocab, gated;
	double tokens, tp;      /* T and p */
} pn_vidur_cfg;

/* One operator of the table above. */
typedef struct {
	const char *name;       /* "emb" ...: the <op> of time_stats.<op>.* */
	pn_layer_type type;
	int optional;           /* its columns may be absent (phi-2 has no
				   post_attention_layernorm) */
} pn_vidur_op;

/* The operators, in the CSV's order, a NULL name last. */
extern const pn_vidur_op pn_vidur_ops[];

/* NULL when c is a possible configuration, else a message such as
 * "n_embd 100 is not divisible by n_head 3" or "n_kv_head 8 is not
 * divisible by num_tensor_parallel_workers 16" (every dimension sharded
 * by p must divide by it; every value is a whole number of at least 1,
 * gated 0 or 1, which the caller checks). */
const char *pn_vidur_check(const pn_vidur_cfg *c, char *buf, size_t n);

/* The pn layer of operator op at configuration c (checked): fp16, fwd, no
 * optimizer.  Returns 0, or -1 when op has no pn row at c (the add of a
 * non-gated block). */
int pn_vidur_layer(const pn_vidur_op *op, const pn_vidur_cfg *c,
		   pn_layer *l);

#endif
