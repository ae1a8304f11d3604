/* json.h - a small, strict JSON reader (RFC 8259), for model configs such
 * as the config.json files that model hubs publish (pn-net(1), pn-graph(1)).
 *
 * The whole text is read into a tree of values.  Strict: one value and
 * nothing after it but white space; no comments, no trailing commas, no
 * NaN or Infinity, no leading zeros or '+'; strings are UTF-8 without
 * control characters, with the escapes \" \\ \/ \b \f \n \r \t \uXXXX
 * (surrogate pairs joined); a key given twice in one object is an error.
 * Nesting is limited to 64 levels.
 *
 * Every value keeps the line it starts on, so that a reader of the tree
 * can name the place of a value it rejects ("config.json:12: ...").
 *
 * Errors: pn_json_parse and pn_json_read return NULL with e filled in:
 *   cannot open: <strerror>                          (line 0)
 *   empty input                                      (line 0)
 *   unexpected character 'x'        unexpected end of input
 *   expected ',' or '}' after a member               (or ']' in an array)
 *   expected ':' after a key        expected a string key
 *   duplicate key 'k'               bad number '01'
 *   bad escape '\x'                 bad \u escape
 *   control character in a string   unterminated string
 *   nested deeper than 64 levels    trailing characters after the value
 */
#ifndef PN_JSON_H
#define PN_JSON_H

#include <stddef.h>

typedef enum {
	PN_JSON_NULL, PN_JSON_BOOL, PN_JSON_NUM, PN_JSON_STR, PN_JSON_ARR,
	PN_JSON_OBJ
} pn_json_kind;

typedef struct pn_json pn_json;
struct pn_json {
	pn_json_kind kind;
	long line;          /* where the value starts (1-based) */
	char *key;          /* the member's key in an object, else NULL */
	double num;         /* NUM; BOOL: 0 or 1 */
	char *str;          /* STR (UTF-8, NUL-terminated: a key with a NUL
			       escape is cut there) */
	pn_json *child;     /* ARR, OBJ: the first element or member */
	pn_json *next;      /* the next sibling */
	size_t n;           /* ARR, OBJ: how many children */
};

/* Why a text is not JSON. */
typedef struct {
	long line;
	char msg[200];
} pn_json_err;

/* Parse text[0..len) (need not be terminated).  Returns the root (free it
 * with pn_json_free) or NULL with e filled in. */
pn_json *pn_json_parse(const char *text, size_t len, pn_json_err *e);
/* Read and parse the file at path ("-": standard input). */
pn_json *pn_json_read(const char *path, pn_json_err *e);
void pn_json_free(pn_json *v);

/* The member key of object o, or NULL (also when o is no object). */
const pn_json *pn_json_get(const pn_json *o, const char *key);
/* The kind's name, for messages: "null" "a boolean" "a number" "a string"
 * "an array" "an object". */
const char *pn_json_kind_name(pn_json_kind k);

#endif
