/*
 * bridge_guards.c: guarded built-ins.
 *
 * The engine polls for interrupts in its bytecode loop and on every
 * function call, so the deadline, a cancellation and Close stop any
 * script. Some built-in methods loop in C over a length without calling
 * anything: on a sparse array (or array-like) whose length is 2^32 - 1,
 * a.indexOf(1) runs four billion iterations, for minutes, past any
 * deadline; so does a naive string search whose pattern nearly matches
 * everywhere. Each such method of Array.prototype and String.prototype is
 * replaced, in every sandbox before any user code runs, by a guard: a C
 * function with the method's name and length that looks at its receiver
 * and arguments without running any code and either calls the engine's own
 * method (ordinary receivers: the work it can do unpolled is bounded) or
 * the method's slow path, the same algorithm in JavaScript (js/guards.js),
 * whose loops poll. The guards' state lives in the sandbox (and so in its
 * snapshot image); the slow paths are read into a run only when it needs
 * one.
 *
 * The same mechanism keeps the lazy globals (the typed arrays, the web
 * globals: accessors until first read, bridge_web.c) out of sight: the
 * methods that could tell an accessor from a data property on the global
 * object (Object.getOwnPropertyDescriptor, defineProperty, freeze...) turn
 * every lazy global into its value first, as a read would, when the
 * object they are given is the global object.
 */
#include "bridge_internal.h"

#include <string.h>

/* What decides the path of a guard. */
enum {
	GK_ARRAY,  /* the receiver's length */
	GK_SORT,   /* the receiver's length; without a comparator a lower bound */
	GK_CONCAT, /* the receiver's and every argument's length */
	GK_SLOW,   /* always the slow path: what it walks depends on the elements */
	GK_STRING, /* a string receiver, a string pattern and the search's naive cost */
	GK_STRING_RE, /* GK_STRING, and a RegExp pattern goes to the engine (it polls) */
	/* The engine's own, once the lazy globals are settled (bridge_web.c,
	 * lazy_settle) when the object is the global object: */
	GK_SETTLE_KEY,  /* the first argument, the key the second: the globals it may name */
	GK_SETTLE_ALL,  /* the first argument: every one */
	GK_SETTLE_THIS, /* the receiver, the key the first argument */
	GK_SOURCE,      /* the engine's, its text given back as the model wrote it (no markers) */
};

typedef struct guard_def {
	const char *holder; /* "Array" or "String" (their prototypes), "Object", "Reflect", "Object.prototype" or
	                     * "Function.prototype" */
	const char *name;   /* the method */
	const char *poly;   /* its slow path in guards.js (none: GK_SETTLE_*) */
	int kind;
} guard_def;

