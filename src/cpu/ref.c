/* ref.c - the plain-C reference of every layer: forward and backward on the
 * canonical data of pn_io (backend.h), naive loops with double sums.  Slow
 * and simple on purpose: it is what --check compares the cpu backend with.
 * It times nothing (step fails). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../time/backend.h"
#include "err.h"

struct pn_run {
	pn_config cfg;
};

/* C[M][N] (+)= op(A) op(B), row-major; ta: A is stored [K][M]; tb: B is
 * stored [N][K] */
static void mm(const float *A, const float *B, float *C, size_t M, size_t N,
	       size_t K, int ta, int tb, int acc, size_t lda, size_t ldb,
	       size_t ldc, float alpha)
{
	for (size_t i = 0; i < M; i++)
		for (size_t j = 0; j < N; j++) {
			double s = 0;
			for (size_t k = 0; k < K; k++)
				s += (double)(ta ? A[k * lda + i] : A[i * lda + k]) *
				     (tb ? B[j * ldb + k] : B[k * ldb + j]);
			C[i * ldc + j] = (float)(alpha * s + (acc ? C[i * ldc + j] : 0));
		}
}

static void colsum(const float *a, float *out, size_t rows, size_t cols)
{
	for (size_t j = 0; j < cols; j++) {
		double s = 0;
		for (size_t i = 0; i < rows; i++)
			s += a[i * cols + j];
		out[j] = (float)s;
	}
}

static float act_f(int act, float x)
{
	return act == PN_ACT_RELU ? (x > 0 ? x : 0) :
	       act == PN_ACT_TANH ? tanhf(x) :
	       act == PN_ACT_SIGMOID ? 1 / (1 + expf(-x)) : x;
}

static float act_d(int act, float y)
{
	return act == PN_ACT_RELU ? (y > 0) :
	       act == PN_ACT_TANH ? 1 - y * y :
	       act == PN_ACT_SIGMOID ? y * (1 - y) : 1;
}

static float sig(float x)
{
	return 1 / (1 + expf(-x));
}

static void dropout(const float *a, float *b, size_t n, float p, uint64_t salt)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pn_keep(salt, i, p) ? a[i] / (1 - p) : 0;
}

static float *fz(size_t n)
{
	return pn_xcalloc(n ? n : 1, sizeof(float));
}

static void dense(const pn_layer *l, pn_io *io)
{
	size_t B = (size_t)l->batch, I = (size_t)l->in_features,
	       O = (size_t)l->out_features;
	const float *W = io->w, *b = l->bias ? io->w + O * I : NULL;
	mm(io->x, W, io->y, B, O, I, 0, 1, 0, I, I, O, 1);
	for (size_t i = 0; i < B * O; i++)
		io->y[i] = act_f(l->activation, io->y[i] + (b ? b[i % O] : 0));
	if (!l->train)
		return;
	float *dz = fz(B * O);
	for (size_t i = 0; i < B * O; i++)
		dz[i] = io->dy[i] * act_d(l->activation, io->y[i]);
	mm(dz, W, io->dx, B, I, O, 0, 0, 0, O, I, I, 1);
	mm(dz, io->x, io->dw, O, I, B, 1, 0, 0, O, I, I, 1);
	if (b)
		colsum(dz, io->dw + O * I, B, O);
	free(dz);
}

static void bmm(const pn_layer *l, pn_io *io)
{
	size_t B = (size_t)l->batch, M = (size_t)l->m, N = (size_t)l->n,
	       K = (size_t)l->k;
	for (size_t b = 0; b < B; b++) {
		const float *A = io->x + b * M * N, *X = io->x2 + b * N * K;
		mm(A, X, io->y + b * M * K, M, K, N, 0, 0, 0, N, K, K, 1);
		if (!l->train)
			continue;
		const float *dC = io->dy + b * M * K;
		mm(dC, X, io->dx + b * M * N, M, N, K, 0, 1, 0, K, K, N, 1);
		mm(A, dC, io->dx2 + b * N * K, N, K, M, 1, 0, 0, N, K, K, 1);
	}
}

