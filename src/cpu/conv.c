/* conv.c - the cpu backend's convolution: conv2d (oneDNN
 * convolution forward, backward data, backward weights).
 *
 * A framework keeps a convolution's tensors in plain layouts (PyTorch's
 * NCHW activations and OIHW weights) and its oneDNN path reorders them
 * into the primitive's blocked layouts and back at every call: forward
 * src, weights in and dst out; backward diff_dst and weights in, diff_src
 * out; then src and diff_dst in again, diff_weights out (what
 * DNNL_VERBOSE shows PyTorch 1.13 run).  So the tensors here are plain
 * and those reorders are timed with the primitives.  The algorithm is
 * direct, as ideep asks for it: oneDNN's auto picked Winograd for some
 * 3 x 3 shapes (32 x 3 x 32 x 32 to 32 channels: 2.9x PyTorch's forward,
 * bench/kernels-vs-torch, 2026-11-30), which PyTorch never runs. */

#include "dnn.h"
#include "err.h"

/* The primitive's output in layout want: m itself when m has it, else a
 * new tensor that the caller reorders into m after the primitive. */
static dnnl_memory_t out_as(pn_run *r, dnnl_memory_t m,
			    const dnnl_memory_desc_t *want)
{
	if (r->st || dnnl_memory_desc_equal(dn_mdof(m), want))
		return m;
	return dn_tensor(r, want, ZERO, 1);
}

/* The reorder of a primitive's output o back into its plain tensor m. */
static void back(pn_run *r, int ph, dnnl_memory_t o, dnnl_memory_t m)
{
	if (o != m)
		dn_reorder(r, ph, o, m);
}

/* The input's gradient by backward-data primitive dpd from dz and w, into
 * a new plain tensor of layout cx. */
static dnnl_memory_t conv_bwd_data(pn_run *r, dnnl_primitive_desc_t dpd,
				   dnnl_memory_t dz, dnnl_memory_t w,
				   const dnnl_memory_desc_t *cx)
{
	dnnl_memory_t dzd = dn_as(r, BWD, dz, dn_q(dpd, dnnl_query_diff_dst_md, 0));
	dnnl_memory_t wdd = dn_as(r, BWD, w, dn_q(dpd, dnnl_query_weights_md, 0));
	dnnl_memory_t dx = dn_tensor(r, cx, ZERO, 1);
	dnnl_memory_t dxo = out_as(r, dx, dn_q(dpd, dnnl_query_diff_src_md, 0));
	dn_prim(r, BWD, dpd, DNNL_ARG_DIFF_DST, dzd, DNNL_ARG_WEIGHTS, wdd,
	     DNNL_ARG_DIFF_SRC, dxo, -1);
	back(r, BWD, dxo, dx);
	return dx;
}

static void conv_bwd(pn_run *r, dnnl_primitive_desc_t fpd, dnnl_memory_t x,
		     dnnl_memory_t w, dnnl_memory_t b, dnnl_memory_t y,
		     const dnnl_memory_desc_t *cx, const dnnl_memory_desc_t *cy,
		     const dnnl_memory_desc_t *cw, const dnnl_memory_desc_t *mb,
		     const dnnl_dims_t st, const dnnl_dims_t pl,
		     const dnnl_dims_t prr)
{
	const pn_layer *l = &r->cfg.l;
	dnnl_memory_desc_t dsx = *cx, dsw = *cw, dsy = *cy;
	dsx.format_kind = dsw.format_kind = dsy.format_kind = dnnl_format_kind_any;
	dnnl_convolution_desc_t dd, wd;
	dnnl_primitive_desc_t dpd = NULL;
	if (!l->no_input_grad) {     /* input_grad 0: no backward data */
		DN(dnnl_convolution_backward_data_desc_init(&dd,
			dnnl_convolution_direct, &dsx, &dsw, &dsy, st, pl, prr),
		   "convolution backward data");
		dpd = dn_pdesc(r, &dd, 0, 1, fpd, "convolution backward data");
	}
	DN(dnnl_convolution_backward_weights_desc_init(&wd, dnnl_convolution_direct,
		&dsx, &dsw, l->bias ? mb : NULL, &dsy, st, pl, prr),
	   "convolution backward weights");
	dnnl_primitive_desc_t wpd = dn_pdesc(r, &wd, 0, 1, fpd,
					  "convolution backward weights");
	if (r->st)
		return;
	dnnl_memory_t dy = dn_tensor(r, cy, RAND, 1);
	dnnl_memory_t dz = dn_act_bwd(r, (int)l->activation, y, dy);
	dnnl_memory_t dx = dpd ? conv_bwd_data(r, dpd, dz, w, cx) : NULL;
	dnnl_memory_t dzw = dn_as(r, BWD, dz, dn_q(wpd, dnnl_query_diff_dst_md, 0));
	dnnl_memory_t xw = dn_as(r, BWD, x, dn_q(wpd, dnnl_query_src_md, 0));
	dnnl_memory_t dw = dn_tensor(r, cw, ZERO, 1);
	dnnl_memory_t dwo = out_as(r, dw, dn_q(wpd, dnnl_query_diff_weights_md, 0));
	dnnl_memory_t db = b ? dn_tensor(r, mb, ZERO, 1) : NULL;
	dn_prim(r, BWD, wpd, DNNL_ARG_DIFF_DST, dzw, DNNL_ARG_SRC, xw,
	     DNNL_ARG_DIFF_WEIGHTS, dwo, DNNL_ARG_DIFF_BIAS, db, -1);
	back(r, BWD, dwo, dw);
	dn_addparam(r, w, dw, cw);
	dn_addparam(r, b, db, mb);
	dn_canon(r, CDY, dy, cy);
	dn_canon(r, CDX, dx, cx);
}

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
		: dnnl_forward_inference, dnnl_convolution_direct, &sx, &sw,
		l->bias ? &mb : NULL, &sy, st, pl, prr), "convolution");
	dnnl_primitive_desc_t fpd = dn_pdesc(r, &fd, act, 1, NULL, "convolution");
	if (r->st)
		return;
	double fan = (double)(C * k * k);
	dnnl_memory_desc_t cx = MD(4, B, C, X, X), cy = MD(4, B, O, Y, Y),
			   cw = MD(4, O, C, k, k);
	dnnl_memory_t x = dn_tensor(r, &cx, RAND, 1);
	dnnl_memory_t w = dn_tensor(r, &cw, WEIGHT, fan);
	dnnl_memory_t b = l->bias ? dn_tensor(r, &mb, WEIGHT, fan) : NULL;
	dnnl_memory_t y = dn_tensor(r, &cy, ZERO, 1);
	dnnl_memory_t xf = dn_as(r, FWD, x, dn_q(fpd, dnnl_query_src_md, 0));
	dnnl_memory_t wf = dn_as(r, FWD, w, dn_q(fpd, dnnl_query_weights_md, 0));
	dnnl_memory_t yo = out_as(r, y, dn_q(fpd, dnnl_query_dst_md, 0));
	dn_prim(r, FWD, fpd, DNNL_ARG_SRC, xf, DNNL_ARG_WEIGHTS, wf,
	     DNNL_ARG_BIAS, b, DNNL_ARG_DST, yo, -1);
	back(r, FWD, yo, y);
	dn_canon(r, CX, x, &cx);
	dn_canon(r, CY, y, &cy);
	if (!train) {
		dn_addparam(r, w, NULL, &cw);
		dn_addparam(r, b, NULL, &mb);
		return;
	}
	conv_bwd(r, fpd, x, w, b, y, &cx, &cy, &cw, &mb, st, pl, prr);
}