static const guard_def guard_defs[] = {
	{"Array", "indexOf", "indexOf", GK_ARRAY},
	{"Array", "lastIndexOf", "lastIndexOf", GK_ARRAY},
	{"Array", "includes", "includes", GK_ARRAY},
	{"Array", "join", "join", GK_ARRAY},
	{"Array", "toLocaleString", "toLocaleString", GK_ARRAY},
	{"Array", "every", "every", GK_ARRAY},
	{"Array", "some", "some", GK_ARRAY},
	{"Array", "forEach", "forEach", GK_ARRAY},
	{"Array", "map", "map", GK_ARRAY},
	{"Array", "filter", "filter", GK_ARRAY},
	{"Array", "reduce", "reduce", GK_ARRAY},
	{"Array", "reduceRight", "reduceRight", GK_ARRAY},
	{"Array", "reverse", "reverse", GK_ARRAY},
	{"Array", "copyWithin", "copyWithin", GK_ARRAY},
	{"Array", "sort", "sort", GK_SORT},
	{"Array", "toSorted", "toSorted", GK_SORT},
	{"Array", "slice", "slice", GK_ARRAY},
	{"Array", "concat", "concat", GK_CONCAT},
	{"Array", "flat", "flat", GK_SLOW},
	{"Array", "flatMap", "flatMap", GK_SLOW},
	{"Array", "splice", "splice", GK_ARRAY},
	{"Array", "unshift", "unshift", GK_ARRAY},
	{"Array", "shift", "shift", GK_ARRAY},
	{"String", "indexOf", "String.indexOf", GK_STRING},
	{"String", "lastIndexOf", "String.lastIndexOf", GK_STRING},
	{"String", "includes", "String.includes", GK_STRING},
	{"String", "split", "String.split", GK_STRING_RE},
	{"String", "replace", "String.replace", GK_STRING_RE},
	{"String", "replaceAll", "String.replaceAll", GK_STRING_RE},
	{"Object", "getOwnPropertyDescriptor", NULL, GK_SETTLE_KEY},
	{"Object", "getOwnPropertyDescriptors", NULL, GK_SETTLE_ALL},
	{"Object", "defineProperty", NULL, GK_SETTLE_KEY},
	{"Object", "defineProperties", NULL, GK_SETTLE_ALL},
	{"Object", "freeze", NULL, GK_SETTLE_ALL},
	{"Object", "seal", NULL, GK_SETTLE_ALL},
	{"Object", "preventExtensions", NULL, GK_SETTLE_ALL},
	{"Reflect", "getOwnPropertyDescriptor", NULL, GK_SETTLE_KEY},
	{"Reflect", "defineProperty", NULL, GK_SETTLE_KEY},
	{"Reflect", "preventExtensions", NULL, GK_SETTLE_ALL},
	{"Object.prototype", "__lookupGetter__", NULL, GK_SETTLE_THIS},
	{"Object.prototype", "__lookupSetter__", NULL, GK_SETTLE_THIS},
	{"Object.prototype", "__defineGetter__", NULL, GK_SETTLE_THIS},
	{"Object.prototype", "__defineSetter__", NULL, GK_SETTLE_THIS},
	{"Function.prototype", "toString", NULL, GK_SOURCE},
};
_Static_assert(sizeof(guard_defs) / sizeof(guard_defs[0]) == NGUARDS, "NGUARDS");

/* The guard of Array.prototype.sort: its slow path sorts through it. */
#define GUARD_SORT 14

/* Bounds on the work the engine's own methods may do unpolled:
 * - any receiver whose length is at most GUARD_SMALL (indices walked);
 * - an Array whose length could be that of a dense array: at most
 *   GUARD_DENSE, and 16 bytes (a JSValue) per element within the heap in
 *   use, so a dense array goes to the engine (its fast path is a tight loop)
 *   and a sparse one of that size is walked in at most GUARD_DENSE steps;
 * - a sort without a comparator (the engine compares without calling
 *   anything) of at most GUARD_SORT_SMALL elements;
 * - a string search whose naive cost, (n - m + 1) * m code units, is at
 *   most GUARD_STRING. */
#define GUARD_SMALL 65536
#define GUARD_DENSE (1 << 21)
#define GUARD_SORT_SMALL 65536
#define GUARD_STRING (1 << 23)

/* Whether an Array of length len may go to the engine. */
static bool array_bounded(bridge_slot *s, int64_t len)
{
	return len <= GUARD_SMALL || (len <= GUARD_DENSE && (size_t)len * 16 <= s->heap_used);
}

/* The receiver's length, when reading it runs no code: an Array's (always
 * a data property), or a plain object's own data property holding a
 * number. 1: *len is set; 0: it cannot be known without running code;
 * -1: an exception. *array says whether v is an Array. */
