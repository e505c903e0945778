/*
 * quickjs_api.h: our declarations of the QuickJS-ng C API subset that
 * codemode calls, pinned to QuickJS-ng v0.15.1 on 64-bit platforms.
 *
 * The engine itself is compiled by the carrier module
 * github.com/buke/quickjs-go (see quickjs.go); nothing of it is vendored
 * here. These declarations are written from the documented signatures of
 * the upstream quickjs.h and resolve at link time.
 *
 * Layout: the types, constants and inline helpers sit inside
 * `#ifndef QUICKJS_H`, so a translation unit that includes the real
 * header first skips them; the prototypes are always declared, so in such
 * a unit the compiler re-checks every one against upstream. abi_test.go
 * does exactly that and also compares sizes, offsets and constant values
 * computed under both headers. Upgrading the engine: bump go.mod, run
 * `go test ./quickjs`, fix what it reports.
 */
#ifndef CODEMODE_QUICKJS_API_H
#define CODEMODE_QUICKJS_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef QUICKJS_H

#if INTPTR_MAX < INT64_MAX
#error "codemode supports 64-bit platforms only (QuickJS-ng NaN-boxes JSValue on 32-bit)"
#endif

typedef struct JSRuntime JSRuntime;
typedef struct JSContext JSContext;
typedef uint32_t JSAtom;
typedef uint32_t JSClassID;

/* Value tags of the 64-bit (non NaN-boxing) representation. */
enum {
	JS_TAG_FIRST = -9,
	JS_TAG_BIG_INT = -9,
	JS_TAG_SYMBOL = -8,
	JS_TAG_STRING = -7,
	JS_TAG_STRING_ROPE = -6,
	JS_TAG_MODULE = -3,
	JS_TAG_FUNCTION_BYTECODE = -2,
	JS_TAG_OBJECT = -1,
	JS_TAG_INT = 0,
	JS_TAG_BOOL = 1,
	JS_TAG_NULL = 2,
	JS_TAG_UNDEFINED = 3,
	JS_TAG_UNINITIALIZED = 4,
	JS_TAG_CATCH_OFFSET = 5,
	JS_TAG_EXCEPTION = 6,
	JS_TAG_SHORT_BIG_INT = 7,
	JS_TAG_FLOAT64 = 8,
};

/* JSValue is a 16-byte struct passed by value. JSValueConst marks a
 * borrowed value (the callee does not take ownership). */
typedef union JSValueUnion {
	int32_t int32;
	double float64;
	void *ptr;
	int32_t short_big_int;
} JSValueUnion;

typedef struct JSValue {
	JSValueUnion u;
	int64_t tag;
} JSValue;

#define JSValueConst JSValue

#define JS_VALUE_GET_TAG(v) ((int32_t)(v).tag)
#define JS_VALUE_GET_INT(v) ((v).u.int32)
#define JS_VALUE_GET_BOOL(v) ((v).u.int32)
#define JS_VALUE_GET_FLOAT64(v) ((v).u.float64)
#define JS_VALUE_GET_PTR(v) ((v).u.ptr)
#define JS_MKVAL(tag, val) (JSValue){ (JSValueUnion){ .int32 = val }, tag }
#define JS_MKPTR(tag, p) (JSValue){ (JSValueUnion){ .ptr = p }, tag }

#define JS_NULL JS_MKVAL(JS_TAG_NULL, 0)
#define JS_UNDEFINED JS_MKVAL(JS_TAG_UNDEFINED, 0)
#define JS_FALSE JS_MKVAL(JS_TAG_BOOL, 0)
#define JS_TRUE JS_MKVAL(JS_TAG_BOOL, 1)
#define JS_EXCEPTION JS_MKVAL(JS_TAG_EXCEPTION, 0)

/* JS_Eval flags. */
#define JS_EVAL_TYPE_GLOBAL (0 << 0)
#define JS_EVAL_TYPE_MODULE (1 << 0)
#define JS_EVAL_FLAG_STRICT (1 << 3)
#define JS_EVAL_FLAG_COMPILE_ONLY (1 << 5)
#define JS_EVAL_FLAG_BACKTRACE_BARRIER (1 << 6)
#define JS_EVAL_FLAG_ASYNC (1 << 7)

#define JS_EVAL_OPTIONS_VERSION 1

typedef struct JSEvalOptions {
	int version;
	int eval_flags;
	const char *filename;
	int line_num;
} JSEvalOptions;

