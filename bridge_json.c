/*
 * bridge_json.c: values as text.
 *
 * Owns the plain-data JSON writer (a result's or a capability's arguments'
 * JSON without JSON.stringify, into the slot's scratch buffer), binary data
 * in JSON (the envelopes an ArrayBuffer, a DataView or a typed array cross
 * as, and their revival in what comes back), json_text (a value's JSON by
 * whichever path fits) and the rendering of values and thrown values as text
 * for the console and for errors.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bridge_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* JSON of plain data without the engine's JSON.stringify, which builds a
 * key array, a cycle stack and a JS string per value: it was half the cost
 * of a host call and a third of a small run. json_plain_write takes the
 * values whose JSON.stringify can run no script: strings, numbers,
 * booleans, null, and arrays and objects of the intrinsic Array and Object
 * classes over the intrinsic prototypes, whose own enumerable properties
 * are all data, with no holes and no toJSON on the value or a prototype.
 * It reads them without side effects and declines anything else
 * (accessors, proxies, toJSON, class instances, boxed primitives,
 * functions, BigInt, holes, nesting past JSON_PLAIN_DEPTH and so cycles,
 * output past the strbuf's limit); the caller then gives the whole value
 * to JS_JSONStringify. What it writes is byte for byte what
 * JS_JSONStringify gives (json_test.go holds it to that).
 *
 * For Execute's codec (runtime.js, stringifyForDispatch) it also declines
 * an object with an own Symbol.toStringTag, or under prototypes that have
 * one: the codec's replacer returns every plain value as it is, and reads
 * nothing of it but its toStringTag (Object.prototype.toString, asking
 * whether it is an ArrayBuffer), so where no object has one, plain data
 * encodes as JSON.stringify gives it and no accessor is skipped. */

#define JSON_PLAIN_DEPTH 64

typedef struct json_plain {
	JSContext *ctx;
	strbuf *b;
	JSClassID cls_object, cls_array;
	void *object_proto;
	JSValue array_proto; /* undefined until an array is met */
	JSAtom to_json;
	JSAtom tag; /* Symbol.toStringTag for the codec, else JS_ATOM_NULL */
} json_plain;

/* Drops the exception an engine call left, so the caller's fallback meets
 * the same condition afresh (a kill is sticky in the slot, not here). */
static bool jp_decline(JSContext *ctx)
{
	JS_FreeValue(ctx, JS_GetException(ctx));
	return false;
}

static void jp_int(strbuf *b, int64_t v)
{
	char buf[24], *p = buf + sizeof(buf);
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	sb_put(b, p, (size_t)(buf + sizeof(buf) - p));
}

/* Quotes UTF-8 as JSON.stringify quotes the string it came from: the
 * engine's UTF-8 (JS_ToCStringLen) joins surrogate pairs and writes a
 * lone surrogate as its three-byte form, which becomes \udxxx. */
static void jp_quote(strbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *p = (const uint8_t *)s, *run = p, *end = p + n;
	sb_put(b, "\"", 1);
	while (p < end) {
		uint8_t c = *p;
		if (c >= 0x20 && c != '"' && c != '\\' && !(c == 0xed && p + 2 < end && p[1] >= 0xa0)) {
			p++;
			continue;
		}
		sb_put(b, (const char *)run, (size_t)(p - run));
		char esc[6] = {'\\', 0};
		size_t len = 2, used = 1;
		unsigned cp = c;
		switch (c) {
		case '"': case '\\': esc[1] = (char)c; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default:
			if (c == 0xed) { /* a lone surrogate, U+D800..U+DFFF */
				cp = 0xd000 | (unsigned)(p[1] & 0x3f) << 6 | (unsigned)(p[2] & 0x3f);
				used = 3;
			}
			esc[1] = 'u';
			esc[2] = hex[cp >> 12 & 15];
			esc[3] = hex[cp >> 8 & 15];
			esc[4] = hex[cp >> 4 & 15];
			esc[5] = hex[cp & 15];
			len = 6;
		}
		sb_put(b, esc, len);
		p += used;
		run = p;
	}
	sb_put(b, (const char *)run, (size_t)(p - run));
	sb_put(b, "\"", 1);
}

