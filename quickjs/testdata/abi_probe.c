/* abi_probe.c: prints the layout facts codemode relies on, one "name value"
 * per line. abi_test.go compiles it once against the carrier's quickjs.h and
 * once against our quickjs_api.h (each force-included with -include) and
 * requires identical output. */
#include <stddef.h>
#include <stdio.h>

#define P(expr) printf("%s %lld\n", #expr, (long long)(expr))

int main(void)
{
	P(sizeof(JSValue));
	P(_Alignof(JSValue));
	P(offsetof(JSValue, u));
	P(offsetof(JSValue, tag));
	P(sizeof(((JSValue *)0)->tag));
	P(sizeof(JSValueUnion));
	P(offsetof(JSValueUnion, int32));
	P(offsetof(JSValueUnion, float64));
	P(offsetof(JSValueUnion, ptr));
	P(sizeof(JSAtom));
	P(sizeof(JSClassID));

	P(sizeof(JSMallocFunctions));
	P(offsetof(JSMallocFunctions, js_calloc));
	P(offsetof(JSMallocFunctions, js_malloc));
	P(offsetof(JSMallocFunctions, js_free));
	P(offsetof(JSMallocFunctions, js_realloc));
	P(offsetof(JSMallocFunctions, js_malloc_usable_size));

	P(sizeof(JSEvalOptions));
	P(offsetof(JSEvalOptions, version));
	P(offsetof(JSEvalOptions, eval_flags));
	P(offsetof(JSEvalOptions, filename));
	P(offsetof(JSEvalOptions, line_num));
	P(JS_EVAL_OPTIONS_VERSION);

	P(JS_TAG_FIRST);
	P(JS_TAG_BIG_INT);
	P(JS_TAG_SYMBOL);
	P(JS_TAG_STRING);
	P(JS_TAG_STRING_ROPE);
	P(JS_TAG_MODULE);
	P(JS_TAG_FUNCTION_BYTECODE);
	P(JS_TAG_OBJECT);
	P(JS_TAG_INT);
	P(JS_TAG_BOOL);
	P(JS_TAG_NULL);
	P(JS_TAG_UNDEFINED);
	P(JS_TAG_UNINITIALIZED);
	P(JS_TAG_CATCH_OFFSET);
	P(JS_TAG_EXCEPTION);
	P(JS_TAG_SHORT_BIG_INT);
	P(JS_TAG_FLOAT64);

	P(JS_EVAL_TYPE_GLOBAL);
	P(JS_EVAL_TYPE_MODULE);
	P(JS_EVAL_FLAG_STRICT);
	P(JS_EVAL_FLAG_COMPILE_ONLY);
	P(JS_EVAL_FLAG_BACKTRACE_BARRIER);
	P(JS_EVAL_FLAG_ASYNC);

	P(JS_PROP_CONFIGURABLE);
	P(JS_PROP_WRITABLE);
	P(JS_PROP_ENUMERABLE);
	P(JS_PROP_C_W_E);
	P(JS_PROP_THROW);
	P(JS_PROP_GETSET);
	P(JS_GPN_STRING_MASK);
	P(JS_GPN_ENUM_ONLY);
	P(JS_ATOM_NULL);

	P(sizeof(JSPropertyEnum));
	P(offsetof(JSPropertyEnum, is_enumerable));
	P(offsetof(JSPropertyEnum, atom));
	P(sizeof(JSPropertyDescriptor));
	P(offsetof(JSPropertyDescriptor, flags));
	P(offsetof(JSPropertyDescriptor, value));
	P(offsetof(JSPropertyDescriptor, getter));
	P(offsetof(JSPropertyDescriptor, setter));

	P(JS_WRITE_OBJ_BYTECODE);
	P(JS_WRITE_OBJ_STRIP_SOURCE);
	P(JS_WRITE_OBJ_STRIP_DEBUG);
	P(JS_READ_OBJ_BYTECODE);

	P(sizeof(JSCFunctionEnum));
	P(JS_CFUNC_generic);
	P(JS_CFUNC_generic_magic);
	P(JS_CFUNC_constructor);
	P(JS_CFUNC_iterator_next);

	P(sizeof(JSTypedArrayEnum));
	P(JS_TYPED_ARRAY_UINT8C);
	P(JS_TYPED_ARRAY_INT8);
	P(JS_TYPED_ARRAY_UINT8);
	P(JS_TYPED_ARRAY_INT16);
	P(JS_TYPED_ARRAY_UINT16);
	P(JS_TYPED_ARRAY_INT32);
	P(JS_TYPED_ARRAY_UINT32);
	P(JS_TYPED_ARRAY_BIG_INT64);
	P(JS_TYPED_ARRAY_BIG_UINT64);
	P(JS_TYPED_ARRAY_FLOAT16);
	P(JS_TYPED_ARRAY_FLOAT32);
	P(JS_TYPED_ARRAY_FLOAT64);

	P(sizeof(JSPromiseStateEnum));
	P(JS_PROMISE_NOT_A_PROMISE);
	P(JS_PROMISE_PENDING);
	P(JS_PROMISE_FULFILLED);
	P(JS_PROMISE_REJECTED);

	/* The inline helpers must build the same bits. */
	P(JS_VALUE_GET_TAG(JS_UNDEFINED));
	P(JS_VALUE_GET_TAG(JS_EXCEPTION));
	P(JS_VALUE_GET_INT(JS_TRUE));
	P(JS_IsException(JS_EXCEPTION));
	P(JS_IsNumber(JS_NewFloat64(NULL, 1.5)));
	P(JS_IsBigInt(JS_MKVAL(JS_TAG_SHORT_BIG_INT, 1)));
	P(JS_IsString(JS_MKPTR(JS_TAG_STRING_ROPE, NULL)));
	return 0;
}
