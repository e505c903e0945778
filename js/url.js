// url.js: URL and URLSearchParams, inside the sandbox.
//
// The WHATWG URL Standard: its basic URL parser (with the state override
// the setters use), host parser and serializers, and URLSearchParams with
// the application/x-www-form-urlencoded parser and serializer, step by
// step. A domain with a code point past ASCII goes through UTS #46
// (native.toASCII: golang.org/x/net/idna on the host side, pure
// computation); an ASCII domain is lowercased, as the standard says. The
// one difference: IDNA runs on a label of at most 255 code points (a DNS
// label has 63); past that the URL does not parse, and the error says so.
// The web-platform-tests' URL data is the test (web_wpt_test.go).
//
// Compiled once per process beside web.js and read only when a run first
// reads URL or URLSearchParams (or fetch needs them): web.js's other
// globals do not pay for its bytecode. Its completion value is a function
// of web.js's helpers that returns { URL, URLSearchParams }.
(function (helpers) {
	'use strict';
	const { native, utf8Encode, TextDecoder, fromCharCode, codePointAt, charCodeAt } = helpers;

	const specialPorts = { __proto__: null, ftp: 21, file: null, http: 80, https: 443, ws: 80, wss: 443 };
	const isSpecialScheme = (s) => s in specialPorts;
	const defaultPort = (s) => (s in specialPorts ? specialPorts[s] : undefined);
	const EOF = -1;
	// The parser's states; an override names the state a setter starts in.
	const SCHEME_START = 1, SCHEME = 2, NO_SCHEME = 3, SPECIAL_RELATIVE_OR_AUTHORITY = 4, PATH_OR_AUTHORITY = 5,
		RELATIVE = 6, RELATIVE_SLASH = 7, SPECIAL_AUTHORITY_SLASHES = 8, SPECIAL_AUTHORITY_IGNORE_SLASHES = 9,
		AUTHORITY = 10, HOST = 11, HOSTNAME = 12, PORT = 13, FILE = 14, FILE_SLASH = 15, FILE_HOST = 16,
		PATH_START = 17, PATH = 18, OPAQUE_PATH = 19, QUERY = 20, FRAGMENT = 21;

	// The percent-encode sets, as predicates on an ASCII code point (every
	// set holds every code point past ASCII).
	const C0 = (c) => c < 0x20 || c > 0x7e;
	const fragmentSet = (c) => C0(c) || c === 0x20 || c === 0x22 || c === 0x3c || c === 0x3e || c === 0x60;
	const querySet = (c) => C0(c) || c === 0x20 || c === 0x22 || c === 0x23 || c === 0x3c || c === 0x3e;
	const specialQuerySet = (c) => querySet(c) || c === 0x27;
	const pathSet = (c) => querySet(c) || c === 0x3f || c === 0x5e || c === 0x60 || c === 0x7b || c === 0x7d;
	const userinfoSet = (c) => pathSet(c) || c === 0x2f || c === 0x3a || c === 0x3b || c === 0x3d || c === 0x40 ||
		(c >= 0x5b && c <= 0x5d) || c === 0x7c;
	const componentSet = (c) => userinfoSet(c) || (c >= 0x24 && c <= 0x26) || c === 0x2b || c === 0x2c;
	const formSet = (c) => componentSet(c) || c === 0x21 || (c >= 0x27 && c <= 0x29) || c === 0x7e;

	const HEX = '0123456789ABCDEF';
	const pct = (b) => '%' + HEX[b >> 4] + HEX[b & 15];
	// UTF-8 percent-encodes code point c if set holds it.
	function encodeCP(c, set) {
		if (c < 0x80) return set(c) ? pct(c) : fromCharCode(c);
		if (c < 0x800) return pct(0xc0 | (c >> 6)) + pct(0x80 | (c & 63));
		if (c < 0x10000) return pct(0xe0 | (c >> 12)) + pct(0x80 | ((c >> 6) & 63)) + pct(0x80 | (c & 63));
		return pct(0xf0 | (c >> 18)) + pct(0x80 | ((c >> 12) & 63)) + pct(0x80 | ((c >> 6) & 63)) + pct(0x80 | (c & 63));
	}
	// UTF-8 percent-encodes a scalar-value string.
	function percentEncode(s, set, spaceAsPlus = false) {
		let out = '';
		for (let i = 0; i < s.length; i++) {
			let c = charCodeAt(s, i);
			if (c < 0x80 && !set(c)) { out += s[i]; continue; }
			if (spaceAsPlus && c === 0x20) { out += '+'; continue; }
			if (c >= 0xd800 && c <= 0xdbff) { c = codePointAt(s, i); i++; }
			out += encodeCP(c, set);
		}
		return out;
	}
	const isHex = (b) => (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66);
	const hexValue = (b) => (b <= 0x39 ? b - 0x30 : (b | 0x20) - 0x57);
	// Percent-decodes s's UTF-8 bytes.
	function percentDecodeBytes(s) {
		const bytes = utf8Encode(s);
		let n = 0;
		for (let i = 0; i < bytes.length; i++) {
			const b = bytes[i];
			if (b === 0x25 && i + 2 < bytes.length && isHex(bytes[i + 1]) && isHex(bytes[i + 2])) {
				bytes[n++] = hexValue(bytes[i + 1]) * 16 + hexValue(bytes[i + 2]);
				i += 2;
			} else bytes[n++] = b;
		}
		return bytes.subarray(0, n);
	}
	const keepBOM = new TextDecoder('utf-8', { ignoreBOM: true }); // UTF-8 decode without BOM
	const percentDecode = (s) => (s.includes('%') ? keepBOM.decode(percentDecodeBytes(s)) : s);

	const isAlpha = (c) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
	const isDigit = (c) => c >= 0x30 && c <= 0x39;
	const lower = (c) => fromCharCode(c >= 0x41 && c <= 0x5a ? c + 32 : c);
	const isWindowsLetter = (s) => s.length === 2 && isAlpha(charCodeAt(s, 0)) && (s[1] === ':' || s[1] === '|');
	const isNormalizedWindowsLetter = (s) => s !== undefined && s.length === 2 && isAlpha(charCodeAt(s, 0)) && s[1] === ':';
	const startsWithWindowsLetter = (cps, i) =>
		cps.length - i >= 2 && isAlpha(cps[i]) && (cps[i + 1] === 0x3a || cps[i + 1] === 0x7c) &&
		(cps.length - i === 2 || cps[i + 2] === 0x2f || cps[i + 2] === 0x5c || cps[i + 2] === 0x3f || cps[i + 2] === 0x23);
	const isSingleDot = (s) => s === '.' || s === '%2e' || s === '%2E';
	const isDoubleDot = (s) => {
		switch (s.length) {
			case 2: return s === '..';
			case 4: s = s.toLowerCase(); return s === '.%2e' || s === '%2e.';
			case 6: return s.toLowerCase() === '%2e%2e';
		}
		return false;
	};

	// Hosts, as the URL record holds them: serialized (a domain, an opaque
	// host, '' the empty host, a dotted IPv4 address, a bracketed IPv6 one).
	function parseIPv4Number(s) {
		if (s === '') return NaN;
		let radix = 10;
		if (s.length >= 2 && s[0] === '0' && (s[1] === 'x' || s[1] === 'X')) { s = s.slice(2); radix = 16; }
		else if (s.length >= 2 && s[0] === '0') { s = s.slice(1); radix = 8; }
		if (s === '') return 0;
		const re = radix === 10 ? /^[0-9]+$/ : radix === 16 ? /^[0-9A-Fa-f]+$/ : /^[0-7]+$/;
		return re.test(s) ? parseInt(s, radix) : NaN;
	}
	function endsInNumber(host) {
		const parts = host.split('.');
		if (parts[parts.length - 1] === '') {
			if (parts.length === 1) return false;
			parts.pop();
		}
		const last = parts[parts.length - 1];
		return /^[0-9]+$/.test(last) || !Number.isNaN(parseIPv4Number(last));
	}
	function parseIPv4(host) {
		const parts = host.split('.');
		if (parts[parts.length - 1] === '' && parts.length > 1) parts.pop();
		if (parts.length > 4) return null;
		const nums = parts.map(parseIPv4Number);
		if (nums.some(Number.isNaN)) return null;
		for (let i = 0; i < nums.length - 1; i++) if (nums[i] > 255) return null;
		if (nums[nums.length - 1] >= 256 ** (5 - nums.length)) return null;
		let ip = nums[nums.length - 1];
		for (let i = 0; i < nums.length - 1; i++) ip += nums[i] * 256 ** (3 - i);
		return [ip >>> 24, (ip >>> 16) & 255, (ip >>> 8) & 255, ip & 255].join('.');
	}
	function parseIPv6(s) {
		const a = [0, 0, 0, 0, 0, 0, 0, 0];
		let piece = 0, compress = null, i = 0;
		const c = (k) => (k < s.length ? charCodeAt(s, k) : EOF);
		if (c(i) === 0x3a) {
			if (c(i + 1) !== 0x3a) return null;
			i += 2; piece++; compress = piece;
		}
		while (c(i) !== EOF) {
			if (piece === 8) return null;
			if (c(i) === 0x3a) {
				if (compress !== null) return null;
				i++; piece++; compress = piece;
				continue;
			}
			let value = 0, length = 0;
			while (length < 4 && isHex(c(i))) { value = value * 16 + hexValue(c(i)); i++; length++; }
			if (c(i) === 0x2e) {
				if (length === 0) return null;
				i -= length;
				if (piece > 6) return null;
				let seen = 0;
				while (c(i) !== EOF) {
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
				if (c(i) === EOF) return null;
			} else if (c(i) !== EOF) return null;
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
		// Serialized, the longest run of two or more zero pieces compressed.
		let best = -1, bestLen = 1;
		for (let k = 0; k < 8;) {
			if (a[k] !== 0) { k++; continue; }
			let j = k;
			while (j < 8 && a[j] === 0) j++;
			if (j - k > bestLen) { best = k; bestLen = j - k; }
			k = j;
		}
		let out = '[';
		for (let k = 0; k < 8; k++) {
			if (k === best) { out += k === 0 ? '::' : ':'; k += bestLen - 1; continue; }
			out += a[k].toString(16);
			if (k < 7) out += ':';
		}
		return out + ']';
	}
	const forbiddenHost = /[\u0000\t\n\r #/:<>?@[\\\]^|]/;
	const forbiddenDomain = /[\u0000-\u001f #%/:<>?@[\\\]^|\u007f]/;
	const nonASCII = /[^\u0000-\u007f]/;
	// Why the last host failed, when the standard does not say (the bound
	// IDNA runs on); the constructor's error names it.
	let hostRefusal = '';
	function domainToASCII(domain) {
		let ascii;
		if (!nonASCII.test(domain)) ascii = domain.toLowerCase();
		else {
			ascii = native.toASCII(domain);
			if (ascii === false) hostRefusal = ' (IDNA runs on a host label of at most 255 code points)';
			if (typeof ascii !== 'string') return null;
		}
		return ascii === '' || forbiddenDomain.test(ascii) ? null : ascii;
	}
	function parseHost(input, notSpecial) {
		if (input[0] === '[') return input[input.length - 1] === ']' ? parseIPv6(input.slice(1, -1)) : null;
		if (notSpecial) return forbiddenHost.test(input) ? null : percentEncode(input, C0);
		const ascii = domainToASCII(percentDecode(input));
		if (ascii === null) return null;
		return endsInNumber(ascii) ? parseIPv4(ascii) : ascii;
	}

	const newURLRecord = () => ({ scheme: '', username: '', password: '', host: null, port: null, path: [], query: null, fragment: null });
	const isSpecial = (u) => u.scheme in specialPorts;
	const hasOpaquePath = (u) => typeof u.path === 'string';
	const includesCredentials = (u) => u.username !== '' || u.password !== '';
	const cannotHaveCredentialsOrPort = (u) => u.host === null || u.host === '' || u.scheme === 'file';
	function shortenPath(u) {
		if (u.scheme === 'file' && u.path.length === 1 && isNormalizedWindowsLetter(u.path[0])) return;
		u.path.pop();
	}
	const trimC0Space = /^[\u0000-\u0020]+|[\u0000-\u0020]+$/g;
	const tabOrNewline = /[\t\n\r]/g;

	// The basic URL parser: input (a scalar-value string) against base (a
	// record or null) into url (a new record unless a setter gives one), from
	// state override (0: none). The record, or null on failure; with an
	// override, url is changed in place as far as the parse got.
	function basicParse(input, base = null, url = null, override = 0) {
		if (url === null) {
			url = newURLRecord();
			input = input.replace(trimC0Space, '');
		}
		input = input.replace(tabOrNewline, '');
		const cps = [];
		for (let i = 0; i < input.length; i++) {
			const c = codePointAt(input, i);
			cps.push(c);
			if (c > 0xffff) i++;
		}
		let state = override || SCHEME_START;
		let buffer = '', atSignSeen = false, insideBrackets = false, passwordTokenSeen = false;
		for (let p = 0; p <= cps.length; p++) {
			const c = p < cps.length ? cps[p] : EOF;
			switch (state) {
				case SCHEME_START:
					if (isAlpha(c)) { buffer += lower(c); state = SCHEME; }
					else if (!override) { state = NO_SCHEME; p--; }
					else return null;
					break;
				case SCHEME:
					if (isAlpha(c) || isDigit(c) || c === 0x2b || c === 0x2d || c === 0x2e) buffer += lower(c);
					else if (c === 0x3a) {
						if (override) {
							if (isSpecial(url) !== isSpecialScheme(buffer)) return url;
							if ((includesCredentials(url) || url.port !== null) && buffer === 'file') return url;
							if (url.scheme === 'file' && url.host === '') return url;
						}
						url.scheme = buffer;
						if (override) {
							if (url.port === defaultPort(url.scheme)) url.port = null;
							return url;
						}
						buffer = '';
						if (url.scheme === 'file') state = FILE;
						else if (isSpecial(url) && base !== null && base.scheme === url.scheme) state = SPECIAL_RELATIVE_OR_AUTHORITY;
						else if (isSpecial(url)) state = SPECIAL_AUTHORITY_SLASHES;
						else if (cps[p + 1] === 0x2f) { state = PATH_OR_AUTHORITY; p++; }
						else { url.path = ''; state = OPAQUE_PATH; }
					} else if (!override) { buffer = ''; state = NO_SCHEME; p = -1; }
					else return null;
					break;
				case NO_SCHEME:
					if (base === null || (hasOpaquePath(base) && c !== 0x23)) return null;
					if (hasOpaquePath(base)) {
						url.scheme = base.scheme; url.path = base.path; url.query = base.query; url.fragment = '';
						state = FRAGMENT;
					} else { state = base.scheme === 'file' ? FILE : RELATIVE; p--; }
					break;
				case SPECIAL_RELATIVE_OR_AUTHORITY:
					if (c === 0x2f && cps[p + 1] === 0x2f) { state = SPECIAL_AUTHORITY_IGNORE_SLASHES; p++; }
					else { state = RELATIVE; p--; }
					break;
				case PATH_OR_AUTHORITY:
					if (c === 0x2f) state = AUTHORITY;
					else { state = PATH; p--; }
					break;
				case RELATIVE:
					url.scheme = base.scheme;
					if (c === 0x2f || (isSpecial(url) && c === 0x5c)) state = RELATIVE_SLASH;
					else {
						url.username = base.username; url.password = base.password; url.host = base.host; url.port = base.port;
						url.path = base.path.slice(); url.query = base.query;
						if (c === 0x3f) { url.query = ''; state = QUERY; }
						else if (c === 0x23) { url.fragment = ''; state = FRAGMENT; }
						else if (c !== EOF) { url.query = null; shortenPath(url); state = PATH; p--; }
					}
					break;
				case RELATIVE_SLASH:
					if (isSpecial(url) && (c === 0x2f || c === 0x5c)) state = SPECIAL_AUTHORITY_IGNORE_SLASHES;
					else if (c === 0x2f) state = AUTHORITY;
					else {
						url.username = base.username; url.password = base.password; url.host = base.host; url.port = base.port;
						state = PATH; p--;
					}
					break;
				case SPECIAL_AUTHORITY_SLASHES:
					state = SPECIAL_AUTHORITY_IGNORE_SLASHES;
					if (c === 0x2f && cps[p + 1] === 0x2f) p++;
					else p--;
					break;
				case SPECIAL_AUTHORITY_IGNORE_SLASHES:
					if (c !== 0x2f && c !== 0x5c) { state = AUTHORITY; p--; }
					break;
				case AUTHORITY:
					if (c === 0x40) {
						if (atSignSeen) buffer = '%40' + buffer;
						atSignSeen = true;
						for (let i = 0; i < buffer.length; i++) {
							let b = charCodeAt(buffer, i);
							if (b === 0x3a && !passwordTokenSeen) { passwordTokenSeen = true; continue; }
							if (b >= 0xd800 && b <= 0xdbff) { b = codePointAt(buffer, i); i++; }
							if (passwordTokenSeen) url.password += encodeCP(b, userinfoSet);
							else url.username += encodeCP(b, userinfoSet);
						}
						buffer = '';
					} else if (c === EOF || c === 0x2f || c === 0x3f || c === 0x23 || (isSpecial(url) && c === 0x5c)) {
						if (atSignSeen && buffer === '') return null;
						p -= [...buffer].length + 1; // in code points, as cps is
						buffer = '';
						state = HOST;
					} else buffer += String.fromCodePoint(c);
					break;
				case HOST:
				case HOSTNAME:
					if (override && url.scheme === 'file') { p--; state = FILE_HOST; }
					else if (c === 0x3a && !insideBrackets) {
						if (buffer === '' || override === HOSTNAME) return null;
						const host = parseHost(buffer, !isSpecial(url));
						if (host === null) return null;
						url.host = host; buffer = ''; state = PORT;
					} else if (c === EOF || c === 0x2f || c === 0x3f || c === 0x23 || (isSpecial(url) && c === 0x5c)) {
						p--;
						if (isSpecial(url) && buffer === '') return null;
						if (override && buffer === '' && (includesCredentials(url) || url.port !== null)) return null;
						const host = parseHost(buffer, !isSpecial(url));
						if (host === null) return null;
						url.host = host; buffer = ''; state = PATH_START;
						if (override) return url;
					} else {
						if (c === 0x5b) insideBrackets = true;
						if (c === 0x5d) insideBrackets = false;
						buffer += String.fromCodePoint(c);
					}
					break;
				case PORT:
					if (isDigit(c)) buffer += fromCharCode(c);
					else if (c === EOF || c === 0x2f || c === 0x3f || c === 0x23 || (isSpecial(url) && c === 0x5c) || override) {
						if (buffer !== '') {
							const port = parseInt(buffer, 10);
							if (port > 65535) return null;
							url.port = port === defaultPort(url.scheme) ? null : port;
							buffer = '';
							if (override) return url;
						}
						if (override) return null;
						state = PATH_START; p--;
					} else return null;
					break;
				case FILE:
					url.scheme = 'file';
					url.host = '';
					if (c === 0x2f || c === 0x5c) state = FILE_SLASH;
					else if (base !== null && base.scheme === 'file') {
						url.host = base.host; url.path = base.path.slice(); url.query = base.query;
						if (c === 0x3f) { url.query = ''; state = QUERY; }
						else if (c === 0x23) { url.fragment = ''; state = FRAGMENT; }
						else if (c !== EOF) {
							url.query = null;
							if (!startsWithWindowsLetter(cps, p)) shortenPath(url);
							else url.path = [];
							state = PATH; p--;
						}
					} else { state = PATH; p--; }
					break;
				case FILE_SLASH:
					if (c === 0x2f || c === 0x5c) state = FILE_HOST;
					else {
						if (base !== null && base.scheme === 'file') {
							if (!startsWithWindowsLetter(cps, p) && isNormalizedWindowsLetter(base.path[0])) url.path.push(base.path[0]);
							url.host = base.host;
						}
						state = PATH; p--;
					}
					break;
				case FILE_HOST:
					if (c === EOF || c === 0x2f || c === 0x5c || c === 0x3f || c === 0x23) {
						p--;
						if (!override && isWindowsLetter(buffer)) state = PATH;
						else if (buffer === '') {
							url.host = '';
							if (override) return url;
							state = PATH_START;
						} else {
							let host = parseHost(buffer, false);
							if (host === null) return null;
							if (host === 'localhost') host = '';
							url.host = host;
							if (override) return url;
							buffer = ''; state = PATH_START;
						}
					} else buffer += String.fromCodePoint(c);
					break;
				case PATH_START:
					if (isSpecial(url)) { state = PATH; if (c !== 0x2f && c !== 0x5c) p--; }
					else if (!override && c === 0x3f) { url.query = ''; state = QUERY; }
					else if (!override && c === 0x23) { url.fragment = ''; state = FRAGMENT; }
					else if (c !== EOF) { state = PATH; if (c !== 0x2f) p--; }
					else if (override && url.host === null) url.path.push('');
					break;
				case PATH: {
					const slash = c === 0x2f || (c === 0x5c && isSpecial(url));
					if (c === EOF || slash || (!override && (c === 0x3f || c === 0x23))) {
						if (isDoubleDot(buffer)) {
							shortenPath(url);
							if (!slash) url.path.push('');
						} else if (isSingleDot(buffer)) {
							if (!slash) url.path.push('');
						} else {
							if (url.scheme === 'file' && url.path.length === 0 && isWindowsLetter(buffer)) buffer = buffer[0] + ':';
							url.path.push(buffer);
						}
						buffer = '';
						if (c === 0x3f) { url.query = ''; state = QUERY; }
						else if (c === 0x23) { url.fragment = ''; state = FRAGMENT; }
					} else buffer += encodeCP(c, pathSet);
					break;
				}
				case OPAQUE_PATH:
					if (c === 0x3f) { url.query = ''; state = QUERY; }
					else if (c === 0x23) { url.fragment = ''; state = FRAGMENT; }
					else if (c === 0x20) url.path += cps[p + 1] === 0x3f || cps[p + 1] === 0x23 ? '%20' : ' ';
					else if (c !== EOF) url.path += encodeCP(c, C0);
					break;
				case QUERY:
					if (c === EOF || (!override && c === 0x23)) {
						url.query += percentEncode(buffer, isSpecial(url) ? specialQuerySet : querySet);
						buffer = '';
						if (c === 0x23) { url.fragment = ''; state = FRAGMENT; }
					} else buffer += String.fromCodePoint(c);
					break;
				case FRAGMENT:
					if (c !== EOF) url.fragment += encodeCP(c, fragmentSet);
					break;
			}
		}
		return url;
	}

	function serializePath(u) {
		if (hasOpaquePath(u)) return u.path;
		let out = '';
		for (const seg of u.path) out += '/' + seg;
		return out;
	}
	function serializeURL(u, excludeFragment = false) {
		let out = u.scheme + ':';
		if (u.host !== null) {
			out += '//';
			if (includesCredentials(u)) {
				out += u.username;
				if (u.password !== '') out += ':' + u.password;
				out += '@';
			}
			out += u.host;
			if (u.port !== null) out += ':' + u.port;
		} else if (!hasOpaquePath(u) && u.path.length > 1 && u.path[0] === '') out += '/.';
		out += serializePath(u);
		if (u.query !== null) out += '?' + u.query;
		if (!excludeFragment && u.fragment !== null) out += '#' + u.fragment;
		return out;
	}
	function serializeOrigin(u) {
		if (u.scheme === 'blob') {
			const inner = basicParse(serializePath(u));
			return inner !== null && (inner.scheme === 'http' || inner.scheme === 'https') ? serializeOrigin(inner) : 'null';
		}
		if (!isSpecial(u) || u.scheme === 'file') return 'null';
		return u.scheme + '://' + u.host + (u.port !== null ? ':' + u.port : '');
	}

	// application/x-www-form-urlencoded.
	function parseForm(s) {
		const out = [];
		for (const seq of s.split('&')) {
			if (seq === '') continue;
			const i = seq.indexOf('=');
			const name = i >= 0 ? seq.slice(0, i) : seq;
			const value = i >= 0 ? seq.slice(i + 1) : '';
			out.push([percentDecode(name.replaceAll('+', ' ')), percentDecode(value.replaceAll('+', ' '))]);
		}
		return out;
	}
	function serializeForm(list) {
		let out = '';
		for (let i = 0; i < list.length; i++) {
			if (i > 0) out += '&';
			out += percentEncode(list[i][0], formSet, true) + '=' + percentEncode(list[i][1], formSet, true);
		}
		return out;
	}
	// WebIDL's USVString: ToString (a Symbol throws), lone surrogates replaced.
	const usvString = (v) => `${v}`.toWellFormed();
	function needArgs(n, name, args) {
		if (args.length < n) throw new TypeError(`${name}: ${n} argument${n > 1 ? 's' : ''} required, but only ${args.length} present.`);
	}

	let paramsOwner = null; // the URL record of the URLSearchParams being made for a URL
	let setParams; // replaces a URLSearchParams's list with a query's pairs
	let paramsIterator; // an iterator over a URLSearchParams's pairs (kind 0: names, 1: values, 2: both)
	class URLSearchParams {
		#list = [];
		#url = null;
		constructor(init = '') {
			if (paramsOwner !== null) { this.#url = paramsOwner; paramsOwner = null; }
			if (init !== null && (typeof init === 'object' || typeof init === 'function')) {
				const iter = init[Symbol.iterator];
				if (iter !== undefined && iter !== null) {
					if (typeof iter !== 'function') throw new TypeError("Failed to construct 'URLSearchParams': The object's @@iterator is not callable.");
					for (const pair of { [Symbol.iterator]: () => iter.call(init) }) {
						if (pair === null || (typeof pair !== 'object' && typeof pair !== 'function')) {
							throw new TypeError("Failed to construct 'URLSearchParams': a sequence item is not a sequence.");
						}
						const p = Array.from(pair, usvString);
						if (p.length !== 2) throw new TypeError("Failed to construct 'URLSearchParams': a sequence item has not exactly two elements.");
						this.#list.push(p);
					}
				} else {
					// WebIDL's record: keys converted to scalar values, a key
					// converted twice keeping its first place and its last value.
					const record = new Map();
					for (const k of Reflect.ownKeys(init)) {
						const d = Reflect.getOwnPropertyDescriptor(init, k);
						if (d !== undefined && d.enumerable) record.set(usvString(k), usvString(init[k]));
					}
					this.#list = [...record];
				}
				return;
			}
			let s = usvString(init);
			if (s[0] === '?') s = s.slice(1);
			this.#list = parseForm(s);
		}
		static {
			setParams = (p, query) => { p.#list = query === null ? [] : parseForm(query); };
		}
		#update() {
			if (this.#url === null) return;
			const s = serializeForm(this.#list);
			this.#url.query = s === '' ? null : s;
		}
		get size() { return this.#list.length; }
		append(name, value) {
			needArgs(2, 'append', arguments);
			this.#list.push([usvString(name), usvString(value)]);
			this.#update();
		}
		delete(name, value = undefined) {
			needArgs(1, 'delete', arguments);
			name = usvString(name);
			if (value !== undefined) value = usvString(value);
			this.#list = this.#list.filter(([k, v]) => k !== name || (value !== undefined && v !== value));
			this.#update();
		}
		get(name) {
			needArgs(1, 'get', arguments);
			name = usvString(name);
			const e = this.#list.find(([k]) => k === name);
			return e ? e[1] : null;
		}
		getAll(name) {
			needArgs(1, 'getAll', arguments);
			name = usvString(name);
			return this.#list.filter(([k]) => k === name).map(([, v]) => v);
		}
		has(name, value = undefined) {
			needArgs(1, 'has', arguments);
			name = usvString(name);
			if (value !== undefined) value = usvString(value);
			return this.#list.some(([k, v]) => k === name && (value === undefined || v === value));
		}
		set(name, value) {
			needArgs(2, 'set', arguments);
			name = usvString(name); value = usvString(value);
			const i = this.#list.findIndex(([k]) => k === name);
			if (i < 0) this.#list.push([name, value]);
			else {
				this.#list[i] = [name, value];
				this.#list = this.#list.filter(([k], j) => j <= i || k !== name);
			}
			this.#update();
		}
		sort() {
			// Stable, by UTF-16 code units.
			this.#list = this.#list.map((e, i) => [e, i]).sort((a, b) => {
				const x = a[0][0], y = b[0][0];
				return x < y ? -1 : x > y ? 1 : a[1] - b[1];
			}).map(([e]) => e);
			this.#update();
		}
		forEach(callback, thisArg = undefined) {
			needArgs(1, 'forEach', arguments);
			if (typeof callback !== 'function') throw new TypeError('forEach: the callback is not a function');
			for (let i = 0; i < this.#list.length; i++) callback.call(thisArg, this.#list[i][1], this.#list[i][0], this);
		}
		entries() { return paramsIterator(this, 2); }
		keys() { return paramsIterator(this, 0); }
		values() { return paramsIterator(this, 1); }
		toString() { return serializeForm(this.#list); }
		static {
			// The iterators read the list as it is at each step, as WebIDL's do.
			const listOf = (p) => p.#list;
			const IteratorPrototype = Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()));
			const proto = Object.create(IteratorPrototype, {
				[Symbol.toStringTag]: { value: 'URLSearchParams Iterator', configurable: true },
			});
			const states = new WeakMap();
			Object.defineProperty(proto, 'next', {
				value: function next() {
					const st = states.get(this);
					if (st === undefined) throw new TypeError('next: not a URLSearchParams iterator');
					const list = listOf(st.p);
					if (st.i >= list.length) return { value: undefined, done: true };
					const [k, v] = list[st.i++];
					return { value: st.kind === 0 ? k : st.kind === 1 ? v : [k, v], done: false };
				},
				writable: true, configurable: true, enumerable: true,
			});
			paramsIterator = (p, kind) => {
				listOf(p); // a TypeError for another this
				const it = Object.create(proto);
				states.set(it, { p, kind, i: 0 });
				return it;
			};
		}
	}
	URLSearchParams.prototype[Symbol.iterator] = URLSearchParams.prototype.entries;
	Object.defineProperty(URLSearchParams.prototype, Symbol.iterator, { enumerable: false });
	Object.defineProperty(URLSearchParams.prototype, Symbol.toStringTag, { value: 'URLSearchParams', configurable: true });

	function parseOrThrow(url, base, what) {
		hostRefusal = '';
		const u = basicParse(usvString(url), base);
		if (u === null) throw new TypeError(`Invalid ${what}: ${usvString(url)}${hostRefusal}`);
		return u;
	}
	class URL {
		#u; #params;
		constructor(url, base = undefined) {
			needArgs(1, "Failed to construct 'URL'", arguments);
			const b = base === undefined ? null : parseOrThrow(base, null, 'base URL');
			this.#u = parseOrThrow(url, b, 'URL');
			paramsOwner = this.#u;
			this.#params = new URLSearchParams();
			setParams(this.#params, this.#u.query);
		}
		static canParse(url, base = undefined) {
			needArgs(1, 'canParse', arguments);
			let b = null;
			if (base !== undefined && (b = basicParse(usvString(base))) === null) return false;
			return basicParse(usvString(url), b) !== null;
		}
		static parse(url, base = undefined) {
			needArgs(1, 'parse', arguments);
			try { return new URL(url, base); } catch { return null; }
		}
		get href() { return serializeURL(this.#u); }
		set href(v) {
			Object.assign(this.#u, parseOrThrow(v, null, 'URL'));
			setParams(this.#params, this.#u.query);
		}
		get origin() { return serializeOrigin(this.#u); }
		get protocol() { return this.#u.scheme + ':'; }
		set protocol(v) { basicParse(usvString(v) + ':', null, this.#u, SCHEME_START); }
		get username() { return this.#u.username; }
		set username(v) {
			v = usvString(v);
			if (!cannotHaveCredentialsOrPort(this.#u)) this.#u.username = percentEncode(v, userinfoSet);
		}
		get password() { return this.#u.password; }
		set password(v) {
			v = usvString(v);
			if (!cannotHaveCredentialsOrPort(this.#u)) this.#u.password = percentEncode(v, userinfoSet);
		}
		get host() {
			const u = this.#u;
			return u.host === null ? '' : u.port === null ? u.host : u.host + ':' + u.port;
		}
		set host(v) {
			v = usvString(v);
			if (!hasOpaquePath(this.#u)) basicParse(v, null, this.#u, HOST);
		}
		get hostname() { return this.#u.host ?? ''; }
		set hostname(v) {
			v = usvString(v);
			if (!hasOpaquePath(this.#u)) basicParse(v, null, this.#u, HOSTNAME);
		}
		get port() { return this.#u.port === null ? '' : String(this.#u.port); }
		set port(v) {
			v = usvString(v);
			if (cannotHaveCredentialsOrPort(this.#u)) return;
			if (v === '') this.#u.port = null;
			else basicParse(v, null, this.#u, PORT);
		}
		get pathname() { return serializePath(this.#u); }
		set pathname(v) {
			v = usvString(v);
			if (hasOpaquePath(this.#u)) return;
			this.#u.path = [];
			basicParse(v, null, this.#u, PATH_START);
		}
		get search() { const q = this.#u.query; return q === null || q === '' ? '' : '?' + q; }
		set search(v) {
			v = usvString(v);
			if (v === '') {
				this.#u.query = null;
				setParams(this.#params, null);
				return;
			}
			const input = v[0] === '?' ? v.slice(1) : v;
			this.#u.query = '';
			basicParse(input, null, this.#u, QUERY);
			setParams(this.#params, input);
		}
		get searchParams() { return this.#params; }
		get hash() { const f = this.#u.fragment; return f === null || f === '' ? '' : '#' + f; }
		set hash(v) {
			v = usvString(v);
			if (v === '') {
				this.#u.fragment = null;
				return;
			}
			this.#u.fragment = '';
			basicParse(v[0] === '#' ? v.slice(1) : v, null, this.#u, FRAGMENT);
		}
		toString() { return serializeURL(this.#u); }
		toJSON() { return serializeURL(this.#u); }
	}
	for (const k of ['href', 'origin', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search',
		'searchParams', 'hash', 'toString', 'toJSON']) {
		Object.defineProperty(URL.prototype, k, { enumerable: true });
	}
	for (const k of ['size', 'append', 'delete', 'get', 'getAll', 'has', 'set', 'sort', 'forEach', 'entries', 'keys', 'values',
		'toString']) {
		Object.defineProperty(URLSearchParams.prototype, k, { enumerable: true });
	}
	for (const k of ['canParse', 'parse']) Object.defineProperty(URL, k, { enumerable: true });
	Object.defineProperty(URL.prototype, Symbol.toStringTag, { value: 'URL', configurable: true });

	return { URL, URLSearchParams };
})