static int receiver_length(bridge_slot *s, JSValueConst v, int64_t *len, bool *array)
{
	JSContext *ctx = s->ctx;
	*array = false;
	if (!JS_IsObject(v))
		return 0;
	JSClassID c = JS_GetClassID(v);
	if (c == s->cls_array) {
		*array = true;
		return JS_GetLength(ctx, v, len) < 0 ? -1 : 1;
	}
	if (c != s->cls_object)
		return 0;
	JSPropertyDescriptor d;
	int r = JS_GetOwnProperty(ctx, &d, v, s->guards.atom_length);
	if (r <= 0)
		return r;
	int ok = 0;
	if (!(d.flags & JS_PROP_GETSET)) {
		if (JS_VALUE_GET_TAG(d.value) == JS_TAG_INT) {
			*len = JS_VALUE_GET_INT(d.value);
			ok = 1;
		} else if (JS_VALUE_GET_TAG(d.value) == JS_TAG_FLOAT64) {
			double f = JS_VALUE_GET_FLOAT64(d.value);
			if (f >= 0 && f <= GUARD_SMALL) { /* NaN fails both */
				*len = (int64_t)f;
				ok = 1;
			}
		}
	}
	JS_FreeValue(ctx, d.value);
	JS_FreeValue(ctx, d.getter);
	JS_FreeValue(ctx, d.setter);
	return ok;
}

/* Whether an array receiver (or concat argument) may go to the engine. */
static int array_fast(bridge_slot *s, JSValueConst v)
{
	int64_t len;
	bool array;
	int r = receiver_length(s, v, &len, &array);
	if (r <= 0)
		return r;
	return array ? array_bounded(s, len) : len <= GUARD_SMALL;
}

static int64_t string_length(JSContext *ctx, JSValueConst v)
{
	int64_t n = 0;
	return JS_GetLength(ctx, v, &n) < 0 ? -1 : n;
}

/* Whether v is the global object. */
static bool is_global(JSContext *ctx, JSValueConst v)
{
	if (!JS_IsObject(v))
		return false;
	JSValue global = JS_GetGlobalObject(ctx);
	bool same = JS_VALUE_GET_PTR(global) == JS_VALUE_GET_PTR(v);
	JS_FreeValue(ctx, global);
	return same;
}

/* Whether a guard's call may go to the engine's own method: 1 yes, 0 the
 * slow path, -1 an exception. Nothing here runs code of the script's. */
static int guard_fast(bridge_slot *s, const guard_def *g, JSValueConst this_val, int argc, JSValueConst *argv)
{
	JSContext *ctx = s->ctx;
	switch (g->kind) {
	case GK_SETTLE_KEY:
		return argc > 1 && is_global(ctx, argv[0]) && lazy_settle(s, argv[1]) < 0 ? -1 : 1;
	case GK_SETTLE_ALL:
		return argc > 0 && is_global(ctx, argv[0]) && lazy_settle(s, JS_UNDEFINED) < 0 ? -1 : 1;
	case GK_SETTLE_THIS:
		return argc > 0 && is_global(ctx, this_val) && lazy_settle(s, argv[0]) < 0 ? -1 : 1;
	case GK_SOURCE:
		return 1;
	case GK_ARRAY:
		return array_fast(s, this_val);
	case GK_SORT: {
		int64_t len;
		bool array;
		int r = receiver_length(s, this_val, &len, &array);
		if (r <= 0)
			return r;
		if (!(array ? array_bounded(s, len) : len <= GUARD_SMALL))
			return 0;
		/* A comparator is called for every comparison: that polls. */
		return (argc > 0 && !JS_IsUndefined(argv[0])) || len <= GUARD_SORT_SMALL;
	}
	case GK_CONCAT: {
		int r = array_fast(s, this_val);
		for (int i = 0; r > 0 && i < argc; i++)
			if (JS_IsObject(argv[i]))
				r = JS_GetClassID(argv[i]) == s->cls_array ? array_fast(s, argv[i]) : 0;
		return r;
	}
	case GK_STRING:
	case GK_STRING_RE: {
		if (!JS_IsString(this_val) || argc == 0)
			return 0;
		if (!JS_IsString(argv[0]))
			return g->kind == GK_STRING_RE && JS_IsRegExp(argv[0]);
		int64_t n = string_length(ctx, this_val), m = string_length(ctx, argv[0]);
		if (n < 0 || m < 0)
			return -1;
		return m > n || (n - m + 1) * m <= GUARD_STRING;
	}
	default:
		return 0;
	}
}

/* native.isConstructor and native.isRegExp of guards.js. */
static JSValue js_is_constructor(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	return JS_NewBool(ctx, argc > 0 && JS_IsConstructor(ctx, argv[0]));
}

