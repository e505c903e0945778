// Runs sequences of inputs through Node's REPL, typed into it one line at
// a time as a user would (top-level await included), and prints for each
// input whether it threw (the error's name) or its value as JSON. Reads
// the sequences as JSON on stdin. (session_test.go,
// TestSessionMatchesNodeREPL.)
'use strict';
const repl = require('repl');
const { PassThrough } = require('stream');

const show = (v) => {
	// An error made in the REPL's context is another realm's Error.
	if (v !== null && typeof v === 'object' && typeof v.stack === 'string' && typeof v.name === 'string') return v.name;
	try {
		const j = JSON.stringify(v === undefined ? null : v);
		return j === undefined ? 'null' : j;
	} catch {
		return 'null';
	}
};

const session = (lines) => new Promise((resolve) => {
	const input = new PassThrough(), output = new PassThrough();
	const results = [];
	let buf = '', next = 0;
	const feed = () => {
		if (next === lines.length) {
			input.end();
			return;
		}
		input.write(lines[next++] + '\n');
	};
	output.on('data', (d) => {
		buf += d;
		let i;
		while ((i = buf.indexOf('\n')) >= 0) {
			const line = buf.slice(0, i);
			buf = buf.slice(i + 1);
			const at = line.indexOf('\u0001');
			if (at < 0) continue;
			const v = line.slice(at + 1);
			results.push(line.slice(0, at).includes('Uncaught') ? { thrown: v } : { value: v });
			feed();
		}
	});
	const r = repl.start({ input, output, prompt: '', terminal: false, useGlobal: false, writer: (v) => '\u0001' + show(v) });
	r.on('exit', () => resolve(results));
	feed();
});

(async () => {
	let text = '';
	for await (const chunk of process.stdin) text += chunk;
	const out = [];
	for (const seq of JSON.parse(text)) out.push(await session(seq));
	process.stdout.write(JSON.stringify(out));
})();