static bool jp_string(json_plain *j, JSValueConst v)
{
	size_t n;
	const char *p = JS_ToCStringLen(j->ctx, &n, v);
	if (!p)
		return jp_decline(j->ctx);
	jp_quote(j->b, p, n);
	JS_FreeCString(j->ctx, p);
	return true;
}

static bool jp_value(json_plain *j, JSValueConst v, int depth);

/* Whether obj has no own property key, of any kind. */
static bool jp_lacks(json_plain *j, JSValueConst obj, JSAtom key)
{
	int r = JS_GetOwnProperty(j->ctx, NULL, obj, key);
	if (r < 0)
		jp_decline(j->ctx);
	return r == 0;
}

/* Whether obj has no own property the serializer would look up: toJSON,
 * and for the codec Symbol.toStringTag. */
static bool jp_no_hooks(json_plain *j, JSValueConst obj)
{
	return jp_lacks(j, obj, j->to_json) && (j->tag == JS_ATOM_NULL || jp_lacks(j, obj, j->tag));
}

/* Reads an own data property; false (declined) if it is absent, an
 * accessor, or reading it failed. */
static bool jp_own(json_plain *j, JSValueConst obj, JSAtom key, JSValue *val)
{
	JSPropertyDescriptor d;
	int r = JS_GetOwnProperty(j->ctx, &d, obj, key);
	if (r <= 0)
		return r < 0 ? jp_decline(j->ctx) : false;
	JS_FreeValue(j->ctx, d.getter);
	JS_FreeValue(j->ctx, d.setter);
	if (d.flags & JS_PROP_GETSET) {
		JS_FreeValue(j->ctx, d.value);
		return false;
	}
	*val = d.value;
	return true;
}

static bool jp_array(json_plain *j, JSValueConst arr, int depth)
{
	JSContext *ctx = j->ctx;
	int64_t len;
	if (JS_GetLength(ctx, arr, &len))
		return jp_decline(ctx);
	sb_put(j->b, "[", 1);
	for (int64_t i = 0; i < len; i++) {
		if (j->b->overflow)
			return false;
		if (i > 0)
			sb_put(j->b, ",", 1);
		JSAtom key = JS_NewAtomUInt32(ctx, (uint32_t)i);
		if (key == JS_ATOM_NULL)
			return jp_decline(ctx);
		JSValue v;
		bool ok = jp_own(j, arr, key, &v);
		JS_FreeAtom(ctx, key);
		if (!ok)
			return false; /* a hole reads through to the prototypes */
		if (JS_IsUndefined(v) || JS_IsSymbol(v)) {
			sb_put(j->b, "null", 4);
		} else {
			ok = jp_value(j, v, depth + 1);
		}
		JS_FreeValue(ctx, v);
		if (!ok)
			return false;
	}
	sb_put(j->b, "]", 1);
	return true;
}

static bool jp_object(json_plain *j, JSValueConst obj, int depth)
{
	JSContext *ctx = j->ctx;
	JSPropertyEnum *tab;
	uint32_t n;
	if (JS_GetOwnPropertyNames(ctx, &tab, &n, obj, JS_GPN_STRING_MASK | JS_GPN_ENUM_ONLY) < 0)
		return jp_decline(ctx);
	bool ok = true, first = true;
	sb_put(j->b, "{", 1);
	for (uint32_t i = 0; i < n && ok && !j->b->overflow; i++) {
		JSValue v;
		if (!(ok = jp_own(j, obj, tab[i].atom, &v)))
			break;
		if (!JS_IsUndefined(v) && !JS_IsSymbol(v)) {
			size_t klen;
			const char *k = JS_AtomToCStringLen(ctx, &klen, tab[i].atom);
			if (k) {
				if (!first)
					sb_put(j->b, ",", 1);
				first = false;
				jp_quote(j->b, k, klen);
				JS_FreeCString(ctx, k);
				sb_put(j->b, ":", 1);
				ok = jp_value(j, v, depth + 1);
			} else {
				ok = jp_decline(ctx);
			}
		}
		JS_FreeValue(ctx, v);
	}
	JS_FreePropertyEnum(ctx, tab, n);
	sb_put(j->b, "}", 1);
	return ok;
}