static void conv2d(const pn_layer *l, pn_io *io)
{
	long B = (long)l->batch, C = (long)l->in_channels, O = (long)l->out_channels,
	     X = (long)l->image, k = (long)l->kernel, s = (long)l->stride,
	     p = (long)l->padding;
	long Y = (X + 2 * p - k) / s + 1;
	const float *W = io->w, *bias = l->bias ? io->w + O * C * k * k : NULL;
#define XI(b, c, i, j) io->x[(((b) * C + (c)) * X + (i)) * X + (j)]
#define WI(o, c, i, j) W[(((o) * C + (c)) * k + (i)) * k + (j)]
#define YI(a, b, o, i, j) a[(((b) * O + (o)) * Y + (i)) * Y + (j)]
	for (long b = 0; b < B; b++)
		for (long o = 0; o < O; o++)
			for (long i = 0; i < Y; i++)
				for (long j = 0; j < Y; j++) {
					double sum = bias ? bias[o] : 0;
					for (long c = 0; c < C; c++)
						for (long u = 0; u < k; u++)
							for (long v = 0; v < k; v++) {
								long r = i * s - p + u, q = j * s - p + v;
								if (r >= 0 && r < X && q >= 0 && q < X)
									sum += (double)XI(b, c, r, q) * WI(o, c, u, v);
							}
					YI(io->y, b, o, i, j) = act_f(l->activation, (float)sum);
				}
	if (!l->train)
		return;
	size_t ny = (size_t)(B * O * Y * Y);
	float *dz = fz(ny);
	for (size_t i = 0; i < ny; i++)
		dz[i] = io->dy[i] * act_d(l->activation, io->y[i]);
	double *dx = calloc((size_t)(B * C * X * X), sizeof(double));
	double *dw = calloc((size_t)(O * C * k * k) + (size_t)O, sizeof(double));
	if (!dx || !dw)
		PN_BUG("out of memory");
	for (long b = 0; b < B; b++)
		for (long o = 0; o < O; o++)
			for (long i = 0; i < Y; i++)
				for (long j = 0; j < Y; j++) {
					double g = YI(dz, b, o, i, j);
					dw[O * C * k * k + o] += g;
					for (long c = 0; c < C; c++)
						for (long u = 0; u < k; u++)
							for (long v = 0; v < k; v++) {
								long r = i * s - p + u, q = j * s - p + v;
								if (r < 0 || r >= X || q < 0 || q >= X)
									continue;
								dx[((b * C + c) * X + r) * X + q] += g * WI(o, c, u, v);
								dw[((o * C + c) * k + u) * k + v] += g * XI(b, c, r, q);
							}
				}
	for (long i = 0; i < B * C * X * X; i++)
		io->dx[i] = (float)dx[i];
	for (long i = 0; i < O * C * k * k + (bias ? O : 0); i++)
		io->dw[i] = (float)dw[i];
	free(dx);
	free(dw);
	free(dz);
#undef XI
#undef WI
#undef YI
}

/* log(sum(exp(a[0..n)))), from the row's maximum */
static double logsumexp(const float *a, size_t n)
{
	float m = a[0];
	for (size_t j = 1; j < n; j++)
		m = a[j] > m ? a[j] : m;
	double s = 0;
	for (size_t j = 0; j < n; j++)
		s += exp((double)a[j] - m);
	return m + log(s);
}

/* softmax of rows of n; backward from the output y */
static void softmax_rows(const float *x, float *y, size_t rows, size_t n)
{
	for (size_t r = 0; r < rows; r++) {
		double lse = logsumexp(x + r * n, n);
		for (size_t j = 0; j < n; j++)
			y[r * n + j] = (float)exp((double)x[r * n + j] - lse);
	}
}

static void softmax_bwd(const float *y, const float *dy, float *dx,
			size_t rows, size_t n)
{
	for (size_t r = 0; r < rows; r++) {
		double s = 0;
		for (size_t j = 0; j < n; j++)
			s += (double)dy[r * n + j] * y[r * n + j];
		for (size_t j = 0; j < n; j++)
			dx[r * n + j] = (float)(y[r * n + j] * (dy[r * n + j] - s));
	}
}

/* cross-entropy (backend.h): y the log-probabilities; train: dx the
 * gradient of the mean loss, (softmax - onehot) / rows */
static void xent(const pn_layer *l, pn_io *io)
{
	size_t rows = (size_t)(l->batch * l->seq_len), n = (size_t)l->dim;
	for (size_t r = 0; r < rows; r++) {
		const float *a = io->x + r * n;
		double lse = logsumexp(a, n);
		for (size_t j = 0; j < n; j++) {
			io->y[r * n + j] = (float)(a[j] - lse);
			if (l->train)
				io->dx[r * n + j] = (float)((exp(a[j] - lse) -
					((size_t)io->idx[r] == j)) / (double)rows);
		}
	}
}

