/* ubj.c - the strict UBJSON reader of ubj.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "ubj.h"

typedef struct {
	const unsigned char *b;
	size_t len, at;
	pn_ubj_doc *doc;
	char *err;
	size_t errlen;
} parser;

static int fail(parser *p, size_t at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(parser *p, size_t at, const char *fmt, ...)
{
	char msg[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(p->err, p->errlen, "byte %zu: %s", at, msg);
	return -1;
}

static uint64_t be(const unsigned char *s, int k)
{
	uint64_t v = 0;
	for (int j = 0; j < k; j++)
		v = v << 8 | s[j];
	return v;
}

static double f32(const unsigned char *s)
{
	uint32_t u = (uint32_t)be(s, 4);
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* Bytes still unread. */
static size_t left(const parser *p)
{
	return p->len - p->at;
}

/* Bytes left after a count. */
static size_t past_count(const parser *p)
{
	return left(p) < 9 ? 0 : left(p) - 9;
}

/* A count or length: 'L' and a big-endian int64, at most max. */
static int count(parser *p, const char *what, size_t max, size_t *n)
{
	size_t at = p->at;
	if (left(p) < 9 || p->b[p->at] != 'L')
		return fail(p, at, "%s: want 'L' and 8 bytes", what);
	int64_t v = (int64_t)be(p->b + p->at + 1, 8);
	p->at += 9;
	if (v < 0 || (uint64_t)v > max)
		return fail(p, at, "%s %lld: at most %zu possible", what,
			    (long long)v, max);
	*n = (size_t)v;
	return 0;
}

static size_t new_value(parser *p, char type)
{
	pn_ubj_doc *d = p->doc;
	if (d->n == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 256;
		d->v = pn_xrealloc(d->v, d->cap * sizeof *d->v);
	}
	memset(&d->v[d->n], 0, sizeof *d->v);
	d->v[d->n].type = type;
	return d->n++;
}

static int value(parser *p, int depth, size_t *out);

/* Members of an array or object: value (object: key first) until ']' or
 * '}', or exactly n of them (n != SIZE_MAX). */
static int members(parser *p, size_t self, int depth, char close, size_t n)
{
	size_t last = 0, got = 0;
	for (;; got++) {
		if (n != SIZE_MAX ? got == n :
		    left(p) > 0 && p->b[p->at] == close) {
			if (n == SIZE_MAX)
				p->at++;
			break;
		}
		if (close == '}' && got == PN_UBJ_MAX_MEMBERS)
			return fail(p, p->at, "object of more than %d members",
				    PN_UBJ_MAX_MEMBERS);
		const unsigned char *key = NULL;
		size_t klen = 0, at = p->at, v;
		if (close == '}') {
			if (count(p, "key length", past_count(p), &klen) < 0)
				return -1;
			key = p->b + p->at;
			p->at += klen;
			for (size_t k = p->doc->v[self].kid; k;
			     k = p->doc->v[k].next)
				if (p->doc->v[k].keylen == klen &&
				    memcmp(p->doc->v[k].key, key, klen) == 0)
					return fail(p, at, "key '%.*s' twice",
						    (int)(klen < 40 ? klen : 40),
						    (const char *)key);
		}
		if (value(p, depth + 1, &v) < 0)
			return -1;
		p->doc->v[v].key = key;
		p->doc->v[v].keylen = klen;
		if (last)
			p->doc->v[last].next = v;
		else
			p->doc->v[self].kid = v;
		last = v;
	}
	p->doc->v[self].n = got;
	return 0;
}

static int typed(parser *p, size_t self)
{
	size_t at = p->at;
	if (left(p) < 2)
		return fail(p, at, "typed array cut short");
	char t = (char)p->b[p->at];
	size_t size = t == 'd' || t == 'l' ? 4 : t == 'U' ? 1 : t == 'L' ? 8 : 0;
	if (!size)
		return fail(p, at, "typed array of unknown type 0x%02x",
			    p->b[p->at]);
	if (p->b[p->at + 1] != '#')
		return fail(p, at + 1, "typed array without '#'");
	p->at += 2;
	size_t n;
	if (count(p, "typed array length", past_count(p) / size, &n) < 0)
		return -1;
	pn_ubj *v = &p->doc->v[self];
	v->type = '$';
	v->elem = t;
	v->data = p->b + p->at;
	v->n = n;
	p->at += n * size;
	return 0;
}