/* Whether an array's lookups find no toJSON: Array.prototype has none
 * of its own and inherits from Object.prototype (checked already). Asked
 * the first time an array is met, so an argument object of scalars pays
 * nothing for arrays. */
static bool jp_arrays_plain(json_plain *j)
{
	JSContext *ctx = j->ctx;
	JSValue ap = JS_GetClassProto(ctx, j->cls_array);
	JSValue app = JS_GetPrototype(ctx, ap);
	bool ok = JS_IsObject(ap) && JS_IsObject(app) && JS_VALUE_GET_PTR(app) == j->object_proto &&
	          jp_no_hooks(j, ap);
	JS_FreeValue(ctx, app);
	if (!ok) {
		JS_FreeValue(ctx, ap);
		return false;
	}
	j->array_proto = ap;
	return true;
}

static bool jp_value(json_plain *j, JSValueConst v, int depth)
{
	switch (JS_VALUE_GET_TAG(v)) {
	case JS_TAG_NULL:
		sb_put(j->b, "null", 4);
		return true;
	case JS_TAG_BOOL:
		if (JS_VALUE_GET_BOOL(v))
			sb_put(j->b, "true", 4);
		else
			sb_put(j->b, "false", 5);
		return true;
	case JS_TAG_INT:
		jp_int(j->b, JS_VALUE_GET_INT(v));
		return true;
	case JS_TAG_FLOAT64: {
		double d = JS_VALUE_GET_FLOAT64(v);
		if (!isfinite(d)) {
			sb_put(j->b, "null", 4);
		} else if (d == trunc(d) && fabs(d) < 0x1p53) { /* -0 too: "0" */
			jp_int(j->b, (int64_t)d);
		} else { /* the engine's shortest round-trip form */
			size_t n;
			const char *p = JS_ToCStringLen(j->ctx, &n, v);
			if (!p)
				return jp_decline(j->ctx);
			sb_put(j->b, p, n);
			JS_FreeCString(j->ctx, p);
		}
		return true;
	}
	case JS_TAG_STRING:
	case JS_TAG_STRING_ROPE:
		return jp_string(j, v);
	case JS_TAG_OBJECT:
		break;
	default: /* undefined and symbols (the callers place them), BigInt */
		return false;
	}
	if (depth >= JSON_PLAIN_DEPTH)
		return false;
	JSClassID cls = JS_GetClassID(v);
	if (cls == j->cls_array && JS_IsUndefined(j->array_proto) && !jp_arrays_plain(j))
		return false;
	void *want = cls == j->cls_object ? j->object_proto
	             : cls == j->cls_array ? JS_VALUE_GET_PTR(j->array_proto) : NULL;
	if (!want)
		return false;
	JSValue proto = JS_GetPrototype(j->ctx, v);
	bool ours = JS_IsObject(proto) && JS_VALUE_GET_PTR(proto) == want;
	JS_FreeValue(j->ctx, proto);
	if (!ours || !jp_no_hooks(j, v))
		return false;
	return cls == j->cls_array ? jp_array(j, v, depth) : jp_object(j, v, depth);
}

/* Writes v's JSON to b (empty on entry); false if v is not plain data or
 * b's limit was reached, and b's contents are then meaningless. undefined
 * and symbols are declined: JSON.stringify gives undefined for them. tag
 * is Symbol.toStringTag's atom for the codec, else JS_ATOM_NULL. */
static bool json_plain_write(bridge_slot *s, JSValueConst v, strbuf *b, JSAtom tag)
{
	JSContext *ctx = s->ctx;
	json_plain j = {.ctx = ctx, .b = b, .cls_object = s->cls_object, .cls_array = s->cls_array,
	                .array_proto = JS_UNDEFINED, .tag = tag};
	if (!JS_IsObject(v))
		return jp_value(&j, v, 0) && !b->overflow;
	if (s->cls_object == s->cls_array) /* not learnt (see sandbox_open) */
		return false;
	JSValue op = JS_GetClassProto(ctx, s->cls_object);
	j.object_proto = JS_VALUE_GET_PTR(op);
	/* The sandbox's own (guards_install), else one made here. */
	bool own_atom = s->guards.atom_to_json == JS_ATOM_NULL;
	j.to_json = own_atom ? JS_NewAtom(ctx, "toJSON") : s->guards.atom_to_json;
	/* No toJSON where a plain object's lookup would find one (an array's:
	 * jp_arrays_plain). */
	bool ok = j.to_json != JS_ATOM_NULL && JS_IsObject(op) && jp_no_hooks(&j, op) && jp_value(&j, v, 0) &&
	          !b->overflow;
	if (j.to_json == JS_ATOM_NULL)
		jp_decline(ctx);
	if (own_atom)
		JS_FreeAtom(ctx, j.to_json);
	JS_FreeValue(ctx, j.array_proto);
	JS_FreeValue(ctx, op);
	return ok;
}

