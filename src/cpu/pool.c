/* pool.c - the cpu backend's layers of convolutional networks beside the
 * convolution: batchnorm (oneDNN batch normalization) and pool (oneDNN
 * pooling).
 *
 * Both run on plain NCHW, PyTorch's default layout on a CPU: oneDNN's
 * batch normalization and pooling take no `any` layout (the layout is the
 * data's), and a network's tensor between layers is NCHW in PyTorch, so a
 * blocked layout would time a layout PyTorch does not run. */
#include <stdlib.h>
#include <string.h>

#include "dnn.h"
#include "err.h"

void dn_batchnorm(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t B = (dnnl_dim_t)l->batch, C = (dnnl_dim_t)l->in_channels,
		   X = (dnnl_dim_t)l->image;
	int train = l->train;
	/* a fwd row normalizes with running statistics (inference), a
	 * train row with the batch's */
	unsigned flags = dnnl_use_scale | dnnl_use_shift |
			 (train ? 0u : (unsigned)dnnl_use_global_stats);
	/* statistics, scale and shift in fp32 whatever the data */
	dnnl_memory_desc_t md = MD(4, B, C, X, X), mc = MDF(1, C);
	dnnl_batch_normalization_desc_t fd, bd;
	DN(dnnl_batch_normalization_forward_desc_init(&fd, train ?
		dnnl_forward_training : dnnl_forward_inference, &md, PN_LN_EPS,
		flags), "batch normalization");
	dnnl_primitive_desc_t fpd = dn_pdesc(r, &fd, 0, 1, NULL,
					     "batch normalization"), bpd = NULL;
	if (train) {
		DN(dnnl_batch_normalization_backward_desc_init(&bd, dnnl_backward,
			&md, &md, PN_LN_EPS, flags),
		   "batch normalization backward");
		bpd = dn_pdesc(r, &bd, 0, 1, fpd, "batch normalization backward");
	}
	dn_norm(r, fpd, bpd, &md, &mc, &mc, !train);
}

void dn_pool(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t B = (dnnl_dim_t)l->batch, C = (dnnl_dim_t)l->in_channels,
		   X = (dnnl_dim_t)l->image, k = (dnnl_dim_t)l->kernel,
		   s = (dnnl_dim_t)l->stride, p = (dnnl_dim_t)l->padding;
	dnnl_dim_t Y = (X + 2 * p - k) / s + 1, pr = (Y - 1) * s + k - X - p;
	int train = l->train, max = strcmp(l->op, "max") == 0;
	/* avg: PyTorch's nn.AvgPool2d default, count_include_pad=True (with
	 * ceil_mode off, every window lies inside the padded image: k x k) */
	dnnl_alg_kind_t alg = max ? dnnl_pooling_max :
			      dnnl_pooling_avg_include_padding;
	dnnl_memory_desc_t mx = MD(4, B, C, X, X), my = MD(4, B, C, Y, Y);
	dnnl_dims_t st = {s, s}, ker = {k, k}, dil = {0, 0}, pl = {p, p},
		    prr = {pr, pr};
	dnnl_pooling_v2_desc_t fd;
	DN(dnnl_pooling_v2_forward_desc_init(&fd, train ? dnnl_forward_training
		: dnnl_forward_inference, alg, &mx, &my, st, ker, dil, pl, prr),
	   "pooling");
	dnnl_primitive_desc_t fpd = dn_pdesc(r, &fd, 0, 1, NULL, "pooling");
	if (r->st)
		return;
	dnnl_memory_t x = dn_tensor(r, &mx, RAND, 1), y = dn_tensor(r, &my, ZERO, 1);
	/* max in training: where each maximum was, for the backward */
	const dnnl_memory_desc_t *wmd = dn_q(fpd, dnnl_query_workspace_md, 0);
	dnnl_memory_t ws = wmd && dnnl_memory_desc_get_size(wmd) > 0 ?
			   dn_tensor(r, wmd, ZERO, 1) : NULL;
	dn_prim(r, FWD, fpd, DNNL_ARG_SRC, x, DNNL_ARG_DST, y,
		DNNL_ARG_WORKSPACE, ws, -1);
	dn_canon(r, CX, x, NULL);
	dn_canon(r, CY, y, NULL);
	if (!train)
		return;
	dnnl_pooling_v2_desc_t bd;
	DN(dnnl_pooling_v2_backward_desc_init(&bd, alg, &mx, &my, st, ker, dil,
		pl, prr), "pooling backward");
	dnnl_primitive_desc_t bpd = dn_pdesc(r, &bd, 0, 1, fpd,
					     "pooling backward");
	dnnl_memory_t dy = dn_tensor(r, &my, RAND, 1), dx = dn_tensor(r, &mx, ZERO, 1);
	dn_prim(r, BWD, bpd, DNNL_ARG_DIFF_DST, dy, DNNL_ARG_WORKSPACE, ws,
		DNNL_ARG_DIFF_SRC, dx, -1);
	dn_canon(r, CDY, dy, NULL);
	dn_canon(r, CDX, dx, NULL);
}
