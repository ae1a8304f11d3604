#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "gpuspec.h"
#include "opt.h"
#include "tsv.h"

#ifndef PN_DATADIR
#define PN_DATADIR "/usr/local/share/pn"
#endif

const pn_gpu_col pn_gpu_cols[] = {
#define T(c) {#c, offsetof(pn_gpu, c), PN_GPU_TEXT, 0}
#define N(c, kind, req) {#c, offsetof(pn_gpu, c), PN_GPU_##kind, req}
	T(name), T(aliases), T(vendor), T(arch), T(cc),
	N(sms, COUNT, 1), N(cores, COUNT, 0), N(base_mhz, POSITIVE, 0),
	N(boost_mhz, POSITIVE, 1), N(mem_gb, POSITIVE, 1), T(mem_type),
	N(mem_bus_bits, COUNT, 0), N(mem_bw_gbs, POSITIVE, 1),
	N(l2_mb, POSITIVE, 1), N(fp32_gflops, POSITIVE, 1),
	N(tf32_gflops, POSITIVE, 0), N(fp16_gflops, POSITIVE, 0),
	N(bf16_gflops, POSITIVE, 0), T(bus), N(tdp_w, NONNEG, 0),
	N(price_usd_h, NONNEG, 0), T(source),
	N(fp64_gflops, POSITIVE, -1), N(fp16_vec_gflops, POSITIVE, -1),
	N(bf16_vec_gflops, POSITIVE, -1), N(fp64_tc_gflops, POSITIVE, -1),
	N(fp32_tc_gflops, POSITIVE, -1),
	N(fp16_tc_f16acc_gflops, POSITIVE, -1),
	N(fp8_tc_gflops, POSITIVE, -1), N(int8_tc_gops, POSITIVE, -1),
	N(tc_mhz, POSITIVE, -1), N(fp32_lanes, COUNT, -1),
	N(blas_fp32_gflops, POSITIVE, -1),
#undef T
#undef N
	{NULL, 0, 0, 0}
};

#define NCOLS (sizeof pn_gpu_cols / sizeof pn_gpu_cols[0] - 1)

static char **text_at(pn_gpu *g, size_t i)
{
	return (char **)((char *)g + pn_gpu_cols[i].off);
}

static double *num_at(pn_gpu *g, size_t i)
{
	return (double *)((char *)g + pn_gpu_cols[i].off);
}

static int readable(const char *p)
{
	return access(p, R_OK) == 0;
}

int pn_gpu_is_cpu(const pn_gpu *g)
{
	return g->arch && strncmp(g->arch, "CPU", 3) == 0;
}

const char *pn_gpus_path(const char *path)
{
	static char buf[PATH_MAX + 64];
	if (path)
		return path;
	const char *env = getenv("PN_GPUSPECS");
	if (env && *env)
		return env;
	static char real[PATH_MAX];
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(buf, sizeof buf, "%s/../gpuspecs/gpus.tsv", exe);
			if (readable(buf))
				return realpath(buf, real) ? real : buf;
			snprintf(buf, sizeof buf, "%s/../share/pn/gpus.tsv",
				 exe);
			if (readable(buf))
				return realpath(buf, real) ? real : buf;
		}
	}
	return PN_DATADIR "/gpus.tsv";
}

/* Lower-case letters and digits of s, into out (size n), without the
 * vendor and brand words that device names may or may not carry. */
static void norm(const char *s, char *out, size_t n)
{
	static const char *const brands[] = {
		"nvidia", "tesla", "geforce", "quadro", "amd", "instinct", 0
	};
	size_t k = 0;
	for (; *s && k + 1 < n; s++)
		if (isalnum((unsigned char)*s))
			out[k++] = (char)tolower((unsigned char)*s);
	out[k] = '\0';
	for (int again = 1; again;) {
		again = 0;
		for (int i = 0; brands[i]; i++) {
			size_t b = strlen(brands[i]);
			if (k > b && strncmp(out, brands[i], b) == 0) {
				memmove(out, out + b, k - b + 1);
				k -= b;
				again = 1;
			}
		}
	}
}