/* The slot's scratch buffer for json_plain_write, emptied, refusing
 * output past max (> 0) bytes. */
static strbuf *json_scratch(bridge_slot *s, uint64_t max)
{
	strbuf *b = &s->json;
	b->len = 0;
	b->overflow = false;
	b->limit = max < SIZE_MAX ? (size_t)max : SIZE_MAX;
	return b;
}

/* ---------------------------------------------------------------------- */
/* Binary data in JSON: an ArrayBuffer, a DataView or a typed array in a
 * run's result or a capability's arguments crosses as the envelope
 * Execute's codec uses, {"__executor_binary_v1__": "<Type>", "data":
 * "<base64>"} (a view's visible bytes), and an envelope in a capability's
 * result revives as what it names. */

static const char binary_tag[] = BINARY_TAG;

/* JSTypedArrayEnum order. */
static const char *const typed_names[] = {
	"Uint8ClampedArray", "Int8Array",    "Uint8Array",   "Int16Array",   "Uint16Array",  "Int32Array",
	"Uint32Array",       "BigInt64Array", "BigUint64Array", "Float16Array", "Float32Array", "Float64Array",
};
#define NTYPED ((int)(sizeof(typed_names) / sizeof(typed_names[0])))

static const char b64_digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The envelope of len bytes at p, of the given type. */
static JSValue binary_envelope(JSContext *ctx, const char *type, const uint8_t *p, size_t len)
{
	if (len > (SIZE_MAX / 4) * 3 - 3)
		return JS_ThrowRangeError(ctx, "binary data too large");
	size_t n = (len + 2) / 3 * 4;
	char *text = js_malloc(ctx, n + 1);
	if (!text)
		return JS_EXCEPTION;
	char *o = text;
	size_t i = 0;
	for (; i + 3 <= len; i += 3) {
		uint32_t w = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		*o++ = b64_digits[w >> 18];
		*o++ = b64_digits[(w >> 12) & 63];
		*o++ = b64_digits[(w >> 6) & 63];
		*o++ = b64_digits[w & 63];
	}
	if (i < len) {
		uint32_t w = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0);
		*o++ = b64_digits[w >> 18];
		*o++ = b64_digits[(w >> 12) & 63];
		*o++ = i + 1 < len ? b64_digits[(w >> 6) & 63] : '=';
		*o++ = '=';
	}
	JSValue data = JS_NewStringLen(ctx, text, n);
	js_free(ctx, text);
	if (JS_IsException(data))
		return data;
	JSValue env = JS_NewObject(ctx);
	if (JS_IsException(env) ||
	    JS_DefinePropertyValueStr(ctx, env, binary_tag, JS_NewStringLen(ctx, type, strlen(type)), JS_PROP_C_W_E) < 0 ||
	    JS_DefinePropertyValueStr(ctx, env, "data", JS_DupValue(ctx, data), JS_PROP_C_W_E) < 0) {
		JS_FreeValue(ctx, data);
		JS_FreeValue(ctx, env);
		return JS_EXCEPTION;
	}
	JS_FreeValue(ctx, data);
	return env;
}

/* A byte count read from a DataView's getter. */
static int view_size(JSContext *ctx, JSValueConst view, const char *name, size_t *out)
{
	JSValue v = JS_GetPropertyStr(ctx, view, name);
	int64_t n;
	int rc = JS_ToInt64(ctx, &n, v);
	JS_FreeValue(ctx, v);
	if (rc < 0)
		return -1;
	*out = n < 0 ? 0 : (size_t)n;
	return 0;
}