static void attention(const pn_layer *l, float pdrop, pn_io *io)
{
	size_t B = (size_t)l->batch, S = (size_t)l->seq_len, E = (size_t)l->embed_dim,
	       h = (size_t)l->heads, d = E / h, N = B * S, E3 = 3 * E;
	float scale = (float)(1 / sqrt((double)d));
	const float *Win = io->w, *bin = Win + E3 * E, *Wout = bin + E3,
		    *bout = Wout + E * E;
	size_t nsc = B * h * S * S;
	float *qkv = fz(N * E3), *sc = fz(nsc), *P = fz(nsc), *Pd = fz(nsc);
	float *ctx = fz(N * E);
	mm(io->x, Win, qkv, N, E3, E, 0, 1, 0, E, E, E3, 1);
	for (size_t i = 0; i < N * E3; i++)
		qkv[i] += bin[i % E3];
	for (size_t b = 0; b < B; b++)
		for (size_t k = 0; k < h; k++) {
			const float *Q = qkv + b * S * E3 + k * d;
			float *s = sc + (b * h + k) * S * S;
			mm(Q, Q + E, s, S, S, d, 0, 1, 0, E3, E3, S, scale);
		}
	softmax_rows(sc, P, B * h * S, S);
	if (pdrop > 0)
		dropout(P, Pd, nsc, pdrop, 100);
	else
		memcpy(Pd, P, nsc * sizeof(float));
	for (size_t b = 0; b < B; b++)
		for (size_t k = 0; k < h; k++)
			mm(Pd + (b * h + k) * S * S, qkv + b * S * E3 + 2 * E + k * d,
			   ctx + b * S * E + k * d, S, d, S, 0, 0, 0, S, E3, E, 1);
	mm(ctx, Wout, io->y, N, E, E, 0, 1, 0, E, E, E, 1);
	for (size_t i = 0; i < N * E; i++)
		io->y[i] += bout[i % E];
	if (l->train) {
		float *dWin = io->dw, *dbin = dWin + E3 * E, *dWout = dbin + E3,
		      *dbout = dWout + E * E;
		float *dctx = fz(N * E), *dPd = fz(nsc), *dP = fz(nsc),
		      *dS = fz(nsc), *dqkv = fz(N * E3);
		mm(io->dy, Wout, dctx, N, E, E, 0, 0, 0, E, E, E, 1);
		mm(io->dy, ctx, dWout, E, E, N, 1, 0, 0, E, E, E, 1);
		colsum(io->dy, dbout, N, E);
		for (size_t b = 0; b < B; b++)
			for (size_t k = 0; k < h; k++) {
				const float *V = qkv + b * S * E3 + 2 * E + k * d;
				const float *dc = dctx + b * S * E + k * d;
				size_t o = (b * h + k) * S * S;
				mm(dc, V, dPd + o, S, S, d, 0, 1, 0, E, E3, S, 1);
				mm(Pd + o, dc, dqkv + b * S * E3 + 2 * E + k * d, S, d,
				   S, 1, 0, 0, S, E, E3, 1);
			}
		if (pdrop > 0)
			dropout(dPd, dP, nsc, pdrop, 100);
		else
			memcpy(dP, dPd, nsc * sizeof(float));
		softmax_bwd(P, dP, dS, B * h * S, S);
		for (size_t b = 0; b < B; b++)
			for (size_t k = 0; k < h; k++) {
				const float *Q = qkv + b * S * E3 + k * d, *K = Q + E;
				float *dQ = dqkv + b * S * E3 + k * d, *dK = dQ + E;
				const float *ds = dS + (b * h + k) * S * S;
				mm(ds, K, dQ, S, d, S, 0, 0, 0, S, E3, E3, scale);
				mm(ds, Q, dK, S, d, S, 1, 0, 0, S, E3, E3, scale);
			}
		mm(dqkv, Win, io->dx, N, E, E3, 0, 0, 0, E3, E, E, 1);
		mm(dqkv, io->x, dWin, E3, E, N, 1, 0, 0, E3, E, E, 1);
		colsum(dqkv, dbin, N, E3);
		free(dctx);
		free(dPd);
		free(dP);
		free(dS);
		free(dqkv);
	}
	free(qkv);
	free(sc);
	free(P);
	free(Pd);
	free(ctx);
}

static void embedding(const pn_layer *l, pn_io *io)
{
	size_t N = io->nidx, E = (size_t)l->embed_dim;
	for (size_t i = 0; i < N; i++)
		memcpy(io->y + i * E, io->w + (size_t)io->idx[i] * E,
		       E * sizeof(float));
	if (!l->train)
		return;
	memset(io->dw, 0, io->nw * sizeof(float));
	for (size_t i = 0; i < N; i++)
		for (size_t j = 0; j < E; j++)
			io->dw[(size_t)io->idx[i] * E + j] += io->dy[i * E + j];
}

