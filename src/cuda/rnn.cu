/* rnn.cu - the cuda backend's recurrent layers: rnn, lstm, gru (cuDNN
 * v8 RNN API), and their weights in PyTorch's layout for --check. */
#include <cmath>
#include <cstring>

#include "cu.cuh"

namespace pncu {

void rnn(pn_run *r)
{
	const pn_layer *l = &r->cfg.l;
	int B = (int)l->batch, S = (int)l->seq_len, I = (int)l->input_size,
	    H = (int)l->hidden, L = (int)l->layers, D = l->bidirectional ? 2 : 1;
	int act = l->activation;
	cudnnRNNMode_t mode = l->type == PN_LSTM ? CUDNN_LSTM :
			      l->type == PN_GRU ? CUDNN_GRU : CUDNN_RNN_TANH;
	cudnnDropoutDescriptor_t drop;
	CD(cudnnCreateDropoutDescriptor(&drop));
	r->cleanup.push_back([drop] { cudnnDestroyDropoutDescriptor(drop); });
	size_t dsz = 0;
	CD(cudnnDropoutGetStatesSize(g.dnn, &dsz));
	void *dstates = dalloc(r, dsz);
	CD(cudnnSetDropoutDescriptor(drop, g.dnn, (float)r->cfg.l.dropout, dstates,
				     dsz, g.o.seed));
	CD(cudnnCreateRNNDescriptor(&r->rnn));
	cudnnRNNDescriptor_t rd = r->rnn;
	r->cleanup.push_back([rd] { cudnnDestroyRNNDescriptor(rd); });
	CD(cudnnSetRNNDescriptor_v8(rd, CUDNN_RNN_ALGO_STANDARD, mode,
		CUDNN_RNN_DOUBLE_BIAS, D == 2 ? CUDNN_BIDIRECTIONAL :
		CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, r->ddt,
		CUDNN_DATA_FLOAT, math(r), I, H, H, L, drop,
		CUDNN_RNN_PADDED_IO_DISABLED));
	std::vector<int32_t> lens((size_t)B, S);
	int32_t *dlens = (int32_t *)dalloc(r, (size_t)B * sizeof(int32_t));
	h2d(dlens, lens.data(), (size_t)B * sizeof(int32_t));
	cudnnRNNDataDescriptor_t xd, yd;
	CD(cudnnCreateRNNDataDescriptor(&xd));
	r->cleanup.push_back([xd] { cudnnDestroyRNNDataDescriptor(xd); });
	CD(cudnnCreateRNNDataDescriptor(&yd));
	r->cleanup.push_back([yd] { cudnnDestroyRNNDataDescriptor(yd); });
	CD(cudnnSetRNNDataDescriptor(xd, r->ddt, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED,
				     S, B, I, lens.data(), nullptr));
	CD(cudnnSetRNNDataDescriptor(yd, r->ddt, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED,
				     S, B, D * H, lens.data(), nullptr));
	cudnnTensorDescriptor_t hd;
	CD(cudnnCreateTensorDescriptor(&hd));
	r->cleanup.push_back([hd] { cudnnDestroyTensorDescriptor(hd); });
	int hdims[3] = {L * D, B, H}, hstr[3] = {B * H, H, 1};
	CD(cudnnSetTensorNdDescriptor(hd, r->ddt, 3, hdims, hstr));
	cudnnForwardMode_t fm = l->train ? CUDNN_FWD_MODE_TRAINING :
					   CUDNN_FWD_MODE_INFERENCE;
	size_t wsz = 0, work = 0, reserve = 0;
	CD(cudnnGetRNNWeightSpaceSize(g.dnn, rd, &wsz));
	CD(cudnnGetRNNTempSpaceSizes(g.dnn, rd, fm, xd, &work, &reserve));
	float a = 1 / sqrtf((float)H);
	size_t nw = wsz / r->esz, nx = (size_t)S * B * I, ny = (size_t)S * B * D * H;
	void *w = tensor(r, nw, -a, a), *x = tensor(r, nx), *y = tensor(r, ny, 0, 0);
	void *ws = dalloc(r, work), *rs = dalloc(r, reserve);
	r->wspace = w;
	r->wsize = wsz;
	op(r, FWD, [=] {
		CD(cudnnRNNForward(g.dnn, rd, fm, dlens, xd, x, yd, y, hd, nullptr,
				   nullptr, hd, nullptr, nullptr, wsz, w, work, ws,
				   reserve, rs));
	});
	size_t last = (size_t)(S - 1) * B * D * H, nlast = (size_t)B * D * H;
	void *outv = act ? tensor(r, nlast, 0, 0) : nullptr;
	if (act)
		op(r, FWD, [=] {
			DISPATCH(r, (k_elem_fwd<T><<<grid(nlast), 256, 0, g.s>>>(
				act == PN_ACT_RELU ? E_RELU : act == PN_ACT_TANH ?
				E_TANH : E_SIGMOID, nlast, (const T *)AT(y, last),
				nullptr, (T *)outv, 0.f, 0.f, 0)));
		});
	r->x = {x, nx};
	r->y = {y, ny};
	r->impl = "cudnn rnn";
	if (!l->train) {
		add_param(r, w, nullptr, nw);
		return;
	}
	void *dy = tensor(r, ny), *dx = tensor(r, nx, 0, 0), *dw = tensor(r, nw, 0, 0);
	r->dwspace = dw;
	if (act) {
		void *dout = tensor(r, nlast);
		op(r, BWD, [=] {
			DISPATCH(r, (k_act_bwd<T><<<grid(nlast), 256, 0, g.s>>>(
				nlast, (const T *)outv, (const T *)dout,
				(T *)AT(dy, last), act)));
		});
	}
	op(r, BWD, [=] {
		CD(cudnnRNNBackwardData_v8(g.dnn, rd, dlens, yd, y, dy, xd, dx, hd,
			nullptr, nullptr, nullptr, hd, nullptr, nullptr, nullptr,
			wsz, w, work, ws, reserve, rs));
		/* cuDNN adds the weight gradients to what is there */
		CU(cudaMemsetAsync(dw, 0, wsz, g.s));
		CD(cudnnRNNBackwardWeights_v8(g.dnn, rd, CUDNN_WGRAD_MODE_ADD, dlens,
			xd, x, hd, nullptr, yd, y, wsz, dw, work, ws, reserve, rs));
	});
	add_param(r, w, dw, nw);
	r->dy = {dy, ny};
	r->dx = {dx, nx};
}

/* canonical (PyTorch) recurrent weights <-> cuDNN's weight space: the
 * matrices and biases of every layer, direction and gate */
void rnn_weights(pn_run *r, float *w, void *space, bool in)
{
	const pn_layer *l = &r->cfg.l;
	int H = (int)l->hidden, I = (int)l->input_size, D = l->bidirectional ? 2 : 1;
	int G = pn_rnn_gates(l->type);
	cudnnTensorDescriptor_t md, bd;
	CD(cudnnCreateTensorDescriptor(&md));
	CD(cudnnCreateTensorDescriptor(&bd));
	for (int k = 0; k < (int)l->layers; k++) {
		int inl = k == 0 ? I : D * H;
		for (int d = 0; d < D; d++) {
			/* W_ih[gH][in], W_hh[gH][H], b_ih[gH], b_hh[gH] */
			float *wih = w, *whh = wih + (size_t)G * H * inl;
			float *bih = whh + (size_t)G * H * H, *bhh = bih + (size_t)G * H;
			w = bhh + (size_t)G * H;
			for (int lin = 0; lin < 2 * G; lin++) {
				void *m = nullptr, *b = nullptr;
				CD(cudnnGetRNNWeightParams(g.dnn, r->rnn, k * D + d,
					r->wsize, space, lin, md, &m, bd, &b));
				int gate = lin % G, rec = lin >= G;
				float *cm = rec ? whh + (size_t)gate * H * H :
						  wih + (size_t)gate * H * inl;
				float *cb = (rec ? bhh : bih) + (size_t)gate * H;
				size_t nm = (size_t)H * (rec ? H : inl);
				if (in) {
					up(r, m, cm, nm);
					up(r, b, cb, (size_t)H);
				} else {
					down(r, cm, m, nm);
					down(r, cb, b, (size_t)H);
				}
			}
		}
	}
	cudnnDestroyTensorDescriptor(md);
	cudnnDestroyTensorDescriptor(bd);
}

}  // namespace pncu