/* JSON.stringify's replacer for results and arguments: binary data
 * becomes its envelope, anything else stays. */
static JSValue js_binary_replacer(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	JSValueConst v = argc > 1 ? argv[1] : JS_UNDEFINED;
	if (!JS_IsObject(v))
		return JS_DupValue(ctx, v);
	const char *type;
	JSValue buf;
	size_t off = 0, len = 0;
	int ta = JS_GetTypedArrayType(v);
	if (ta >= 0 && ta < NTYPED) {
		size_t bpe;
		buf = JS_GetTypedArrayBuffer(ctx, v, &off, &len, &bpe);
		if (JS_IsException(buf))
			return buf;
		type = typed_names[ta];
	} else if (JS_IsArrayBuffer(v)) {
		buf = JS_DupValue(ctx, v);
		len = SIZE_MAX;
		type = "ArrayBuffer";
	} else if (JS_IsDataView(v)) {
		buf = JS_GetPropertyStr(ctx, v, "buffer");
		if (JS_IsException(buf))
			return buf;
		if (view_size(ctx, v, "byteOffset", &off) < 0 || view_size(ctx, v, "byteLength", &len) < 0) {
			JS_FreeValue(ctx, buf);
			return JS_EXCEPTION;
		}
		type = "DataView";
	} else {
		return JS_DupValue(ctx, v);
	}
	size_t size = 0;
	uint8_t *p = JS_IsArrayBuffer(buf) ? JS_GetArrayBuffer(ctx, &size, buf) : NULL;
	if (len == SIZE_MAX)
		len = size;
	JSValue env;
	if (!p && size == 0 && len == 0)
		env = binary_envelope(ctx, type, (const uint8_t *)"", 0); /* empty or detached */
	else if (!p || off > size || len > size - off)
		env = JS_ThrowTypeError(ctx, "%s: its bytes are out of bounds", type);
	else
		env = binary_envelope(ctx, type, p + off, len);
	JS_FreeValue(ctx, buf);
	return env;
}

/* Base64 decoding (standard alphabet, padding optional); -1 if invalid. */
static int b64_value(uint8_t c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

static uint8_t *b64_decode(JSContext *ctx, const char *in, size_t n, size_t *out_len)
{
	while (n > 0 && in[n - 1] == '=')
		n--;
	if (n % 4 == 1)
		return NULL;
	uint8_t *out = js_malloc(ctx, n / 4 * 3 + 3);
	if (!out)
		return NULL;
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < n; i++) {
		int d = b64_value((uint8_t)in[i]);
		if (d < 0) {
			js_free(ctx, out);
			return NULL;
		}
		acc = acc << 6 | (uint32_t)d;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (uint8_t)(acc >> bits);
		}
	}
	*out_len = o;
	return out;
}

/* What an envelope revives as, in *res: 1, or 0 when v is none (or names
 * no type we know, or its data is not base64), -1 with an exception. */
