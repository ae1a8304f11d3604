/* pn-split - split rows into train, validation and test sets by a hash of
 * their configuration, streaming in constant memory. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "opt.h"
#include "gpuspec.h"
#include "layer.h"
#include "tsv.h"

static const char usage_text[] =
"Usage: pn-split [OPTION]... [FILE]\n"
"Split the rows of a TSV into train, validation and test sets, keeping rows\n"
"of one configuration together.\n"
"\n"
"  -o, --output=PREFIX    write PREFIX-train.tsv, PREFIX-val.tsv and\n"
"                           PREFIX-test.tsv\n"
"      --train=FILE       write the training rows to FILE\n"
"      --val=FILE         write the validation rows to FILE\n"
"      --test=FILE        write the test rows to FILE\n"
"  -f, --fractions=A/B/C  percentages of train, validation and test rows;\n"
"                           they sum to 100 (default 80/10/10, or 90/10/0\n"
"                           with --hold-out)\n"
"  -s, --seed=N           seed of the assignment (default 1)\n"
"  -k, --key=COL[,COL]... the columns that identify a configuration (default:\n"
"                           every configuration column of the input)\n"
"      --hold-out=DEVICE[,DEVICE]...\n"
"                         send every row measured on these devices to test\n"
"      --gpuspecs=FILE    GPU spec table for matching --hold-out names\n"
"      --every=K          keep only data rows 1, K+1, 2K+1, ... of the input\n"
"                           and drop the others (default 1: every row)\n"
"  -v, --verbose          report the row count of each part on stderr\n"
"  -h, --help             display this help and exit\n"
"      --version          output version information and exit\n"
"\n"
"With no FILE, or when FILE is -, read standard input (plain or gzip).\n"
"An output FILE of - is standard output.  Outputs appear only when the whole\n"
"input has been split; on an error none is left behind.\n";

enum { OPT_TRAIN = 256, OPT_VAL, OPT_TEST, OPT_HOLD_OUT, OPT_GPUSPECS,
       OPT_EVERY, OPT_VERSION };

static const struct option longopts[] = {
	{"output", required_argument, NULL, 'o'},
	{"train", required_argument, NULL, OPT_TRAIN},
	{"val", required_argument, NULL, OPT_VAL},
	{"test", required_argument, NULL, OPT_TEST},
	{"fractions", required_argument, NULL, 'f'},
	{"seed", required_argument, NULL, 's'},
	{"key", required_argument, NULL, 'k'},
	{"hold-out", required_argument, NULL, OPT_HOLD_OUT},
	{"gpuspecs", required_argument, NULL, OPT_GPUSPECS},
	{"every", required_argument, NULL, OPT_EVERY},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, OPT_VERSION},
	{NULL, 0, NULL, 0}
};

enum { TRAIN, VAL, TEST, NPARTS };
static const char *const part_names[NPARTS] = {"train", "val", "test"};

/* ---- options ------------------------------------------------------------ */

/* "A/B/C" -> pct[3]; a usage error unless three numbers >= 0 summing to 100. */
static void parse_fractions(const char *s, double pct[NPARTS])
{
	const char *p = s;
	for (int i = 0; i < NPARTS; i++) {
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if ((i < NPARTS - 1) != (end != NULL) ||
		    pn_parse_num(p, n, &pct[i]) < 0 || pct[i] < 0)
			pn_usage_error("invalid --fractions '%s': expected "
				       "A/B/C, three percentages", s);
		p += n + 1;
	}
	double sum = pct[0] + pct[1] + pct[2];
	if (fabs(sum - 100) > 1e-9) {
		char b[40];
		pn_fmt_num(b, sum);
		pn_usage_error("invalid --fractions '%s': the parts sum to %s, "
			       "not 100", s, b);
	}
}

/* ---- the assignment ----------------------------------------------------- */

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* The key of the current row as a number in [0, 1): FNV-1a over the name
 * and the value of each key column, each with its terminating NUL, from a
 * basis that depends on the seed, then the splitmix64 finaliser.  An empty
 * field and NA are the same value. */
