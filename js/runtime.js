// runtime.js: codemode's runtime inside every Execute sandbox.
//
// It is compiled once per process and evaluated in each sandbox before any
// provider or program source runs, so every built-in it captures is the
// language's own: a program that later replaces JSON.stringify,
// Uint8Array.prototype.toBase64 or Map.prototype.get cannot change how a
// tool call is encoded. Its completion value is a function that takes the
// native bindings and returns what the entry scope needs.
//
// The codec: ArrayBuffer, DataView and every typed array cross as
// {"__executor_binary_v1__": "<Type>", "data": "<base64>"} (views send only
// their visible bytes); a function crosses as {"__executor_handle_v1__": n},
// a handle the host can call back. Both revive as what they were.
(function (native) {
	'use strict';

	const BINARY = '__executor_binary_v1__';
	const HANDLE = '__executor_handle_v1__';
	const OUTSIDE = native.outside; // bridge_internal.h's MSG_OUTSIDE

	const uncurry = (fn) => Function.prototype.call.bind(fn);
	const apply = Reflect.apply;
	// For what is captured later, when a program may have run: no
	// Function.prototype lookups (rest parameters use no iterator).
	const lateUncurry = (fn) => (self, ...args) => apply(fn, self, args);
	const getPrototypeOf = Object.getPrototypeOf;
	const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
	const lateGetter = (proto, name) => lateUncurry(getOwnPropertyDescriptor(proto, name).get);
	const toStringTag = Symbol.toStringTag;

	const { parse, stringify } = JSON;
	const { isArray } = Array;
	const { hasOwn } = Object;
	const includes = uncurry(String.prototype.includes);
	const objectTag = uncurry(Object.prototype.toString);
	const mapGet = uncurry(Map.prototype.get);
	const mapSet = uncurry(Map.prototype.set);
	const ErrorCtor = Error;
	const ProxyCtor = Proxy;
	const console = globalThis.console;

	// The typed arrays are made on a sandbox's first use of one (bridge.c,
	// typed_ensure), which hands their built-ins over here as they are
	// made, before any program code can touch them. Until then no binary
	// value exists to encode, and reviving one asks for them.
	let T = null;
	function typedInit(g) {
		const TypedArray = getPrototypeOf(g.Uint8Array.prototype);
		T = {
			isView: g.ArrayBuffer.isView,
			toBase64: lateUncurry(g.Uint8Array.prototype.toBase64),
			fromBase64: g.Uint8Array.fromBase64,
			typedName: lateGetter(TypedArray, toStringTag),
			typedBuffer: lateGetter(TypedArray, 'buffer'),
			typedOffset: lateGetter(TypedArray, 'byteOffset'),
			typedLength: lateGetter(TypedArray, 'byteLength'),
			viewBuffer: lateGetter(g.DataView.prototype, 'buffer'),
			viewOffset: lateGetter(g.DataView.prototype, 'byteOffset'),
			viewLength: lateGetter(g.DataView.prototype, 'byteLength'),
			bufferLength: lateGetter(g.ArrayBuffer.prototype, 'byteLength'),
			U8: g.Uint8Array,
			DV: g.DataView,
			typed: {
				__proto__: null,
				Int8Array: g.Int8Array, Uint8Array: g.Uint8Array, Uint8ClampedArray: g.Uint8ClampedArray,
				Int16Array: g.Int16Array, Uint16Array: g.Uint16Array, Int32Array: g.Int32Array,
				Uint32Array: g.Uint32Array, Float16Array: g.Float16Array, Float32Array: g.Float32Array,
				Float64Array: g.Float64Array, BigInt64Array: g.BigInt64Array, BigUint64Array: g.BigUint64Array,
			},
		};
	}

	const handles = new Map();
	let nextHandle = 1;

	const tagged = (type, buffer, offset, length) => ({ [BINARY]: type, data: T.toBase64(new T.U8(buffer, offset, length)) });

	function replacer(key, value) {
		if (typeof value === 'function') {
			const id = nextHandle++;
			mapSet(handles, id, value);
			return { [HANDLE]: id };
		}
		if (value === null || typeof value !== 'object' || T === null) {
			return value;
		}
		if (T.isView(value)) {
			const name = T.typedName(value);
			if (name !== undefined) {
				return tagged(name, T.typedBuffer(value), T.typedOffset(value), T.typedLength(value));
			}
			return tagged('DataView', T.viewBuffer(value), T.viewOffset(value), T.viewLength(value));
		}
		if (objectTag(value) === '[object ArrayBuffer]') {
			try {
				return tagged('ArrayBuffer', value, 0, T.bufferLength(value));
			} catch {
				return value; // something that only claims to be an ArrayBuffer
			}
		}
		return value;
	}

	function revive(type, data) {
		if (T === null) {
			native.typed(); // makes them, and typedInit runs
		}
		let bytes;
		try {
			bytes = T.fromBase64(data);
		} catch {
			return undefined;
		}
		const buffer = T.typedBuffer(bytes);
		const length = T.typedLength(bytes);
		if (type === 'ArrayBuffer') {
			return buffer;
		}
		if (type === 'DataView') {
			return new T.DV(buffer);
		}
		if (!hasOwn(T.typed, type)) {
			return undefined;
		}
		const Ctor = T.typed[type];
		if (length % Ctor.BYTES_PER_ELEMENT !== 0) {
			return undefined;
		}
		return new Ctor(buffer, 0, length / Ctor.BYTES_PER_ELEMENT);
	}

	function reviver(key, value) {
		if (value === null || typeof value !== 'object' || isArray(value)) {
			return value;
		}
		const type = value[BINARY];
		if (typeof type === 'string' && typeof value.data === 'string') {
			const v = revive(type, value.data);
			return v === undefined ? value : v;
		}
		const id = value[HANDLE];
		if (typeof id === 'number') {
			const fn = mapGet(handles, id);
			return fn === undefined ? value : fn;
		}
		return value;
	}

	const stringifyForDispatch = (value) => stringify(value, replacer);
	const parseForDispatch = (text) =>
		typeof text === 'string' && (includes(text, BINARY) || includes(text, HANDLE)) ? parse(text, reviver) : parse(text);

	// The result envelope: {"result": v} gives v, {"error": text} throws it,
	// anything else is the dispatch's defect. What it throws is marked as
	// the failure of provider.name, so an uncaught one is attributed to it.
	function open(envelope, provider, name) {
		let data;
		try {
			data = parseForDispatch(envelope);
		} catch {
			throw native.fail(provider, name, OUTSIDE);
		}
		if (data === null || typeof data !== 'object' || isArray(data)) {
			throw native.fail(provider, name, OUTSIDE);
		}
		if (data.error) {
			throw native.fail(provider, name, `${data.error}`);
		}
		return data.result;
	}

	const dispatch = async (provider, tool, argsJson) => native.dispatch(`${provider}`, `${tool}`, `${argsJson}`);

	// A provider tool: native.call encodes the payload as
	// stringifyForDispatch does and settles with the answer opened as open
	// does (bridge_host.c), handing text that needs the reviver to open; a
	// success comes boxed, {0: v}, so that only the tool's return reads v's
	// then.
	function tool(provider, name, positional) {
		return async (...args) => (await native.call(provider, name, positional ? args : args[0] === undefined ? {} : args[0]))[0];
	}

	// A provider: a Proxy over an empty object whose get trap returns a tool
	// function for every property a program reads, except symbol keys and
	// `then` (so awaiting the provider yields the provider), and except
	// properties written onto it, which win.
	function provider(name, positional) {
		const target = {};
		return new ProxyCtor(target, {
			get(t, key) {
				if (hasOwn(t, key)) {
					return t[key];
				}
				if (typeof key === 'symbol' || key === 'then') {
					return undefined;
				}
				return tool(name, key, positional);
			},
		});
	}

	// A host call of a handle: arguments and result cross through the codec.
	async function invoke(id, argsJson) {
		const fn = mapGet(handles, id);
		if (typeof fn !== 'function') {
			throw new ErrorCtor(`no function behind handle ${id}`);
		}
		const args = parseForDispatch(argsJson);
		return stringifyForDispatch(await fn(...(isArray(args) ? args : [args])));
	}

	return Object.freeze({
		dispatch,
		stringify: stringifyForDispatch,
		parse: parseForDispatch,
		provider,
		open,
		invoke,
		encode: stringifyForDispatch,
		console,
		typedInit,
	});
});