static int revive_envelope(JSContext *ctx, JSValueConst v, JSValue *res)
{
	JSValue t = JS_GetPropertyStr(ctx, v, binary_tag);
	JSValue d = JS_GetPropertyStr(ctx, v, "data");
	JSValue out = JS_UNDEFINED;
	bool hit = false;
	if (JS_IsString(t) && JS_IsString(d)) {
		size_t tn, dn, blen = 0;
		const char *type = JS_ToCStringLen(ctx, &tn, t);
		const char *data = JS_ToCStringLen(ctx, &dn, d);
		uint8_t *bytes = type && data ? b64_decode(ctx, data, dn, &blen) : NULL;
		if (bytes && typed_ensure(JS_GetContextOpaque(ctx)) < 0) {
			js_free(ctx, bytes);
			bytes = NULL;
			out = JS_EXCEPTION;
			hit = true;
		}
		if (bytes) {
			JSValue ab = JS_NewArrayBufferCopy(ctx, bytes, blen);
			js_free(ctx, bytes);
			if (JS_IsException(ab)) {
				out = ab;
				hit = true;
			} else if (strcmp(type, "ArrayBuffer") == 0) {
				out = ab;
				hit = true;
			} else {
				int k = -1;
				for (int i = 0; i < NTYPED; i++)
					if (strcmp(type, typed_names[i]) == 0)
						k = i;
				if (k >= 0) {
					static const uint8_t size_log2[] = {0, 0, 0, 1, 1, 2, 2, 3, 3, 1, 2, 3};
					size_t esz = (size_t)1 << size_log2[k];
					if (blen % esz == 0) {
						JSValue args[3] = {ab, JS_NewInt32(ctx, 0), JS_NewFloat64(ctx, (double)(blen / esz))};
						out = JS_NewTypedArray(ctx, 3, args, (JSTypedArrayEnum)k);
						hit = true;
					}
				} else if (strcmp(type, "DataView") == 0) {
					JSValue global = JS_GetGlobalObject(ctx);
					JSValue ctor = JS_GetPropertyStr(ctx, global, "DataView");
					JS_FreeValue(ctx, global);
					if (JS_IsFunction(ctx, ctor)) {
						out = JS_CallConstructor(ctx, ctor, 1, (JSValueConst *)&ab);
						hit = true;
					}
					JS_FreeValue(ctx, ctor);
				}
				JS_FreeValue(ctx, ab);
			}
		}
		JS_FreeCString(ctx, type);
		JS_FreeCString(ctx, data);
	}
	JS_FreeValue(ctx, t);
	JS_FreeValue(ctx, d);
	*res = out;
	if (!hit)
		return 0;
	return JS_IsException(out) ? -1 : 1;
}

#define REVIVE_DEPTH 256

/* Replaces every binary envelope in a value parsed from JSON (plain
 * objects and arrays only) by what it names; -1 with an exception. */
static int revive_binary(JSContext *ctx, JSValueConst v, int depth)
{
	if (!JS_IsObject(v) || depth >= REVIVE_DEPTH)
		return 0;
	JSPropertyEnum *props;
	uint32_t n;
	if (JS_GetOwnPropertyNames(ctx, &props, &n, v, JS_GPN_STRING_MASK | JS_GPN_ENUM_ONLY) < 0)
		return -1;
	int rc = 0;
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		JSValue e = JS_GetProperty(ctx, v, props[i].atom);
		if (JS_IsException(e)) {
			rc = -1;
			break;
		}
		if (JS_IsObject(e) && !JS_IsArray(e)) {
			JSValue r;
			int hit = revive_envelope(ctx, e, &r);
			if (hit < 0) {
				rc = -1;
			} else if (hit > 0) {
				/* Defined, not set: an own "__proto__" stays a property. */
				rc = JS_DefinePropertyValue(ctx, v, props[i].atom, r, JS_PROP_C_W_E) < 0 ? -1 : 0;
				JS_FreeValue(ctx, e);
				continue;
			}
		}
		if (rc == 0)
			rc = revive_binary(ctx, e, depth + 1);
		JS_FreeValue(ctx, e);
	}
	JS_FreePropertyEnum(ctx, props, n);
	return rc;
}

/* A capability's result parsed from JSON, its envelopes revived. */
JSValue parse_result(JSContext *ctx, const char *data, size_t len)
{
	/* The commonest small results without the parser: an int32, a
	 * boolean, null. */
	if (len > 0 && len <= 10) {
		size_t i = data[0] == '-' ? 1 : 0;
		int64_t v = 0;
		bool digits = i < len && !(data[i] == '0' && len > i + 1);
		for (size_t k = i; k < len && digits; k++) {
			if (data[k] < '0' || data[k] > '9')
				digits = false;
			else
				v = v * 10 + (data[k] - '0');
		}
		if (digits && !(i == 1 && v == 0)) { /* "-0" is a double */
			v = i ? -v : v;
			if (v >= INT32_MIN && v <= INT32_MAX)
				return JS_NewInt32(ctx, (int32_t)v);
		}
		if (len == 4 && memcmp(data, "true", 4) == 0)
			return JS_NewBool(ctx, true);
		if (len == 5 && memcmp(data, "false", 5) == 0)
			return JS_NewBool(ctx, false);
		if (len == 4 && memcmp(data, "null", 4) == 0)
			return JS_NULL;
	}
	JSValue v = JS_ParseJSON(ctx, data, len, "<capability>");
	if (JS_IsException(v) || !JS_IsObject(v) || !memmem(data, len, binary_tag, sizeof(binary_tag) - 1))
		return v;
	if (!JS_IsArray(v)) {
		JSValue r;
		if (revive_envelope(ctx, v, &r) != 0) {
			JS_FreeValue(ctx, v);
			return r;
		}
	}
	if (revive_binary(ctx, v, 0) < 0) {
		JS_FreeValue(ctx, v);
		return JS_EXCEPTION;
	}
	return v;
}