/* Calls f(key) for the name and every alias of g; stops when f returns 1. */
static int each_key(const pn_gpu *g, int (*f)(const char *, void *), void *a)
{
	if (f(g->name, a))
		return 1;
	if (!g->aliases || !g->aliases[0] || strcmp(g->aliases, "NA") == 0)
		return 0;
	char *copy = pn_xstrdup(g->aliases), *save = NULL;
	int hit = 0;
	for (char *k = strtok_r(copy, ";", &save); k && !hit;
	     k = strtok_r(NULL, ";", &save))
		hit = f(k, a);
	free(copy);
	return hit;
}

static int same_key(const char *key, void *a)
{
	char n[256];
	norm(key, n, sizeof n);
	return n[0] && strcmp(n, (const char *)a) == 0;
}

const pn_gpu *pn_gpus_find(const pn_gpus *t, const char *name)
{
	char q[256];
	norm(name, q, sizeof q);
	if (!q[0])
		return NULL;
	for (int i = 0; i < t->n; i++)
		if (each_key(&t->g[i], same_key, q))
			return &t->g[i];
	return NULL;
}

struct dupcheck {
	const pn_gpus *t;
	int upto;
	const char *clash;
};

static int clashes(const char *key, void *a)
{
	struct dupcheck *d = a;
	char n[256];
	norm(key, n, sizeof n);
	for (int i = 0; i < d->upto; i++)
		if (each_key(&d->t->g[i], same_key, n)) {
			d->clash = d->t->g[i].name;
			return 1;
		}
	return 0;
}

/* The value of column i (field col of the current row, -1: the table has
 * no such column); NAN when NA and not required. */
static double value(const pn_tsv *in, int col, size_t i, const char *name)
{
	if (col < 0 || pn_tsv_na(in, col)) {
		if (pn_gpu_cols[i].required > 0)
			pn_tsv_die(in, col, "'%s' needs a value", name);
		return NAN;
	}
	switch (pn_gpu_cols[i].kind) {
	case PN_GPU_COUNT:
		return (double)pn_tsv_whole(in, col, 1, PN_WHOLE_MAX);
	case PN_GPU_POSITIVE: return pn_tsv_real(in, col, PN_POSITIVE);
	default: return pn_tsv_real(in, col, PN_NONNEG);
	}
}

/* A name (or alias) must be one that a lookup can find: some letter or
 * digit, and nothing that would garble a message or a TSV row. */
static void check_name(const pn_tsv *in, int col, const char *s)
{
	int alnum = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			pn_tsv_die(in, col, "a name with a control character "
				   "(byte 0x%02x)", *p);
		alnum |= isalnum(*p) != 0;
	}
	if (!alnum)
		pn_tsv_die(in, col, "'%s' has no letter or digit", s);
}

static void check_aliases(const pn_tsv *in, int col, const char *s)
{
	if (!s[0] || strcmp(s, "NA") == 0)
		return;
	char *copy = pn_xstrdup(s), *save = NULL;
	for (char *k = strtok_r(copy, ";", &save); k;
	     k = strtok_r(NULL, ";", &save))
		check_name(in, col, k);
	free(copy);
}

/* Read the current row of in into g (c: each column's index). */
static void read_row(const pn_tsv *in, const int *c, pn_gpu *g)
{
	memset(g, 0, sizeof *g);
	for (size_t i = 0; i < NCOLS; i++)
		if (pn_gpu_cols[i].kind == PN_GPU_TEXT)
			*text_at(g, i) = pn_xstrdup(pn_tsv_str(in, c[i]));
	if (!g->name[0] || strcmp(g->name, "NA") == 0)
		pn_tsv_die(in, c[0], "empty name");
	check_name(in, c[0], g->name);
	check_aliases(in, c[1], g->aliases);
	for (size_t i = 0; i < NCOLS; i++)
		if (pn_gpu_cols[i].kind != PN_GPU_TEXT)
			*num_at(g, i) = value(in, c[i], i, g->name);
}

