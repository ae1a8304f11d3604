/* rnn.c - the cpu backend's recurrent layers: rnn, lstm, gru (oneDNN
 * vanilla RNN, LSTM, linear-before-reset GRU), and their weights in
 * PyTorch's layout for --check. */
#include <math.h>
#include <string.h>

#include "dnn.h"
#include "err.h"

static void c_zero(const op *o)
{
	memset(o->a, 0, o->n * sizeof(float));
}

static float act_f(int act, float x)
{
	return act == PN_ACT_RELU ? (x > 0 ? x : 0) :
	       act == PN_ACT_TANH ? tanhf(x) : 1 / (1 + expf(-x));
}

static float act_d(int act, float y)        /* derivative from the output */
{
	return act == PN_ACT_RELU ? (y > 0) :
	       act == PN_ACT_TANH ? 1 - y * y : y * (1 - y);
}

static void c_act(const op *o)              /* b = act(a) */
{
	for (size_t i = 0; i < o->n; i++)
		o->b[i] = act_f(o->k, o->a[i]);
}

static void c_act_bwd(const op *o)          /* c = a * act'(from output b) */
{
	for (size_t i = 0; i < o->n; i++)
		o->c[i] = o->a[i] * act_d(o->k, o->b[i]);
}

/* The layers of one recurrent net: shapes, descriptors and the tensors the
 * forward and backward passes share. */
typedef struct {
	dnnl_dim_t B, S, I, H, D, G;
	int L, type, train;
	float p;                         /* dropout between layers */
	const void *mask[MAXL];          /* its noise below layer k (k >= 1) */
	dnnl_rnn_direction_t dir;
	dnnl_memory_desc_t msrc[MAXL], mwl[MAXL], mwla[MAXL], mwi, mwia, mb,
			   mdst, msi;
	dnnl_memory_t si, sic, dsi, dsic;     /* zero initial states */
	dnnl_primitive_desc_t fpd[MAXL];
	dnnl_memory_t src[MAXL], dst[MAXL], ws[MAXL];
} rnn_net;

static dnnl_status_t fwd_desc(const rnn_net *c, int k, dnnl_rnn_desc_t *rd)
{
	dnnl_prop_kind_t prop = c->train ? dnnl_forward_training :
					   dnnl_forward_inference;
	if (c->type == PN_RNN)
		return dnnl_vanilla_rnn_forward_desc_init(rd, prop,
			dnnl_eltwise_tanh, c->dir, &c->msrc[k], &c->msi,
			&c->mwla[k], &c->mwia, &c->mb, &c->mdst, NULL, 0, 0, 0);
	if (c->type == PN_LSTM)
		return dnnl_lstm_forward_desc_init(rd, prop, c->dir, &c->msrc[k],
			&c->msi, &c->msi, &c->mwla[k], &c->mwia, &c->mb,
			&c->mdst, NULL, NULL, 0);
	return dnnl_lbr_gru_forward_desc_init(rd, prop, c->dir, &c->msrc[k],
		&c->msi, &c->mwla[k], &c->mwia, &c->mb, &c->mdst, NULL, 0);
}

static dnnl_status_t bwd_desc(const rnn_net *c, int k, dnnl_rnn_desc_t *rd)
{
	const dnnl_memory_desc_t *x = &c->msrc[k], *s = &c->msi,
		*wl = &c->mwla[k], *wi = &c->mwia, *b = &c->mb, *y = &c->mdst;
	if (c->type == PN_RNN)
		return dnnl_vanilla_rnn_backward_desc_init(rd, dnnl_backward,
			dnnl_eltwise_tanh, c->dir, x, s, wl, wi, b, y, NULL, x,
			s, wl, wi, b, y, NULL, 0, 0, 0);
	if (c->type == PN_LSTM)
		return dnnl_lstm_backward_desc_init(rd, dnnl_backward, c->dir, x,
			s, s, wl, wi, b, y, NULL, NULL, x, s, s, wl, wi, b, y,
			NULL, NULL, 0);
	return dnnl_lbr_gru_backward_desc_init(rd, dnnl_backward, c->dir, x, s,
		wl, wi, b, y, NULL, x, s, wl, wi, b, y, NULL, 0);
}

