package typescript_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/codemode-go/codemode/typescript"
)

// corpusDecls are the APIs the corpora's programs were "shown": typed
// tools, a provider namespace, and a tool whose result is unknown.
const corpusDecls = `declare function get_weather(args: { location: string; days?: number }): Promise<{ temp: number; conditions: string; forecast: { day: string; high: number }[] }>;
declare const db: {
  query(args: { sql: string; limit?: number }): Promise<{ rows: { id: number; name: string; email?: string }[]; total: number }>;
  insert(args: { table: string; row: Record<string, unknown> }): Promise<{ id: number }>;
};
declare const store: {
  get(args: { key: string }): Promise<unknown>;
  put(args: { key: string; value: unknown }): Promise<boolean>;
};
declare function search(args: { q: string; limit?: number }): Promise<unknown>;
declare function send_email(args: { to: string; subject: string; body: string }): Promise<{ sent: boolean }>;
`

// correctTemplates are programs as models write them: bodies, arrows,
// fences, TypeScript and JavaScript, Promise.all, optional chaining,
// helpers, loops, the web globals. %[1]s is a city, %[2]d a number.
var correctTemplates = []string{
	"const w = await get_weather({ location: %[1]q });\nreturn w.temp;",
	"async () => {\n  const r = await db.query({ sql: 'select * from users limit %[2]d' });\n  return r.rows.map((u) => u.name);\n}",
	"```js\nconst w = await get_weather({ location: %[1]q, days: %[2]d });\nreturn w.forecast.map((f) => f.high);\n```",
	"```typescript\nconst w = await get_weather({ location: %[1]q });\nconst t: number = w.temp;\nreturn t > %[2]d;\n```",
	"const [a, b] = await Promise.all([get_weather({ location: %[1]q }), get_weather({ location: 'Oslo' })]);\nreturn a.temp - b.temp + %[2]d;",
	"const hits = await search({ q: %[1]q });\nreturn hits?.items?.[0]?.title ?? null;",
	"function fmt(n) { return n.toFixed(1) + '°' }\nconst w = await get_weather({ location: %[1]q });\nreturn fmt(w.temp + %[2]d);",
	"let total = 0;\nfor (const city of [%[1]q, 'Lima']) {\n  const w = await get_weather({ location: city });\n  total += w.temp;\n}\nreturn total / %[2]d;",
	"try {\n  const r = await db.query({ sql: 'select 1', limit: %[2]d });\n  return r.total;\n} catch (e) {\n  return { error: e.message };\n}",
	"const v = await store.get({ key: %[1]q });\nconst n = typeof v === 'number' ? v : 0;\nawait store.put({ key: %[1]q, value: n + %[2]d });\nreturn n;",
	"const u = new URL('https://example.com/' + encodeURIComponent(%[1]q));\nconst id = crypto.randomUUID();\nconsole.log(u.pathname, id.length);\nreturn btoa(u.host) + %[2]d;",
	"(await get_weather({ location: %[1]q })).conditions",
	"const { rows } = await db.query({ sql: 'select id, email from users' });\nconst emails = rows.filter((r) => r.email).map((r) => r.email);\nreturn emails.slice(0, %[2]d);",
	"class Counter { constructor() { this.n = 0 } add(k) { this.n += k; return this } }\nconst c = new Counter();\nc.add(%[2]d).add(1);\nreturn c.n;",
	"const ids = [];\nfor (const name of [%[1]q, 'b']) {\n  const { id } = await db.insert({ table: 'users', row: { name } });\n  ids.push(id);\n}\nreturn ids.length === %[2]d;",
	"const w = await get_weather({ location: %[1]q });\nconst by = new Map(w.forecast.map((f) => [f.day, f.high]));\nreturn [...by.keys()].sort().slice(0, %[2]d);",
	"await new Promise((r) => setTimeout(r, %[2]d));\nconst res = await send_email({ to: 'a@b.c', subject: %[1]q, body: 'hi' });\nreturn res.sent;",
	"const data = JSON.parse(JSON.stringify({ city: %[1]q, n: %[2]d }));\nconst o = {};\no.city = data.city;\no.when = new Date(0).toISOString();\nreturn o;",
	"interface Row { id: number; name: string }\nconst r = await db.query({ sql: 'select *' });\nconst first: Row | undefined = r.rows[0];\nreturn first?.name ?? %[1]q;",
	"const results = await Promise.all([%[1]q, 'Rome', 'Quito'].map((c) => get_weather({ location: c, days: %[2]d })));\nreturn results.reduce((m, w) => Math.max(m, w.temp), -Infinity);",
	"if (typeof window !== 'undefined') return 'browser';\nconst s = await search({ q: %[1]q, limit: %[2]d });\nconst list = Array.isArray(s) ? s : s?.results ?? [];\nreturn list.length;",
}