/* The JSON text of v, byte for byte what JSON.stringify(v) gives (with
 * codec, runtime.js's encode), in the slot's scratch buffer s->json:
 * JSON_TEXT; JSON_NONE when there is none (undefined, functions, symbols);
 * JSON_TOO_LARGE when it is longer than max, with its first max bytes in
 * the buffer; JSON_THREW with the exception pending. *n is its length in
 * every case but the last. Plain data is written directly; anything else,
 * and every codec value, goes to the engine whole. The caller trims the
 * buffer (json_scratch_trim) once done with the text. */
int json_text(bridge_slot *s, JSValueConst v, uint64_t max, int mode, size_t *n)
{
	JSContext *ctx = s->ctx;
	strbuf *b = json_scratch(s, max);
	/* The codec's atom is the sandbox's, from before any program ran. */
	JSAtom tag = mode == JSON_CODEC ? s->guards.atom_to_string_tag : JS_ATOM_NULL;
	if ((mode != JSON_CODEC || tag != JS_ATOM_NULL) && json_plain_write(s, v, b, tag)) {
		*n = b->len;
		return JSON_TEXT;
	}
	JSValue json;
	if (mode == JSON_CODEC) {
		json = rt_call(s, "encode", 1, &v);
	} else if (mode == JSON_BINARY) {
		JSValue replacer = JS_NewCFunction2(ctx, js_binary_replacer, "replacer", 2, JS_CFUNC_generic, 0);
		if (JS_IsException(replacer))
			return JSON_THREW;
		json = JS_JSONStringify(ctx, v, replacer, JS_UNDEFINED);
		JS_FreeValue(ctx, replacer);
	} else {
		json = JS_JSONStringify(ctx, v, JS_UNDEFINED, JS_UNDEFINED);
	}
	if (JS_IsException(json))
		return JSON_THREW;
	if (!JS_IsString(json)) {
		JS_FreeValue(ctx, json);
		*n = 0;
		return JSON_NONE;
	}
	const char *p = JS_ToCStringLen(ctx, n, json);
	JS_FreeValue(ctx, json);
	if (!p)
		return JSON_THREW;
	b = json_scratch(s, max);
	sb_put(b, p, *n); /* truncated at max */
	JS_FreeCString(ctx, p);
	if (*n > max)
		return JSON_TOO_LARGE;
	if (b->overflow) { /* libc refused the copy */
		JS_ThrowOutOfMemory(ctx);
		return JSON_THREW;
	}
	return JSON_TEXT;
}

/* ---------------------------------------------------------------------- */
/* Rendering values as text: strings as they are, other values as compact
 * JSON, and String(v) when JSON has nothing to say. Returns -1 only when a
 * kill fired meanwhile; the pending exception then propagates. */

static int put_string(JSContext *ctx, JSValueConst v, strbuf *b)
{
	size_t n;
	const char *p = JS_ToCStringLen(ctx, &n, v);
	if (!p)
		return -1;
	sb_put(b, p, n);
	JS_FreeCString(ctx, p);
	return 0;
}