/* One direction of one recurrent layer over x[S][B][in], writing its
 * hidden states into y[S][B][yst] at column offset; saves what the
 * backward pass needs in st (per step: gates after the nonlinearity,
 * h_prev, c_prev, c, the recurrent part of gru's n gate). */
typedef struct {
	float *gates, *hprev, *cprev, *c, *hn;
} rnn_state;

static void rnn_dir(pn_layer_type t, size_t S, size_t B, size_t in, size_t H,
		    const float *x, float *y, size_t yst, int rev,
		    const float *wih, const float *whh, const float *bih,
		    const float *bhh, rnn_state *st)
{
	size_t G = (size_t)pn_rnn_gates(t);
	float *h = fz(B * H), *c = fz(B * H), *gi = fz(G * H), *gh = fz(G * H);
	for (size_t step = 0; step < S; step++) {
		size_t ts = rev ? S - 1 - step : step;
		for (size_t b = 0; b < B; b++) {
			const float *xt = x + (ts * B + b) * in;
			float *hb = h + b * H, *cb = c + b * H;
			size_t o = (ts * B + b) * G * H, o1 = (ts * B + b) * H;
			memcpy(st->hprev + o1, hb, H * sizeof(float));
			memcpy(st->cprev + o1, cb, H * sizeof(float));
			for (size_t r = 0; r < G * H; r++) {
				double si = bih[r], sh = bhh[r];
				for (size_t k = 0; k < in; k++)
					si += (double)wih[r * in + k] * xt[k];
				for (size_t k = 0; k < H; k++)
					sh += (double)whh[r * H + k] * hb[k];
				gi[r] = (float)si;
				gh[r] = (float)sh;
			}
			float *g = st->gates + o;
			for (size_t j = 0; j < H; j++) {
				float hnew;
				if (t == PN_RNN) {
					g[j] = tanhf(gi[j] + gh[j]);
					hnew = g[j];
				} else if (t == PN_LSTM) {
					float ii = sig(gi[j] + gh[j]);
					float f = sig(gi[H + j] + gh[H + j]);
					float gg = tanhf(gi[2 * H + j] + gh[2 * H + j]);
					float oo = sig(gi[3 * H + j] + gh[3 * H + j]);
					g[j] = ii;
					g[H + j] = f;
					g[2 * H + j] = gg;
					g[3 * H + j] = oo;
					cb[j] = f * cb[j] + ii * gg;
					st->c[o1 + j] = cb[j];
					hnew = oo * tanhf(cb[j]);
				} else {
					float rr = sig(gi[j] + gh[j]);
					float z = sig(gi[H + j] + gh[H + j]);
					float nn = tanhf(gi[2 * H + j] + rr * gh[2 * H + j]);
					g[j] = rr;
					g[H + j] = z;
					g[2 * H + j] = nn;
					st->hn[o1 + j] = gh[2 * H + j];
					hnew = (1 - z) * nn + z * hb[j];
				}
				y[(ts * B + b) * yst + j] = hnew;
			}
			for (size_t j = 0; j < H; j++)
				hb[j] = y[(ts * B + b) * yst + j];
		}
	}
	free(h);
	free(c);
	free(gi);
	free(gh);
}

/* Backward of rnn_dir: dy[S][B][yst] at the same column offset; adds to
 * dx[S][B][in] and the weight gradients. */