/* Layer k forward: its weights, output and primitive. */
static void fwd_layer(pn_run *r, rnn_net *c, int k)
{
	dnnl_dim_t in = k == 0 ? c->I : c->D * c->H;
	double H = (double)c->H;
	c->msrc[k] = MD(3, c->S, c->B, in);
	c->mwl[k] = MD(5, 1, c->D, in, c->G, c->H);
	c->mwla[k] = ANY(5, 1, c->D, in, c->G, c->H);
	if (k == 0)
		c->src[k] = dn_tensor(r, &c->msrc[k], RAND, 1);
	r->rw[k][0] = dn_tensor(r, &c->mwl[k], WEIGHT, H);
	r->rw[k][1] = dn_tensor(r, &c->mwi, WEIGHT, H);
	r->rb[k] = dn_tensor(r, &c->mb, WEIGHT, H);
	c->dst[k] = dn_tensor(r, &c->mdst, ZERO, 1);
	if (r->st)
		return;
	dnnl_rnn_desc_t rd;
	DN(fwd_desc(c, k, &rd), "recurrent layer");
	c->fpd[k] = dn_pdesc(r, &rd, 0, 1, NULL, "recurrent layer");
	if (r->st)
		return;
	const dnnl_memory_desc_t *wsmd = dn_q(c->fpd[k], dnnl_query_workspace_md, 0);
	c->ws[k] = c->train && wsmd && dnnl_memory_desc_get_size(wsmd) ?
		   dn_tensor(r, wsmd, ZERO, 1) : NULL;
	/* the parameters stay plain (the optimizer updates them); oneDNN's
	 * packed copies are made every step, as a framework's are */
	dnnl_memory_t fwl = dn_as(r, FWD, r->rw[k][0],
				  dn_q(c->fpd[k], dnnl_query_weights_md, 0));
	dnnl_memory_t fwi = dn_as(r, FWD, r->rw[k][1],
				  dn_q(c->fpd[k], dnnl_query_weights_md, 1));
	dn_prim(r, FWD, c->fpd[k], DNNL_ARG_SRC_LAYER, c->src[k],
		DNNL_ARG_SRC_ITER, c->si, DNNL_ARG_SRC_ITER_C, c->sic,
		DNNL_ARG_WEIGHTS_LAYER, fwl, DNNL_ARG_WEIGHTS_ITER, fwi,
		DNNL_ARG_BIAS, r->rb[k], DNNL_ARG_DST_LAYER, c->dst[k],
		DNNL_ARG_WORKSPACE, c->ws[k], -1);
	if (k + 1 < c->L) {
		if (c->p > 0) {
			c->src[k + 1] = dn_tensor(r, &c->mdst, ZERO, 1);
			if (!r->st)
				c->mask[k + 1] = dn_dropout_fwd(r, FWD,
					dn_ptr(c->dst[k]), dn_ptr(c->src[k + 1]),
					dn_nelems(c->dst[k]), c->p, k + 1,
					c->train);
		} else {
			c->src[k + 1] = c->dst[k];
		}
	}
}

/* Layer k backward from the gradient ddst of its output; returns the
 * gradient of the layer below's output. */