/* Property flags. */
#define JS_PROP_CONFIGURABLE (1 << 0)
#define JS_PROP_WRITABLE (1 << 1)
#define JS_PROP_ENUMERABLE (1 << 2)
#define JS_PROP_C_W_E (JS_PROP_CONFIGURABLE | JS_PROP_WRITABLE | JS_PROP_ENUMERABLE)
#define JS_PROP_THROW (1 << 14)
#define JS_PROP_GETSET (1 << 4) /* in JSPropertyDescriptor.flags: an accessor */

/* JS_GetOwnPropertyNames flags. */
#define JS_GPN_STRING_MASK (1 << 0)
#define JS_GPN_ENUM_ONLY (1 << 4)

#define JS_ATOM_NULL 0

typedef struct JSPropertyEnum {
	bool is_enumerable;
	JSAtom atom;
} JSPropertyEnum;

typedef struct JSPropertyDescriptor {
	int flags;
	JSValue value;
	JSValue getter;
	JSValue setter;
} JSPropertyDescriptor;

/* JS_WriteObject / JS_ReadObject flags. */
#define JS_WRITE_OBJ_BYTECODE (1 << 0)
#define JS_WRITE_OBJ_STRIP_SOURCE (1 << 4)
#define JS_WRITE_OBJ_STRIP_DEBUG (1 << 5)
#define JS_READ_OBJ_BYTECODE (1 << 0)

typedef enum JSCFunctionEnum {
	JS_CFUNC_generic,
	JS_CFUNC_generic_magic,
	JS_CFUNC_constructor,
	JS_CFUNC_constructor_magic,
	JS_CFUNC_constructor_or_func,
	JS_CFUNC_constructor_or_func_magic,
	JS_CFUNC_f_f,
	JS_CFUNC_f_f_f,
	JS_CFUNC_getter,
	JS_CFUNC_setter,
	JS_CFUNC_getter_magic,
	JS_CFUNC_setter_magic,
	JS_CFUNC_iterator_next,
} JSCFunctionEnum;

typedef enum JSTypedArrayEnum {
	JS_TYPED_ARRAY_UINT8C = 0,
	JS_TYPED_ARRAY_INT8,
	JS_TYPED_ARRAY_UINT8,
	JS_TYPED_ARRAY_INT16,
	JS_TYPED_ARRAY_UINT16,
	JS_TYPED_ARRAY_INT32,
	JS_TYPED_ARRAY_UINT32,
	JS_TYPED_ARRAY_BIG_INT64,
	JS_TYPED_ARRAY_BIG_UINT64,
	JS_TYPED_ARRAY_FLOAT16,
	JS_TYPED_ARRAY_FLOAT32,
	JS_TYPED_ARRAY_FLOAT64,
} JSTypedArrayEnum;

typedef enum JSPromiseStateEnum {
	JS_PROMISE_NOT_A_PROMISE = -1,
	JS_PROMISE_PENDING = 0,
	JS_PROMISE_FULFILLED,
	JS_PROMISE_REJECTED,
} JSPromiseStateEnum;

typedef struct JSMallocFunctions {
	void *(*js_calloc)(void *opaque, size_t count, size_t size);
	void *(*js_malloc)(void *opaque, size_t size);
	void (*js_free)(void *opaque, void *ptr);
	void *(*js_realloc)(void *opaque, void *ptr, size_t size);
	size_t (*js_malloc_usable_size)(const void *ptr);
} JSMallocFunctions;

typedef JSValue JSCFunction(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv);
typedef JSValue JSCFunctionMagic(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv, int magic);
typedef JSValue JSCFunctionData(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv, int magic, JSValueConst *func_data);
typedef int JSInterruptHandler(JSRuntime *rt, void *opaque);
typedef void JSHostPromiseRejectionTracker(JSContext *ctx, JSValueConst promise, JSValueConst reason, bool is_handled, void *opaque);

