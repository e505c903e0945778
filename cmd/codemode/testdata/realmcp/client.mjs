// The official TypeScript SDK's client driving `codemode mcp` over three
// real MCP servers from npm (memory, filesystem, everything), as any MCP
// client would. TestRealServers (../../realservers_test.go) runs it from a
// directory whose node_modules holds the packages .ci/run installs.
//
// Usage: node client.mjs CONFIG, CONFIG being JSON:
//
//   {"transport": "stdio", "command": "/path/codemode", "args": ["mcp", ...],
//    "root": "/the/filesystem/server's/allowed/root", "budget": 0}
//   {"transport": "http", "url": "http://127.0.0.1:PORT", "root": ..., "budget": 500}
//
// budget is the --token-budget codemode was given (0: its default, where
// every declaration is in the description; a small one: progressive
// discovery through search_tools). The client prints one line per check,
// "ok ..." or "FAIL ...", runs every check even after a failure, and exits
// 1 if any failed (2 if it could not finish).
import { isDeepStrictEqual } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { MCP_TINY_IMAGE } from "@modelcontextprotocol/server-everything/dist/tools/get-tiny-image.js";

const cfg = JSON.parse(process.argv[2]);
const defaultBudget = 8000; // mcp.DefaultTokenBudget
const budgetBytes = 4 * (cfg.budget || defaultBudget); // four bytes a token, as codemode estimates
const progressive = cfg.budget > 0;
const timeout = 20_000; // each request's, in ms

// Every wait is bounded: the whole client gives up after 45 s.
setTimeout(() => {
  console.log("FAIL the client did not finish within 45 s");
  process.exit(2);
}, 45_000).unref();

let failures = 0;
function check(name, ok, detail) {
  if (ok) {
    console.log(`ok   ${name}`);
  } else {
    failures++;
    console.log(`FAIL ${name}${detail === undefined ? "" : `\n     ${detail}`}`);
  }
}
const bytes = (s) => (typeof s === "string" ? Buffer.byteLength(s) : NaN);
const show = (v) => {
  const s = typeof v === "string" ? v : String(JSON.stringify(v));
  return s.length > 2000 ? s.slice(0, 2000) + "…" : s;
};
function contains(name, text, sub) {
  check(name, typeof text === "string" && text.includes(sub), `want a substring ${show(sub)}\n     in ${show(text)}`);
}
function equal(name, got, want) {
  check(name, isDeepStrictEqual(got, want), `got  ${show(got)}\n     want ${show(want)}`);
}
// JSON text as a model reads it: no HTML escaping of <, > and &.
function notEscaped(name, text) {
  check(name, !/\\u00(3c|3e|26)/i.test(text), `HTML-escaped JSON text: ${show(text)}`);
}