static dnnl_memory_t bwd_layer(pn_run *r, rnn_net *c, int k,
			       dnnl_memory_t ddst)
{
	r->rdw[k][0] = dn_tensor(r, &c->mwl[k], ZERO, 1);
	r->rdw[k][1] = dn_tensor(r, &c->mwi, ZERO, 1);
	r->rdb[k] = dn_tensor(r, &c->mb, ZERO, 1);
	dnnl_memory_t dsrc = dn_tensor(r, &c->msrc[k], ZERO, 1);
	if (r->st)
		return NULL;
	dnnl_rnn_desc_t rd;
	DN(bwd_desc(c, k, &rd), "recurrent layer backward");
	dnnl_primitive_desc_t bpd = dn_pdesc(r, &rd, 0, 1, c->fpd[k],
					     "recurrent layer backward");
	if (r->st)
		return NULL;
	/* the backward may want the weights in another layout */
	dnnl_memory_t wl = dn_as(r, BWD, r->rw[k][0],
				 dn_q(bpd, dnnl_query_weights_md, 0));
	dnnl_memory_t wi = dn_as(r, BWD, r->rw[k][1],
				 dn_q(bpd, dnnl_query_weights_md, 1));
	/* gradients in oneDNN's layout, zeroed (oneDNN adds to them), then
	 * reordered to the plain layout of the parameters */
	dnnl_memory_t g[3];
	for (int j = 0; j < 3; j++) {
		dnnl_memory_t m = j < 2 ? r->rdw[k][j] : r->rdb[k];
		const dnnl_memory_desc_t *want =
			dn_q(bpd, dnnl_query_diff_weights_md, j);
		g[j] = dnnl_memory_desc_equal(dn_mdof(m), want) ? m :
		       dn_tensor(r, want, ZERO, 1);
		op *o = dn_cop(r, BWD, c_zero);
		if (!o)
			return NULL;
		o->a = dn_ptr(g[j]);
		o->n = dn_nelems(g[j]);
	}
	dn_prim(r, BWD, bpd, DNNL_ARG_SRC_LAYER, c->src[k],
		DNNL_ARG_SRC_ITER, c->si, DNNL_ARG_SRC_ITER_C, c->sic,
		DNNL_ARG_DIFF_SRC_ITER, c->dsi, DNNL_ARG_DIFF_SRC_ITER_C, c->dsic,
		DNNL_ARG_WEIGHTS_LAYER, wl, DNNL_ARG_WEIGHTS_ITER, wi,
		DNNL_ARG_BIAS, r->rb[k], DNNL_ARG_DST_LAYER, c->dst[k],
		DNNL_ARG_DIFF_DST_LAYER, ddst, DNNL_ARG_DIFF_SRC_LAYER, dsrc,
		DNNL_ARG_DIFF_WEIGHTS_LAYER, g[0],
		DNNL_ARG_DIFF_WEIGHTS_ITER, g[1],
		DNNL_ARG_DIFF_BIAS, g[2], DNNL_ARG_WORKSPACE, c->ws[k], -1);
	for (int j = 0; j < 3; j++) {
		dnnl_memory_t m = j < 2 ? r->rdw[k][j] : r->rdb[k];
		if (g[j] != m)
			dn_reorder(r, BWD, g[j], m);
	}
	if (k == 0) {
		dn_canon(r, CDX, dsrc, NULL);
		return NULL;
	}
	if (c->p > 0) {
		ddst = dn_tensor(r, &c->mdst, ZERO, 1);
		if (!r->st)
			dn_dropout_bwd(r, BWD, dn_ptr(dsrc), dn_ptr(ddst),
				       dn_nelems(dsrc), c->mask[k]);
		return ddst;
	}
	return dsrc;
}

/* The activation of PreNeT's benchmark on the last time step of y (its
 * gradient into dy when dy), out its output. */
static void last_act(pn_run *r, const rnn_net *c, int act, dnnl_memory_t y,
		     dnnl_memory_t dy, float *out)
{
	size_t last = (size_t)((c->S - 1) * c->B * c->D * c->H);
	size_t nlast = (size_t)(c->B * c->D * c->H);
	float *dout = dy ? dn_fbuf(r, nlast) : NULL;
	op *o = dn_cop(r, dy ? BWD : FWD, dy ? c_act_bwd : c_act);
	if (!o)
		return;
	if (dy) {
		pn_rng_fill(&r->rng, dout, nlast, -1, 1);
		o->a = dout;
		o->b = out;
		o->c = (float *)dn_ptr(dy) + last;
	} else {
		o->a = (float *)dn_ptr(y) + last;
		o->b = out;
	}
	o->n = nlast;
	o->k = act;
}

