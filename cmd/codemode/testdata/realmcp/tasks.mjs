// TestMCPTasks's client: the official TypeScript SDK v2 client, once with
// the Tasks extension's requester (@modelcontextprotocol/ext-tasks) over a
// 2026-07-28 connection, and once without it, driving `codemode mcp` over
// stdio. It prints one JSON object of what it saw.
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";

const run = JSON.parse(process.argv[2]);
const clientInfo = { name: "codemode-tasks-test", version: "1" };
const out = {};

// The task-capable client.
{
  const client = new Client(clientInfo, { versionNegotiation: { mode: "auto" } });
  const transport = new StdioClientTransport({ command: run.command, args: run.args, stderr: "inherit" });
  await client.connect(transport);
  out.era = client.getProtocolEra();
  out.version = client.getNegotiatedProtocolVersion();
  out.extensions = client.getServerCapabilities()?.extensions ?? null;

  // The host's request coordinator, as the extension asks of a 2026-07-28
  // host: raw requests on the client's transport (their own ids), their
  // responses taken before the Client sees them.
  const pending = new Map();
  let next = 0;
  const onmessage = transport.onmessage;
  transport.onmessage = (msg, extra) => {
    if (msg && "id" in msg && !("method" in msg) && pending.has(msg.id)) {
      const done = pending.get(msg.id);
      pending.delete(msg.id);
      done(msg);
      return;
    }
    onmessage?.(msg, extra);
  };
  const rawDispatch = (request, options) =>
    new Promise((resolve, reject) => {
      const id = `raw-${++next}`;
      pending.set(id, (msg) => resolve("error" in msg ? { kind: "error", error: msg.error } : { kind: "result", result: msg.result }));
      options?.signal?.addEventListener("abort", () => {
        pending.delete(id);
        reject(options.signal.reason);
      });
      transport.send({ jsonrpc: "2.0", id, method: request.method, ...(request.params === undefined ? {} : { params: request.params }) }).catch(reject);
    });
  const session = createTaskSessionFromClient(client, {
    endpointId: "codemode",
    rawDispatch,
    v2RequestFraming: { protocolVersion: out.version, clientInfo, clientCapabilities: {} },
  });

  // A program that outlives the client's request timeout: a task, polled
  // to its result.
  let execution = await session.callTool("run_js", { code: run.slow });
  out.slowKind = execution.kind;
  let { outcome } = await execution.settle();
  out.slowStatus = outcome.status;
  out.slowResult = resultFromTaskOutcome(outcome).structuredContent;

  // Cancelled halfway: after a tool call, in a loop.
  execution = await session.callTool("run_js", { code: run.loop });
  out.loopKind = execution.kind;
  await new Promise((r) => setTimeout(r, 500));
  const taskId = execution.handle?.taskId ?? execution.handle?.id;
  await execution.cancel();
  ({ outcome } = await execution.settle());
  out.loopStatus = outcome.status;
  // What the task says of the run now, read by hand.
  for (let i = 0; i < 100; i++) {
    const got = await rawDispatch({ method: "tasks/get", params: { taskId: String(taskId) } });
    if (got.kind === "result" && got.result.status !== "working") {
      out.cancelled = { status: got.result.status, statusMessage: got.result.statusMessage };
      break;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  await session.close();
  await client.close();
}

// A client without the extension: the result on the request, kept alive
// past its timeout by progress notifications.
{
  const client = new Client(clientInfo);
  await client.connect(new StdioClientTransport({ command: run.command, args: run.args, stderr: "inherit" }));
  const progress = [];
  const res = await client.callTool({ name: "run_js", arguments: { code: run.slow } }, {
    timeout: run.timeoutMs,
    resetTimeoutOnProgress: true,
    onprogress: (p) => progress.push(p.message),
  });
  out.plainResult = res.structuredContent;
  out.plainProgress = progress.length;
  try {
    await client.callTool({ name: "run_js", arguments: { code: run.slow } }, { timeout: run.timeoutMs });
    out.plainNoProgress = "returned";
  } catch (e) {
    out.plainNoProgress = String(e.message ?? e).slice(0, 80);
  }
  await client.close();
}

process.stdout.write(JSON.stringify(out) + "\n");