static int value(parser *p, int depth, size_t *out)
{
	size_t at = p->at;
	if (depth > PN_UBJ_MAX_DEPTH)
		return fail(p, at, "nested more than %d deep",
			    PN_UBJ_MAX_DEPTH);
	if (left(p) < 1)
		return fail(p, at, "ends where a value should start");
	unsigned char c = p->b[p->at++];
	static const char ints[] = "iUIlL";
	static const int width[] = { 1, 1, 2, 4, 8 };
	const char *ip = c ? strchr(ints, c) : NULL;
	size_t self = new_value(p, (char)c);
	*out = self;
	if (ip) {
		int k = width[ip - ints];
		if (left(p) < (size_t)k)
			return fail(p, at, "integer cut short");
		uint64_t u = be(p->b + p->at, k);
		int64_t v = c == 'U' ? (int64_t)u :
			    k == 1 ? (int8_t)u : k == 2 ? (int16_t)u :
			    k == 4 ? (int32_t)u : (int64_t)u;
		p->doc->v[self].type = 'i';
		p->doc->v[self].i = v;
		p->at += (size_t)k;
		return 0;
	}
	switch (c) {
	case 'T': case 'F': case 'Z':
		return 0;
	case 'd':
		if (left(p) < 4)
			return fail(p, at, "number cut short");
		p->doc->v[self].d = f32(p->b + p->at);
		p->at += 4;
		return 0;
	case 'S': {
		size_t n;
		if (count(p, "string length", past_count(p), &n) < 0)
			return -1;
		p->doc->v[self].data = p->b + p->at;
		p->doc->v[self].n = n;
		p->at += n;
		return 0;
	}
	case '{':
		return members(p, self, depth, '}', SIZE_MAX);
	case '[':
		if (left(p) > 0 && p->b[p->at] == '$') {
			p->at++;
			return typed(p, self);
		}
		if (left(p) > 0 && p->b[p->at] == '#') {
			size_t n;
			p->at++;
			/* each value takes at least a byte */
			if (count(p, "array length", past_count(p), &n) < 0)
				return -1;
			return members(p, self, depth, ']', n);
		}
		return members(p, self, depth, ']', SIZE_MAX);
	default:
		return fail(p, at, "unknown marker 0x%02x", c);
	}
}

int pn_ubj_parse(const unsigned char *b, size_t len, pn_ubj_doc *doc,
		 char *err, size_t errlen)
{
	parser p = { b, len, 0, doc, err, errlen };
	size_t root;
	if (value(&p, 0, &root) < 0)
		return -1;
	if (p.at != len)
		return fail(&p, p.at, "%zu bytes after the value", len - p.at);
	return 0;
}

void pn_ubj_free(pn_ubj_doc *doc)
{
	free(doc->v);
	doc->v = NULL;
	doc->n = doc->cap = 0;
}

const pn_ubj *pn_ubj_first(const pn_ubj_doc *doc, const pn_ubj *v)
{
	return v && v->kid ? &doc->v[v->kid] : NULL;
}

const pn_ubj *pn_ubj_next(const pn_ubj_doc *doc, const pn_ubj *m)
{
	return m && m->next ? &doc->v[m->next] : NULL;
}

const pn_ubj *pn_ubj_get(const pn_ubj_doc *doc, const pn_ubj *o,
			 const char *key)
{
	if (!o || o->type != '{')
		return NULL;
	size_t k = strlen(key);
	for (const pn_ubj *m = pn_ubj_first(doc, o); m; m = pn_ubj_next(doc, m))
		if (m->keylen == k && memcmp(m->key, key, k) == 0)
			return m;
	return NULL;
}

int64_t pn_ubj_int_at(const pn_ubj *a, size_t i)
{
	switch (a->elem) {
	case 'U':
		return a->data[i];
	case 'l':
		return (int32_t)be(a->data + 4 * i, 4);
	case 'L':
		return (int64_t)be(a->data + 8 * i, 8);
	default:
		PN_BUG("ubj: integer element of a float array");
	}
}

double pn_ubj_num_at(const pn_ubj *a, size_t i)
{
	if (a->elem != 'd')
		PN_BUG("ubj: float element of an integer array");
	return f32(a->data + 4 * i);
}

int pn_ubj_is_str(const pn_ubj *v, const char *s)
{
	size_t k = strlen(s);
	return v && v->type == 'S' && v->n == k && memcmp(v->data, s, k) == 0;
}