void dn_rnn(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	rnn_net net, *c = &net;
	memset(c, 0, sizeof *c);
	c->B = (dnnl_dim_t)l->batch;
	c->S = (dnnl_dim_t)l->seq_len;
	c->I = (dnnl_dim_t)l->input_size;
	c->H = (dnnl_dim_t)l->hidden;
	c->D = l->bidirectional ? 2 : 1;
	c->G = pn_rnn_gates(l->type);
	c->L = (int)l->layers;
	c->type = l->type;
	c->train = l->train;
	c->p = (float)r->cfg.l.dropout;
	int act = l->activation, L = c->L;
	if (L > MAXL) {
		dn_fail(r, PN_INVALID, "more than %d layers", MAXL);
		return;
	}
	dnnl_dim_t Gb = l->type == PN_GRU ? 4 : c->G;
	c->dir = c->D == 2 ? dnnl_bidirectional_concat :
			     dnnl_unidirectional_left2right;
	c->mb = MD(4, 1, c->D, Gb, c->H);
	c->mdst = MD(3, c->S, c->B, c->D * c->H);
	c->mwi = MD(5, 1, c->D, c->H, c->G, c->H);
	c->mwia = ANY(5, 1, c->D, c->H, c->G, c->H);
	/* explicit zero initial states: oneDNN 2.6 gets the gradient of the
	 * recurrent weights wrong without them (unidirectional rnn and lstm) */
	c->msi = MD(4, 1, c->D, c->B, c->H);
	int lstm = l->type == PN_LSTM;
	c->si = dn_tensor(r, &c->msi, ZERO, 1);
	c->sic = lstm ? dn_tensor(r, &c->msi, ZERO, 1) : NULL;
	c->dsi = c->train ? dn_tensor(r, &c->msi, ZERO, 1) : NULL;
	c->dsic = c->train && lstm ? dn_tensor(r, &c->msi, ZERO, 1) : NULL;
	r->rnn = 1;
	r->nl = L;
	for (int k = 0; k < L && !r->st; k++)
		fwd_layer(r, c, k);
	if (r->st)
		return;
	float *out = act ? dn_fbuf(r, (size_t)(c->B * c->D * c->H)) : NULL;
	if (act)
		last_act(r, c, act, c->dst[L - 1], NULL, out);
	dn_canon(r, CX, c->src[0], NULL);
	dn_canon(r, CY, c->dst[L - 1], NULL);
	dnnl_memory_t ddst = NULL;
	if (c->train) {
		ddst = dn_tensor(r, &c->mdst, RAND, 1);
		if (act)
			last_act(r, c, act, NULL, ddst, out);
		dn_canon(r, CDY, ddst, NULL);
	}
	for (int k = L - 1; c->train && k >= 0 && !r->st; k--)
		ddst = bwd_layer(r, c, k, ddst);
	for (int k = 0; k < L; k++) {
		dn_addparam(r, r->rw[k][0], c->train ? r->rdw[k][0] : NULL,
			    &c->mwl[k]);
		dn_addparam(r, r->rw[k][1], c->train ? r->rdw[k][1] : NULL,
			    &c->mwi);
		dn_addparam(r, r->rb[k], c->train ? r->rdb[k] : NULL, &c->mb);
	}
}

/* Recurrent weights: canonical (PyTorch) <-> oneDNN ldigo, gate order and
 * biases mapped (see backend.h). */
void dn_rnn_xfer(pn_run *r, float *w, int in, int grad)
{
	const pn_layer *l = &r->cfg.l;
	size_t H = (size_t)l->hidden, D = l->bidirectional ? 2 : 1;
	size_t G = (size_t)pn_rnn_gates(l->type), I = (size_t)l->input_size;
	int gru = l->type == PN_GRU;
	static const int gru_map[3] = {1, 0, 2};   /* r z n -> u r o */
	size_t Gb = gru ? 4 : G;
	for (int k = 0; k < r->nl; k++) {
		size_t inl = k == 0 ? I : D * H;
		float *wl = dn_ptr(grad ? r->rdw[k][0] : r->rw[k][0]);
		float *wi = dn_ptr(grad ? r->rdw[k][1] : r->rw[k][1]);
		float *b = dn_ptr(grad ? r->rdb[k] : r->rb[k]);
		for (size_t d = 0; d < D; d++) {
			float *wih = w, *whh = wih + G * H * inl;
			float *bih = whh + G * H * H, *bhh = bih + G * H;
			w = bhh + G * H;
			for (size_t g = 0; g < G; g++) {
				size_t gd = gru ? (size_t)gru_map[g] : g;
				for (size_t h = 0; h < H; h++) {
					for (size_t i = 0; i < inl; i++) {
						float *c = &wih[(g * H + h) * inl + i];
						float *o = &wl[((d * inl + i) * G + gd) * H + h];
						if (in) *o = *c; else *c = *o;
					}
					for (size_t i = 0; i < H; i++) {
						float *c = &whh[(g * H + h) * H + i];
						float *o = &wi[((d * H + i) * G + gd) * H + h];
						if (in) *o = *c; else *c = *o;
					}
					float *ob = &b[(d * Gb + gd) * H + h];
					float *ci = &bih[g * H + h], *ch = &bhh[g * H + h];
					if (gru && g == 2) {
						float *ob2 = &b[(d * Gb + 3) * H + h];
						if (in) { *ob = *ci; *ob2 = *ch; }
						else { *ci = *ob; *ch = *ob2; }
					} else if (in) {
						*ob = *ci + *ch;
					} else {
						*ci = *ch = *ob;
					}
				}
			}
		}
	}
}