static void rnn_dir_bwd(pn_layer_type t, size_t S, size_t B, size_t in,
			size_t H, const float *x, const float *dy, size_t yst,
			int rev, const float *wih, const float *whh, float *dx,
			float *dwih, float *dwhh, float *dbih, float *dbhh,
			const rnn_state *st)
{
	size_t G = (size_t)pn_rnn_gates(t);
	float *dh = fz(B * H), *dc = fz(B * H), *ai = fz(G * H), *ah = fz(G * H);
	for (size_t step = 0; step < S; step++) {
		size_t ts = rev ? step : S - 1 - step;
		for (size_t b = 0; b < B; b++) {
			size_t o = (ts * B + b) * G * H, o1 = (ts * B + b) * H;
			const float *g = st->gates + o, *hp = st->hprev + o1;
			float *dhb = dh + b * H, *dcb = dc + b * H;
			for (size_t j = 0; j < H; j++) {
				float d = dy[(ts * B + b) * yst + j] + dhb[j];
				if (t == PN_RNN) {
					ai[j] = ah[j] = d * (1 - g[j] * g[j]);
					dhb[j] = 0;
				} else if (t == PN_LSTM) {
					float ii = g[j], f = g[H + j], gg = g[2 * H + j],
					      oo = g[3 * H + j], tc = tanhf(st->c[o1 + j]);
					float dct = dcb[j] + d * oo * (1 - tc * tc);
					ai[j] = dct * gg * ii * (1 - ii);
					ai[H + j] = dct * st->cprev[o1 + j] * f * (1 - f);
					ai[2 * H + j] = dct * ii * (1 - gg * gg);
					ai[3 * H + j] = d * tc * oo * (1 - oo);
					for (size_t q = 0; q < 4; q++)
						ah[q * H + j] = ai[q * H + j];
					dcb[j] = dct * f;
					dhb[j] = 0;
				} else {
					float rr = g[j], z = g[H + j], nn = g[2 * H + j];
					float dn = d * (1 - z) * (1 - nn * nn);
					ai[j] = ah[j] = dn * st->hn[o1 + j] * rr * (1 - rr);
					ai[H + j] = ah[H + j] = d * (hp[j] - nn) * z * (1 - z);
					ai[2 * H + j] = dn;
					ah[2 * H + j] = dn * rr;
					dhb[j] = d * z;
				}
			}
			const float *xt = x + (ts * B + b) * in;
			float *dxt = dx + (ts * B + b) * in;
			for (size_t r = 0; r < G * H; r++) {
				dbih[r] += ai[r];
				dbhh[r] += ah[r];
				for (size_t k = 0; k < in; k++) {
					dwih[r * in + k] += ai[r] * xt[k];
					dxt[k] += ai[r] * wih[r * in + k];
				}
				for (size_t k = 0; k < H; k++) {
					dwhh[r * H + k] += ah[r] * hp[k];
					dhb[k] += ah[r] * whh[r * H + k];
				}
			}
		}
	}
	free(dh);
	free(dc);
	free(ai);
	free(ah);
}

static void rnn(const pn_layer *l, float pdrop, pn_io *io)
{
	size_t S = (size_t)l->seq_len, B = (size_t)l->batch, I = (size_t)l->input_size,
	       H = (size_t)l->hidden, D = l->bidirectional ? 2 : 1,
	       L = (size_t)l->layers, G = (size_t)pn_rnn_gates(l->type);
	size_t ny = S * B * D * H;
	float **in = pn_xcalloc(L, sizeof *in), **out = pn_xcalloc(L, sizeof *out);
	rnn_state *st = pn_xcalloc(L * D, sizeof *st);
	const float **w = pn_xcalloc(L * D, sizeof *w);
	const float *wp = io->w;
	for (size_t k = 0; k < L; k++) {
		size_t inl = k == 0 ? I : D * H;
		in[k] = k == 0 ? io->x : fz(S * B * inl);
		if (k > 0) {
			if (pdrop > 0)
				dropout(out[k - 1], in[k], ny, pdrop, k);
			else
				memcpy(in[k], out[k - 1], ny * sizeof(float));
		}
		out[k] = k == L - 1 ? io->y : fz(ny);
		for (size_t d = 0; d < D; d++) {
			rnn_state *s = &st[k * D + d];
			s->gates = fz(S * B * G * H);
			s->hprev = fz(S * B * H);
			s->cprev = fz(S * B * H);
			s->c = fz(S * B * H);
			s->hn = fz(S * B * H);
			w[k * D + d] = wp;
			const float *wih = wp, *whh = wih + G * H * inl,
				    *bih = whh + G * H * H, *bhh = bih + G * H;
			wp = bhh + G * H;
			rnn_dir(l->type, S, B, inl, H, in[k], out[k] + d * H, D * H,
				(int)d, wih, whh, bih, bhh, s);
		}
	}
	if (l->train) {
		float *dout = fz(ny);
		memcpy(dout, io->dy, ny * sizeof(float));
		float *dw = io->dw;
		size_t woff[64];
		for (size_t k = 0, off = 0; k < L; k++) {
			woff[k] = off;
			size_t inl = k == 0 ? I : D * H;
			off += D * (G * H * inl + G * H * H + 2 * G * H);
		}
		for (size_t kk = L; kk-- > 0;) {
			size_t inl = kk == 0 ? I : D * H;
			float *din = kk == 0 ? io->dx : fz(S * B * inl);
			for (size_t d = 0; d < D; d++) {
				const float *wih = w[kk * D + d], *whh = wih + G * H * inl;
				float *dwih = dw + woff[kk] + d * (G * H * inl + G * H * H + 2 * G * H);
				float *dwhh = dwih + G * H * inl, *dbih = dwhh + G * H * H,
				      *dbhh = dbih + G * H;
				rnn_dir_bwd(l->type, S, B, inl, H, in[kk], dout + d * H,
					    D * H, (int)d, wih, whh, din, dwih, dwhh,
					    dbih, dbhh, &st[kk * D + d]);
			}
			if (kk > 0) {
				if (pdrop > 0)
					dropout(din, dout, ny, pdrop, kk);
				else
					memcpy(dout, din, ny * sizeof(float));
				free(din);
			}
		}
		free(dout);
	}
	for (size_t k = 0; k < L; k++) {
		if (k > 0)
			free(in[k]);
		if (k < L - 1)
			free(out[k]);
		for (size_t d = 0; d < D; d++) {
			rnn_state *s = &st[k * D + d];
			free(s->gates);
			free(s->hprev);
			free(s->cprev);
			free(s->c);
			free(s->hn);
		}
	}
	free(in);
	free(out);
	free(st);
	free(w);
}

