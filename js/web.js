// web.js: the web globals models reach for, inside the sandbox.
//
// Compiled once per process; evaluated in a sandbox the first time a
// script reads one of the globals it defines (until then each is an
// accessor on globalThis, so a run that never uses them pays nothing).
// Its completion value is a function that takes the native bindings (now:
// milliseconds since the run began, monotonic; fill: random bytes into a
// typed array, from the run's generator, seeded like Math.random) and
// returns the globals. None of them opens any I/O.
(function (native) {
	'use strict';

	const { fromCharCode } = String;
	const codePointAt = Function.prototype.call.bind(String.prototype.codePointAt);
	const charCodeAt = Function.prototype.call.bind(String.prototype.charCodeAt);
	const U8 = Uint8Array;
	const isView = ArrayBuffer.isView;
	const objectTag = Function.prototype.call.bind(Object.prototype.toString);

	// DOMException, for the errors the web APIs name.
	const codes = {
		IndexSizeError: 1, HierarchyRequestError: 3, WrongDocumentError: 4, InvalidCharacterError: 5,
		NoModificationAllowedError: 7, NotFoundError: 8, NotSupportedError: 9, InvalidStateError: 11,
		SyntaxError: 12, InvalidModificationError: 13, NamespaceError: 14, InvalidAccessError: 15,
		TypeMismatchError: 17, SecurityError: 18, NetworkError: 19, AbortError: 20, URLMismatchError: 21,
		QuotaExceededError: 22, TimeoutError: 23, InvalidNodeTypeError: 24, DataCloneError: 25,
	};
	class DOMException extends Error {
		#name;
		constructor(message = '', name = 'Error') {
			super(String(message));
			this.#name = String(name);
		}
		get name() { return this.#name; }
		get code() { return codes[this.#name] ?? 0; }
	}
	Object.defineProperty(DOMException.prototype, Symbol.toStringTag, { value: 'DOMException', configurable: true });

	// ---------------------------------------------------------------- text
	// UTF-8 only, as the Encoding Standard's TextEncoder always is; a
	// TextDecoder for another label is a RangeError.
	function utf8Encode(s) {
		const out = new U8(s.length * 3);
		let n = 0;
		for (let i = 0; i < s.length; i++) {
			let c = charCodeAt(s, i);
			if (c < 0x80) {
				out[n++] = c;
				continue;
			}
			if (c >= 0xd800 && c <= 0xdfff) {
				const d = i + 1 < s.length ? charCodeAt(s, i + 1) : 0;
				if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
					c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
					i++;
				} else {
					c = 0xfffd; // a lone surrogate
				}
			}
			if (c < 0x800) {
				out[n++] = 0xc0 | (c >> 6);
				out[n++] = 0x80 | (c & 63);
			} else if (c < 0x10000) {
				out[n++] = 0xe0 | (c >> 12);
				out[n++] = 0x80 | ((c >> 6) & 63);
				out[n++] = 0x80 | (c & 63);
			} else {
				out[n++] = 0xf0 | (c >> 18);
				out[n++] = 0x80 | ((c >> 12) & 63);
				out[n++] = 0x80 | ((c >> 6) & 63);
				out[n++] = 0x80 | (c & 63);
			}
		}
		return out.slice(0, n);
	}

	class TextEncoder {
		get encoding() { return 'utf-8'; }
		encode(input = '') { return utf8Encode(String(input)); }
		encodeInto(source, destination) {
			if (!(destination instanceof U8)) throw new TypeError('encodeInto: the destination is not a Uint8Array');
			const s = String(source);
			let read = 0, written = 0;
			for (let i = 0; i < s.length;) {
				const c = codePointAt(s, i);
				const units = c > 0xffff ? 2 : 1;
				const bytes = utf8Encode(s.slice(i, i + units));
				if (written + bytes.length > destination.length) break;
				destination.set(bytes, written);
				written += bytes.length;
				read += units;
				i += units;
			}
			return { read, written };
		}
	}
	Object.defineProperty(TextEncoder.prototype, Symbol.toStringTag, { value: 'TextEncoder', configurable: true });

	const utf8Labels = ['unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'utf-8', 'utf8', 'x-unicode20utf8'];

	function bytesOf(input) {
		if (input === undefined) return new U8(0);
		if (isView(input)) return new U8(input.buffer, input.byteOffset, input.byteLength);
		const tag = objectTag(input);
		if (tag === '[object ArrayBuffer]' || tag === '[object SharedArrayBuffer]') return new U8(input);
		throw new TypeError('decode: the input is not an ArrayBuffer or a view of one');
	}

	class TextDecoder {
		#fatal; #ignoreBOM; #bomSeen = false;
		// The decoder's state (the Encoding Standard's UTF-8 decoder).
		#needed = 0; #seen = 0; #cp = 0; #lower = 0x80; #upper = 0xbf;
		constructor(label = 'utf-8', options = {}) {
			const l = String(label).trim().toLowerCase();
			if (!utf8Labels.includes(l)) throw new RangeError(`The encoding label provided ('${label}') is invalid or not supported: only utf-8 is.`);
			this.#fatal = Boolean(options?.fatal);
			this.#ignoreBOM = Boolean(options?.ignoreBOM);
		}
		get encoding() { return 'utf-8'; }
		get fatal() { return this.#fatal; }
		get ignoreBOM() { return this.#ignoreBOM; }
		decode(input, options = {}) {
			const bytes = bytesOf(input);
			const stream = Boolean(options?.stream);
			let out = '';
			let chunk = [];
			const emit = (c) => {
				if (c > 0xffff) {
					c -= 0x10000;
					chunk.push(0xd800 + (c >> 10), 0xdc00 + (c & 0x3ff));
				} else {
					chunk.push(c);
				}
				if (chunk.length >= 4096) {
					out += fromCharCode(...chunk);
					chunk = [];
				}
			};
			const error = () => {
				if (this.#fatal) {
					this.#reset();
					throw new TypeError('The encoded data was not valid utf-8.');
				}
				emit(0xfffd);
			};
			for (let i = 0; i < bytes.length; i++) {
				const b = bytes[i];
				if (this.#needed === 0) {
					if (b <= 0x7f) emit(b);
					else if (b >= 0xc2 && b <= 0xdf) { this.#needed = 1; this.#cp = b & 0x1f; }
					else if (b >= 0xe0 && b <= 0xef) {
						if (b === 0xe0) this.#lower = 0xa0;
						if (b === 0xed) this.#upper = 0x9f;
						this.#needed = 2; this.#cp = b & 0xf;
					} else if (b >= 0xf0 && b <= 0xf4) {
						if (b === 0xf0) this.#lower = 0x90;
						if (b === 0xf4) this.#upper = 0x8f;
						this.#needed = 3; this.#cp = b & 0x7;
					} else error();
					continue;
				}
				if (b < this.#lower || b > this.#upper) {
					this.#needed = this.#seen = this.#cp = 0;
					this.#lower = 0x80; this.#upper = 0xbf;
					i--; // the byte is read again
					error();
					continue;
				}
				this.#lower = 0x80; this.#upper = 0xbf;
				this.#cp = (this.#cp << 6) | (b & 0x3f);
				if (++this.#seen === this.#needed) {
					const c = this.#cp;
					this.#needed = this.#seen = this.#cp = 0;
					emit(c);
				}
			}
			if (!stream && this.#needed !== 0) {
				this.#needed = this.#seen = this.#cp = 0;
				this.#lower = 0x80; this.#upper = 0xbf;
				error();
			}
			out += fromCharCode(...chunk);
			if (!this.#ignoreBOM && !this.#bomSeen && out.length > 0) {
				this.#bomSeen = true;
				if (charCodeAt(out, 0) === 0xfeff) out = out.slice(1);
			}
			if (!stream) this.#bomSeen = false;
			return out;
		}
		#reset() {
			this.#needed = this.#seen = this.#cp = 0;
			this.#lower = 0x80; this.#upper = 0xbf;
			this.#bomSeen = false;
		}
	}
	Object.defineProperty(TextDecoder.prototype, Symbol.toStringTag, { value: 'TextDecoder', configurable: true });

	// -------------------------------------------------------------- base64
	const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
	const digit = new Int8Array(128).fill(-1);
	for (let i = 0; i < 64; i++) digit[charCodeAt(alphabet, i)] = i;

	function btoa(data) {
		if (arguments.length === 0) throw new TypeError("Failed to execute 'btoa': 1 argument required, but only 0 present.");
		const s = String(data);
		let out = '';
		for (let i = 0; i < s.length; i += 3) {
			const a = charCodeAt(s, i), b = i + 1 < s.length ? charCodeAt(s, i + 1) : 0, c = i + 2 < s.length ? charCodeAt(s, i + 2) : 0;
			if (a > 0xff || b > 0xff || c > 0xff) throw new DOMException('The string to be encoded contains characters outside of the Latin1 range.', 'InvalidCharacterError');
			const w = (a << 16) | (b << 8) | c;
			out += alphabet[w >> 18] + alphabet[(w >> 12) & 63] + (i + 1 < s.length ? alphabet[(w >> 6) & 63] : '=') + (i + 2 < s.length ? alphabet[w & 63] : '=');
		}
		return out;
	}

	// The forgiving-base64 decode of the HTML standard.
	function atob(data) {
		if (arguments.length === 0) throw new TypeError("Failed to execute 'atob': 1 argument required, but only 0 present.");
		let s = String(data).replace(/[\t\n\f\r ]/g, '');
		if (s.length % 4 === 0) s = s.replace(/==?$/, '');
		const bad = () => new DOMException('The string to be decoded is not correctly encoded.', 'InvalidCharacterError');
		if (s.length % 4 === 1) throw bad();
		let out = '', acc = 0, bits = 0;
		for (let i = 0; i < s.length; i++) {
			const c = charCodeAt(s, i);
			const d = c < 128 ? digit[c] : -1;
			if (d < 0) throw bad();
			acc = (acc << 6) | d;
			bits += 6;
			if (bits >= 8) {
				bits -= 8;
				out += fromCharCode((acc >> bits) & 0xff);
			}
		}
		return out;
	}

	// ----------------------------------------------------- structuredClone
	const typedCtors = {
		Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array,
		Float16Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array,
	};
	const errorCtors = { Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError };

	function structuredClone(value, options = undefined) {
		if (arguments.length === 0) throw new TypeError("Failed to execute 'structuredClone': 1 argument required, but only 0 present.");
		if (options?.transfer !== undefined && [...options.transfer].length > 0) {
			throw new DOMException('structuredClone: transfer is not supported in this sandbox.', 'DataCloneError');
		}
		const memory = new Map();
		const uncloneable = (what) => new DOMException(`${what} could not be cloned.`, 'DataCloneError');
		const clone = (v) => {
			const t = typeof v;
			if (t === 'symbol') throw uncloneable(String(v));
			if (t === 'function') throw uncloneable(`${v.name ? `function ${v.name}` : 'A function'}`);
			if (v === null || t !== 'object') return v;
			if (memory.has(v)) return memory.get(v);
			const tag = objectTag(v);
			let out;
			switch (tag) {
				case '[object Boolean]': out = Object(Boolean.prototype.valueOf.call(v)); break;
				case '[object Number]': out = Object(Number.prototype.valueOf.call(v)); break;
				case '[object String]': out = Object(String.prototype.valueOf.call(v)); break;
				case '[object BigInt]': out = Object(BigInt.prototype.valueOf.call(v)); break;
				case '[object Date]': out = new Date(Date.prototype.getTime.call(v)); break;
				case '[object RegExp]': out = new RegExp(v.source, v.flags); break;
				case '[object ArrayBuffer]': out = ArrayBuffer.prototype.slice.call(v, 0); break;
				case '[object Map]':
					out = new Map();
					memory.set(v, out);
					for (const [k, e] of Map.prototype.entries.call(v)) out.set(clone(k), clone(e));
					return out;
				case '[object Set]':
					out = new Set();
					memory.set(v, out);
					for (const e of Set.prototype.values.call(v)) out.add(clone(e));
					return out;
				case '[object Error]': {
					const name = String(v.name);
					const Ctor = Object.hasOwn(errorCtors, name) ? errorCtors[name] : Error;
					out = new Ctor(v.message === undefined ? undefined : String(v.message));
					memory.set(v, out);
					if (v.stack !== undefined) Object.defineProperty(out, 'stack', { value: String(v.stack), writable: true, configurable: true });
					if (Object.hasOwn(v, 'cause')) Object.defineProperty(out, 'cause', { value: clone(v.cause), writable: true, configurable: true });
					return out;
				}
				case '[object Array]':
					out = new Array(v.length);
					memory.set(v, out);
					for (const k of Object.keys(v)) out[k] = clone(v[k]);
					return out;
				case '[object Object]':
					if (Array.isArray(v)) throw uncloneable('A proxy');
					out = {};
					memory.set(v, out);
					for (const k of Object.keys(v)) out[k] = clone(v[k]);
					return out;
				default:
					if (isView(v)) {
						const buffer = clone(v.buffer);
						if (v instanceof DataView) out = new DataView(buffer, v.byteOffset, v.byteLength);
						else {
							const Ctor = typedCtors[v[Symbol.toStringTag]];
							if (!Ctor) throw uncloneable(tag);
							out = new Ctor(buffer, v.byteOffset, v.length);
						}
						break;
					}
					throw uncloneable(tag.slice(8, -1) + ' object');
			}
			memory.set(v, out);
			return out;
		};
		return clone(value);
	}

	// ---------------------------------------------------------- performance
	const origin = Date.now() - native.now();
	const performance = Object.freeze({
		now: () => native.now(),
		timeOrigin: origin,
		toJSON() { return { timeOrigin: origin }; },
		[Symbol.toStringTag]: 'Performance',
	});

	// --------------------------------------------------------------- crypto
	const integerArrays = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'BigInt64Array', 'BigUint64Array'];
	const hex = [];
	for (let i = 0; i < 256; i++) hex.push((i < 16 ? '0' : '') + i.toString(16));
	const crypto = Object.freeze({
		getRandomValues(array) {
			if (!isView(array) || array instanceof DataView || !integerArrays.includes(array[Symbol.toStringTag])) {
				throw new DOMException("Failed to execute 'getRandomValues' on 'Crypto': The provided ArrayBufferView is not an integer array type.", 'TypeMismatchError');
			}
			if (array.byteLength > 65536) {
				throw new DOMException(`Failed to execute 'getRandomValues' on 'Crypto': The ArrayBufferView's byte length (${array.byteLength}) exceeds the number of bytes of entropy available via this API (65536).`, 'QuotaExceededError');
			}
			native.fill(new U8(array.buffer, array.byteOffset, array.byteLength));
			return array;
		},
		randomUUID() {
			const b = new U8(16);
			native.fill(b);
			b[6] = (b[6] & 0x0f) | 0x40;
			b[8] = (b[8] & 0x3f) | 0x80;
			return hex[b[0]] + hex[b[1]] + hex[b[2]] + hex[b[3]] + '-' + hex[b[4]] + hex[b[5]] + '-' + hex[b[6]] + hex[b[7]] + '-' +
				hex[b[8]] + hex[b[9]] + '-' + hex[b[10]] + hex[b[11]] + hex[b[12]] + hex[b[13]] + hex[b[14]] + hex[b[15]];
		},
		[Symbol.toStringTag]: 'Crypto',
	});

	// ------------------------------------------------- events and aborting
	class Event {
		#type; #bubbles; #cancelable; #canceled = false; #stop = false; #target = null; #time;
		constructor(type, init = {}) {
			if (arguments.length === 0) throw new TypeError("Failed to construct 'Event': 1 argument required, but only 0 present.");
			this.#type = String(type);
			this.#bubbles = Boolean(init?.bubbles);
			this.#cancelable = Boolean(init?.cancelable);
			this.#time = native.now();
		}
		get type() { return this.#type; }
		get bubbles() { return this.#bubbles; }
		get cancelable() { return this.#cancelable; }
		get defaultPrevented() { return this.#canceled; }
		get target() { return this.#target; }
		get currentTarget() { return this.#target; }
		get timeStamp() { return this.#time; }
		preventDefault() { if (this.#cancelable) this.#canceled = true; }
		stopPropagation() {}
		stopImmediatePropagation() { this.#stop = true; }
		static _target(e, t) { e.#target = t; e.#stop = false; }
		static _stopped(e) { return e.#stop; }
	}
	const setTarget = Event._target, stopped = Event._stopped;
	delete Event._target;
	delete Event._stopped;

	class EventTarget {
		#listeners = new Map();
		addEventListener(type, callback, options = {}) {
			if (callback == null) return;
			const once = typeof options === 'object' && Boolean(options?.once);
			const signal = typeof options === 'object' ? options?.signal : undefined;
			if (signal?.aborted) return;
			type = String(type);
			let list = this.#listeners.get(type);
			if (!list) this.#listeners.set(type, (list = []));
			if (list.some((l) => l.callback === callback)) return;
			const entry = { callback, once };
			list.push(entry);
			signal?.addEventListener('abort', () => this.removeEventListener(type, callback));
		}
		removeEventListener(type, callback) {
			const list = this.#listeners.get(String(type));
			if (!list) return;
			const i = list.findIndex((l) => l.callback === callback);
			if (i >= 0) list.splice(i, 1);
		}
		dispatchEvent(event) {
			if (!(event instanceof Event)) throw new TypeError("Failed to execute 'dispatchEvent': parameter 1 is not of type 'Event'.");
			setTarget(event, this);
			const handler = this['on' + event.type];
			const list = [...(this.#listeners.get(event.type) ?? [])];
			if (typeof handler === 'function') list.unshift({ callback: handler, once: false, attribute: true });
			for (const l of list) {
				if (l.once) this.removeEventListener(event.type, l.callback);
				try {
					if (typeof l.callback === 'function') l.callback.call(this, event);
					else l.callback.handleEvent(event);
				} catch (e) {
					queueMicrotask(() => { throw e; });
				}
				if (stopped(event)) break;
			}
			return !event.defaultPrevented;
		}
	}

	let signalKey = null;
	class AbortSignal extends EventTarget {
		#aborted = false; #reason = undefined;
		onabort = null;
		constructor(key) {
			if (key !== signalKey || key === null) throw new TypeError('Illegal constructor');
			super();
		}
		get aborted() { return this.#aborted; }
		get reason() { return this.#reason; }
		throwIfAborted() { if (this.#aborted) throw this.#reason; }
		static _abort(signal, reason) {
			if (signal.#aborted) return;
			signal.#aborted = true;
			signal.#reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
			signal.dispatchEvent(new Event('abort'));
		}
		static abort(reason) {
			const s = newSignal();
			abortSignal(s, reason);
			return s;
		}
		static timeout(ms) {
			const s = newSignal();
			setTimeout(() => abortSignal(s, new DOMException('The operation timed out.', 'TimeoutError')), Number(ms));
			return s;
		}
		static any(signals) {
			const s = newSignal();
			for (const x of signals) {
				if (x.aborted) { abortSignal(s, x.reason); return s; }
			}
			for (const x of signals) x.addEventListener('abort', () => abortSignal(s, x.reason), { once: true });
			return s;
		}
	}
	const abortSignal = AbortSignal._abort;
	delete AbortSignal._abort;
	function newSignal() {
		signalKey = {};
		try {
			return new AbortSignal(signalKey);
		} finally {
			signalKey = null;
		}
	}

	class AbortController {
		#signal = newSignal();
		get signal() { return this.#signal; }
		abort(reason) { abortSignal(this.#signal, reason); }
	}

	// ------------------------------------------------------------------ URL
	// The WHATWG URL Standard's basic parser and serializer, for the
	// special schemes (http, https, ws, wss, ftp, file) and for opaque and
	// hierarchical others. Differences: a host that is not ASCII is refused
	// (no IDNA mapping or Punycode), and so is a host with a forbidden code
	// point; percent-decoding of hosts is supported.
	const special = { 'ftp:': '21', 'file:': '', 'http:': '80', 'https:': '443', 'ws:': '80', 'wss:': '443' };
	const C0 = (c) => c < 0x20 || c > 0x7e;
	const fragmentSet = (c) => C0(c) || c === 0x20 || c === 0x22 || c === 0x3c || c === 0x3e || c === 0x60;
	const querySet = (c) => C0(c) || c === 0x20 || c === 0x22 || c === 0x23 || c === 0x3c || c === 0x3e;
	const specialQuerySet = (c) => querySet(c) || c === 0x27;
	const pathSet = (c) => querySet(c) || c === 0x3f || c === 0x5e || c === 0x60 || c === 0x7b || c === 0x7d;
	const userinfoSet = (c) => pathSet(c) || c === 0x2f || c === 0x3a || c === 0x3b || c === 0x3d || c === 0x40 || (c >= 0x5b && c <= 0x5d) || c === 0x7c;
	const componentSet = (c) => userinfoSet(c) || (c >= 0x24 && c <= 0x26) || c === 0x2b || c === 0x2c;
	const formSet = (c) => componentSet(c) || c === 0x21 || (c >= 0x27 && c <= 0x29) || c === 0x7e;

	function percentEncode(s, set, spaceAsPlus = false) {
		let out = '';
		for (const ch of s) {
			const c = codePointAt(ch, 0);
			if (spaceAsPlus && c === 0x20) { out += '+'; continue; }
			if (c < 0x80 && !set(c)) { out += ch; continue; }
			for (const b of utf8Encode(ch)) out += '%' + (b < 16 ? '0' : '') + b.toString(16).toUpperCase();
		}
		return out;
	}

	function percentDecodeBytes(s) {
		const bytes = utf8Encode(s);
		const out = [];
		for (let i = 0; i < bytes.length; i++) {
			const b = bytes[i];
			if (b === 0x25 && i + 2 < bytes.length) {
				const h = fromCharCode(bytes[i + 1], bytes[i + 2]);
				if (/^[0-9A-Fa-f]{2}$/.test(h)) {
					out.push(parseInt(h, 16));
					i += 2;
					continue;
				}
			}
			out.push(b);
		}
		return new U8(out);
	}
	const utf8Decoder = new TextDecoder();
	const percentDecode = (s) => utf8Decoder.decode(percentDecodeBytes(s));

	const isAlpha = (c) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
	const isDigit = (c) => c >= 0x30 && c <= 0x39;
	const isWindowsLetter = (s, normalizedOnly = false) =>
		s.length === 2 && isAlpha(charCodeAt(s, 0)) && (s[1] === ':' || (!normalizedOnly && s[1] === '|'));
	const startsWithWindowsLetter = (cps, i) =>
		cps.length - i >= 2 && isAlpha(cps[i]) && (cps[i + 1] === 0x3a || cps[i + 1] === 0x7c) &&
		(cps.length - i === 2 || [0x2f, 0x5c, 0x3f, 0x23].includes(cps[i + 2]));
	const isSingleDot = (s) => s === '.' || s.toLowerCase() === '%2e';
	const isDoubleDot = (s) => ['..', '.%2e', '%2e.', '%2e%2e'].includes(s.toLowerCase());

	function parseIPv4Number(s) {
		if (s === '') return NaN;
		let radix = 10;
		if (s.length >= 2 && s[0] === '0' && (s[1] === 'x' || s[1] === 'X')) { s = s.slice(2); radix = 16; }
		else if (s.length >= 2 && s[0] === '0') { s = s.slice(1); radix = 8; }
		if (s === '') return 0;
		const re = radix === 10 ? /^[0-9]+$/ : radix === 16 ? /^[0-9A-Fa-f]+$/ : /^[0-7]+$/;
		if (!re.test(s)) return NaN;
		return parseInt(s, radix);
	}
	function endsInNumber(host) {
		const parts = host.split('.');
		if (parts[parts.length - 1] === '') {
			if (parts.length === 1) return false;
			parts.pop();
		}
		const last = parts[parts.length - 1];
		if (last !== '' && /^[0-9]+$/.test(last)) return true;
		return !Number.isNaN(parseIPv4Number(last));
	}
	function parseIPv4(host) {
		const parts = host.split('.');
		if (parts[parts.length - 1] === '' && parts.length > 1) parts.pop();
		if (parts.length > 4) return null;
		const nums = parts.map(parseIPv4Number);
		if (nums.some(Number.isNaN)) return null;
		if (nums.slice(0, -1).some((n) => n > 255)) return null;
		if (nums[nums.length - 1] >= 256 ** (5 - nums.length)) return null;
		let ip = nums[nums.length - 1];
		for (let i = 0; i < nums.length - 1; i++) ip += nums[i] * 256 ** (3 - i);
		return ip;
	}
	function parseIPv6(s) {
		const a = [0, 0, 0, 0, 0, 0, 0, 0];
		let piece = 0, compress = null, i = 0;
		const c = (k) => (k < s.length ? charCodeAt(s, k) : -1);
		const hexv = (x) => (isDigit(x) ? x - 0x30 : x >= 0x61 && x <= 0x66 ? x - 0x57 : x >= 0x41 && x <= 0x46 ? x - 0x37 : -1);
		if (c(i) === 0x3a) {
			if (c(i + 1) !== 0x3a) return null;
			i += 2; piece++; compress = piece;
		}
		while (c(i) !== -1) {
			if (piece === 8) return null;
			if (c(i) === 0x3a) {
				if (compress !== null) return null;
				i++; piece++; compress = piece;
				continue;
			}
			let value = 0, length = 0;
			while (length < 4 && hexv(c(i)) >= 0) { value = value * 16 + hexv(c(i)); i++; length++; }
			if (c(i) === 0x2e) {
				if (length === 0) return null;
				i -= length;
				if (piece > 6) return null;
				let seen = 0;
				while (c(i) !== -1) {
					let v4 = null;
					if (seen > 0) {
						if (c(i) === 0x2e && seen < 4) i++;
						else return null;
					}
					if (!isDigit(c(i))) return null;
					while (isDigit(c(i))) {
						const n = c(i) - 0x30;
						if (v4 === null) v4 = n;
						else if (v4 === 0) return null;
						else v4 = v4 * 10 + n;
						if (v4 > 255) return null;
						i++;
					}
					a[piece] = a[piece] * 0x100 + v4;
					seen++;
					if (seen === 2 || seen === 4) piece++;
				}
				if (seen !== 4) return null;
				break;
			} else if (c(i) === 0x3a) {
				i++;
				if (c(i) === -1) return null;
			} else if (c(i) !== -1) return null;
			a[piece] = value;
			piece++;
		}
		if (compress !== null) {
			let swaps = piece - compress;
			piece = 7;
			while (piece !== 0 && swaps > 0) {
				const t = a[compress + swaps - 1];
				a[compress + swaps - 1] = a[piece];
				a[piece] = t;
				piece--; swaps--;
			}
		} else if (piece !== 8) return null;
		return a;
	}
	function serializeIPv6(a) {
		let best = -1, bestLen = 1;
		for (let i = 0; i < 8;) {
			if (a[i] !== 0) { i++; continue; }
			let j = i;
			while (j < 8 && a[j] === 0) j++;
			if (j - i > bestLen) { best = i; bestLen = j - i; }
			i = j;
		}
		let out = '';
		for (let i = 0; i < 8; i++) {
			if (i === best) { out += i === 0 ? '::' : ':'; i += bestLen - 1; continue; }
			out += a[i].toString(16);
			if (i < 7) out += ':';
		}
		return '[' + out + ']';
	}
	const forbiddenHost = /[\u0000\t\n\r #/:<>?@[\\\]^|]/;
	const forbiddenDomain = /[\u0000-\u001f\t\n\r #%/:<>?@[\\\]^|\u007f]/;
	function parseHost(input, notSpecial) {
		if (input.startsWith('[')) {
			if (!input.endsWith(']')) return null;
			const a = parseIPv6(input.slice(1, -1));
			return a ? serializeIPv6(a) : null;
		}
		if (notSpecial) {
			if (forbiddenHost.test(input)) return null;
			return percentEncode(input, C0);
		}
		const domain = percentDecode(input);
		if (/[^\u0000-\u007f]/.test(domain)) return null; // no IDNA here
		const ascii = domain.toLowerCase();
		if (ascii === '' || forbiddenDomain.test(ascii)) return null;
		if (endsInNumber(ascii)) {
			const ip = parseIPv4(ascii);
			if (ip === null) return null;
			return [ip >>> 24, (ip >>> 16) & 255, (ip >>> 8) & 255, ip & 255].join('.');
		}
		return ascii;
	}

	// Parses input against base (a record or null): a record, or null on failure.
	function parseURL(input, base) {
		input = input.replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, '').replace(/[\t\n\r]/g, '');
		const cps = Array.from(input, (ch) => codePointAt(ch, 0));
		const url = { scheme: '', username: '', password: '', host: null, port: null, path: [], opaque: null, query: null, fragment: null };
		let state = 'scheme start', buffer = '', atSeen = false, insideBrackets = false, passwordSeen = false;
		const isSpecial = () => Object.hasOwn(special, url.scheme + ':');
		const shortenPath = () => {
			if (url.scheme === 'file' && url.path.length === 1 && isWindowsLetter(url.path[0], true)) return;
			url.path.pop();
		};
		for (let p = 0; p <= cps.length; p++) {
			const c = p < cps.length ? cps[p] : -1; // -1: the end
			const ch = c >= 0 ? String.fromCodePoint(c) : '';
			switch (state) {
				case 'scheme start':
					if (c >= 0 && isAlpha(c)) { buffer += ch.toLowerCase(); state = 'scheme'; }
					else { state = 'no scheme'; p--; }
					break;
				case 'scheme':
					if (c >= 0 && (isAlpha(c) || isDigit(c) || c === 0x2b || c === 0x2d || c === 0x2e)) buffer += ch.toLowerCase();
					else if (c === 0x3a) {
						url.scheme = buffer;
						buffer = '';
						if (url.scheme === 'file') state = 'file';
						else if (isSpecial() && base && base.scheme === url.scheme) state = 'special relative or authority';
						else if (isSpecial()) state = 'special authority slashes';
						else if (cps[p + 1] === 0x2f) { state = 'path or authority'; p++; }
						else { url.opaque = ''; state = 'opaque path'; }
					} else { buffer = ''; state = 'no scheme'; p = -1; }
					break;
				case 'no scheme':
					if (!base || (base.opaque !== null && c !== 0x23)) return null;
					if (base.opaque !== null && c === 0x23) {
						url.scheme = base.scheme; url.path = []; url.opaque = base.opaque; url.query = base.query; url.fragment = '';
						state = 'fragment';
					} else if (base.scheme !== 'file') { state = 'relative'; p--; }
					else { state = 'file'; p--; }
					break;
				case 'special relative or authority':
					if (c === 0x2f && cps[p + 1] === 0x2f) { state = 'special authority ignore slashes'; p++; }
					else { state = 'relative'; p--; }
					break;
				case 'path or authority':
					if (c === 0x2f) state = 'authority';
					else { state = 'path'; p--; }
					break;
				case 'relative':
					url.scheme = base.scheme;
					if (c === 0x2f) state = 'relative slash';
					else if (isSpecial() && c === 0x5c) state = 'relative slash';
					else {
						url.username = base.username; url.password = base.password; url.host = base.host; url.port = base.port;
						url.path = base.path.slice(); url.query = base.query;
						if (c === 0x3f) { url.query = ''; state = 'query'; }
						else if (c === 0x23) { url.fragment = ''; state = 'fragment'; }
						else if (c !== -1) { url.query = null; shortenPath(); state = 'path'; p--; }
					}
					break;
				case 'relative slash':
					if (isSpecial() && (c === 0x2f || c === 0x5c)) state = 'special authority ignore slashes';
					else if (c === 0x2f) state = 'authority';
					else {
						url.username = base.username; url.password = base.password; url.host = base.host; url.port = base.port;
						state = 'path'; p--;
					}
					break;
				case 'special authority slashes':
					if (c === 0x2f && cps[p + 1] === 0x2f) { state = 'special authority ignore slashes'; p++; }
					else { state = 'special authority ignore slashes'; p--; }
					break;
				case 'special authority ignore slashes':
					if (c !== 0x2f && c !== 0x5c) { state = 'authority'; p--; }
					break;
				case 'authority':
					if (c === 0x40) {
						if (atSeen) buffer = '%40' + buffer;
						atSeen = true;
						for (const bch of buffer) {
							if (bch === ':' && !passwordSeen) { passwordSeen = true; continue; }
							const enc = percentEncode(bch, userinfoSet);
							if (passwordSeen) url.password += enc; else url.username += enc;
						}
						buffer = '';
					} else if (c === -1 || c === 0x2f || c === 0x3f || c === 0x23 || (isSpecial() && c === 0x5c)) {
						if (atSeen && buffer === '') return null;
						p -= [...buffer].length + 1;
						buffer = '';
						state = 'host';
					} else buffer += ch;
					break;
				case 'host':
				case 'hostname':
					if (c === 0x3a && !insideBrackets) {
						if (buffer === '') return null;
						const h = parseHost(buffer, !isSpecial());
						if (h === null) return null;
						url.host = h; buffer = ''; state = 'port';
					} else if (c === -1 || c === 0x2f || c === 0x3f || c === 0x23 || (isSpecial() && c === 0x5c)) {
						p--;
						if (isSpecial() && buffer === '') return null;
						const h = parseHost(buffer, !isSpecial());
						if (h === null) return null;
						url.host = h; buffer = ''; state = 'path start';
					} else {
						if (c === 0x5b) insideBrackets = true;
						if (c === 0x5d) insideBrackets = false;
						buffer += ch;
					}
					break;
				case 'port':
					if (c >= 0 && isDigit(c)) buffer += ch;
					else if (c === -1 || c === 0x2f || c === 0x3f || c === 0x23 || (isSpecial() && c === 0x5c)) {
						if (buffer !== '') {
							const port = parseInt(buffer, 10);
							if (port > 65535) return null;
							url.port = special[url.scheme + ':'] === String(port) ? null : port;
							buffer = '';
						}
						state = 'path start'; p--;
					} else return null;
					break;
				case 'file':
					url.scheme = 'file';
					url.host = '';
					if (c === 0x2f || c === 0x5c) state = 'file slash';
					else if (base && base.scheme === 'file') {
						url.host = base.host; url.path = base.path.slice(); url.query = base.query;
						if (c === 0x3f) { url.query = ''; state = 'query'; }
						else if (c === 0x23) { url.fragment = ''; state = 'fragment'; }
						else if (c !== -1) {
							url.query = null;
							if (!startsWithWindowsLetter(cps, p)) shortenPath();
							else url.path = [];
							state = 'path'; p--;
						}
					} else { state = 'path'; p--; }
					break;
				case 'file slash':
					if (c === 0x2f || c === 0x5c) state = 'file host';
					else {
						if (base && base.scheme === 'file') {
							url.host = base.host;
							if (!startsWithWindowsLetter(cps, p) && base.path.length > 0 && isWindowsLetter(base.path[0], true)) url.path.push(base.path[0]);
						}
						state = 'path'; p--;
					}
					break;
				case 'file host':
					if (c === -1 || c === 0x2f || c === 0x5c || c === 0x3f || c === 0x23) {
						p--;
						if (isWindowsLetter(buffer)) state = 'path';
						else if (buffer === '') { url.host = ''; state = 'path start'; }
						else {
							let h = parseHost(buffer, false);
							if (h === null) return null;
							if (h === 'localhost') h = '';
							url.host = h; buffer = ''; state = 'path start';
						}
					} else buffer += ch;
					break;
				case 'path start':
					if (isSpecial()) { state = 'path'; if (c !== 0x2f && c !== 0x5c) p--; }
					else if (c === 0x3f) { url.query = ''; state = 'query'; }
					else if (c === 0x23) { url.fragment = ''; state = 'fragment'; }
					else if (c !== -1) { state = 'path'; if (c !== 0x2f) p--; }
					break;
				case 'path':
					if (c === -1 || c === 0x2f || (isSpecial() && c === 0x5c) || c === 0x3f || c === 0x23) {
						if (isDoubleDot(buffer)) {
							shortenPath();
							if (c !== 0x2f && !(isSpecial() && c === 0x5c)) url.path.push('');
						} else if (isSingleDot(buffer) && c !== 0x2f && !(isSpecial() && c === 0x5c)) url.path.push('');
						else if (!isSingleDot(buffer)) {
							if (url.scheme === 'file' && url.path.length === 0 && isWindowsLetter(buffer)) buffer = buffer[0] + ':';
							url.path.push(buffer);
						}
						buffer = '';
						if (c === 0x3f) { url.query = ''; state = 'query'; }
						if (c === 0x23) { url.fragment = ''; state = 'fragment'; }
					} else buffer += percentEncode(ch, pathSet);
					break;
				case 'opaque path':
					if (c === 0x3f) { url.query = ''; state = 'query'; }
					else if (c === 0x23) { url.fragment = ''; state = 'fragment'; }
					else if (c !== -1) url.opaque += percentEncode(ch, C0);
					break;
				case 'query':
					if (c === 0x23 || c === -1) {
						url.query += percentEncode(buffer, isSpecial() ? specialQuerySet : querySet);
						buffer = '';
						if (c === 0x23) { url.fragment = ''; state = 'fragment'; }
					} else buffer += ch;
					break;
				case 'fragment':
					if (c !== -1) url.fragment += percentEncode(ch, fragmentSet);
					break;
			}
		}
		return url;
	}

	function serializePath(u) {
		if (u.opaque !== null) return u.opaque;
		let out = '';
		if (u.host === null && u.path.length > 1 && u.path[0] === '') out += '/.';
		for (const seg of u.path) out += '/' + seg;
		return out;
	}
	function serializeURL(u, excludeFragment = false) {
		let out = u.scheme + ':';
		if (u.host !== null) {
			out += '//';
			if (u.username !== '' || u.password !== '') {
				out += u.username;
				if (u.password !== '') out += ':' + u.password;
				out += '@';
			}
			out += u.host;
			if (u.port !== null) out += ':' + u.port;
		}
		out += serializePath(u);
		if (u.query !== null) out += '?' + u.query;
		if (!excludeFragment && u.fragment !== null) out += '#' + u.fragment;
		return out;
	}

	function parseForm(s) {
		const out = [];
		for (const seq of s.split('&')) {
			if (seq === '') continue;
			const i = seq.indexOf('=');
			const name = i >= 0 ? seq.slice(0, i) : seq;
			const value = i >= 0 ? seq.slice(i + 1) : '';
			out.push([percentDecode(name.replace(/\+/g, ' ')), percentDecode(value.replace(/\+/g, ' '))]);
		}
		return out;
	}
	const serializeForm = (list) => list.map(([k, v]) => percentEncode(k, formSet, true) + '=' + percentEncode(v, formSet, true)).join('&');
	const usvString = (v) => String(v).toWellFormed();

	let paramsOwner = null;
	class URLSearchParams {
		#list = [];
		#url = null;
		constructor(init = undefined) {
			if (paramsOwner !== null) { this.#url = paramsOwner; paramsOwner = null; }
			if (init === undefined || init === null) return;
			if (typeof init === 'object' || typeof init === 'function') {
				if (typeof init[Symbol.iterator] === 'function') {
					for (const pair of init) {
						const p = [...pair];
						if (p.length !== 2) throw new TypeError("Failed to construct 'URLSearchParams': a sequence item has not exactly two elements.");
						this.#list.push([usvString(p[0]), usvString(p[1])]);
					}
				} else {
					for (const k of Object.keys(init)) this.#list.push([usvString(k), usvString(init[k])]);
				}
				return;
			}
			let s = usvString(init);
			if (s.startsWith('?')) s = s.slice(1);
			this.#list = parseForm(s);
		}
		static _reset(p, query) { p.#list = query === null ? [] : parseForm(query); }
		#update() {
			if (this.#url === null) return;
			const s = serializeForm(this.#list);
			this.#url.query = s === '' ? null : s;
		}
		get size() { return this.#list.length; }
		append(name, value) { this.#list.push([usvString(name), usvString(value)]); this.#update(); }
		delete(name, value = undefined) {
			name = usvString(name);
			this.#list = this.#list.filter(([k, v]) => k !== name || (value !== undefined && v !== usvString(value)));
			this.#update();
		}
		get(name) { name = usvString(name); const e = this.#list.find(([k]) => k === name); return e ? e[1] : null; }
		getAll(name) { name = usvString(name); return this.#list.filter(([k]) => k === name).map(([, v]) => v); }
		has(name, value = undefined) {
			name = usvString(name);
			return this.#list.some(([k, v]) => k === name && (value === undefined || v === usvString(value)));
		}
		set(name, value) {
			name = usvString(name); value = usvString(value);
			const i = this.#list.findIndex(([k]) => k === name);
			if (i < 0) this.#list.push([name, value]);
			else {
				this.#list[i][1] = value;
				this.#list = this.#list.filter(([k], j) => j <= i || k !== name);
			}
			this.#update();
		}
		sort() {
			this.#list = this.#list.map((e, i) => [e, i]).sort((a, b) => {
				const x = a[0][0], y = b[0][0];
				// By UTF-16 code units, stable.
				return x < y ? -1 : x > y ? 1 : a[1] - b[1];
			}).map(([e]) => e);
			this.#update();
		}
		forEach(callback, thisArg = undefined) {
			for (let i = 0; i < this.#list.length; i++) callback.call(thisArg, this.#list[i][1], this.#list[i][0], this);
		}
		*entries() { for (let i = 0; i < this.#list.length; i++) yield [this.#list[i][0], this.#list[i][1]]; }
		*keys() { for (const [k] of this.entries()) yield k; }
		*values() { for (const [, v] of this.entries()) yield v; }
		[Symbol.iterator]() { return this.entries(); }
		toString() { return serializeForm(this.#list); }
	}
	Object.defineProperty(URLSearchParams.prototype, Symbol.toStringTag, { value: 'URLSearchParams', configurable: true });
	const resetParams = URLSearchParams._reset;
	delete URLSearchParams._reset;

	class URL {
		#u; #params;
		constructor(url, base = undefined) {
			let b = null;
			if (base !== undefined) {
				b = parseURL(usvString(base), null);
				if (b === null) throw new TypeError(`Invalid base URL: ${String(base)}`);
			}
			const u = parseURL(usvString(url), b);
			if (u === null) throw new TypeError(`Invalid URL: ${String(url)}`);
			this.#u = u;
			paramsOwner = u;
			this.#params = new URLSearchParams(u.query ?? '');
		}
		static canParse(url, base = undefined) {
			try { new URL(url, base); return true; } catch { return false; }
		}
		static parse(url, base = undefined) {
			try { return new URL(url, base); } catch { return null; }
		}
		get href() { return serializeURL(this.#u); }
		set href(v) {
			const u = parseURL(usvString(v), null);
			if (u === null) throw new TypeError(`Invalid URL: ${String(v)}`);
			Object.assign(this.#u, u);
			resetParams(this.#params, u.query);
		}
		get origin() {
			const u = this.#u;
			if (u.scheme === 'blob') {
				try { return new URL(serializePath(u)).origin; } catch { return 'null'; }
			}
			if (!Object.hasOwn(special, u.scheme + ':') || u.scheme === 'file') return 'null';
			return u.scheme + '://' + u.host + (u.port !== null ? ':' + u.port : '');
		}
		get protocol() { return this.#u.scheme + ':'; }
		set protocol(v) {
			const next = parseURL(usvString(v).replace(/:.*$/s, '') + ':', null);
			if (next === null) return;
			const isSp = (s) => Object.hasOwn(special, s + ':');
			if (isSp(this.#u.scheme) !== isSp(next.scheme)) return;
			if (next.scheme === 'file' && (this.#u.username !== '' || this.#u.password !== '' || this.#u.port !== null)) return;
			if (this.#u.scheme === 'file' && this.#u.host === '') return;
			this.#u.scheme = next.scheme;
			if (special[next.scheme + ':'] === String(this.#u.port)) this.#u.port = null;
		}
		get username() { return this.#u.username; }
		set username(v) { if (this.#u.host !== null && this.#u.host !== '' && this.#u.scheme !== 'file') this.#u.username = percentEncode(usvString(v), userinfoSet); }
		get password() { return this.#u.password; }
		set password(v) { if (this.#u.host !== null && this.#u.host !== '' && this.#u.scheme !== 'file') this.#u.password = percentEncode(usvString(v), userinfoSet); }
		get host() { const u = this.#u; return u.host === null ? '' : u.host + (u.port !== null ? ':' + u.port : ''); }
		set host(v) { this.#reparse(usvString(v), 'host'); }
		get hostname() { return this.#u.host ?? ''; }
		set hostname(v) { this.#reparse(usvString(v), 'hostname'); }
		get port() { return this.#u.port === null ? '' : String(this.#u.port); }
		set port(v) {
			const s = usvString(v);
			if (this.#u.host === null || this.#u.host === '' || this.#u.scheme === 'file') return;
			if (s === '') { this.#u.port = null; return; }
			const m = /^[0-9]+/.exec(s);
			if (!m) return;
			const port = parseInt(m[0], 10);
			if (port > 65535) return;
			this.#u.port = special[this.#u.scheme + ':'] === String(port) ? null : port;
		}
		get pathname() { return serializePath(this.#u); }
		set pathname(v) {
			if (this.#u.opaque !== null) return;
			const u = parseURL(this.#u.scheme + '://h' + (usvString(v).startsWith('/') ? '' : '/') + usvString(v), null);
			if (u !== null) this.#u.path = u.path;
		}
		get search() { const q = this.#u.query; return q === null || q === '' ? '' : '?' + q; }
		set search(v) {
			let s = usvString(v);
			if (s === '') { this.#u.query = null; resetParams(this.#params, null); return; }
			if (s.startsWith('?')) s = s.slice(1);
			const special_ = Object.hasOwn(special, this.#u.scheme + ':');
			this.#u.query = percentEncode(s, special_ ? specialQuerySet : querySet);
			resetParams(this.#params, this.#u.query);
		}
		get searchParams() { return this.#params; }
		get hash() { const f = this.#u.fragment; return f === null || f === '' ? '' : '#' + f; }
		set hash(v) {
			let s = usvString(v);
			if (s === '') { this.#u.fragment = null; return; }
			if (s.startsWith('#')) s = s.slice(1);
			this.#u.fragment = percentEncode(s, fragmentSet);
		}
		#reparse(v, what) {
			const u = this.#u;
			if (u.opaque !== null) return;
			const probe = parseURL(u.scheme + '://' + v.replace(/[/?#\\].*$/s, ''), null);
			if (probe === null || probe.host === null) return;
			if (Object.hasOwn(special, u.scheme + ':') && probe.host === '') return;
			u.host = probe.host;
			if (what === 'host' && probe.port !== null) u.port = probe.port;
		}
		toString() { return this.href; }
		toJSON() { return this.href; }
	}
	Object.defineProperty(URL.prototype, Symbol.toStringTag, { value: 'URL', configurable: true });

	const globals = {
		TextEncoder, TextDecoder, atob, btoa, structuredClone, performance, crypto,
		URL, URLSearchParams, AbortController, AbortSignal, Event, EventTarget, DOMException,
	};
	if (typeof native.fetch === 'function') Object.assign(globals, fetchAPI(native.fetch));
	return globals;

	// ---------------------------------------------------------------- fetch
	// Only where the host grants the network: every request goes to its
	// handler (the internal capability call), which may refuse it.
	function fetchAPI(call) {
		const token = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
		const normalize = (v) => String(v).replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, '');
		class Headers {
			#map = new Map(); // lower-case name -> [name, [values]]
			constructor(init = undefined) {
				if (init === undefined || init === null) return;
				if (init instanceof Headers) { for (const [k, v] of init) this.append(k, v); return; }
				if (typeof init[Symbol.iterator] === 'function') {
					for (const pair of init) {
						const p = [...pair];
						if (p.length !== 2) throw new TypeError("Failed to construct 'Headers': a header pair must have exactly two items.");
						this.append(p[0], p[1]);
					}
					return;
				}
				for (const k of Object.keys(init)) this.append(k, init[k]);
			}
			#name(name) {
				name = String(name);
				if (!token.test(name)) throw new TypeError(`Headers: invalid header name: ${name}`);
				return name;
			}
			append(name, value) {
				name = this.#name(name);
				value = normalize(value);
				if (/[\0\r\n]/.test(value)) throw new TypeError(`Headers: invalid header value for ${name}`);
				const e = this.#map.get(name.toLowerCase());
				if (e) e[1].push(value);
				else this.#map.set(name.toLowerCase(), [name, [value]]);
			}
			set(name, value) { this.delete(name); this.append(name, value); }
			get(name) {
				const e = this.#map.get(this.#name(name).toLowerCase());
				return e ? e[1].join(', ') : null;
			}
			getSetCookie() { return [...(this.#map.get('set-cookie')?.[1] ?? [])]; }
			has(name) { return this.#map.has(this.#name(name).toLowerCase()); }
			delete(name) { this.#map.delete(this.#name(name).toLowerCase()); }
			forEach(callback, thisArg = undefined) { for (const [k, v] of this) callback.call(thisArg, v, k, this); }
			*entries() {
				for (const k of [...this.#map.keys()].sort()) {
					const [, values] = this.#map.get(k);
					if (k === 'set-cookie') for (const v of values) yield [k, v];
					else yield [k, values.join(', ')];
				}
			}
			*keys() { for (const [k] of this.entries()) yield k; }
			*values() { for (const [, v] of this.entries()) yield v; }
			[Symbol.iterator]() { return this.entries(); }
		}
		Object.defineProperty(Headers.prototype, Symbol.toStringTag, { value: 'Headers', configurable: true });

		// A body: its bytes and the content type it implies.
		function extract(body) {
			if (body === undefined || body === null) return [null, null];
			if (typeof body === 'string') return [utf8Encode(body), 'text/plain;charset=UTF-8'];
			if (body instanceof URLSearchParams) return [utf8Encode(body.toString()), 'application/x-www-form-urlencoded;charset=UTF-8'];
			if (isView(body)) return [new U8(body.buffer, body.byteOffset, body.byteLength).slice(), null];
			if (objectTag(body) === '[object ArrayBuffer]') return [new U8(body.slice(0)), null];
			return [utf8Encode(String(body)), 'text/plain;charset=UTF-8'];
		}
		const methods = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH'];

		class Body {
			#bytes; #used = false;
			_init(bytes) { this.#bytes = bytes; }
			get bodyUsed() { return this.#used; }
			get body() { return this.#bytes === null ? null : {}; }
			#take() {
				if (this.#used) return Promise.reject(new TypeError('Body is unusable: Body has already been read'));
				this.#used = true;
				return Promise.resolve(this.#bytes ?? new U8(0));
			}
			async bytes() { return (await this.#take()).slice(); }
			async arrayBuffer() { return (await this.#take()).slice().buffer; }
			async text() { return utf8Decoder.decode(await this.#take()); }
			async json() { return JSON.parse(await this.text()); }
			_bytes() { return this.#bytes; }
		}

		class Request extends Body {
			#url; #method; #headers; #signal; #redirect;
			constructor(input, init = {}) {
				super();
				let bytes = null;
				if (input instanceof Request) {
					this.#url = input.url; this.#method = input.method; this.#headers = new Headers(input.headers);
					this.#signal = input.signal; this.#redirect = input.redirect;
					bytes = input._bytes();
				} else {
					const u = URL.parse(String(input));
					if (u === null) throw new TypeError(`Failed to parse URL from ${String(input)}`);
					if (u.username !== '' || u.password !== '') throw new TypeError(`Request cannot be constructed from a URL that includes credentials: ${String(input)}`);
					this.#url = u.href; this.#method = 'GET'; this.#headers = new Headers(); this.#signal = new AbortController().signal; this.#redirect = 'follow';
				}
				init = init ?? {};
				if (init.method !== undefined) {
					const m = String(init.method);
					if (!token.test(m)) throw new TypeError(`'${m}' is not a valid HTTP method.`);
					this.#method = methods.includes(m.toUpperCase()) ? m.toUpperCase() : m;
				}
				if (init.headers !== undefined) this.#headers = new Headers(init.headers);
				if (init.signal !== undefined && init.signal !== null) this.#signal = init.signal;
				if (init.redirect !== undefined) this.#redirect = String(init.redirect);
				if (init.body !== undefined && init.body !== null) {
					if (this.#method === 'GET' || this.#method === 'HEAD') throw new TypeError('Request with GET/HEAD method cannot have body.');
					const [b, type] = extract(init.body);
					bytes = b;
					if (type !== null && !this.#headers.has('content-type')) this.#headers.set('content-type', type);
				}
				this._init(bytes);
			}
			get url() { return this.#url; }
			get method() { return this.#method; }
			get headers() { return this.#headers; }
			get signal() { return this.#signal; }
			get redirect() { return this.#redirect; }
			clone() { return new Request(this); }
		}
		Object.defineProperty(Request.prototype, Symbol.toStringTag, { value: 'Request', configurable: true });

		class Response extends Body {
			#status; #statusText; #headers; #url = ''; #type = 'default'; #redirected = false;
			constructor(body = null, init = {}) {
				super();
				init = init ?? {};
				const status = init.status === undefined ? 200 : Number(init.status);
				if (!Number.isInteger(status) || status < 200 || status > 599) throw new RangeError(`Failed to construct 'Response': The status provided (${init.status}) is outside the range [200, 599].`);
				this.#status = status;
				this.#statusText = init.statusText === undefined ? '' : String(init.statusText);
				this.#headers = new Headers(init.headers);
				const [bytes, type] = extract(body);
				if (type !== null && !this.#headers.has('content-type')) this.#headers.set('content-type', type);
				this._init(bytes);
			}
			static _from(r) {
				const res = new Response(null, { status: 200, headers: r.headers });
				res.#status = r.status; res.#statusText = r.statusText; res.#url = r.url; res.#redirected = Boolean(r.redirected);
				res.#type = 'basic';
				res._init(r.body instanceof U8 ? r.body : new U8(0));
				return res;
			}
			static json(data, init = {}) {
				const text = JSON.stringify(data);
				if (text === undefined) throw new TypeError('Response.json: the data is not JSON-serializable');
				const headers = new Headers(init?.headers);
				if (!headers.has('content-type')) headers.set('content-type', 'application/json');
				return new Response(text, { ...init, headers });
			}
			static error() { const r = new Response(null, { status: 200 }); r.#status = 0; r.#type = 'error'; return r; }
			static redirect(url, status = 302) {
				if (![301, 302, 303, 307, 308].includes(status)) throw new RangeError('Invalid status code');
				return new Response(null, { status, headers: { location: new URL(url).href } });
			}
			get status() { return this.#status; }
			get ok() { return this.#status >= 200 && this.#status <= 299; }
			get statusText() { return this.#statusText; }
			get headers() { return this.#headers; }
			get url() { return this.#url; }
			get type() { return this.#type; }
			get redirected() { return this.#redirected; }
			clone() {
				if (this.bodyUsed) throw new TypeError('Response.clone: Body has already been read');
				return Response._from({ status: this.#status, statusText: this.#statusText, headers: [...this.#headers], url: this.#url,
					redirected: this.#redirected, body: this._bytes() ?? new U8(0) });
			}
		}
		Object.defineProperty(Response.prototype, Symbol.toStringTag, { value: 'Response', configurable: true });
		const fromHost = Response._from;
		delete Response._from;

		async function fetch(input, init = undefined) {
			const req = new Request(input, init);
			const signal = req.signal;
			signal.throwIfAborted();
			const pending = call({ method: req.method, url: req.url, headers: [...req.headers], body: req._bytes(), redirect: req.redirect });
			let answer;
			try {
				answer = await new Promise((resolve, reject) => {
					pending.then(resolve, reject);
					signal.addEventListener('abort', () => reject(signal.reason), { once: true });
				});
			} catch (e) {
				if (signal.aborted && e === signal.reason) throw e;
				throw new TypeError('fetch failed', { cause: e });
			}
			return fromHost(answer);
		}
		return { fetch, Request, Response, Headers };
	}
})