static JSValue js_is_regexp(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	(void)this_val;
	return JS_NewBool(ctx, argc > 0 && JS_IsRegExp(argv[0]));
}

/* Reads guards.js into the sandbox and makes its slow paths. */
static int load_polys(bridge_slot *s)
{
	JSContext *ctx = s->ctx;
	if (!s->guards_bc)
		return JS_ThrowInternalError(ctx, "codemode: the guards' slow paths are missing"), -1;
	if (typed_ensure(s) < 0)
		return -1;
	JSValue fn = JS_ReadObject(ctx, s->guards_bc, s->guards_bc_len, JS_READ_OBJ_BYTECODE);
	if (JS_IsException(fn))
		return -1;
	JSValue factory = JS_EvalFunction(ctx, fn);
	if (JS_IsException(factory))
		return -1;
	/* Everything handed over is defined, never assigned, on objects with
	 * no prototype (and an array's own elements): an assignment would run
	 * the setters a script put on Object.prototype or Array.prototype,
	 * and hand it the engine's unguarded originals. */
	JSValue native = JS_NewObjectProto(ctx, JS_NULL), originals = JS_NewObjectProto(ctx, JS_NULL);
	JSValue intrinsics = JS_NewArray(ctx);
	JSValue polys = JS_EXCEPTION;
	bool ok = !JS_IsException(intrinsics);
	for (uint32_t i = 0; ok && i < NINTRINSICS; i++)
		ok = JS_DefinePropertyValueUint32(ctx, intrinsics, i, JS_DupValue(ctx, s->guards.intrinsics[i]), JS_PROP_C_W_E) >= 0;
	if (ok && !JS_IsException(native) && !JS_IsException(originals) &&
	    JS_DefinePropertyValueStr(ctx, originals, "sort", JS_DupValue(ctx, s->guards.fn[GUARD_SORT]), JS_PROP_C_W_E) >= 0 &&
	    JS_DefinePropertyValueStr(ctx, native, "originals", JS_DupValue(ctx, originals), JS_PROP_C_W_E) >= 0 &&
	    JS_DefinePropertyValueStr(ctx, native, "intrinsics", JS_DupValue(ctx, intrinsics), JS_PROP_C_W_E) >= 0 &&
	    JS_DefinePropertyValueStr(ctx, native, "isConstructor",
	                              JS_NewCFunction2(ctx, js_is_constructor, "isConstructor", 1, JS_CFUNC_generic, 0),
	                              JS_PROP_C_W_E) >= 0 &&
	    JS_DefinePropertyValueStr(ctx, native, "isRegExp",
	                              JS_NewCFunction2(ctx, js_is_regexp, "isRegExp", 1, JS_CFUNC_generic, 0), JS_PROP_C_W_E) >= 0)
		polys = JS_Call(ctx, factory, JS_UNDEFINED, 1, &native);
	JS_FreeValue(ctx, intrinsics);
	JS_FreeValue(ctx, originals);
	JS_FreeValue(ctx, native);
	JS_FreeValue(ctx, factory);
	if (JS_IsException(polys))
		return -1;
	s->guard_polys = polys;
	return 0;
}

/* A function's text, which it consumes, as the model wrote it: the
 * engine's holds the markers codemode inserted for positions ("0;"), and
 * the Go side, which inserted them, takes them out (go_source_text). */
static JSValue as_written(bridge_slot *s, JSValue text)
{
	JSContext *ctx = s->ctx;
	if (!JS_IsString(text))
		return text;
	size_t n;
	const char *p = JS_ToCStringLen(ctx, &n, text);
	if (!p)
		return JS_FreeValue(ctx, text), JS_EXCEPTION;
	JSValue r = text;
	if (memmem(p, n, "0;", 2)) {
		size_t len = 0;
		char *orig = go_source_text(s->handle, (char *)p, n, &len);
		if (orig) {
			r = JS_NewStringLen(ctx, orig, len);
			free(orig);
			JS_FreeValue(ctx, text);
		}
	}
	JS_FreeCString(ctx, p);
	return r;
}