static void layernorm(const pn_layer *l, pn_io *io)
{
	size_t N = (size_t)(l->batch * l->seq_len), D = (size_t)l->dim;
	const float *g = io->w, *b = io->w + D;
	float *dg = io->dw, *db = io->dw + D;
	for (size_t r = 0; r < N; r++) {
		const float *x = io->x + r * D;
		double m = 0, v = 0;
		for (size_t j = 0; j < D; j++)
			m += x[j];
		m /= (double)D;
		for (size_t j = 0; j < D; j++)
			v += (x[j] - m) * (x[j] - m);
		double rs = 1 / sqrt(v / (double)D + PN_LN_EPS);
		for (size_t j = 0; j < D; j++)
			io->y[r * D + j] = (float)((x[j] - m) * rs * g[j] + b[j]);
		if (!l->train)
			continue;
		const float *dy = io->dy + r * D;
		double s1 = 0, s2 = 0;
		for (size_t j = 0; j < D; j++) {
			double xh = (x[j] - m) * rs;
			s1 += dy[j] * g[j];
			s2 += dy[j] * g[j] * xh;
			dg[j] += (float)(dy[j] * xh);
			db[j] += dy[j];
		}
		for (size_t j = 0; j < D; j++) {
			double xh = (x[j] - m) * rs;
			io->dx[r * D + j] = (float)(rs * (dy[j] * g[j] - s1 / (double)D -
							 xh * s2 / (double)D));
		}
	}
}

/* The exact (erf) GELU at x, and its derivative in *d. */
static float gelu(float x, float *d)
{
	*d = 0.5f * (1 + erff(x / sqrtf(2))) +
	     x * expf(-0.5f * x * x) / sqrtf(2 * (float)M_PI);
	return 0.5f * x * (1 + erff(x / sqrtf(2)));
}

/* A gated op's activation and its derivative at x (layer.h): SiLU x s(x),
 * or GELU. */
static float gated_act(const char *op, float x, float *d)
{
	if (!strcmp(op, "silu_mul")) {
		float s = sig(x);
		*d = s * (1 + x * (1 - s));
		return x * s;
	}
	return gelu(x, d);
}