pn_gpus *pn_gpus_load(const char *path)
{
	path = pn_gpus_path(path);
	pn_tsv *in = pn_tsv_open(path);
	int c[NCOLS];
	for (size_t i = 0; i < NCOLS; i++)
		c[i] = pn_gpu_cols[i].required < 0 ?
		       pn_tsv_find(in, pn_gpu_cols[i].name) :
		       pn_tsv_col(in, pn_gpu_cols[i].name);
	pn_gpus *t = pn_xcalloc(1, sizeof *t);
	t->path = pn_xstrdup(path);
	int cap = 0;
	while (pn_tsv_read(in)) {
		if (t->n == cap) {
			cap = cap ? 2 * cap : 64;
			t->g = pn_xrealloc(t->g, (size_t)cap * sizeof *t->g);
		}
		pn_gpu *g = &t->g[t->n];
		read_row(in, c, g);
		struct dupcheck d = {t, t->n, NULL};
		if (each_key(g, clashes, &d))
			pn_tsv_die_row(in, "'%s' shares a name with '%s'",
				       g->name, d.clash);
		t->n++;
	}
	if (t->n == 0)
		pn_die_at(PN_EXIT_DATA, path, 0, "no GPUs in the table");
	pn_tsv_close(in);
	return t;
}

void pn_gpus_free(pn_gpus *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->n; i++)
		for (size_t k = 0; k < NCOLS; k++)
			if (pn_gpu_cols[k].kind == PN_GPU_TEXT)
				free(*text_at(&t->g[i], k));
	free(t->g);
	free(t->path);
	free(t);
}

void pn_gpus_write_header(FILE *f)
{
	for (size_t i = 0; i < NCOLS; i++) {
		fputs(pn_gpu_cols[i].name, f);
		putc(i + 1 < NCOLS ? '\t' : '\n', f);
	}
}

void pn_gpus_write_row(FILE *f, const pn_gpu *g)
{
	for (size_t i = 0; i < NCOLS; i++) {
		const pn_gpu_col *k = &pn_gpu_cols[i];
		const char *p = (const char *)g + k->off;
		if (k->kind == PN_GPU_TEXT)
			fputs(*(char *const *)p, f);
		else if (isnan(*(const double *)p))
			fputs("NA", f);
		else
			pn_put_num(f, *(const double *)p);
		putc(i + 1 < NCOLS ? '\t' : '\n', f);
	}
}

static int lev(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int *row = pn_xmalloc((lb + 1) * sizeof *row);
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int diag = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int up = row[j];
			int best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	int d = row[lb];
	free(row);
	return d;
}

struct near {
	const char *q;
	int best;
};

static int distance(const char *key, void *a)
{
	struct near *s = a;
	char n[256];
	norm(key, n, sizeof n);
	/* A name that holds the query's characters in order ("a10080" in
	 * "a100pcie80gb") is an abbreviation of it: closer than any edit. */
	const char *p = n;
	for (const char *c = s->q; *c && p; c++)
		p = *p ? strchr(p, *c) : NULL, p = p ? p + 1 : NULL;
	int d = p && n[0] ? ((int)strlen(n) - (int)strlen(s->q)) / 4
			  : 100 + lev(s->q, n);
	if (d < s->best)
		s->best = d;
	return 0;
}

void pn_gpus_closest(const pn_gpus *t, const char *name, char *buf, size_t n)
{
	char q[256];
	norm(name, q, sizeof q);
	int *dist = pn_xmalloc((size_t)t->n * sizeof *dist);
	for (int i = 0; i < t->n; i++) {
		struct near s = {q, INT_MAX};
		each_key(&t->g[i], distance, &s);
		dist[i] = s.best;
	}
	buf[0] = '\0';
	size_t len = 0;
	for (int k = 0; k < 3; k++) {
		int bi = -1;
		for (int i = 0; i < t->n; i++)
			if (dist[i] != INT_MAX && (bi < 0 || dist[i] < dist[bi]))
				bi = i;
		if (bi < 0)
			break;
		dist[bi] = INT_MAX;
		len += (size_t)snprintf(buf + len, n > len ? n - len : 0,
					"%s%s", k ? ", " : "", t->g[bi].name);
	}
	free(dist);
}

const pn_gpu *pn_gpus_need(const pn_gpus *t, const char *name,
			   const char *file, long line)
{
	const pn_gpu *g = pn_gpus_find(t, name);
	if (g)
		return g;
	char near[256];
	pn_gpus_closest(t, name, near, sizeof near);
	pn_die_at(PN_EXIT_DATA, file, line,
		  "unknown device '%s' in %s (closest: %s); pass --gpuspecs "
		  "FILE with a table that has it (pn-time --cpu-spec -o FILE "
		  "writes one for a CPU)", name, t->path, near);
}