// The declarations codemode gives these tools (the pinned versions'
// schemas): in the description, or from search_tools under a small budget.
// Each entry: the search that finds it, then exact substrings.
const declarations = [
  ["create_entities", [
    "type MemoryCreateEntitiesInput = {\n  entities: {\n    /** The type of the entity */\n    entityType: string;\n" +
      "    /** The name of the entity */\n    name: string;\n" +
      "    /** An array of observation contents associated with the entity */\n    observations: string[];\n  }[];\n};\n",
    "  /** Create multiple new entities in the knowledge graph */\n" +
      "  create_entities(args: MemoryCreateEntitiesInput): Promise<MemoryCreateEntitiesOutput>;\n",
  ]],
  // A tool with no input takes no argument.
  ["read_graph", ["  /** Read the entire knowledge graph */\n  read_graph(): Promise<MemoryReadGraphOutput>;\n"]],
  ["read_text_file", [
    "type FilesystemReadTextFileInput = {\n  /** If provided, returns only the first N lines of the file */\n  head?: number;\n" +
      "  path: string;\n  /** If provided, returns only the last N lines of the file */\n  tail?: number;\n};\n" +
      "type FilesystemReadTextFileOutput = {\n  content: string;\n};\n",
    "  read_text_file(args: FilesystemReadTextFileInput): Promise<FilesystemReadTextFileOutput>;\n",
  ]],
  ["list_directory", [
    "type FilesystemListDirectoryInput = {\n  path: string;\n};\n",
    "  list_directory(args: FilesystemListDirectoryInput): Promise<FilesystemListDirectoryOutput>;\n",
    // Defaults are JSON literals.
    "  /**\n   * Sort entries by name or size\n   * @default \"name\"\n   */\n  sortBy?: \"name\" | \"size\";\n",
  ]],
  ["directory_tree", ["  /** @default [] */\n  excludePatterns?: string[];\n"]],
  ["echo", [
    "type EverythingEchoInput = {\n  /** Message to echo */\n  message: string;\n};\n",
    "  /** Echoes back the input string */\n  echo(args: EverythingEchoInput): Promise<unknown>;\n",
  ]],
  ["get_sum", ["  /** Returns the sum of two numbers */\n  get_sum(args: EverythingGetSumInput): Promise<unknown>;\n"]],
  ["tiny image", ["  /** Returns a tiny MCP logo image. */\n  get_tiny_image(): Promise<unknown>;\n"]],
];

const client = new Client({ name: "codemode-realmcp-test", version: "1" });
let transport;
let serverStderr = "";
if (cfg.transport === "stdio") {
  transport = new StdioClientTransport({ command: cfg.command, args: cfg.args, stderr: "pipe" });
  transport.stderr.on("data", (b) => { serverStderr = (serverStderr + b).slice(-4000); });
} else {
  transport = new StreamableHTTPClientTransport(new URL(cfg.url));
}

