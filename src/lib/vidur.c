#include <math.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "vidur.h"

const pn_vidur_op pn_vidur_ops[] = {
	{"emb", PN_EMBEDDING, 0},
	{"input_layernorm", PN_LAYERNORM, 0},
	{"attn_pre_proj", PN_DENSE, 0},
	{"attn_rope", PN_POSENC, 0},
	{"attn_post_proj", PN_DENSE, 0},
	{"post_attention_layernorm", PN_LAYERNORM, 1},
	{"mlp_up_proj", PN_DENSE, 0},
	{"mlp_act", PN_ELEMENTWISE, 0},
	{"mlp_down_proj", PN_DENSE, 0},
	{"add", PN_ELEMENTWISE, 0},
	{NULL, PN_NLAYERS, 0}
};

static int divides(double a, double b)
{
	return fmod(a, b) == 0;
}

const char *pn_vidur_check(const pn_vidur_cfg *c, char *buf, size_t n)
{
	const struct {
		const char *name;
		double v, by;
		const char *byname;
	} need[] = {
		{"n_embd", c->n_embd, c->n_head, "n_head"},
		{"n_head", c->n_head, c->n_kv_head, "n_kv_head"},
		{"n_head", c->n_head, c->tp, "num_tensor_parallel_workers"},
		{"n_kv_head", c->n_kv_head, c->tp,
		 "num_tensor_parallel_workers"},
		{"n_expanded_embd", c->n_expanded_embd, c->tp,
		 "num_tensor_parallel_workers"},
		{"vocab_size", c->vocab, c->tp, "num_tensor_parallel_workers"},
	};
	for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
		if (!divides(need[i].v, need[i].by)) {
			snprintf(buf, n, "%s %g is not divisible by %s %g",
				 need[i].name, need[i].v, need[i].byname,
				 need[i].by);
			return buf;
		}
	return NULL;
}

int pn_vidur_layer(const pn_vidur_op *op, const pn_vidur_cfg *c,
		   pn_layer *l)
{
	double h = c->n_embd, p = c->tp, d = h / c->n_head;
	double fp = c->n_expanded_embd / p;
	memset(l, 0, sizeof *l);
	l->type = op->type;
	l->batch = c->tokens;
	l->seq_len = op->type == PN_DENSE ? 0 : 1;
	snprintf(l->op, sizeof l->op, "%s", pn_layer_name(op->type));
	const char *name = op->name;
	if (strcmp(name, "emb") == 0) {
		l->vocab = c->vocab / p;
		l->embed_dim = h;
	} else if (op->type == PN_LAYERNORM) {
		l->dim = h;
	} else if (strcmp(name, "attn_pre_proj") == 0) {
		l->in_features = h;
		l->out_features = (c->n_head + 2 * c->n_kv_head) * d / p;
	} else if (strcmp(name, "attn_rope") == 0) {
		l->embed_dim = (c->n_head + c->n_kv_head) * d / p;
	} else if (strcmp(name, "attn_post_proj") == 0) {
		l->in_features = c->n_head * d / p;
		l->out_features = h;
	} else if (strcmp(name, "mlp_up_proj") == 0) {
		l->in_features = h;
		l->out_features = (c->gated ? 2 : 1) * fp;
	} else if (strcmp(name, "mlp_act") == 0) {
		snprintf(l->op, sizeof l->op, "%s", c->gated ? "silu_mul" : "gelu");
		l->dim = fp;
	} else if (strcmp(name, "mlp_down_proj") == 0) {
		l->in_features = fp;
		l->out_features = h;
	} else if (strcmp(name, "add") == 0) {
		if (!c->gated)
			return -1;
		snprintf(l->op, sizeof l->op, "add");
		l->dim = h;
	} else {
		PN_BUG("Vidur op without a shape");
	}
	l->prec = PN_FP16;
	l->bytes = pn_prec_bytes(PN_FP16);
	l->optimizer = PN_OPT_NONE;
	return 0;
}