static double key_unit(const pn_tsv *in, const int *key, int nkey,
		       uint64_t seed)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325) ^ mix64(seed);
	for (int i = 0; i < nkey; i++) {
		const char *name = pn_tsv_colname(in, key[i]);
		h = fnv1a(h, name, strlen(name) + 1);
		if (pn_tsv_na(in, key[i]))
			h = fnv1a(h, "NA", 3);
		else
			h = fnv1a(h, pn_tsv_str(in, key[i]),
				  pn_tsv_len(in, key[i]) + 1);
	}
	return (double)(mix64(h) >> 11) * 0x1.0p-53;
}

/* The part of a row whose key maps to u: the first part with a share whose
 * cumulative share exceeds u; rounding left over goes to the last part. */
static int pick(double u, const double pct[NPARTS], int last)
{
	double upto = 0;
	for (int i = 0; i < last; i++) {
		upto += pct[i] / 100;
		if (pct[i] > 0 && u < upto)
			return i;
	}
	return last;
}

static int by_name(const void *a, const void *b, void *in)
{
	return strcmp(pn_tsv_colname(in, *(const int *)a),
		      pn_tsv_colname(in, *(const int *)b));
}

/* The key columns, sorted by name so that column order does not matter. */
static int *key_columns(const pn_tsv *in, const char *list, int *n)
{
	int nc = pn_tsv_ncols(in);
	int *key = pn_xmalloc((size_t)nc * sizeof *key);
	*n = 0;
	if (list) {
		char *copy = pn_xstrdup(list), *save = NULL;
		for (char *c = strtok_r(copy, ",", &save); c;
		     c = strtok_r(NULL, ",", &save)) {
			int k = pn_tsv_col(in, c);
			for (int i = 0; i < *n; i++)
				if (key[i] == k)
					pn_usage_error("column '%s' named "
						       "twice in --key", c);
			key[(*n)++] = k;
		}
		free(copy);
		if (*n == 0)
			pn_usage_error("--key needs at least one column");
	} else {
		for (int i = 0; i < nc; i++)
			if (pn_layer_is_config_col(pn_tsv_colname(in, i)))
				key[(*n)++] = i;
		if (*n == 0)   /* no configuration column: the whole row */
			for (int i = 0; i < nc; i++)
				if (strcmp(pn_tsv_colname(in, i), "device"))
					key[(*n)++] = i;
	}
	qsort_r(key, (size_t)*n, sizeof *key, by_name, (void *)in);
	return key;
}

/* ---- hold-out devices --------------------------------------------------- */

typedef struct {
	pn_gpus *gpus;
	const pn_gpu **held;       /* canonical rows of the --hold-out names */
	char **names;              /* the names as given */
	int n;
	/* Row values seen so far and whether they are held out: a device
	 * column repeats a few values, and a table lookup is slow. */
	struct { char *value; int held; } seen[256];
	int nseen;
} holdout;

static void holdout_init(holdout *h, const char *list, const char *specs)
{
	memset(h, 0, sizeof *h);
	h->gpus = pn_gpus_load(specs);
	size_t max = strlen(list) + 1;
	h->held = pn_xmalloc(max * sizeof *h->held);
	h->names = pn_xmalloc(max * sizeof *h->names);
	char *copy = pn_xstrdup(list), *save = NULL;
	for (char *d = strtok_r(copy, ",", &save); d;
	     d = strtok_r(NULL, ",", &save)) {
		h->held[h->n] = pn_gpus_need(h->gpus, d, NULL, 0);
		h->names[h->n++] = pn_xstrdup(d);
	}
	free(copy);
	if (h->n == 0)
		pn_usage_error("--hold-out needs at least one device");
}

static int holdout_lookup(const holdout *h, const char *value)
{
	const pn_gpu *g = pn_gpus_find(h->gpus, value);
	for (int i = 0; i < h->n; i++)
		if (g ? g == h->held[i] : strcmp(value, h->names[i]) == 0)
			return 1;
	return 0;
}

