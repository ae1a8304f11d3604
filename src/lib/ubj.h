/* ubj.h - a strict reader of UBJSON as XGBoost writes it (its model
 * format), so that fam_xgb.c can check a booster before libxgboost, whose
 * reader trusts every length it finds, parses it.
 *
 * Accepted: a subset of what XGBoost 1.7's UBJReader reads, read the same
 * way (numbers big-endian):
 *
 *   value = '{' (key value)* '}'          object, its keys distinct, at most
 *                                         PN_UBJ_MAX_MEMBERS of them
 *         | '[' '$' T '#' 'L' n elements  typed array of n elements, T one
 *                                         of d (float32) U (uint8) l (int32)
 *                                         L (int64)
 *         | '[' '#' 'L' n value*n         array of n values
 *         | '[' value* ']'                array
 *         | 'S' key                       string
 *         | 'i' int8 | 'U' uint8 | 'I' int16 | 'l' int32 | 'L' int64
 *         | 'd' float32 | 'T' | 'F' | 'Z'
 *   key   = 'L' int64 n, then n bytes
 *
 * Every count and length is checked against the bytes that remain before
 * anything is read or allocated (memory is at most a fixed multiple of the
 * input), nesting is at most PN_UBJ_MAX_DEPTH deep, and the value must take
 * the whole buffer.
 */
#ifndef PN_UBJ_H
#define PN_UBJ_H

#include <stddef.h>
#include <stdint.h>

#define PN_UBJ_MAX_DEPTH 32
#define PN_UBJ_MAX_MEMBERS 4096

typedef struct {
	char type;        /* '{' object, '[' array, '$' typed array, 'S'
			     string, 'i' integer, 'd' number, 'T', 'F', 'Z' */
	char elem;        /* typed array: 'd', 'U', 'l' or 'L' */
	const unsigned char *key;   /* a member of an object: its key */
	size_t keylen;
	const unsigned char *data;  /* string: its bytes; typed array: its
				       elements, big-endian */
	size_t n;         /* string: length; array, object, typed array:
			     members or elements */
	int64_t i;        /* integer */
	double d;         /* number */
	size_t kid, next; /* first member, next member of the parent: indices
			     into the document, 0 for none (0 is the root) */
} pn_ubj;

typedef struct {
	pn_ubj *v;        /* v[0] is the root */
	size_t n, cap;
} pn_ubj_doc;

/* Parse b[0..len) into doc (zeroed by the caller; free it with
 * pn_ubj_free whatever the result).  Returns 0, or -1 with a message in err
 * (size errlen) that names the byte offset. */
int pn_ubj_parse(const unsigned char *b, size_t len, pn_ubj_doc *doc,
		 char *err, size_t errlen);
void pn_ubj_free(pn_ubj_doc *doc);

/* Members: the first one of v, the one after m; NULL at the end. */
const pn_ubj *pn_ubj_first(const pn_ubj_doc *doc, const pn_ubj *v);
const pn_ubj *pn_ubj_next(const pn_ubj_doc *doc, const pn_ubj *m);
/* The member of object o named key, or NULL (also when o is NULL or not an
 * object). */
const pn_ubj *pn_ubj_get(const pn_ubj_doc *doc, const pn_ubj *o,
			 const char *key);
/* Element i < a->n of a typed array: as an integer ('U', 'l', 'L'), as a
 * number ('d'). */
int64_t pn_ubj_int_at(const pn_ubj *a, size_t i);
double pn_ubj_num_at(const pn_ubj *a, size_t i);
/* Is v a string equal to s? */
int pn_ubj_is_str(const pn_ubj *v, const char *s);

#endif