static inline bool JS_IsException(JSValueConst v) { return JS_VALUE_GET_TAG(v) == JS_TAG_EXCEPTION; }
static inline bool JS_IsUndefined(JSValueConst v) { return JS_VALUE_GET_TAG(v) == JS_TAG_UNDEFINED; }
static inline bool JS_IsNull(JSValueConst v) { return JS_VALUE_GET_TAG(v) == JS_TAG_NULL; }
static inline bool JS_IsBool(JSValueConst v) { return JS_VALUE_GET_TAG(v) == JS_TAG_BOOL; }
static inline bool JS_IsObject(JSValueConst v) { return JS_VALUE_GET_TAG(v) == JS_TAG_OBJECT; }
static inline bool JS_IsSymbol(JSValueConst v) { return JS_VALUE_GET_TAG(v) == JS_TAG_SYMBOL; }
static inline bool JS_IsString(JSValueConst v)
{
	int32_t tag = JS_VALUE_GET_TAG(v);
	return tag == JS_TAG_STRING || tag == JS_TAG_STRING_ROPE;
}
static inline bool JS_IsNumber(JSValueConst v)
{
	int32_t tag = JS_VALUE_GET_TAG(v);
	return tag == JS_TAG_INT || tag == JS_TAG_FLOAT64;
}
static inline bool JS_IsBigInt(JSValueConst v)
{
	int32_t tag = JS_VALUE_GET_TAG(v);
	return tag == JS_TAG_BIG_INT || tag == JS_TAG_SHORT_BIG_INT;
}
static inline JSValue JS_NewBool(JSContext *ctx, bool val)
{
	(void)ctx;
	return JS_MKVAL(JS_TAG_BOOL, (val != 0));
}
static inline JSValue JS_NewInt32(JSContext *ctx, int32_t val)
{
	(void)ctx;
	return JS_MKVAL(JS_TAG_INT, val);
}
static inline JSValue JS_NewFloat64(JSContext *ctx, double d)
{
	JSValue v;
	(void)ctx;
	v.tag = JS_TAG_FLOAT64;
	v.u.float64 = d;
	return v;
}
static inline JSValue JS_NewCFunctionMagic(JSContext *ctx, JSCFunctionMagic *func, const char *name, int length,
                                           JSCFunctionEnum cproto, int magic);
static inline const char *JS_ToCStringLen(JSContext *ctx, size_t *plen, JSValueConst val);

#endif /* !QUICKJS_H */

/* ---- Prototypes: always declared, so the real header re-checks them. ---- */

/* Runtime. */
JSRuntime *JS_NewRuntime(void);
JSRuntime *JS_NewRuntime2(const JSMallocFunctions *mf, void *opaque);
void JS_FreeRuntime(JSRuntime *rt);
void JS_SetMemoryLimit(JSRuntime *rt, size_t limit);
void JS_SetGCThreshold(JSRuntime *rt, size_t gc_threshold);
void JS_SetMaxStackSize(JSRuntime *rt, size_t stack_size);
void JS_UpdateStackTop(JSRuntime *rt);
void *JS_GetRuntimeOpaque(JSRuntime *rt);
void JS_SetRuntimeOpaque(JSRuntime *rt, void *opaque);
void JS_RunGC(JSRuntime *rt);
void JS_SetInterruptHandler(JSRuntime *rt, JSInterruptHandler *cb, void *opaque);
void JS_SetHostPromiseRejectionTracker(JSRuntime *rt, JSHostPromiseRejectionTracker *cb, void *opaque);
bool JS_IsJobPending(JSRuntime *rt);
int JS_ExecutePendingJob(JSRuntime *rt, JSContext **pctx);
const char *JS_GetVersion(void);

/* Context and intrinsics. */
JSContext *JS_NewContextRaw(JSRuntime *rt);
void JS_FreeContext(JSContext *ctx);
JSRuntime *JS_GetRuntime(JSContext *ctx);
void *JS_GetContextOpaque(JSContext *ctx);
void JS_SetContextOpaque(JSContext *ctx, void *opaque);
int JS_AddIntrinsicBaseObjects(JSContext *ctx);
int JS_AddIntrinsicDate(JSContext *ctx);
int JS_AddIntrinsicEval(JSContext *ctx);
int JS_AddIntrinsicRegExp(JSContext *ctx);
int JS_AddIntrinsicJSON(JSContext *ctx);
int JS_AddIntrinsicProxy(JSContext *ctx);
int JS_AddIntrinsicMapSet(JSContext *ctx);
int JS_AddIntrinsicTypedArrays(JSContext *ctx);
int JS_AddIntrinsicPromise(JSContext *ctx);