async function main() {
  await client.connect(transport, { timeout });

  // The tools: run_js, reset_js (sessions), and search_tools only past the budget.
  const { tools } = await client.listTools(undefined, { timeout });
  equal("tools/list names", tools.map((t) => t.name).sort(), progressive ? ["reset_js", "run_js", "search_tools"] : ["reset_js", "run_js"]);
  const runTool = tools.find((t) => t.name === "run_js");
  const desc = runTool?.description ?? "";
  equal("run_js input schema requires code", runTool?.inputSchema?.required, ["code"]);
  notEscaped("description not HTML-escaped", desc);
  const unknownDefault = desc.indexOf("@default unknown");
  check("description has no @default unknown", unknownDefault < 0, show(desc.slice(Math.max(0, unknownDefault - 300), unknownDefault + 100)));

  const run = (code) => client.callTool({ name: "run_js", arguments: { code } }, undefined, { timeout });
  const search = (args) => client.callTool({ name: "search_tools", arguments: args }, undefined, { timeout });

  // The declarations of a few real tools, exactly as codemode declares them.
  if (!progressive) {
    contains("description: memory namespace", desc, "declare const memory: {\n");
    contains("description: filesystem namespace", desc, "declare const filesystem: {\n");
    contains("description: everything namespace", desc, "declare const everything: {\n");
    for (const [query, subs] of declarations) {
      subs.forEach((s, i) => contains(`description declares ${query} (${i + 1})`, desc, s));
    }
  } else {
    contains("progressive description: memory", desc, "- memory: 9 tools\n");
    contains("progressive description: filesystem", desc, "- filesystem: 14 tools\n");
    check("progressive description: everything", /\n- everything: \d+ tools\n/.test(desc), show(desc));
    contains("progressive description: how to search", desc, "await codemode.search_tools(");
    check("progressive description lists no declarations", !desc.includes("declare const"), show(desc));
    check("progressive description within the budget", bytes(desc) <= budgetBytes, `${bytes(desc)} bytes, budget ${budgetBytes}`);
    for (const [query, subs] of declarations) {
      const res = await search({ query });
      const text = res.content?.[0]?.text ?? "";
      check(`search_tools ${JSON.stringify(query)} succeeds`, !res.isError, show(res));
      check(`search_tools ${JSON.stringify(query)} within the budget`, bytes(text) <= budgetBytes, `${bytes(text)} bytes, budget ${budgetBytes}`);
      subs.forEach((s, i) => contains(`search_tools ${JSON.stringify(query)} declares it (${i + 1})`, text, s));
    }
    // A broad search is cut at the budget, whole declarations first, then
    // a comment naming what was left out.
    const res = await search({ query: "file" });
    const text = res.content?.[0]?.text ?? "";
    check("search_tools \"file\" within the budget", bytes(text) <= budgetBytes, `${bytes(text)} bytes, budget ${budgetBytes}:\n${text}`);
    check("search_tools \"file\" says what it left out", /\/\/ \d+ more matching tools? left out/.test(text), show(text));
    contains("search_tools \"file\" starts with whole declarations", text, "declare const ");
  }

  // One program using the three servers at once.
  const root = cfg.root;
  const p1 = await run(`
    const dir = ${JSON.stringify(root)};
    const [created, written, echoed, sum] = await Promise.all([
      memory.create_entities({entities: [{name: "codemode", entityType: "project", observations: ["runs <JS> & TS"]}]}),
      filesystem.write_file({path: dir + "/note.txt", content: "hello from codemode\\n"}),
      everything.echo({message: "<hi> & bye"}),
      everything.get_sum({a: 2, b: 3}),
    ]);
    const [graph, read, listing] = await Promise.all([
      memory.read_graph(),
      filesystem.read_text_file({path: dir + "/note.txt"}),
      filesystem.list_directory({path: dir}),
    ]);
    console.log("wrote", written.content);
    return {created, written, echoed, sum, graph, read, listing};
  `);
  const entity = { entityType: "project", name: "codemode", observations: ["runs <JS> & TS"] };
  check("Promise.all program succeeds", !p1.isError, show(p1));
  equal("Promise.all program result", p1.structuredContent, {
    result: {
      created: { entities: [entity] },
      written: { content: `Successfully wrote to ${root}/note.txt` },
      echoed: "Echo: <hi> & bye",
      sum: "The sum of 2 and 3 is 5.",
      graph: { entities: [entity], relations: [] },
      read: { content: "hello from codemode\n" },
      listing: { content: "[FILE] note.txt" },
    },
    logs: [`wrote Successfully wrote to ${root}/note.txt`],
  });
  const p1text = p1.content?.[0]?.text ?? "";
  equal("Promise.all program text is its structured content", safeParse(p1text), p1.structuredContent);
  notEscaped("Promise.all program text not HTML-escaped", p1text);
  contains("Promise.all program text as a model reads it", p1text, '"echoed":"Echo: <hi> & bye"');

  // The client's session: a program sees what the last one declared; one
  // that fails changes nothing; reset_js starts afresh.
  const s1 = await run(`const kept = await memory.read_graph({}); const n = 41; n`);
  equal("session: first program", s1.structuredContent?.result, 41);
  const s2 = await run(`n + 1 + (typeof kept === "object" ? 0 : 100)`);
  equal("session: the next program sees it", s2.structuredContent?.result, 42);
  const s3 = await run(`n = 0; throw new Error("rolled back")`);
  check("session: a failing program is isError", s3.isError === true, show(s3));
  const s4 = await run(`n`);
  equal("session: a failing program changed nothing", s4.structuredContent?.result, 41);
  await client.callTool({ name: "reset_js", arguments: {} }, undefined, { timeout });
  const s5 = await run(`typeof n`);
  equal("session: reset_js clears it", s5.structuredContent?.result, "undefined");

  // A program that throws: isError, the error JSON naming the tool.
  const p2 = await run(`throw new TypeError("bad <input> & more")`);
  check("throwing program is isError", p2.isError === true, show(p2));
  const e2 = p2.structuredContent?.error ?? {};
  equal("throwing program's error kind", e2.kind, "js");
  equal("throwing program's error names the tool", e2.name, "run_js");
  check("throwing program's error message", String(e2.message).startsWith("TypeError: bad <input> & more"), show(e2));
  const p2text = p2.content?.[0]?.text ?? "";
  equal("throwing program's text is its structured content", safeParse(p2text), p2.structuredContent);
  notEscaped("throwing program's text not HTML-escaped", p2text);

  // An upstream tool's error: thrown into the program (catchable), and,
  // uncaught, the program's error naming the tool and the upstream call.
  const outside = "/";
  const p3 = await run(`try { await filesystem.read_text_file({path: ${JSON.stringify(outside)}}); return "read it" } catch (e) { return {error: e instanceof Error, message: e.message} }`);
  check("caught upstream error succeeds", !p3.isError, show(p3));
  equal("caught upstream error is an Error", p3.structuredContent?.result?.error, true);
  contains("caught upstream error's message", p3.structuredContent?.result?.message, "Access denied - path outside allowed directories");
  const p4 = await run(`return await filesystem.read_text_file({path: ${JSON.stringify(outside)}})`);
  check("uncaught upstream error is isError", p4.isError === true, show(p4));
  const e4 = p4.structuredContent?.error ?? {};
  equal("uncaught upstream error names the tool", e4.name, "run_js");
  equal("uncaught upstream error names the call", e4.capability, "filesystem.read_text_file");
  contains("uncaught upstream error's message", e4.message, "Access denied");

  // An upstream image returned as it came: an MCP image content block.
  const p5 = await run(`return await everything.get_tiny_image()`);
  check("image program succeeds", !p5.isError, show(p5));
  const r5 = p5.structuredContent?.result;
  check("image program: text blocks as strings", Array.isArray(r5) && r5.length === 3 &&
    r5[0] === "Here's the image you requested:" && r5[2] === "The image above is the MCP logo.", show(r5));
  check("image program: a placeholder for the image", Array.isArray(r5) && typeof r5[1] === "string" && r5[1].includes("image/png"), show(r5));
  equal("image program: content types", (p5.content ?? []).map((c) => c.type), ["text", "image"]);
  const img = p5.content?.[1] ?? {};
  equal("image program: image MIME type", img.mimeType, "image/png");
  check("image program: the server's image bytes", img.data === MCP_TINY_IMAGE, `data ${show(img.data)}`);

  // Search from inside a program, both shapes, within the budget.
  const p6 = await run(`return await codemode.search_tools("create_entities")`);
  check("codemode.search_tools(string) succeeds", !p6.isError, show(p6));
  declarations[0][1].forEach((s, i) => contains(`codemode.search_tools(string) declares create_entities (${i + 1})`, p6.structuredContent?.result, s));
  const p7 = await run(`return {text: await codemode.search_tools({query: "file"})}`);
  check("codemode.search_tools({query}) succeeds", !p7.isError, show(p7));
  const r7 = p7.structuredContent?.result ?? {};
  check("codemode.search_tools({query}) within the budget", bytes(r7.text) <= budgetBytes,
    `${bytes(r7.text)} bytes, budget ${budgetBytes}`);
  contains("codemode.search_tools({query}) gives whole declarations", r7.text, "declare const ");
  if (progressive) contains("codemode.search_tools({query}) says what it left out", r7.text, "more matching tools left out");
}

function safeParse(s) {
  try {
    return JSON.parse(s);
  } catch (e) {
    return `not JSON (${e.message}): ${s}`;
  }
}

try {
  await main();
} catch (e) {
  failures++;
  console.log(`FAIL the client stopped: ${e?.stack ?? e}`);
}
try {
  if (transport.terminateSession) await transport.terminateSession();
  await client.close();
} catch (e) {
  console.log(`(closing: ${e?.message ?? e})`);
}
if (failures > 0) {
  if (serverStderr) console.log(`codemode's stderr (its end):\n${serverStderr}`);
  console.log(`${failures} check(s) failed`);
  process.exit(1);
}
console.log("PASS");
process.exit(0);