static void elementwise(const pn_layer *l, float p, pn_io *io)
{
	size_t n = io->nx;
	const char *op = l->op;
	const float c = PN_ELEM_SCALAR, *a = io->x, *b = io->x2;
	float *y = io->y;
	for (size_t i = 0; i < n; i++) {
		float x = a[i], v;
		if (!strcmp(op, "add")) v = x + b[i];
		else if (!strcmp(op, "sub")) v = x - b[i];
		else if (!strcmp(op, "mul")) v = x * b[i];
		else if (!strcmp(op, "div")) v = x / b[i];
		else if (!strcmp(op, "pow")) v = powf(x, b[i]);
		else if (!strcmp(op, "addu")) v = x + c;
		else if (!strcmp(op, "subu")) v = x - c;
		else if (!strcmp(op, "mulu")) v = x * c;
		else if (!strcmp(op, "divu")) v = x / c;
		else if (!strcmp(op, "powu")) v = powf(x, c);
		else if (!strcmp(op, "relu")) v = x > 0 ? x : 0;
		else if (!strcmp(op, "gelu")) { float d; v = gelu(x, &d); }
		else if (!strcmp(op, "tanh")) v = tanhf(x);
		else if (!strcmp(op, "sigmoid")) v = sig(x);
		else if (!strcmp(op, "exp")) v = expf(x);
		else if (!strcmp(op, "neg")) v = -x;
		else if (!strcmp(op, "dropout")) v = pn_keep(200, i, p) ? x / (1 - p) : 0;
		else if (pn_elem_gated(op)) { float d; v = gated_act(op, x, &d) * b[i]; }
		else v = x;
		y[i] = v;
	}
	if (!l->train)
		return;
	for (size_t i = 0; i < n; i++) {
		float g = io->dy[i], x = a[i], d1 = g, d2 = g;
		if (!strcmp(op, "sub")) d2 = -g;
		else if (!strcmp(op, "mul")) { d1 = g * b[i]; d2 = g * x; }
		else if (!strcmp(op, "div")) { d1 = g / b[i]; d2 = -d1 * y[i]; }
		else if (!strcmp(op, "pow")) {
			d1 = g * b[i] * powf(x, b[i] - 1);
			d2 = g * y[i] * logf(x);
		}
		else if (!strcmp(op, "mulu")) d1 = g * c;
		else if (!strcmp(op, "divu")) d1 = g / c;
		else if (!strcmp(op, "powu")) d1 = g * c * powf(x, c - 1);
		else if (!strcmp(op, "relu")) d1 = y[i] > 0 ? g : 0;
		else if (!strcmp(op, "gelu")) { gelu(x, &d1); d1 *= g; }
		else if (!strcmp(op, "tanh")) d1 = g * (1 - y[i] * y[i]);
		else if (!strcmp(op, "sigmoid")) d1 = g * y[i] * (1 - y[i]);
		else if (!strcmp(op, "exp")) d1 = g * y[i];
		else if (!strcmp(op, "neg")) d1 = -g;
		else if (!strcmp(op, "dropout")) d1 = pn_keep(200, i, p) ? g / (1 - p) : 0;
		else if (pn_elem_gated(op)) {
			float d, a1 = gated_act(op, x, &d);
			d1 = g * b[i] * d;
			d2 = g * a1;
		}
		io->dx[i] = d1;
		if (io->dx2)
			io->dx2[i] = d2;
	}
}

static void posenc(const pn_layer *l, pn_io *io)
{
	long S = (long)l->seq_len, E = (long)l->embed_dim;
	float *pe = fz((size_t)(S * E));
	pn_posenc_table(pe, S, E);
	for (size_t i = 0; i < io->nx; i++) {
		io->y[i] = io->x[i] + pe[i % (size_t)(S * E)];
		if (l->train)
			io->dx[i] = io->dy[i];
	}
	free(pe);
}

/* batch norm of each channel over batch and pixels (backend.h) */
static void batchnorm(const pn_layer *l, pn_io *io)
{
	size_t B = (size_t)l->batch, C = (size_t)l->in_channels,
	       P = (size_t)(l->image * l->image), n = B * P;
	const float *g = io->w, *b = io->w + C;
	float *dg = io->dw, *db = io->dw + C;
#define AT(a, i, c, j) a[((i) * C + (c)) * P + (j)]
	for (size_t c = 0; c < C; c++) {
		double m = 0, v = 0;
		for (size_t i = 0; i < B; i++)
			for (size_t j = 0; j < P; j++)
				m += AT(io->x, i, c, j);
		m /= (double)n;
		for (size_t i = 0; i < B; i++)
			for (size_t j = 0; j < P; j++)
				v += (AT(io->x, i, c, j) - m) * (AT(io->x, i, c, j) - m);
		if (!l->train) {              /* the running statistics */
			m = 0;
			v = (double)n;
		}
		double rs = 1 / sqrt(v / (double)n + PN_LN_EPS);
		for (size_t i = 0; i < B; i++)
			for (size_t j = 0; j < P; j++)
				AT(io->y, i, c, j) = (float)((AT(io->x, i, c, j) - m) *
							     rs * g[c] + b[c]);
		if (!l->train)
			continue;
		double s1 = 0, s2 = 0;       /* sums of dy and dy xhat */
		for (size_t i = 0; i < B; i++)
			for (size_t j = 0; j < P; j++) {
				s1 += AT(io->dy, i, c, j);
				s2 += AT(io->dy, i, c, j) * (AT(io->x, i, c, j) - m) * rs;
			}
		dg[c] = (float)s2;
		db[c] = (float)s1;
		for (size_t i = 0; i < B; i++)
			for (size_t j = 0; j < P; j++) {
				double xh = (AT(io->x, i, c, j) - m) * rs;
				AT(io->dx, i, c, j) = (float)(g[c] * rs *
					(AT(io->dy, i, c, j) - s1 / (double)n -
					 xh * s2 / (double)n));
			}
	}
#undef AT
}