static JSValue js_guard(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv, int magic)
{
	bridge_slot *s = JS_GetContextOpaque(ctx);
	const guard_def *g = &guard_defs[magic];
	int fast = guard_fast(s, g, this_val, argc, argv);
	if (fast < 0)
		return JS_EXCEPTION;
	if (fast && g->kind == GK_SOURCE)
		return as_written(s, JS_Call(ctx, s->guards.fn[magic], this_val, argc, argv));
	if (fast)
		return JS_Call(ctx, s->guards.fn[magic], this_val, argc, argv);
	if (JS_IsUndefined(s->guard_polys) && load_polys(s) < 0)
		return JS_EXCEPTION;
	JSValue poly = JS_GetPropertyStr(ctx, s->guard_polys, g->poly);
	if (JS_IsException(poly))
		return poly;
	JSValue r = JS_Call(ctx, poly, this_val, argc, argv);
	JS_FreeValue(ctx, poly);
	return r;
}

/* The intrinsics guards.js uses, taken before any user code runs and held
 * in the slot's state (nothing more in every image), handed to guards.js as
 * an array in this order: each a global, a global's property
 * ("Reflect.apply"), or a prototype's ("String..charCodeAt"). */
static const char *const intrinsic_paths[] = {
	"Reflect.apply", "Reflect.construct", "Reflect.defineProperty", "Reflect.set", "Reflect.deleteProperty",
	"Array.isArray", "Object.getPrototypeOf", "Object.getOwnPropertyNames", "Object", "TypeError", "RangeError",
	"Int32Array", "Math.trunc", "Math.min", "Math.max", "Math.floor", "Symbol.species", "Symbol.isConcatSpreadable",
	"Symbol.match", "Symbol.replace", "Symbol.split", "String..charCodeAt", "String..substring", "Function..call",
	"Function..bind",
};

/* The value a path names: "G", "G.p" or "G..p" (G.prototype.p). */
static JSValue intrinsic(JSContext *ctx, JSValueConst global, const char *path)
{
	char name[32];
	const char *dot = strchr(path, '.');
	size_t n = dot ? (size_t)(dot - path) : strlen(path);
	if (n >= sizeof(name))
		return JS_ThrowInternalError(ctx, "codemode: intrinsic path too long");
	memcpy(name, path, n);
	name[n] = '\0';
	JSValue v = JS_GetPropertyStr(ctx, global, name);
	if (!dot || JS_IsException(v))
		return v;
	if (dot[1] == '.') {
		JSValue proto = JS_GetPropertyStr(ctx, v, "prototype");
		JS_FreeValue(ctx, v);
		if (JS_IsException(proto))
			return proto;
		v = proto;
		dot++;
	}
	JSValue r = JS_GetPropertyStr(ctx, v, dot + 1);
	JS_FreeValue(ctx, v);
	return r;
}

_Static_assert(sizeof(intrinsic_paths) / sizeof(intrinsic_paths[0]) == NINTRINSICS, "NINTRINSICS");

