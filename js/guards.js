// guards.js: the slow paths of codemode's guarded built-ins.
//
// Some built-in methods of the engine loop over a length in C without
// polling for interrupts: on an array (or array-like) whose length is
// 2^32 - 1 but holds almost nothing, a.indexOf(1) runs four billion
// iterations past any deadline. The sandbox's Array.prototype and
// String.prototype methods that can do that are guards (bridge.c): an
// ordinary receiver goes straight to the engine's own method; a receiver
// that could make it loop (a length no dense array could have under the
// memory limit, a receiver whose length cannot be read without running
// code, a string search whose naive cost is large) comes here, to the
// same algorithm written in JavaScript after the specification
// (ECMAScript 2024), whose loops poll like any script's, so the deadline,
// a cancellation or Close stops them.
//
// It is compiled once per process and evaluated on first use in a run,
// after the script may have changed any global: every built-in it relies
// on is captured from the realm's intrinsics that the native bindings
// hand over, never looked up on globalThis. Its completion value is a
// function of those bindings returning the slow paths by name.
(function (native) {
	'use strict';

	const { intrinsics, originals, isConstructor } = native;
	// The order of bridge_guards.c's intrinsic_paths (read by index: no
	// iterator, which a script may have replaced).
	const apply = intrinsics[0];
	const construct = intrinsics[1];
	const defineProperty = intrinsics[2];
	const reflectSet = intrinsics[3];
	const reflectDelete = intrinsics[4];
	const isArray = intrinsics[5];
	const getPrototypeOf = intrinsics[6];
	const getOwnPropertyNames = intrinsics[7];
	const ObjectCtor = intrinsics[8];
	const TypeErrorCtor = intrinsics[9];
	const RangeErrorCtor = intrinsics[10];
	const Int32ArrayCtor = intrinsics[11];
	const trunc = intrinsics[12];
	const min = intrinsics[13];
	const max = intrinsics[14];
	const floor = intrinsics[15];
	const species = intrinsics[16];
	const spreadable = intrinsics[17];
	const matchSymbol = intrinsics[18];
	const replaceSymbol = intrinsics[19];
	const splitSymbol = intrinsics[20];
	const call = intrinsics[23];
	const bind = intrinsics[24];
	const uncurry = (f) => apply(bind, call, [f]); // f(this, ...args)
	const charCodeAt = uncurry(intrinsics[21]);
	const substring = uncurry(intrinsics[22]);
	const isRegExp = native.isRegExp;
	const MAX_LENGTH = 2 ** 53 - 1;

	const isCallable = (f) => typeof f === 'function';
	const isObject = (v) => v !== null && (typeof v === 'object' || typeof v === 'function');

	function toObject(v) {
		if (v === undefined || v === null) {
			throw new TypeErrorCtor('cannot convert to object');
		}
		return ObjectCtor(v);
	}

	function requireCoercible(v) {
		if (v === undefined || v === null) {
			throw new TypeErrorCtor('not an object');
		}
		return v;
	}

	function toIntegerOrInfinity(v) {
		const n = +v;
		if (n !== n || n === 0) {
			return 0;
		}
		if (n === Infinity || n === -Infinity) {
			return n;
		}
		return trunc(n);
	}

	function toLength(v) {
		const n = toIntegerOrInfinity(v);
		return n <= 0 ? 0 : min(n, MAX_LENGTH);
	}

	const lengthOf = (o) => toLength(o.length);
	const toStr = (v) => `${v}`;

	// The index a relative argument names in [0, len].
	function relative(v, len) {
		const r = toIntegerOrInfinity(v);
		if (r === -Infinity) {
			return 0;
		}
		return r < 0 ? max(len + r, 0) : min(r, len);
	}

	// CreateDataPropertyOrThrow: a species constructor may return an
	// object that refuses the property (frozen, non-extensible).
	function createDataProperty(o, k, value) {
		if (!defineProperty(o, k, { __proto__: null, value, writable: true, enumerable: true, configurable: true })) {
			throw new TypeErrorCtor(`cannot define property '${k}'`);
		}
	}

	// assign sets an element of an array of our own: a plain assignment,
	// which creates it as CreateDataProperty would unless a prototype has
	// an index property or the chain was changed (then the slow way).
	function hasIndexKey(o) {
		const keys = getOwnPropertyNames(o);
		for (let i = 0; i < keys.length; i++) {
			const n = +keys[i];
			if (n >>> 0 === n && n !== 2 ** 32 - 1 && toStr(n) === keys[i]) {
				return true;
			}
		}
		return false;
	}

	function assigner() {
		const arrayProto = getPrototypeOf([]);
		const objectProto = getPrototypeOf({});
		if (getPrototypeOf(arrayProto) !== objectProto || hasIndexKey(arrayProto) || hasIndexKey(objectProto)) {
			return createDataProperty;
		}
		return (a, i, v) => {
			a[i] = v;
		};
	}

	function setOrThrow(o, k, v) {
		if (!reflectSet(o, k, v, o)) {
			throw new TypeErrorCtor(`cannot set property '${k}'`);
		}
	}

	function deleteOrThrow(o, k) {
		if (!reflectDelete(o, k)) {
			throw new TypeErrorCtor(`cannot delete property '${k}'`);
		}
	}

	function arrayCreate(length) {
		if (length > 2 ** 32 - 1) {
			throw new RangeErrorCtor('invalid array length');
		}
		const a = [];
		a.length = length;
		return a;
	}

	function arraySpeciesCreate(original, length) {
		if (!isArray(original)) {
			return arrayCreate(length);
		}
		let C = original.constructor;
		if (isObject(C)) {
			C = C[species];
			if (C === null) {
				C = undefined;
			}
		}
		if (C === undefined) {
			return arrayCreate(length);
		}
		if (!isConstructor(C)) {
			throw new TypeErrorCtor('not a constructor');
		}
		return construct(C, [length]);
	}

	function callable(f) {
		if (!isCallable(f)) {
			throw new TypeErrorCtor('not a function');
		}
		return f;
	}

	// Array.prototype

	function indexOf(searchElement, fromIndex) {
		const o = toObject(this);
		const len = lengthOf(o);
		if (len === 0) {
			return -1;
		}
		const n = toIntegerOrInfinity(fromIndex);
		if (n === Infinity) {
			return -1;
		}
		let k = n >= 0 ? n : max(len + n, 0);
		for (; k < len; k++) {
			if (k in o && o[k] === searchElement) {
				return k;
			}
		}
		return -1;
	}

	function lastIndexOf(searchElement, fromIndex) {
		const o = toObject(this);
		const len = lengthOf(o);
		if (len === 0) {
			return -1;
		}
		const n = arguments.length > 1 ? toIntegerOrInfinity(fromIndex) : len - 1;
		if (n === -Infinity) {
			return -1;
		}
		for (let k = n >= 0 ? min(n, len - 1) : len + n; k >= 0; k--) {
			if (k in o && o[k] === searchElement) {
				return k;
			}
		}
		return -1;
	}

	function includes(searchElement, fromIndex) {
		const o = toObject(this);
		const len = lengthOf(o);
		if (len === 0) {
			return false;
		}
		const n = toIntegerOrInfinity(fromIndex);
		if (n === Infinity) {
			return false;
		}
		for (let k = n >= 0 ? n : max(len + n, 0); k < len; k++) {
			const e = o[k];
			if (e === searchElement || (e !== e && searchElement !== searchElement)) {
				return true;
			}
		}
		return false;
	}

	function join(separator) {
		const o = toObject(this);
		const len = lengthOf(o);
		const sep = separator === undefined ? ',' : toStr(separator);
		let r = '';
		for (let k = 0; k < len; k++) {
			if (k > 0) {
				r += sep;
			}
			const e = o[k];
			if (e !== undefined && e !== null) {
				r += toStr(e);
			}
		}
		return r;
	}

	function toLocaleString() {
		const o = toObject(this);
		const len = lengthOf(o);
		let r = '';
		for (let k = 0; k < len; k++) {
			if (k > 0) {
				r += ',';
			}
			const e = o[k];
			if (e !== undefined && e !== null) {
				r += toStr(apply(callable(e.toLocaleString), e, []));
			}
		}
		return r;
	}

	// iterate serves every, some, forEach, map and filter.
	function iterate(self, callbackfn, thisArg, mode) {
		const o = toObject(self);
		const len = lengthOf(o);
		callable(callbackfn);
		const a = mode === 'map' ? arraySpeciesCreate(o, len) : mode === 'filter' ? arraySpeciesCreate(o, 0) : undefined;
		let to = 0;
		for (let k = 0; k < len; k++) {
			if (!(k in o)) {
				continue;
			}
			const v = o[k];
			const r = apply(callbackfn, thisArg, [v, k, o]);
			switch (mode) {
				case 'every':
					if (!r) {
						return false;
					}
					break;
				case 'some':
					if (r) {
						return true;
					}
					break;
				case 'map':
					createDataProperty(a, k, r);
					break;
				case 'filter':
					if (r) {
						createDataProperty(a, to++, v);
					}
					break;
			}
		}
		return mode === 'every' ? true : mode === 'some' ? false : a;
	}

	function every(callbackfn, thisArg) {
		return iterate(this, callbackfn, thisArg, 'every');
	}

	function some(callbackfn, thisArg) {
		return iterate(this, callbackfn, thisArg, 'some');
	}

	function forEach(callbackfn, thisArg) {
		iterate(this, callbackfn, thisArg, 'forEach');
	}

	function map(callbackfn, thisArg) {
		return iterate(this, callbackfn, thisArg, 'map');
	}

	function filter(callbackfn, thisArg) {
		return iterate(this, callbackfn, thisArg, 'filter');
	}

	function reduceIn(self, callbackfn, args, right) {
		const o = toObject(self);
		const len = lengthOf(o);
		callable(callbackfn);
		if (len === 0 && args.length < 2) {
			throw new TypeErrorCtor('empty array');
		}
		let k = right ? len - 1 : 0;
		const step = right ? -1 : 1;
		const inRange = () => (right ? k >= 0 : k < len);
		let acc;
		if (args.length >= 2) {
			acc = args[1];
		} else {
			let present = false;
			for (; !present && inRange(); k += step) {
				present = k in o;
				if (present) {
					acc = o[k];
				}
			}
			if (!present) {
				throw new TypeErrorCtor('empty array');
			}
		}
		for (; inRange(); k += step) {
			if (k in o) {
				acc = apply(callbackfn, undefined, [acc, o[k], k, o]);
			}
		}
		return acc;
	}

	function reduce(callbackfn) {
		return reduceIn(this, callbackfn, arguments, false);
	}

	function reduceRight(callbackfn) {
		return reduceIn(this, callbackfn, arguments, true);
	}

	function reverse() {
		const o = toObject(this);
		const len = lengthOf(o);
		const middle = floor(len / 2);
		for (let lower = 0; lower !== middle; lower++) {
			const upper = len - lower - 1;
			const lowerExists = lower in o;
			const lowerValue = lowerExists ? o[lower] : undefined;
			const upperExists = upper in o;
			const upperValue = upperExists ? o[upper] : undefined;
			if (lowerExists && upperExists) {
				setOrThrow(o, lower, upperValue);
				setOrThrow(o, upper, lowerValue);
			} else if (upperExists) {
				setOrThrow(o, lower, upperValue);
				deleteOrThrow(o, upper);
			} else if (lowerExists) {
				deleteOrThrow(o, lower);
				setOrThrow(o, upper, lowerValue);
			}
		}
		return o;
	}

	function copyWithin(target, start, end) {
		const o = toObject(this);
		const len = lengthOf(o);
		let to = relative(target, len);
		let from = relative(start, len);
		const final = end === undefined ? len : relative(end, len);
		let count = min(final - from, len - to);
		let direction = 1;
		if (from < to && to < from + count) {
			direction = -1;
			from += count - 1;
			to += count - 1;
		}
		for (; count > 0; count--) {
			if (from in o) {
				setOrThrow(o, to, o[from]);
			} else {
				deleteOrThrow(o, to);
			}
			from += direction;
			to += direction;
		}
		return o;
	}

	// The engine sorts this many elements in the default order without
	// calling anything in about 20 ms (it converts each element to its
	// string once, then compares strings).
	const CHUNK = 65536;

	// sortItems sorts a dense list of values, undefined last, stably. With
	// a comparator the engine's own sort calls it for every comparison, so
	// it polls. In the default order (by the elements' strings) the engine
	// compares unpolled, so a long list is sorted in chunks the engine can
	// do quickly, merged here; the strings of primitives are made once
	// (converting a primitive runs no code, so how often is unobservable),
	// objects' on every comparison, as the engine does.
	function sortItems(items, n, comparefn) {
		if (comparefn !== undefined) {
			apply(originals.sort, items, [comparefn]);
			return items;
		}
		const put = assigner();
		let m = 0;
		let primitive = true;
		const values = [];
		for (let i = 0; i < n; i++) {
			const v = items[i];
			if (v !== undefined) {
				put(values, m++, v);
				primitive = primitive && !isObject(v);
			}
		}
		let sorted;
		if (m <= CHUNK) {
			apply(originals.sort, values, []);
			sorted = values;
		} else if (primitive) {
			sorted = mergeSorted(values, m, put);
		} else {
			sorted = keySorted(values, m, put);
		}
		for (let i = m; i < n; i++) {
			put(sorted, i, undefined);
		}
		return sorted;
	}

	// keySorted sorts values in the default order by their strings, made
	// once per element as the engine makes them (an object's toString is
	// observable), through the engine's sort of their positions with a
	// comparator (which polls).
	function keySorted(values, m, put) {
		const keys = [];
		const order = [];
		for (let i = 0; i < m; i++) {
			put(keys, i, toStr(values[i]));
			put(order, i, i);
		}
		apply(originals.sort, order, [(a, b) => (keys[a] < keys[b] ? -1 : keys[a] > keys[b] ? 1 : a - b)]);
		const sorted = [];
		for (let i = 0; i < m; i++) {
			put(sorted, i, values[order[i]]);
		}
		return sorted;
	}

	// mergeSorted sorts primitives in the default order: chunks by the
	// engine, then merged pairwise by their strings (a primitive's string
	// is made again here: unobservable), the left run first on ties
	// (stable).
	function mergeSorted(values, m, put) {
		let runs = [];
		let nruns = 0;
		for (let start = 0; start < m; start += CHUNK) {
			const end = min(start + CHUNK, m);
			const chunk = [];
			for (let i = start; i < end; i++) {
				put(chunk, i - start, values[i]);
			}
			apply(originals.sort, chunk, []);
			const keys = [];
			for (let i = 0; i < end - start; i++) {
				put(keys, i, toStr(chunk[i]));
			}
			put(runs, nruns++, [chunk, keys]);
		}
		while (nruns > 1) {
			const next = [];
			let nnext = 0;
			for (let r = 0; r < nruns; r += 2) {
				if (r + 1 === nruns) {
					put(next, nnext++, runs[r]);
					break;
				}
				// (no destructuring: it would use the array iterator, which a
				// script may have replaced)
				const av = runs[r][0], ak = runs[r][1];
				const bv = runs[r + 1][0], bk = runs[r + 1][1];
				const v = [];
				const k = [];
				const an = av.length;
				const bn = bv.length;
				let i = 0;
				let j = 0;
				let t = 0;
				while (i < an && j < bn) {
					if (bk[j] < ak[i]) {
						put(v, t, bv[j]);
						put(k, t++, bk[j++]);
					} else {
						put(v, t, av[i]);
						put(k, t++, ak[i++]);
					}
				}
				for (; i < an; i++) {
					put(v, t, av[i]);
					put(k, t++, ak[i]);
				}
				for (; j < bn; j++) {
					put(v, t, bv[j]);
					put(k, t++, bk[j]);
				}
				put(next, nnext++, [v, k]);
			}
			runs = next;
			nruns = nnext;
		}
		return runs[0][0];
	}

	function sort(comparefn) {
		if (comparefn !== undefined && !isCallable(comparefn)) {
			throw new TypeErrorCtor('not a function');
		}
		const o = toObject(this);
		const len = lengthOf(o);
		let items = [];
		let n = 0;
		for (let k = 0; k < len; k++) {
			if (k in o) {
				createDataProperty(items, n++, o[k]);
			}
		}
		items = sortItems(items, n, comparefn);
		let j = 0;
		for (; j < n; j++) {
			setOrThrow(o, j, items[j]);
		}
		for (; j < len; j++) {
			deleteOrThrow(o, j);
		}
		return o;
	}

	function toSorted(comparefn) {
		if (comparefn !== undefined && !isCallable(comparefn)) {
			throw new TypeErrorCtor('not a function');
		}
		const o = toObject(this);
		const len = lengthOf(o);
		const a = arrayCreate(len);
		let items = [];
		for (let k = 0; k < len; k++) {
			createDataProperty(items, k, o[k]);
		}
		items = sortItems(items, len, comparefn);
		for (let j = 0; j < len; j++) {
			createDataProperty(a, j, items[j]);
		}
		return a;
	}

	function slice(start, end) {
		const o = toObject(this);
		const len = lengthOf(o);
		let k = relative(start, len);
		const final = end === undefined ? len : relative(end, len);
		const a = arraySpeciesCreate(o, max(final - k, 0));
		let n = 0;
		for (; k < final; k++, n++) {
			if (k in o) {
				createDataProperty(a, n, o[k]);
			}
		}
		setOrThrow(a, 'length', n);
		return a;
	}

	function isConcatSpreadable(e) {
		if (!isObject(e)) {
			return false;
		}
		const s = e[spreadable];
		return s !== undefined ? !!s : isArray(e);
	}

	function concat() {
		const o = toObject(this);
		const a = arraySpeciesCreate(o, 0);
		let n = 0;
		for (let i = -1; i < arguments.length; i++) {
			const e = i < 0 ? o : arguments[i];
			if (isConcatSpreadable(e)) {
				const len = lengthOf(e);
				if (n + len > MAX_LENGTH) {
					throw new TypeErrorCtor('array too long');
				}
				for (let k = 0; k < len; k++, n++) {
					if (k in e) {
						createDataProperty(a, n, e[k]);
					}
				}
			} else {
				if (n >= MAX_LENGTH) {
					throw new TypeErrorCtor('array too long');
				}
				createDataProperty(a, n++, e);
			}
		}
		setOrThrow(a, 'length', n);
		return a;
	}

	function flatten(target, source, sourceLen, start, depth, mapper, thisArg) {
		let targetIndex = start;
		for (let sourceIndex = 0; sourceIndex < sourceLen; sourceIndex++) {
			if (!(sourceIndex in source)) {
				continue;
			}
			let element = source[sourceIndex];
			if (mapper !== undefined) {
				element = apply(mapper, thisArg, [element, sourceIndex, source]);
			}
			if (depth > 0 && isArray(element)) {
				targetIndex = flatten(target, element, lengthOf(element), targetIndex, depth === Infinity ? Infinity : depth - 1);
			} else {
				if (targetIndex >= MAX_LENGTH) {
					throw new TypeErrorCtor('array too long');
				}
				createDataProperty(target, targetIndex++, element);
			}
		}
		return targetIndex;
	}

	function flat(depth) {
		const o = toObject(this);
		const sourceLen = lengthOf(o);
		let d = 1;
		if (depth !== undefined) {
			d = toIntegerOrInfinity(depth);
			if (d < 0) {
				d = 0;
			}
		}
		const a = arraySpeciesCreate(o, 0);
		flatten(a, o, sourceLen, 0, d);
		return a;
	}

	function flatMap(mapperFunction, thisArg) {
		const o = toObject(this);
		const sourceLen = lengthOf(o);
		callable(mapperFunction);
		const a = arraySpeciesCreate(o, 0);
		flatten(a, o, sourceLen, 0, 1, mapperFunction, thisArg);
		return a;
	}

	function splice(start, deleteCount) {
		const o = toObject(this);
		const len = lengthOf(o);
		const actualStart = relative(start, len);
		const itemCount = max(arguments.length - 2, 0);
		let deleted;
		if (arguments.length === 0) {
			deleted = 0;
		} else if (arguments.length === 1) {
			deleted = len - actualStart;
		} else {
			deleted = min(max(toIntegerOrInfinity(deleteCount), 0), len - actualStart);
		}
		if (len + itemCount - deleted > MAX_LENGTH) {
			throw new TypeErrorCtor('array too long');
		}
		const a = arraySpeciesCreate(o, deleted);
		for (let k = 0; k < deleted; k++) {
			const from = actualStart + k;
			if (from in o) {
				createDataProperty(a, k, o[from]);
			}
		}
		setOrThrow(a, 'length', deleted);
		if (itemCount < deleted) {
			for (let k = actualStart; k < len - deleted; k++) {
				const from = k + deleted;
				const to = k + itemCount;
				if (from in o) {
					setOrThrow(o, to, o[from]);
				} else {
					deleteOrThrow(o, to);
				}
			}
			for (let k = len; k > len - deleted + itemCount; k--) {
				deleteOrThrow(o, k - 1);
			}
		} else if (itemCount > deleted) {
			for (let k = len - deleted; k > actualStart; k--) {
				const from = k + deleted - 1;
				const to = k + itemCount - 1;
				if (from in o) {
					setOrThrow(o, to, o[from]);
				} else {
					deleteOrThrow(o, to);
				}
			}
		}
		for (let i = 0; i < itemCount; i++) {
			setOrThrow(o, actualStart + i, arguments[i + 2]);
		}
		setOrThrow(o, 'length', len - deleted + itemCount);
		return a;
	}

	function unshift() {
		const o = toObject(this);
		const len = lengthOf(o);
		const argCount = arguments.length;
		if (argCount > 0) {
			if (len + argCount > MAX_LENGTH) {
				throw new TypeErrorCtor('array too long');
			}
			for (let k = len; k > 0; k--) {
				const from = k - 1;
				const to = k + argCount - 1;
				if (from in o) {
					setOrThrow(o, to, o[from]);
				} else {
					deleteOrThrow(o, to);
				}
			}
			for (let j = 0; j < argCount; j++) {
				setOrThrow(o, j, arguments[j]);
			}
		}
		setOrThrow(o, 'length', len + argCount);
		return len + argCount;
	}

	function shift() {
		const o = toObject(this);
		const len = lengthOf(o);
		if (len === 0) {
			setOrThrow(o, 'length', 0);
			return undefined;
		}
		const first = o[0];
		for (let k = 1; k < len; k++) {
			if (k in o) {
				setOrThrow(o, k - 1, o[k]);
			} else {
				deleteOrThrow(o, k - 1);
			}
		}
		deleteOrThrow(o, len - 1);
		setOrThrow(o, 'length', len - 1);
		return first;
	}

	// String.prototype

	// stringIndexOf finds search in s at or after from, in time linear in
	// both lengths (Knuth-Morris-Pratt over UTF-16 code units).
	function stringIndexOf(s, search, from) {
		const n = s.length;
		const m = search.length;
		if (m === 0) {
			return from <= n ? from : -1;
		}
		if (from + m > n) {
			return -1;
		}
		const fail = new Int32ArrayCtor(m);
		for (let i = 1, k = 0; i < m; i++) {
			const c = charCodeAt(search, i);
			while (k > 0 && c !== charCodeAt(search, k)) {
				k = fail[k - 1];
			}
			if (c === charCodeAt(search, k)) {
				k++;
			}
			fail[i] = k;
		}
		for (let i = from, k = 0; i < n; i++) {
			const c = charCodeAt(s, i);
			while (k > 0 && c !== charCodeAt(search, k)) {
				k = fail[k - 1];
			}
			if (c === charCodeAt(search, k)) {
				k++;
			}
			if (k === m) {
				return i - m + 1;
			}
		}
		return -1;
	}

	// stringLastIndexOf finds the last search in s starting at or before
	// from: the same search over both strings reversed.
	function stringLastIndexOf(s, search, from) {
		const n = s.length;
		const m = search.length;
		const start = min(from, n - m);
		if (start < 0) {
			return -1;
		}
		if (m === 0) {
			return start;
		}
		const fail = new Int32ArrayCtor(m);
		const sc = (i) => charCodeAt(search, m - 1 - i);
		for (let i = 1, k = 0; i < m; i++) {
			const c = sc(i);
			while (k > 0 && c !== sc(k)) {
				k = fail[k - 1];
			}
			if (c === sc(k)) {
				k++;
			}
			fail[i] = k;
		}
		// Scan s backwards from the last position a match may end at.
		for (let i = start + m - 1, k = 0; i >= 0; i--) {
			const c = charCodeAt(s, i);
			while (k > 0 && c !== sc(k)) {
				k = fail[k - 1];
			}
			if (c === sc(k)) {
				k++;
			}
			if (k === m) {
				return i;
			}
		}
		return -1;
	}

	function isRegExpLike(v) {
		if (!isObject(v)) {
			return false;
		}
		const matcher = v[matchSymbol];
		return matcher !== undefined ? !!matcher : isRegExp(v);
	}

	function stringIndexOfMethod(searchString, position) {
		const s = toStr(requireCoercible(this));
		const search = toStr(searchString);
		const start = min(max(toIntegerOrInfinity(position), 0), s.length);
		return stringIndexOf(s, search, start);
	}

	function stringLastIndexOfMethod(searchString, position) {
		const s = toStr(requireCoercible(this));
		const search = toStr(searchString);
		const numPos = +position;
		const pos = numPos !== numPos ? Infinity : toIntegerOrInfinity(numPos);
		const start = min(max(pos, 0), s.length);
		return stringLastIndexOf(s, search, start);
	}

	function stringIncludes(searchString, position) {
		const s = toStr(requireCoercible(this));
		if (isRegExpLike(searchString)) {
			throw new TypeErrorCtor('regexp not supported');
		}
		const search = toStr(searchString);
		const start = min(max(toIntegerOrInfinity(position), 0), s.length);
		return stringIndexOf(s, search, start) !== -1;
	}

	function split(separator, limit) {
		const o = requireCoercible(this);
		// Only an object's Symbol.split is read (ECMAScript 2025; the
		// engine's): a primitive separator is a string.
		if (isObject(separator)) {
			const splitter = separator[splitSymbol];
			if (splitter !== undefined && splitter !== null) {
				return apply(callable(splitter), separator, [o, limit]);
			}
		}
		const s = toStr(o);
		const lim = limit === undefined ? 2 ** 32 - 1 : limit >>> 0;
		const r = toStr(separator);
		if (lim === 0) {
			return [];
		}
		if (separator === undefined) {
			return [s];
		}
		const out = [];
		let n = 0;
		if (r.length === 0) {
			const head = min(lim, s.length);
			for (let i = 0; i < head; i++) {
				createDataProperty(out, n++, substring(s, i, i + 1));
			}
			return out;
		}
		if (s.length === 0) {
			return [s];
		}
		let i = 0;
		for (let j = stringIndexOf(s, r, 0); j !== -1; j = stringIndexOf(s, r, i)) {
			createDataProperty(out, n++, substring(s, i, j));
			if (n === lim) {
				return out;
			}
			i = j + r.length;
		}
		createDataProperty(out, n, substring(s, i, s.length));
		return out;
	}

	// getSubstitution expands a replacement template for a string match:
	// $$, $&, $` and $' (a string pattern has no captures, so $n and $<
	// stay as they are).
	function getSubstitution(matched, str, position, template) {
		let result = '';
		const m = template.length;
		for (let i = 0; i < m; i++) {
			const c = charCodeAt(template, i);
			if (c !== 36 || i + 1 === m) { // '$'
				result += substring(template, i, i + 1);
				continue;
			}
			const d = charCodeAt(template, i + 1);
			if (d === 36) {
				result += '$';
			} else if (d === 38) { // &
				result += matched;
			} else if (d === 96) { // `
				result += substring(str, 0, position);
			} else if (d === 39) { // '
				result += substring(str, min(position + matched.length, str.length), str.length);
			} else {
				result += '$';
				continue;
			}
			i++;
		}
		return result;
	}

	function replace(searchValue, replaceValue) {
		const o = requireCoercible(this);
		if (isObject(searchValue)) {
			const replacer = searchValue[replaceSymbol];
			if (replacer !== undefined && replacer !== null) {
				return apply(callable(replacer), searchValue, [o, replaceValue]);
			}
		}
		const string = toStr(o);
		const search = toStr(searchValue);
		const functional = isCallable(replaceValue);
		const template = functional ? '' : toStr(replaceValue);
		const position = stringIndexOf(string, search, 0);
		if (position === -1) {
			return string;
		}
		const replacement = functional
			? toStr(apply(replaceValue, undefined, [search, position, string]))
			: getSubstitution(search, string, position, template);
		return substring(string, 0, position) + replacement + substring(string, position + search.length, string.length);
	}

	function replaceAll(searchValue, replaceValue) {
		const o = requireCoercible(this);
		if (isObject(searchValue)) {
			if (isRegExpLike(searchValue)) {
				const flags = requireCoercible(searchValue.flags);
				if (stringIndexOf(toStr(flags), 'g', 0) === -1) {
					throw new TypeErrorCtor('regexp must have the global flag');
				}
			}
			const replacer = searchValue[replaceSymbol];
			if (replacer !== undefined && replacer !== null) {
				return apply(callable(replacer), searchValue, [o, replaceValue]);
			}
		}
		const string = toStr(o);
		const search = toStr(searchValue);
		const functional = isCallable(replaceValue);
		const template = functional ? '' : toStr(replaceValue);
		const advanceBy = max(1, search.length);
		const positions = [];
		let count = 0;
		for (let p = stringIndexOf(string, search, 0); p !== -1; p = stringIndexOf(string, search, p + advanceBy)) {
			createDataProperty(positions, count++, p);
		}
		let end = 0;
		let result = '';
		for (let i = 0; i < count; i++) {
			const p = positions[i];
			const replacement = functional
				? toStr(apply(replaceValue, undefined, [search, p, string]))
				: getSubstitution(search, string, p, template);
			result += substring(string, end, p) + replacement;
			end = p + search.length;
		}
		if (end < string.length) {
			result += substring(string, end, string.length);
		}
		return result;
	}

	return {
		__proto__: null,
		indexOf, lastIndexOf, includes, join, toLocaleString, every, some, forEach, map, filter, reduce,
		reduceRight, reverse, copyWithin, sort, toSorted, slice, concat, flat, flatMap, splice, unshift, shift,
		'String.indexOf': stringIndexOfMethod,
		'String.lastIndexOf': stringLastIndexOfMethod,
		'String.includes': stringIncludes,
		'String.split': split,
		'String.replace': replace,
		'String.replaceAll': replaceAll,
	};
});
