// web.js: the web globals models reach for, inside the sandbox.
//
// Compiled once per process; evaluated in a sandbox the first time a
// script reads one of the globals it defines (until then each is an
// accessor on globalThis, so a run that never uses them pays nothing).
// Its completion value is a function that takes the native bindings (now:
// milliseconds since the run began, monotonic; fill: random bytes into a
// typed array, from the run's generator, seeded like Math.random; label
// and decode: TextDecoder's legacy encodings, bridge_web.c's) and
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
		#name; #message;
		constructor(message = '', name = 'Error') {
			super();
			this.#message = String(message);
			this.#name = String(name);
		}
		get name() { return this.#name; }
		get message() { return this.#message; }
		get code() { return codes[this.#name] ?? 0; }
	}
	// WebIDL's shape: the attributes enumerable, the legacy codes constants
	// on the interface and its prototype.
	for (const k of ['name', 'message', 'code']) Object.defineProperty(DOMException.prototype, k, { enumerable: true });
	for (const [k, v] of [['INDEX_SIZE_ERR', 1], ['DOMSTRING_SIZE_ERR', 2], ['HIERARCHY_REQUEST_ERR', 3], ['WRONG_DOCUMENT_ERR', 4],
		['INVALID_CHARACTER_ERR', 5], ['NO_DATA_ALLOWED_ERR', 6], ['NO_MODIFICATION_ALLOWED_ERR', 7], ['NOT_FOUND_ERR', 8],
		['NOT_SUPPORTED_ERR', 9], ['INUSE_ATTRIBUTE_ERR', 10], ['INVALID_STATE_ERR', 11], ['SYNTAX_ERR', 12],
		['INVALID_MODIFICATION_ERR', 13], ['NAMESPACE_ERR', 14], ['INVALID_ACCESS_ERR', 15], ['VALIDATION_ERR', 16],
		['TYPE_MISMATCH_ERR', 17], ['SECURITY_ERR', 18], ['NETWORK_ERR', 19], ['ABORT_ERR', 20], ['URL_MISMATCH_ERR', 21],
		['QUOTA_EXCEEDED_ERR', 22], ['TIMEOUT_ERR', 23], ['INVALID_NODE_TYPE_ERR', 24], ['DATA_CLONE_ERR', 25]]) {
		Object.defineProperty(DOMException, k, { value: v, enumerable: true });
		Object.defineProperty(DOMException.prototype, k, { value: v, enumerable: true });
	}
	Object.defineProperty(DOMException.prototype, Symbol.toStringTag, { value: 'DOMException', configurable: true });

	// ---------------------------------------------------------------- text
	// TextEncoder: UTF-8, as the Encoding Standard's always is. TextDecoder:
	// every encoding of the standard's but replacement. UTF-8 and UTF-16 are
	// decoded here; the legacy single- and multi-byte encodings on the Go
	// side (native.label, native.decode: textdecoder.go).
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

	// The Encoding Standard's labels of the encodings decoded here: UTF-8
	// and UTF-16 (little- and big-endian). Every other label is the Go
	// side's (htmlindex's table, the standard's).
	const decoderLabels = {
		__proto__: null,
		'unicode-1-1-utf-8': 'utf-8', unicode11utf8: 'utf-8', unicode20utf8: 'utf-8', 'utf-8': 'utf-8', utf8: 'utf-8',
		'x-unicode20utf8': 'utf-8',
		csunicode: 'utf-16le', 'iso-10646-ucs-2': 'utf-16le', 'ucs-2': 'utf-16le', unicode: 'utf-16le', unicodefeff: 'utf-16le',
		'utf-16': 'utf-16le', 'utf-16le': 'utf-16le',
		unicodefffe: 'utf-16be', 'utf-16be': 'utf-16be',
	};

	// A label as the standard matches it: ASCII whitespace stripped, ASCII
	// letters lowercased (toLowerCase alone would make "koi8-r" of
	// "\u212Aoi8-r", whose first letter is KELVIN SIGN), and nothing past
	// printable ASCII, which no label has.
	const labelSpace = /^[\t\n\f\r ]+|[\t\n\f\r ]+$/g;
	const labelUpper = /[A-Z]+/g;
	const labelChars = /^[\x21-\x7e]{1,64}$/;
	const replace = Function.prototype.call.bind(String.prototype.replace);
	const toLowerCase = Function.prototype.call.bind(String.prototype.toLowerCase);
	const regexpTest = Function.prototype.call.bind(RegExp.prototype.test);
	const join = Function.prototype.call.bind(Array.prototype.join);
	function encodingOf(label) {
		const exact = decoderLabels[label]; // new TextDecoder() and 'utf-8': no work
		if (exact !== undefined) return [-1, exact];
		const l = replace(replace(label, labelSpace, ''), labelUpper, toLowerCase);
		const utf = decoderLabels[l];
		if (utf !== undefined) return [-1, utf];
		if (!regexpTest(labelChars, l)) return null;
		const found = native.label(l);
		if (found === null) return null;
		const name = found[1];
		if (name === 'replacement') return null;
		return name === 'utf-8' || name === 'utf-16le' || name === 'utf-16be' ? [-1, name] : found;
	}

	function bytesOf(input) {
		if (input === undefined) return new U8(0);
		if (isView(input)) return new U8(input.buffer, input.byteOffset, input.byteLength);
		const tag = objectTag(input);
		if (tag === '[object ArrayBuffer]' || tag === '[object SharedArrayBuffer]') return new U8(input);
		throw new TypeError('decode: the input is not an ArrayBuffer or a view of one');
	}

	class TextDecoder {
		#encoding; #fatal; #ignoreBOM; #bomSeen = false;
		// A legacy encoding's: the Go side's id for it (-1 for UTF-8 and
		// UTF-16) and its decoder's state between calls, which Go packs.
		#legacy = -1; #state = 0;
		// The UTF-8 decoder's state (the Encoding Standard's).
		#needed = 0; #seen = 0; #cp = 0; #lower = 0x80; #upper = 0xbf;
		// The UTF-16 decoder's: a lead byte and a lead surrogate, -1 for none.
		#leadByte = -1; #leadSurrogate = -1;
		constructor(label = 'utf-8', options = {}) {
			const found = encodingOf(String(label));
			if (found === null) {
				throw new RangeError(`The encoding label provided ('${label}') is invalid: it names no encoding TextDecoder decodes.`);
			}
			this.#legacy = found[0];
			this.#encoding = found[1];
			this.#fatal = Boolean(options?.fatal);
			this.#ignoreBOM = Boolean(options?.ignoreBOM);
		}
		get encoding() { return this.#encoding; }
		get fatal() { return this.#fatal; }
		get ignoreBOM() { return this.#ignoreBOM; }
		decode(input, options = {}) {
			const bytes = bytesOf(input);
			const stream = Boolean(options?.stream);
			if (this.#legacy >= 0) return this.#decodeLegacy(bytes, stream);
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
					throw new TypeError(`The encoded data was not valid ${this.#encoding}.`);
				}
				emit(0xfffd);
			};
			if (this.#encoding === 'utf-8') this.#utf8(bytes, stream, emit, error);
			else this.#utf16(bytes, stream, this.#encoding === 'utf-16be', emit, error);
			out += fromCharCode(...chunk);
			if (!this.#ignoreBOM && !this.#bomSeen && out.length > 0) {
				this.#bomSeen = true;
				if (charCodeAt(out, 0) === 0xfeff) out = out.slice(1);
			}
			if (!stream) this.#bomSeen = false;
			return out;
		}
		#utf8(bytes, stream, emit, error) {
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
		}
		#utf16(bytes, stream, bigEndian, emit, error) {
			for (let i = 0; i < bytes.length; i++) {
				if (this.#leadByte < 0) {
					this.#leadByte = bytes[i];
					continue;
				}
				const unit = bigEndian ? (this.#leadByte << 8) | bytes[i] : this.#leadByte | (bytes[i] << 8);
				this.#leadByte = -1;
				if (this.#leadSurrogate >= 0) {
					const lead = this.#leadSurrogate;
					this.#leadSurrogate = -1;
					if (unit >= 0xdc00 && unit <= 0xdfff) {
						emit(0x10000 + ((lead - 0xd800) << 10) + (unit - 0xdc00));
						continue;
					}
					error(); // the unit is read again, below
				}
				if (unit >= 0xd800 && unit <= 0xdbff) this.#leadSurrogate = unit;
				else if (unit >= 0xdc00 && unit <= 0xdfff) error();
				else emit(unit);
			}
			if (!stream && (this.#leadByte >= 0 || this.#leadSurrogate >= 0)) {
				this.#leadByte = this.#leadSurrogate = -1;
				error();
			}
		}
		// A legacy encoding's decode: Go's decoder over the bytes a chunk at a
		// time (native.decode says where the next starts, or -1 once none is
		// left), from the state the last call left; the state is kept for the
		// next call while streaming and reset by Go at the end of a stream.
		// Legacy encodings have no byte order mark to strip.
		#decodeLegacy(bytes, stream) {
			const flags = (stream ? 0 : 1) | (this.#fatal ? 2 : 0);
			const parts = [];
			let n = 0;
			for (let i = 0; i >= 0;) {
				const r = native.decode(this.#legacy, this.#state, bytes, i, flags);
				if (r[0] === null) {
					this.#state = 0;
					throw new TypeError(`The encoded data was not valid ${this.#encoding}.`);
				}
				parts[n++] = r[0];
				this.#state = r[1];
				i = r[2];
			}
			return n === 1 ? parts[0] : join(parts, '');
		}
		#reset() {
			this.#needed = this.#seen = this.#cp = 0;
			this.#lower = 0x80; this.#upper = 0xbf;
			this.#leadByte = this.#leadSurrogate = -1;
			this.#bomSeen = false;
		}
	}
	Object.defineProperty(TextDecoder.prototype, Symbol.toStringTag, { value: 'TextDecoder', configurable: true });
	const utf8Decoder = new TextDecoder();

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

	const typedAt = Object.getPrototypeOf(Int8Array.prototype).at;
	// The web globals' own objects, which (but DOMException) do not clone.
	let platformPrototypes = [];
	function structuredClone(value, options = undefined) {
		if (arguments.length === 0) throw new TypeError("Failed to execute 'structuredClone': 1 argument required, but only 0 present.");
		// The transfer list: ArrayBuffers (there is nothing else here to
		// transfer), each once, none detached.
		const transfer = options?.transfer === undefined ? [] : [...options.transfer];
		for (let i = 0; i < transfer.length; i++) {
			const b = transfer[i];
			if (objectTag(b) !== '[object ArrayBuffer]') throw new DOMException('structuredClone: only an ArrayBuffer can be transferred here.', 'DataCloneError');
			if (transfer.indexOf(b) !== i) throw new DOMException('structuredClone: an ArrayBuffer is transferred twice.', 'DataCloneError');
			if (b.detached) throw new DOMException('structuredClone: a detached ArrayBuffer cannot be transferred.', 'DataCloneError');
		}
		let memory = new Map();
		const geometry = new Map();
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
				case '[object ArrayBuffer]':
					if (v.detached) throw uncloneable('A detached ArrayBuffer');
					if (v.resizable) {
						out = new ArrayBuffer(v.byteLength, { maxByteLength: v.maxByteLength });
						new U8(out).set(new U8(v));
					} else out = ArrayBuffer.prototype.slice.call(v, 0);
					break;
				case '[object DOMException]':
					out = new DOMException(v.message, v.name);
					break;
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
					out = new Ctor();
					const message = Object.getOwnPropertyDescriptor(v, 'message');
					if (message !== undefined && 'value' in message) {
						Object.defineProperty(out, 'message', { value: String(message.value), writable: true, configurable: true });
					}
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
					for (let p = Object.getPrototypeOf(v); p !== null; p = Object.getPrototypeOf(p)) {
						if (platformPrototypes.includes(p) || (urlAPI !== null && (p === urlAPI.URL.prototype || p === urlAPI.URLSearchParams.prototype))) {
							throw uncloneable(p.constructor.name + ' object');
						}
					}
					out = {};
					memory.set(v, out);
					for (const k of Object.keys(v)) out[k] = clone(v[k]);
					return out;
				default:
					if (isView(v)) {
						// A view's place in its buffer, read once (a transfer
						// detaches the buffer between the passes); an out-of-bounds
						// view, or one on a detached buffer, does not clone.
						let at = geometry.get(v);
						if (at === undefined) {
							try { v instanceof DataView ? v.byteLength : typedAt.call(v, 0); } catch { throw uncloneable('An out-of-bounds view'); }
							at = [v.byteOffset, v instanceof DataView ? v.byteLength : v.length];
							geometry.set(v, at);
						}
						const buffer = clone(v.buffer);
						if (v instanceof DataView) out = new DataView(buffer, at[0], at[1]);
						else {
							const Ctor = typedCtors[v[Symbol.toStringTag]];
							if (!Ctor) throw uncloneable(tag);
							out = new Ctor(buffer, at[0], at[1]);
						}
						break;
					}
					throw uncloneable(tag.slice(8, -1) + ' object');
			}
			memory.set(v, out);
			return out;
		};
		if (transfer.length === 0) return clone(value);
		// Serialized once with the buffers in place, so that a value that does
		// not clone detaches nothing; then again, each transferred buffer moved.
		memory = new Map(transfer.map((b) => [b, b]));
		clone(value);
		memory = new Map(transfer.map((b) => [b, ArrayBuffer.prototype.transfer.call(b)]));
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
		#type; #bubbles; #cancelable; #canceled = false; #stop = false; #target = null; #time; #trusted = false;
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
		get isTrusted() { return this.#trusted; }
		preventDefault() { if (this.#cancelable) this.#canceled = true; }
		stopPropagation() {}
		stopImmediatePropagation() { this.#stop = true; }
		static _target(e, t) { e.#target = t; e.#stop = false; }
		static _trusted(type) { const e = new Event(type); e.#trusted = true; return e; }
		static _stopped(e) { return e.#stop; }
	}
	const setTarget = Event._target, stopped = Event._stopped, trustedEvent = Event._trusted;
	delete Event._target;
	delete Event._stopped;
	delete Event._trusted;

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
		// AbortSignal.any's: a dependent signal's sources, a source's dependents.
		#dependent = false; #sources = []; #dependents = [];
		onabort = null;
		constructor(key) {
			if (key !== signalKey || key === null) throw new TypeError('Illegal constructor');
			super();
		}
		get aborted() { return this.#aborted; }
		get reason() { return this.#reason; }
		throwIfAborted() { if (this.#aborted) throw this.#reason; }
		// The DOM Standard's "signal abort": the signal and its dependents
		// take the reason first, then each fires abort, the signal first.
		static _abort(signal, reason) {
			if (signal.#aborted) return;
			signal.#aborted = true;
			signal.#reason = reason === undefined ? new DOMException('This operation was aborted', 'AbortError') : reason;
			const dependents = signal.#dependents.filter((d) => !d.#aborted);
			for (const d of dependents) {
				d.#aborted = true;
				d.#reason = signal.#reason;
			}
			signal.dispatchEvent(trustedEvent('abort'));
			for (const d of dependents) d.dispatchEvent(trustedEvent('abort'));
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
			const list = [...signals];
			for (const x of list) if (!(#aborted in x)) throw new TypeError("Failed to execute 'any' on 'AbortSignal': not an AbortSignal.");
			const s = newSignal();
			for (const x of list) {
				if (x.#aborted) {
					s.#aborted = true;
					s.#reason = x.#reason;
					return s;
				}
			}
			s.#dependent = true;
			for (const x of list) {
				for (const source of x.#dependent ? x.#sources : [x]) {
					if (s.#sources.includes(source)) continue;
					s.#sources.push(source);
					source.#dependents.push(s);
				}
			}
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
	// URL and URLSearchParams are js/url.js, a unit of their own read the
	// first time a run needs them (native.url() gives its factory).
	let urlAPI = null;
	const urlGlobals = () => (urlAPI ??= native.url()({ native, utf8Encode, TextDecoder, fromCharCode, codePointAt, charCodeAt }));

	platformPrototypes = [Event, EventTarget, AbortController, TextEncoder, TextDecoder].map((c) => c.prototype);
	const globals = {
		TextEncoder, TextDecoder, atob, btoa, structuredClone, performance, crypto,
		get URL() { return urlGlobals().URL; },
		get URLSearchParams() { return urlGlobals().URLSearchParams; },
		AbortController, AbortSignal, Event, EventTarget, DOMException,
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
			if (urlAPI !== null && body instanceof urlAPI.URLSearchParams) return [utf8Encode(body.toString()), 'application/x-www-form-urlencoded;charset=UTF-8'];
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
					const u = urlGlobals().URL.parse(String(input));
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
				return new Response(null, { status, headers: { location: new (urlGlobals().URL)(url).href } });
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