/* Evaluation and bytecode. input[input_len] must be '\0'. */
JSValue JS_Eval(JSContext *ctx, const char *input, size_t input_len, const char *filename, int eval_flags);
JSValue JS_Eval2(JSContext *ctx, const char *input, size_t input_len, JSEvalOptions *options);
JSValue JS_EvalFunction(JSContext *ctx, JSValue fun_obj);
typedef struct JSModuleDef JSModuleDef;
typedef char *JSModuleNormalizeFunc(JSContext *ctx, const char *module_base_name, const char *module_name, void *opaque);
typedef JSModuleDef *JSModuleLoaderFunc(JSContext *ctx, const char *module_name, void *opaque);
void JS_SetModuleLoaderFunc(JSRuntime *rt, JSModuleNormalizeFunc *module_normalize, JSModuleLoaderFunc *module_loader,
                            void *opaque);
uint8_t *JS_WriteObject(JSContext *ctx, size_t *psize, JSValueConst obj, int flags);
JSValue JS_ReadObject(JSContext *ctx, const uint8_t *buf, size_t buf_len, int flags);

/* Values, exceptions, properties. */
void JS_FreeValue(JSContext *ctx, JSValue v);
JSValue JS_DupValue(JSContext *ctx, JSValueConst v);
JSValue JS_GetGlobalObject(JSContext *ctx);
JSValue JS_Throw(JSContext *ctx, JSValue obj);
JSValue JS_GetException(JSContext *ctx);
bool JS_HasException(JSContext *ctx);
bool JS_IsError(JSValueConst val);
bool JS_IsUncatchableError(JSValueConst val);
void JS_SetUncatchableError(JSContext *ctx, JSValueConst val);
bool JS_IsFunction(JSContext *ctx, JSValueConst val);
bool JS_IsConstructor(JSContext *ctx, JSValueConst val);
bool JS_IsRegExp(JSValueConst val);
bool JS_IsArray(JSValueConst val);
bool JS_IsProxy(JSValueConst val);
bool JS_IsPromise(JSValueConst val);
bool JS_IsArrayBuffer(JSValueConst obj);
JSValue JS_NewError(JSContext *ctx);
JSValue JS_NewObject(JSContext *ctx);
JSValue JS_NewObjectProto(JSContext *ctx, JSValueConst proto);
JSValue JS_NewArray(JSContext *ctx);
JSValue JS_NewStringLen(JSContext *ctx, const char *str1, size_t len1);
JSValue JS_ToString(JSContext *ctx, JSValueConst val);
const char *JS_ToCStringLen2(JSContext *ctx, size_t *plen, JSValueConst val1, bool cesu8);
void JS_FreeCString(JSContext *ctx, const char *ptr);
int JS_ToBool(JSContext *ctx, JSValueConst val);
int JS_ToInt32(JSContext *ctx, int32_t *pres, JSValueConst val);
int JS_ToInt64(JSContext *ctx, int64_t *pres, JSValueConst val);
int JS_ToFloat64(JSContext *ctx, double *pres, JSValueConst val);
JSAtom JS_NewAtom(JSContext *ctx, const char *str);
JSAtom JS_NewAtomUInt32(JSContext *ctx, uint32_t n);
void JS_FreeAtom(JSContext *ctx, JSAtom v);
const char *JS_AtomToCStringLen(JSContext *ctx, size_t *plen, JSAtom atom);
JSAtom JS_ValueToAtom(JSContext *ctx, JSValueConst val);
JSClassID JS_GetClassID(JSValueConst v);
JSValue JS_GetClassProto(JSContext *ctx, JSClassID class_id);
JSValue JS_GetPrototype(JSContext *ctx, JSValueConst val);
int JS_GetLength(JSContext *ctx, JSValueConst obj, int64_t *pres);
int JS_GetOwnPropertyNames(JSContext *ctx, JSPropertyEnum **ptab, uint32_t *plen, JSValueConst obj, int flags);
void JS_FreePropertyEnum(JSContext *ctx, JSPropertyEnum *tab, uint32_t len);
int JS_GetOwnProperty(JSContext *ctx, JSPropertyDescriptor *desc, JSValueConst obj, JSAtom prop);
JSValue JS_GetProperty(JSContext *ctx, JSValueConst this_obj, JSAtom prop);
JSValue JS_GetPropertyStr(JSContext *ctx, JSValueConst this_obj, const char *prop);
JSValue JS_GetPropertyUint32(JSContext *ctx, JSValueConst this_obj, uint32_t idx);
int JS_SetPropertyStr(JSContext *ctx, JSValueConst this_obj, const char *prop, JSValue val);
int JS_SetPropertyUint32(JSContext *ctx, JSValueConst this_obj, uint32_t idx, JSValue val);
int JS_DefinePropertyValue(JSContext *ctx, JSValueConst this_obj, JSAtom prop, JSValue val, int flags);
int JS_DeleteProperty(JSContext *ctx, JSValueConst obj, JSAtom prop, int flags);
int JS_HasProperty(JSContext *ctx, JSValueConst this_obj, JSAtom prop);
int JS_DefinePropertyGetSet(JSContext *ctx, JSValueConst this_obj, JSAtom prop, JSValue getter, JSValue setter,
                            int flags);