static int holdout_match(holdout *h, const char *value)
{
	for (int i = 0; i < h->nseen; i++)
		if (strcmp(h->seen[i].value, value) == 0)
			return h->seen[i].held;
	int held = holdout_lookup(h, value);
	if (h->nseen < (int)(sizeof h->seen / sizeof h->seen[0])) {
		h->seen[h->nseen].value = pn_xstrdup(value);
		h->seen[h->nseen++].held = held;
	}
	return held;
}

static void holdout_free(holdout *h)
{
	for (int i = 0; i < h->n; i++)
		free(h->names[i]);
	for (int i = 0; i < h->nseen; i++)
		free(h->seen[i].value);
	free(h->names);
	free(h->held);
	pn_gpus_free(h->gpus);
}

/* The file an output path writes, as one string for each file: links
 * followed (pn_output_target), its directory's real path and its name;
 * "-" as it is; the path as given where its directory does not exist. */
static char *real_output(const char *path)
{
	if (strcmp(path, "-") == 0)
		return pn_xstrdup(path);
	char *t = pn_output_target(path), *slash = strrchr(t, '/'), *dir;
	if (slash && slash != t) {
		*slash = '\0';
		dir = realpath(t, NULL);
		*slash = '/';
	} else {
		dir = realpath(slash ? "/" : ".", NULL);
	}
	if (!dir)
		return t;
	const char *base = slash ? slash + 1 : t;
	char *r = pn_xmalloc(strlen(dir) + strlen(base) + 2);
	sprintf(r, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, base);
	free(dir);
	free(t);
	return r;
}

/* Whether outputs a and b write one file (./x and x, a link and its
 * target). */
static int same_file(const char *a, const char *b)
{
	char *ra = real_output(a), *rb = real_output(b);
	int same = strcmp(ra, rb) == 0;
	free(ra);
	free(rb);
	return same;
}

/* The file of each part (NULL: none): a named part overrides the prefix;
 * a part that gets rows needs one; two parts never share one. */
static void output_paths(const char *prefix, const char *const named[NPARTS],
			 const double pct[NPARTS], int held,
			 char *path[NPARTS])
{
	if (!prefix && !named[TRAIN] && !named[VAL] && !named[TEST])
		pn_usage_error("no output named: use -o PREFIX or --train, "
			       "--val and --test");
	for (int i = 0; i < NPARTS; i++) {
		path[i] = NULL;
		if (named[i]) {
			path[i] = pn_xstrdup(named[i]);
		} else if (prefix) {
			path[i] = pn_xmalloc(strlen(prefix) + 16);
			sprintf(path[i], "%s-%s.tsv", prefix, part_names[i]);
		} else if (pct[i] > 0 || (i == TEST && held)) {
			pn_usage_error("no output for the %s rows: use --%s "
				       "FILE or -o PREFIX", part_names[i],
				       part_names[i]);
		}
	}
	for (int i = 0; i < NPARTS; i++)
		for (int j = 0; j < i; j++)
			if (path[i] && path[j] && same_file(path[i], path[j]))
				pn_usage_error("the %s and %s rows both go to "
					       "'%s'", part_names[j],
					       part_names[i], path[i]);
}

/* ---- main --------------------------------------------------------------- */

