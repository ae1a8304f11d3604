#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "json.h"

#define MAXDEPTH 64

typedef struct {
	const char *p, *end;
	long line;
	pn_json_err *e;
} jp;

static pn_json *jfail(jp *j, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static pn_json *jfail(jp *j, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(j->e->msg, sizeof j->e->msg, fmt, ap);
	va_end(ap);
	j->e->line = j->line;
	return NULL;
}

static void ws(jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
				 *j->p == '\n' || *j->p == '\r')) {
		if (*j->p == '\n')
			j->line++;
		j->p++;
	}
}

static pn_json *unexpected(jp *j)
{
	if (j->p >= j->end)
		return jfail(j, "unexpected end of input");
	unsigned char c = (unsigned char)*j->p;
	if (c < 0x20 || c >= 0x7f)
		return jfail(j, "unexpected character 0x%02x", c);
	return jfail(j, "unexpected character '%c'", c);
}

static pn_json *node(jp *j, pn_json_kind k)
{
	pn_json *v = pn_xcalloc(1, sizeof *v);
	v->kind = k;
	v->line = j->line;
	return v;
}

static int hex4(const char *s, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char c = s[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static size_t utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A \u escape at j->p (after the backslash and 'u'), surrogates joined. */
static int uescape(jp *j, char *o, size_t *n)
{
	unsigned cp, lo;
	if (j->end - j->p < 4 || hex4(j->p, &cp) != 0)
		return -1;
	j->p += 4;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return -1;
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u' ||
		    hex4(j->p + 2, &lo) != 0 || lo < 0xdc00 || lo > 0xdfff)
			return -1;
		j->p += 6;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	*n += utf8(o + *n, cp);
	return 0;
}

/* The string at j->p (on its opening quote) into a new buffer. */
static char *string(jp *j)
{
	const char *s = ++j->p;
	while (s < j->end && *s != '"')
		s += *s == '\\' && s + 1 < j->end ? 2 : 1;
	char *o = pn_xmalloc((size_t)(s - j->p) + 1);
	size_t n = 0;
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	while (j->p < j->end && *j->p != '"') {
		unsigned char c = (unsigned char)*j->p;
		if (c < 0x20) {
			jfail(j, "control character in a string");
			goto bad;
		}
		if (c != '\\') {
			o[n++] = (char)c;
			j->p++;
			continue;
		}
		if (++j->p >= j->end)
			break;
		const char *k = strchr(from, *j->p);
		if (*j->p == 'u') {
			j->p++;
			if (uescape(j, o, &n) != 0) {
				jfail(j, "bad \\u escape");
				goto bad;
			}
		} else if (k && *j->p) {
			o[n++] = to[k - from];
			j->p++;
		} else {
			jfail(j, "bad escape '\\%c'", *j->p);
			goto bad;
		}
	}
	if (j->p >= j->end) {
		jfail(j, "unterminated string");
		goto bad;
	}
	j->p++;
	o[n] = 0;
	return o;
bad:
	free(o);
	return NULL;
}

static pn_json *number(jp *j)
{
	const char *s = j->p, *p = s;
	if (p < j->end && *p == '-')
		p++;
	if (p >= j->end || *p < '0' || *p > '9')
		return unexpected(j);
	if (*p == '0' && p + 1 < j->end && p[1] >= '0' && p[1] <= '9')
		return jfail(j, "bad number '%.*s'", (int)(p + 2 - s), s);
	while (p < j->end && *p >= '0' && *p <= '9')
		p++;
	if (p < j->end && *p == '.') {
		if (++p >= j->end || *p < '0' || *p > '9')
			return jfail(j, "bad number '%.*s'", (int)(p - s), s);
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < j->end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < j->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= j->end || *p < '0' || *p > '9')
			return jfail(j, "bad number '%.*s'", (int)(p - s), s);
		while (p < j->end && *p >= '0' && *p <= '9')
			p++;
	}
	char buf[64];
	size_t len = (size_t)(p - s);
	if (len >= sizeof buf)
		return jfail(j, "bad number '%.20s...'", s);
	memcpy(buf, s, len);
	buf[len] = 0;
	pn_json *v = node(j, PN_JSON_NUM);
	v->num = strtod(buf, NULL);
	j->p = p;
	return v;
}

static pn_json *value(jp *j, int depth);