int describe(bridge_slot *s, JSValueConst v, strbuf *b)
{
	JSContext *ctx = s->ctx;
	if (JS_IsString(v))
		return put_string(ctx, v, b) < 0 && s->killed ? -1 : 0;
	if (JS_IsSymbol(v)) { /* String(symbol), which JS_ToString refuses */
		sb_puts(b, "Symbol(");
		JSValue d = JS_GetPropertyStr(ctx, v, "description");
		if (JS_IsString(d))
			put_string(ctx, d, b);
		JS_FreeValue(ctx, d);
		if (s->killed)
			return -1;
		if (JS_HasException(ctx))
			JS_FreeValue(ctx, JS_GetException(ctx));
		sb_puts(b, ")");
		return 0;
	}
	size_t n;
	int r = json_text(s, v, b->limit ? b->limit : UINT64_MAX, JSON_STRINGIFY, &n);
	if (r == JSON_TEXT || r == JSON_TOO_LARGE) /* b keeps what fits */
		sb_put(b, s->json.p, s->json.len);
	if (r == JSON_TOO_LARGE)
		b->overflow = true;
	json_scratch_trim(s);
	if (r == JSON_TEXT || r == JSON_TOO_LARGE)
		return 0;
	if (r == JSON_THREW) {
		if (s->killed)
			return -1;
		JS_FreeValue(ctx, JS_GetException(ctx));
	}
	JSValue str = JS_ToString(ctx, v);
	if (JS_IsException(str)) {
		if (s->killed)
			return -1;
		JS_FreeValue(ctx, JS_GetException(ctx));
		sb_puts(b, "[unprintable value]");
		return 0;
	}
	int rc = put_string(ctx, str, b);
	JS_FreeValue(ctx, str);
	if (rc < 0) {
		if (s->killed)
			return -1;
		JS_FreeValue(ctx, JS_GetException(ctx));
	}
	return 0;
}

/* Reads obj[name] as a string into b; false if absent, not a string, or it
 * threw (cleared unless a kill fired). */
static bool put_prop(bridge_slot *s, JSValueConst obj, const char *name, strbuf *b)
{
	JSValue v = JS_GetPropertyStr(s->ctx, obj, name);
	if (JS_IsException(v)) {
		if (!s->killed)
			JS_FreeValue(s->ctx, JS_GetException(s->ctx));
		return false;
	}
	bool ok = false;
	if (JS_IsString(v)) {
		size_t before = b->len;
		ok = put_string(s->ctx, v, b) == 0 && b->len > before;
		if (!ok && !s->killed && JS_HasException(s->ctx))
			JS_FreeValue(s->ctx, JS_GetException(s->ctx));
	}
	JS_FreeValue(s->ctx, v);
	return ok;
}

/* Renders a thrown value: "Name: message" plus the stack for an Error,
 * "Uncaught <value>" for anything else. */
/* Puts String(v) when v is an object that says what it is (a toString
 * of its own or its class's, as test262's Test262Error has): true, or
 * false when it only says [object ...] (or refuses). */
static bool own_string(bridge_slot *s, JSValueConst v, strbuf *b)
{
	JSContext *ctx = s->ctx;
	if (!JS_IsObject(v) || JS_IsArray(v) || JS_IsFunction(ctx, v))
		return false;
	JSValue str = JS_ToString(ctx, v);
	if (JS_IsException(str)) {
		if (!s->killed)
			JS_FreeValue(ctx, JS_GetException(ctx));
		return false;
	}
	size_t n;
	const char *p = JS_ToCStringLen(ctx, &n, str);
	bool own = p && !(n >= 8 && memcmp(p, "[object ", 8) == 0);
	if (own)
		sb_put(b, p, n);
	if (p)
		JS_FreeCString(ctx, p);
	JS_FreeValue(ctx, str);
	return own;
}

void render_thrown(bridge_slot *s, JSValueConst exc, strbuf *b)
{
	if (!JS_IsError(exc)) {
		sb_puts(b, "Uncaught ");
		if (!own_string(s, exc, b) && !s->killed)
			describe(s, exc, b);
		return;
	}
	if (!put_prop(s, exc, "name", b))
		sb_puts(b, "Error");
	if (s->killed)
		return;
	strbuf msg = {0};
	if (put_prop(s, exc, "message", &msg)) {
		sb_puts(b, ": ");
		sb_put(b, msg.p, msg.len);
	}
	free(msg.p);
	if (s->killed)
		return;
	strbuf stack = {0};
	if (put_prop(s, exc, "stack", &stack)) {
		size_t n = stack.len;
		while (n > 0 && (stack.p[n - 1] == '\n' || stack.p[n - 1] == ' '))
			n--;
		if (n > 0) {
			sb_puts(b, "\n");
			sb_put(b, stack.p, n);
		}
	}
	free(stack.p);
}