/* max or avg pooling of each channel (backend.h) */
static void pool(const pn_layer *l, pn_io *io)
{
	long BC = (long)(l->batch * l->in_channels), X = (long)l->image,
	     k = (long)l->kernel, s = (long)l->stride, p = (long)l->padding;
	long Y = (X + 2 * p - k) / s + 1;
	int max = strcmp(l->op, "max") == 0;
	for (long c = 0; c < BC; c++) {
		const float *x = io->x + c * X * X, *dy = io->dy + c * Y * Y;
		float *dx = io->dx + c * X * X;
		for (long i = 0; i < Y; i++)
			for (long j = 0; j < Y; j++) {
				double sum = 0, best = -INFINITY;
				long at = -1;
				for (long u = i * s - p; u < i * s - p + k; u++)
					for (long v = j * s - p; v < j * s - p + k; v++) {
						if (u < 0 || u >= X || v < 0 || v >= X)
							continue;
						sum += x[u * X + v];
						if (x[u * X + v] > best)
							best = x[u * X + v], at = u * X + v;
					}
				io->y[c * Y * Y + i * Y + j] = (float)(max ? best :
								       sum / (double)(k * k));
				if (!l->train)
					continue;
				if (max) {
					dx[at] += dy[i * Y + j];
					continue;
				}
				for (long u = i * s - p; u < i * s - p + k; u++)
					for (long v = j * s - p; v < j * s - p + k; v++)
						if (u >= 0 && u < X && v >= 0 && v < X)
							dx[u * X + v] += dy[i * Y + j] / (float)(k * k);
			}
	}
}

static int ref_open(const pn_bk_opts *o, char *device, size_t nd,
		    char *versions, size_t nv, char *msg, size_t n)
{
	(void)o;
	(void)msg;
	(void)n;
	snprintf(device, nd, "reference");
	snprintf(versions, nv, "plain C");
	return 0;
}

static int ref_prepare(const pn_config *cfg, pn_run **run, double *mem,
		       char *msg, size_t n)
{
	if (cfg->prec != PN_FP32) {
		snprintf(msg, n, "the reference computes fp32 only");
		return PN_INVALID;
	}
	pn_run *r = pn_xcalloc(1, sizeof *r);
	r->cfg = *cfg;
	*mem = 0;
	*run = r;
	msg[0] = 0;
	return PN_OK;
}

static int ref_step(pn_run *r, pn_phases *t, char *msg, size_t n)
{
	(void)r;
	(void)t;
	snprintf(msg, n, "the reference times nothing");
	return PN_INVALID;
}

static void ref_release(pn_run *r)
{
	free(r);
}

static int ref_recover(char *msg, size_t n)
{
	(void)msg;
	(void)n;
	return 0;
}

static int ref_compute(pn_run *r, pn_io *io, char *msg, size_t n)
{
	const pn_layer *l = &r->cfg.l;
	float p = (float)r->cfg.l.dropout;
	(void)msg;
	(void)n;
	if (l->train && io->dw)
		memset(io->dw, 0, io->nw * sizeof(float));
	switch (l->type) {
	case PN_DENSE: dense(l, io); break;
	case PN_BMM: bmm(l, io); break;
	case PN_CONV2D: conv2d(l, io); break;
	case PN_ATTENTION: attention(l, p, io); break;
	case PN_EMBEDDING: embedding(l, io); break;
	case PN_RNN: case PN_LSTM: case PN_GRU: rnn(l, p, io); break;
	case PN_LAYERNORM: layernorm(l, io); break;
	case PN_SOFTMAX:
		softmax_rows(io->x, io->y, (size_t)(l->batch * l->seq_len),
			     (size_t)l->dim);
		if (l->train)
			softmax_bwd(io->y, io->dy, io->dx,
				    (size_t)(l->batch * l->seq_len), (size_t)l->dim);
		break;
	case PN_ELEMENTWISE: elementwise(l, p, io); break;
	case PN_POSENC: posenc(l, io); break;
	case PN_BATCHNORM: batchnorm(l, io); break;
	case PN_POOL: pool(l, io); break;
	case PN_XENT: xent(l, io); break;
	default: PN_BUG("layer type");
	}
	return PN_OK;
}

static int ref_optimize(int opt, float lr, size_t n, float *w, const float *g,
			int steps, char *msg, size_t nmsg)
{
	(void)msg;
	(void)nmsg;
	float *s1 = fz(n), *s2 = fz(n);
	for (int t = 1; t <= steps; t++)
		pn_opt_update(opt, lr, t, n, w, g, s1, s2);
	free(s1);
	free(s2);
	return PN_OK;
}

static void ref_close(void)
{
}

static const pn_backend ref = {
	"reference", ref_open, ref_prepare, ref_step, NULL, ref_release,
	ref_recover, ref_compute, ref_optimize, ref_close,
};

const pn_backend *pn_ref_backend(void)
{
	return &ref;
}