/* An array or object at j->p (on its opening bracket). */
static pn_json *container(jp *j, int depth)
{
	int obj = *j->p == '{';
	char close = obj ? '}' : ']';
	pn_json *v = node(j, obj ? PN_JSON_OBJ : PN_JSON_ARR), **tail = &v->child;
	j->p++;
	ws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		return v;
	}
	for (;;) {
		char *key = NULL;
		ws(j);
		if (obj) {
			if (j->p >= j->end || *j->p != '"') {
				if (j->p >= j->end)
					unexpected(j);
				else
					jfail(j, "expected a string key");
				goto bad;
			}
			long kline = j->line;
			if (!(key = string(j)))
				goto bad;
			if (pn_json_get(v, key)) {
				j->line = kline;
				jfail(j, "duplicate key '%s'", key);
				free(key);
				goto bad;
			}
			ws(j);
			if (j->p >= j->end || *j->p != ':') {
				jfail(j, "expected ':' after a key");
				free(key);
				goto bad;
			}
			j->p++;
		}
		pn_json *c = value(j, depth + 1);
		if (!c) {
			free(key);
			goto bad;
		}
		c->key = key;
		*tail = c;
		tail = &c->next;
		v->n++;
		ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == close) {
			j->p++;
			return v;
		}
		if (j->p >= j->end)
			unexpected(j);
		else
			jfail(j, "expected ',' or '%c' after %s", close,
			      obj ? "a member" : "an element");
		goto bad;
	}
bad:
	pn_json_free(v);
	return NULL;
}

static int word(jp *j, const char *w)
{
	size_t n = strlen(w);
	if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0)
		return 0;
	j->p += n;
	return 1;
}

static pn_json *value(jp *j, int depth)
{
	ws(j);
	if (depth > MAXDEPTH)
		return jfail(j, "nested deeper than %d levels", MAXDEPTH);
	if (j->p >= j->end)
		return unexpected(j);
	pn_json *v;
	switch (*j->p) {
	case '{': case '[':
		return container(j, depth);
	case '"': {
		long line = j->line;
		char *s = string(j);
		if (!s)
			return NULL;
		v = node(j, PN_JSON_STR);
		v->line = line;
		v->str = s;
		return v;
	}
	case 't': case 'f': case 'n':
		if (word(j, "true") || word(j, "false")) {
			v = node(j, PN_JSON_BOOL);
			v->num = j->p[-2] == 'u';      /* tr-u-e */
			return v;
		}
		if (word(j, "null"))
			return node(j, PN_JSON_NULL);
		return unexpected(j);
	default:
		return number(j);
	}
}

pn_json *pn_json_parse(const char *text, size_t len, pn_json_err *e)
{
	jp j = {text, text + len, 1, e};
	e->line = 0;
	e->msg[0] = 0;
	ws(&j);
	if (j.p >= j.end) {
		j.line = 0;
		return jfail(&j, "empty input");
	}
	pn_json *v = value(&j, 0);
	if (!v)
		return NULL;
	ws(&j);
	if (j.p < j.end) {
		pn_json_free(v);
		return jfail(&j, "trailing characters after the value");
	}
	return v;
}

pn_json *pn_json_read(const char *path, pn_json_err *e)
{
	int std = strcmp(path, "-") == 0;
	FILE *f = std ? stdin : fopen(path, "rb");
	if (!f) {
		e->line = 0;
		snprintf(e->msg, sizeof e->msg, "cannot open: %s",
			 strerror(errno));
		return NULL;
	}
	size_t n = 0, cap = 4096;
	char *buf = pn_xmalloc(cap);
	size_t got;
	while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap)
			buf = pn_xrealloc(buf, cap *= 2);
	}
	int err = ferror(f);
	if (!std)
		fclose(f);
	pn_json *v = NULL;
	if (err) {
		e->line = 0;
		snprintf(e->msg, sizeof e->msg, "read error");
	} else {
		v = pn_json_parse(buf, n, e);
	}
	free(buf);
	return v;
}

void pn_json_free(pn_json *v)
{
	while (v) {
		pn_json *next = v->next;
		pn_json_free(v->child);
		free(v->key);
		free(v->str);
		free(v);
		v = next;
	}
}

const pn_json *pn_json_get(const pn_json *o, const char *key)
{
	if (!o || o->kind != PN_JSON_OBJ)
		return NULL;
	for (const pn_json *c = o->child; c; c = c->next)
		if (c->key && strcmp(c->key, key) == 0)
			return c;
	return NULL;
}

const char *pn_json_kind_name(pn_json_kind k)
{
	static const char *const names[] = {
		"null", "a boolean", "a number", "a string", "an array",
		"an object"
	};
	return names[k];
}