// mistakes are each kind of mistake the checker must catch, with the
// programs that make it (%[1]s a city).
var mistakes = map[string][]string{
	"a tool that does not exist": {
		"const w = await get_wether({ location: %[1]q });\nreturn w;",
		"return await weather({ location: %[1]q });",
		"const r = await db.qeury({ sql: 'x' });\nreturn r;",
		"return await store.delete({ key: %[1]q });",
	},
	"a parameter the declaration does not take": {
		"const w = await get_weather({ city: %[1]q });\nreturn w.temp;",
		"return (await search({ query: %[1]q })) ?? null;",
		"return await db.query({ sql: 'x', params: [%[1]q] });",
	},
	"a required parameter missing": {
		"const w = await get_weather({ days: 3 });\nreturn w.temp;",
		"return await send_email({ to: 'a@b.c', subject: %[1]q });",
		"return await db.insert({ table: 'users' });",
	},
	"too few arguments": {
		"const r = await db.query();\nreturn r.total + %[1]q.length;",
		"return await get_weather();",
	},
	"a result read as the wrong shape": {
		"const w = await get_weather({ location: %[1]q });\nreturn w.temperature;",
		"const r = await db.query({ sql: 'x' });\nreturn r.row.length;",
		"const r = await db.query({ sql: 'x' });\nreturn r.rows.map((x) => x.nmae);",
	},
	"calling what is not callable": {
		"const w = await get_weather({ location: %[1]q });\nreturn w.temp();",
		"const r = await db.query({ sql: 'x' });\nreturn r.total();",
	},
	"the DOM or Node": {
		"return document.title + %[1]q;",
		"const fs = require('fs');\nreturn fs.readFileSync(%[1]q);",
		"return process.env[%[1]q];",
		"localStorage.setItem('k', %[1]q);",
	},
	"a name that does not exist": {
		"const w = await get_weather({ location: %[1]q });\nreturn wether.temp;",
		"return fetchUser(%[1]q);",
	},
}

var cities = []string{"Paris", "Lagos", "Kyoto", "São Paulo", "Reykjavík", "Nairobi", "Dhaka", "Perth", "Québec", "Tbilisi",
	"Oaxaca", "Hanoi", "Tromsø", "Cusco", "Zanzibar", "Valletta"}

// TestCorpusCorrect: the correct corpus (over 300 programs as models write
// them) is never refused.
func TestCorpusCorrect(t *testing.T) {
	c := newChecker(t)
	n := 0
	for i, tmpl := range correctTemplates {
		for j, city := range cities {
			program := fmt.Sprintf(tmpl, city, j+1)
			ds, err := c.Check(context.Background(), typescript.CheckInput{Program: program, Declarations: corpusDecls})
			require.NoError(t, err)
			assert.Empty(t, ds, "template %d, city %s:\n%s", i, city, program)
			n++
		}
	}
	require.GreaterOrEqual(t, n, 300)
	t.Logf("%d correct programs, none refused", n)
}

// TestCorpusMistakes: every mistake in the wrong corpus is caught before
// running, at a line of the program.
func TestCorpusMistakes(t *testing.T) {
	c := newChecker(t)
	total, caught := 0, 0
	for kind, programs := range mistakes {
		for _, tmpl := range programs {
			for _, city := range cities[:4] {
				program := fmt.Sprintf(tmpl, city)
				ds, err := c.Check(context.Background(), typescript.CheckInput{Program: program, Declarations: corpusDecls})
				require.NoError(t, err)
				total++
				if assert.NotEmpty(t, ds, "%s:\n%s", kind, program) {
					caught++
					assert.LessOrEqual(t, ds[0].Line, strings.Count(program, "\n")+1)
				}
			}
		}
	}
	t.Logf("%d of %d wrong programs caught before running", caught, total)
}
