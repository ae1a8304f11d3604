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

/* What a value may be: a count (whole, at least 1), a positive amount, or
 * an amount of at least 0 (TDP, price). */
enum { COUNT, POSITIVE, NONNEG };

static const struct {
	const char *col;
	size_t off;
	int required, kind;
} numcols[] = {
	{"sms", offsetof(pn_gpu, sms), 1, COUNT},
	{"cores", offsetof(pn_gpu, cores), 0, COUNT},
	{"base_mhz", offsetof(pn_gpu, base_mhz), 0, POSITIVE},
	{"boost_mhz", offsetof(pn_gpu, boost_mhz), 1, POSITIVE},
	{"mem_gb", offsetof(pn_gpu, mem_gb), 1, POSITIVE},
	{"mem_bus_bits", offsetof(pn_gpu, mem_bus_bits), 0, COUNT},
	{"mem_bw_gbs", offsetof(pn_gpu, mem_bw_gbs), 1, POSITIVE},
	{"l2_mb", offsetof(pn_gpu, l2_mb), 1, POSITIVE},
	{"fp32_gflops", offsetof(pn_gpu, fp32_gflops), 1, POSITIVE},
	{"tf32_gflops", offsetof(pn_gpu, tf32_gflops), 0, POSITIVE},
	{"fp16_gflops", offsetof(pn_gpu, fp16_gflops), 0, POSITIVE},
	{"bf16_gflops", offsetof(pn_gpu, bf16_gflops), 0, POSITIVE},
	{"tdp_w", offsetof(pn_gpu, tdp_w), 0, NONNEG},
	{"price_usd_h", offsetof(pn_gpu, price_usd_h), 0, NONNEG},
};

static const struct {
	const char *col;
	size_t off;
} strcols[] = {
	{"name", offsetof(pn_gpu, name)},
	{"aliases", offsetof(pn_gpu, aliases)},
	{"vendor", offsetof(pn_gpu, vendor)},
	{"arch", offsetof(pn_gpu, arch)},
	{"cc", offsetof(pn_gpu, cc)},
	{"mem_type", offsetof(pn_gpu, mem_type)},
	{"bus", offsetof(pn_gpu, bus)},
	{"source", offsetof(pn_gpu, source)},
};

#define NUMCOLS (sizeof numcols / sizeof numcols[0])
#define STRCOLS (sizeof strcols / sizeof strcols[0])

static int readable(const char *p)
{
	return access(p, R_OK) == 0;
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

/* A value of numcols[i] in column col; NAN when NA and not required. */
static double value(const pn_tsv *in, int col, size_t i, const char *name)
{
	if (pn_tsv_na(in, col)) {
		if (numcols[i].required)
			pn_tsv_die(in, col, "'%s' needs a value", name);
		return NAN;
	}
	switch (numcols[i].kind) {
	case COUNT: return (double)pn_tsv_whole(in, col, 1, PN_WHOLE_MAX);
	case POSITIVE: return pn_tsv_real(in, col, PN_POSITIVE);
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

pn_gpus *pn_gpus_load(const char *path)
{
	path = pn_gpus_path(path);
	pn_tsv *in = pn_tsv_open(path);
	int sc[STRCOLS], nc[NUMCOLS];
	for (size_t i = 0; i < STRCOLS; i++)
		sc[i] = pn_tsv_col(in, strcols[i].col);
	for (size_t i = 0; i < NUMCOLS; i++)
		nc[i] = pn_tsv_col(in, numcols[i].col);
	pn_gpus *t = pn_xcalloc(1, sizeof *t);
	t->path = pn_xstrdup(path);
	int cap = 0;
	while (pn_tsv_read(in)) {
		if (t->n == cap) {
			cap = cap ? 2 * cap : 64;
			t->g = pn_xrealloc(t->g, (size_t)cap * sizeof *t->g);
		}
		pn_gpu *g = &t->g[t->n];
		memset(g, 0, sizeof *g);
		for (size_t i = 0; i < STRCOLS; i++)
			*(char **)((char *)g + strcols[i].off) =
				pn_xstrdup(pn_tsv_str(in, sc[i]));
		if (!g->name[0] || strcmp(g->name, "NA") == 0)
			pn_tsv_die(in, sc[0], "empty name");
		check_name(in, sc[0], g->name);
		check_aliases(in, sc[1], g->aliases);
		for (size_t i = 0; i < NUMCOLS; i++)
			*(double *)((char *)g + numcols[i].off) =
				value(in, nc[i], i, g->name);
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
		for (size_t k = 0; k < STRCOLS; k++)
			free(*(char **)((char *)&t->g[i] + strcols[k].off));
	free(t->g);
	free(t->path);
	free(t);
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
