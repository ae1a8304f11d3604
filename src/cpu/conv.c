/* conv.c - the cpu backend's convolution: conv2d (oneDNN
 * convolution forward, backward data, backward weights). */

#include "dnn.h"
#include "err.h"

void dn_conv2d(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_dim_t B = (dnnl_dim_t)l->batch, C = (dnnl_dim_t)l->in_channels,
		   O = (dnnl_dim_t)l->out_channels, X = (dnnl_dim_t)l->image,
		   k = (dnnl_dim_t)l->kernel, s = (dnnl_dim_t)l->stride,
		   p = (dnnl_dim_t)l->padding;
	dnnl_dim_t Y = (X + 2 * p - k) / s + 1, pr = (Y - 1) * s + k - X - p;
	int train = l->train, act = l->activation;
	dnnl_memory_desc_t sx = ANY(4, B, C, X, X), sw = ANY(4, O, C, k, k),
		sy = ANY(4, B, O, Y, Y), mb = MD(1, O);
	dnnl_dims_t st = {s, s}, pl = {p, p}, prr = {pr, pr};
	dnnl_convolution_desc_t fd;
	DN(dnnl_convolution_forward_desc_init(&fd, train ? dnnl_forward_training
		: dnnl_forward_inference, dnnl_convolution_auto, &sx, &sw,
		l->bias ? &mb : NULL, &sy, st, pl, prr), "convolution");
	dnnl_primitive_desc_t fpd = dn_pdesc(r, &fd, act, 1, NULL, "convolution");
	if (r->st)
		return;
	double fan = (double)(C * k * k);
	dnnl_memory_t x = dn_tensor(r, dn_q(fpd, dnnl_query_src_md, 0), RAND, 1);
	dnnl_memory_t w = dn_tensor(r, dn_q(fpd, dnnl_query_weights_md, 0), WEIGHT, fan);
	dnnl_memory_t b = l->bias ? dn_tensor(r, &mb, WEIGHT, fan) : NULL;
	dnnl_memory_t y = dn_tensor(r, dn_q(fpd, dnnl_query_dst_md, 0), ZERO, 1);
	dn_prim(r, FWD, fpd, DNNL_ARG_SRC, x, DNNL_ARG_WEIGHTS, w, DNNL_ARG_BIAS, b,
	     DNNL_ARG_DST, y, -1);
	dnnl_memory_desc_t cx = MD(4, B, C, X, X), cy = MD(4, B, O, Y, Y),
			   cw = MD(4, O, C, k, k);
	dn_canon(r, CX, x, &cx);
	dn_canon(r, CY, y, &cy);
	if (!train) {
		dn_addparam(r, w, NULL, &cw);
		dn_addparam(r, b, NULL, &mb);
		return;
	}
	dnnl_memory_desc_t dsx = ANY(4, B, C, X, X), dsw = ANY(4, O, C, k, k),
			   dsy = ANY(4, B, O, Y, Y);
	dnnl_convolution_desc_t dd, wd;
	DN(dnnl_convolution_backward_data_desc_init(&dd, dnnl_convolution_auto,
		&dsx, &dsw, &dsy, st, pl, prr), "convolution backward data");
	dnnl_primitive_desc_t dpd = dn_pdesc(r, &dd, 0, 1, fpd,
					  "convolution backward data");
	DN(dnnl_convolution_backward_weights_desc_init(&wd, dnnl_convolution_auto,
		&dsx, &dsw, l->bias ? &mb : NULL, &dsy, st, pl, prr),
	   "convolution backward weights");
	dnnl_primitive_desc_t wpd = dn_pdesc(r, &wd, 0, 1, fpd,
					  "convolution backward weights");
	if (r->st)
		return;
	dnnl_memory_t dy = dn_tensor(r, dn_mdof(y), RAND, 1);
	dnnl_memory_t dz = dn_act_bwd(r, act, y, dy);
	dnnl_memory_t dzd = dn_as(r, BWD, dz, dn_q(dpd, dnnl_query_diff_dst_md, 0));
	dnnl_memory_t wdd = dn_as(r, BWD, w, dn_q(dpd, dnnl_query_weights_md, 0));
	dnnl_memory_t dx = dn_tensor(r, dn_q(dpd, dnnl_query_diff_src_md, 0), ZERO, 1);
	dn_prim(r, BWD, dpd, DNNL_ARG_DIFF_DST, dzd, DNNL_ARG_WEIGHTS, wdd,
	     DNNL_ARG_DIFF_SRC, dx, -1);
	dnnl_memory_t dzw = dn_as(r, BWD, dz, dn_q(wpd, dnnl_query_diff_dst_md, 0));
	dnnl_memory_t xw = dn_as(r, BWD, x, dn_q(wpd, dnnl_query_src_md, 0));
	dnnl_memory_t dw = dn_tensor(r, dn_q(wpd, dnnl_query_diff_weights_md, 0),
				  ZERO, 1);
	dnnl_memory_t db = b ? dn_tensor(r, &mb, ZERO, 1) : NULL;
	dn_prim(r, BWD, wpd, DNNL_ARG_DIFF_DST, dzw, DNNL_ARG_SRC, xw,
	     DNNL_ARG_DIFF_WEIGHTS, dw, DNNL_ARG_DIFF_BIAS, db, -1);
	if (r->st)
		return;
	/* the optimizer updates w with a gradient in w's layout */
	dnnl_memory_t dwo = dw;
	if (!dnnl_memory_desc_equal(dn_mdof(dw), dn_mdof(w))) {
		dwo = dn_tensor(r, dn_mdof(w), ZERO, 1);
		dn_reorder(r, BWD, dw, dwo);
	}
	dn_addparam(r, w, dwo, &cw);
	dn_addparam(r, b, db, &mb);
	dn_canon(r, CDY, dy, &cy);
	dn_canon(r, CDX, dx, &cx);
}