int guards_install(bridge_slot *s)
{
	JSContext *ctx = s->ctx;
	int rc = -1;
	JSValue global = JS_GetGlobalObject(ctx);
	/* The holders of the guarded methods, as guard_def names them. */
	enum { NHOLDERS = 6 };
	const char *names[NHOLDERS] = {"Array", "String", "Object", "Reflect", "Object.prototype", "Function.prototype"};
	JSValue holders[NHOLDERS];
	for (int i = 0; i < NHOLDERS; i++)
		holders[i] = JS_UNDEFINED;
	for (int i = 0; i < NHOLDERS; i++) {
		const char *dot = strchr(names[i], '.');
		char name[24];
		size_t n = dot ? (size_t)(dot - names[i]) : strlen(names[i]);
		memcpy(name, names[i], n);
		name[n] = '\0';
		holders[i] = JS_GetPropertyStr(ctx, global, name);
		if (i < 2 || dot) { /* a prototype */
			JSValue proto = JS_GetPropertyStr(ctx, holders[i], "prototype");
			JS_FreeValue(ctx, holders[i]);
			holders[i] = proto;
		}
		if (JS_IsException(holders[i]))
			goto cleanup;
	}
	/* Held in the slot's state, not in an object: nothing more in the image. */
	for (int i = 0; i < NINTRINSICS; i++) {
		if (i == INTRINSIC_INT32ARRAY) { /* made with the typed arrays: typed_ensure */
			if (strcmp(intrinsic_paths[i], "Int32Array") != 0)
				goto cleanup;
			s->guards.intrinsics[i] = JS_UNDEFINED;
			continue;
		}
		JSValue v = intrinsic(ctx, global, intrinsic_paths[i]);
		if (JS_IsException(v))
			goto cleanup;
		s->guards.intrinsics[i] = v;
	}
	s->guards.atom_length = JS_NewAtom(ctx, "length");
	s->guards.atom_to_json = JS_NewAtom(ctx, "toJSON");
	JSValue tag = intrinsic(ctx, global, "Symbol.toStringTag");
	s->guards.atom_to_string_tag = JS_IsSymbol(tag) ? JS_ValueToAtom(ctx, tag) : JS_ATOM_NULL;
	JS_FreeValue(ctx, tag);
	if (s->guards.atom_to_string_tag == JS_ATOM_NULL)
		goto cleanup;
	for (int i = 0; i < NGUARDS; i++) {
		const guard_def *g = &guard_defs[i];
		JSValue proto = JS_UNDEFINED;
		for (int h = 0; h < NHOLDERS; h++)
			if (strcmp(g->holder, names[h]) == 0)
				proto = holders[h];
		JSValue orig = JS_GetPropertyStr(ctx, proto, g->name);
		if (!JS_IsFunction(ctx, orig)) {
			JS_FreeValue(ctx, orig);
			goto cleanup;
		}
		JSValue len = JS_GetPropertyStr(ctx, orig, "length");
		int32_t n = JS_VALUE_GET_TAG(len) == JS_TAG_INT ? JS_VALUE_GET_INT(len) : 0;
		JS_FreeValue(ctx, len);
		s->guards.fn[i] = orig;
		JSValue f = JS_NewCFunctionMagic(ctx, js_guard, g->name, n, JS_CFUNC_generic_magic, i);
		if (JS_IsException(f) || JS_DefinePropertyValueStr(ctx, proto, g->name, f, JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE) < 0)
			goto cleanup;
	}
	rc = 0;
cleanup:
	for (int i = 0; i < NHOLDERS; i++)
		JS_FreeValue(ctx, holders[i]);
	JS_FreeValue(ctx, global);
	return rc;
}

void guards_forget(bridge_slot *s)
{
	for (int i = 0; i < NGUARDS; i++)
		s->guards.fn[i] = JS_UNDEFINED;
	for (int i = 0; i < NINTRINSICS; i++)
		s->guards.intrinsics[i] = JS_UNDEFINED;
	s->guards.atom_length = JS_ATOM_NULL;
	s->guards.atom_to_json = JS_ATOM_NULL;
	s->guards.atom_to_string_tag = JS_ATOM_NULL;
	s->guard_polys = JS_UNDEFINED;
}

void guards_free(bridge_slot *s)
{
	JSContext *ctx = s->ctx;
	for (int i = 0; i < NGUARDS; i++)
		JS_FreeValue(ctx, s->guards.fn[i]);
	for (int i = 0; i < NINTRINSICS; i++)
		JS_FreeValue(ctx, s->guards.intrinsics[i]);
	JS_FreeValue(ctx, s->guard_polys);
	if (s->guards.atom_length != JS_ATOM_NULL)
		JS_FreeAtom(ctx, s->guards.atom_length);
	if (s->guards.atom_to_json != JS_ATOM_NULL)
		JS_FreeAtom(ctx, s->guards.atom_to_json);
	if (s->guards.atom_to_string_tag != JS_ATOM_NULL)
		JS_FreeAtom(ctx, s->guards.atom_to_string_tag);
	guards_forget(s);
}