int main(int argc, char **argv)
{
	pn_init("pn-split");
	pn_stdout_init();

	const char *prefix = NULL, *named[NPARTS] = {NULL, NULL, NULL};
	const char *fractions = NULL, *keylist = NULL, *holdlist = NULL;
	const char *specs = NULL;
	uint64_t seed = 1;
	long every = 1;
	int verbose = 0, c;
	argv[0] = (char *)pn_prog;   /* getopt's messages start "pn-split: " */
	while ((c = getopt_long(argc, argv, "o:f:s:k:vh", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'o':
			prefix = optarg;
			break;
		case OPT_TRAIN:
		case OPT_VAL:
		case OPT_TEST:
			named[c - OPT_TRAIN] = optarg;
			break;
		case 'f':
			fractions = optarg;
			break;
		case 's':
			seed = pn_opt_seed("--seed", optarg);
			break;
		case 'k':
			keylist = optarg;
			break;
		case OPT_HOLD_OUT:
			holdlist = optarg;
			break;
		case OPT_GPUSPECS:
			specs = optarg;
			break;
		case OPT_EVERY:
			every = (long)pn_opt_whole("--every", optarg, 1,
						    PN_WHOLE_MAX);
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			pn_output_close(stdout);
			return PN_EXIT_OK;
		case OPT_VERSION:
			pn_version();
		default:
			pn_try_help();
		}
	}
	if (argc - optind > 1)
		pn_usage_error("extra operand '%s'", argv[optind + 1]);

	double pct[NPARTS] = {80, 10, 10};
	if (fractions)
		parse_fractions(fractions, pct);
	else if (holdlist) {
		pct[TRAIN] = 90;
		pct[TEST] = 0;
	}

	char *path[NPARTS];
	output_paths(prefix, named, pct, holdlist != NULL, path);

	pn_tsv *in = pn_tsv_open(optind < argc ? argv[optind] : NULL);
	int nkey, *key = key_columns(in, keylist, &nkey);
	holdout ho;
	int devcol = -1;
	if (holdlist) {
		devcol = pn_tsv_col(in, "device");
		holdout_init(&ho, holdlist, specs);
	}

	int last = TRAIN;     /* the last part with a share takes the rest */
	for (int i = 0; i < NPARTS; i++)
		if (pct[i] > 0)
			last = i;

	FILE *out[NPARTS];
	for (int i = 0; i < NPARTS; i++) {
		out[i] = path[i] ? pn_output_open(path[i]) : NULL;
		if (out[i]) {
			pn_tsv_put_header(out[i], in);
			putc('\n', out[i]);
		}
	}

	long count[NPARTS] = {0, 0, 0}, held = 0, dropped = 0;
	for (long row = 0; pn_tsv_read(in); row++) {
		int part;
		if (row % every) {
			dropped++;
			continue;
		}
		if (devcol >= 0 && holdout_match(&ho, pn_tsv_str(in, devcol))) {
			part = TEST;
			held++;
		} else {
			part = pick(key_unit(in, key, nkey, seed), pct, last);
		}
		if (!out[part])
			PN_BUG("row for a part with no output");
		pn_tsv_put_row(out[part], in);
		putc('\n', out[part]);
		count[part]++;
	}
	if (count[TRAIN] + count[VAL] + count[TEST] == 0)
		pn_die_at(PN_EXIT_DATA, pn_tsv_path(in), 0, "no data rows");

	/* Flush every part before the first is renamed into place, so that a
	 * write error leaves none of them. */
	for (int i = 0; i < NPARTS; i++)
		if (out[i] && (fflush(out[i]) != 0 || ferror(out[i]))) {
			const char *why = strerror(errno ? errno : EIO);
			if (out[i] == stdout)
				pn_die(PN_EXIT_DATA, "write error: %s", why);
			pn_die(PN_EXIT_DATA, "write error: %s: %s", path[i],
			       why);
		}
	for (int i = 0; i < NPARTS; i++)
		if (out[i])
			pn_output_close(out[i]);
	pn_output_close(stdout);

	if (verbose) {
		fprintf(stderr, "%s: train %ld, val %ld, test %ld", pn_prog,
			count[TRAIN], count[VAL], count[TEST]);
		if (holdlist)
			fprintf(stderr, " (%ld held out)", held);
		if (every > 1)
			fprintf(stderr, "; %ld dropped (--every %ld)", dropped,
				every);
		fputc('\n', stderr);
	}

	if (holdlist)
		holdout_free(&ho);
	for (int i = 0; i < NPARTS; i++)
		free(path[i]);
	free(key);
	pn_tsv_close(in);
	return PN_EXIT_OK;
}