int JS_DefinePropertyValueStr(JSContext *ctx, JSValueConst this_obj, const char *prop, JSValue val, int flags);
int JS_DefinePropertyValueUint32(JSContext *ctx, JSValueConst this_obj, uint32_t idx, JSValue val, int flags);
JSValue JS_Call(JSContext *ctx, JSValueConst func_obj, JSValueConst this_obj, int argc, JSValueConst *argv);
JSValue JS_CallConstructor(JSContext *ctx, JSValueConst func_obj, int argc, JSValueConst *argv);
JSValue JS_ThrowTypeError(JSContext *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
JSValue JS_ThrowRangeError(JSContext *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
JSValue JS_ThrowInternalError(JSContext *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
JSValue JS_ThrowReferenceError(JSContext *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
JSValue JS_ThrowPlainError(JSContext *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
JSValue JS_ThrowOutOfMemory(JSContext *ctx);

/* JSON. buf[buf_len] must be '\0'. */
JSValue JS_ParseJSON(JSContext *ctx, const char *buf, size_t buf_len, const char *filename);
JSValue JS_JSONStringify(JSContext *ctx, JSValueConst obj, JSValueConst replacer, JSValueConst space0);

/* Functions and promises. */
JSValue JS_NewCFunction2(JSContext *ctx, JSCFunction *func, const char *name, int length, JSCFunctionEnum cproto,
                         int magic);
JSValue JS_NewCFunctionData(JSContext *ctx, JSCFunctionData *func, int length, int magic, int data_len,
                            JSValueConst *data);
JSValue JS_NewPromiseCapability(JSContext *ctx, JSValue *resolving_funcs);
JSPromiseStateEnum JS_PromiseState(JSContext *ctx, JSValueConst promise);
JSValue JS_PromiseResult(JSContext *ctx, JSValueConst promise);

/* Binary data. */
JSValue JS_NewArrayBufferCopy(JSContext *ctx, const uint8_t *buf, size_t len);
uint8_t *JS_GetArrayBuffer(JSContext *ctx, size_t *psize, JSValueConst obj);
JSValue JS_NewTypedArray(JSContext *ctx, int argc, JSValueConst *argv, JSTypedArrayEnum array_type);
JSValue JS_GetTypedArrayBuffer(JSContext *ctx, JSValueConst obj, size_t *pbyte_offset, size_t *pbyte_length,
                               size_t *pbytes_per_element);
int JS_GetTypedArrayType(JSValueConst obj);
uint8_t *JS_GetUint8Array(JSContext *ctx, size_t *psize, JSValueConst obj);
bool JS_IsDataView(JSValueConst val);

/* Engine-heap memory: buffers the engine returns (JS_WriteObject) and our
 * own per-sandbox tables, which thereby count against the memory limit. */
void *js_malloc(JSContext *ctx, size_t size);
void *js_realloc(JSContext *ctx, void *ptr, size_t size);
void js_free(JSContext *ctx, void *ptr);

#ifndef QUICKJS_H
static inline JSValue JS_NewCFunctionMagic(JSContext *ctx, JSCFunctionMagic *func, const char *name, int length,
                                           JSCFunctionEnum cproto, int magic)
{
	union {
		JSCFunction *generic;
		JSCFunctionMagic *generic_magic;
	} ft;
	ft.generic_magic = func;
	return JS_NewCFunction2(ctx, ft.generic, name, length, cproto, magic);
}
static inline const char *JS_ToCStringLen(JSContext *ctx, size_t *plen, JSValueConst val)
{
	return JS_ToCStringLen2(ctx, plen, val, false);
}
#endif /* !QUICKJS_H */

#endif /* CODEMODE_QUICKJS_API_H */
