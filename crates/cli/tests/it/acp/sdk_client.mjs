// A scripted ACP client on the official TypeScript SDK (@agentclientprotocol/sdk),
// run by the ignored test in acp/sdk.rs: it starts `magi-code acp`, plays the
// scenario the test queued on the mock model, validates every message with the SDK,
// and prints one JSON report on stdout for the test to check.
//
// Usage: node sdk_client.mjs MAGI_CODE WORKSPACE OTHER_WORKSPACE MOCK_MCP_SERVER

import { spawn } from "node:child_process";
import { realpathSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";

const [bin, workspace, other, mcpServer] = process.argv.slice(2);
const report = { steps: {}, updates: [], permissions: [], terminal: [] };
// The kinds the permission requests are answered with, in order.
const answers = [
  "allow_once", "reject_once", "allow_always", "allow_once", "allow_once", "allow_once", "allow_once",
];
// The third connection's terminals: each runs its command for real, here.
const terminals = new Map();
// The editor's unsaved buffers, by absolute path, and what the agent asked of them.
const buffers = new Map();
report.fs = { reads: [], writes: [] };

function start() {
  const child = spawn(bin, ["acp"], { cwd: workspace, stdio: ["pipe", "pipe", "inherit"] });
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  return { child, stream };
}

const app = client({ name: "magi-code-acp-test" })
  .onRequest(methods.client.session.requestPermission, ({ params }) => {
    const kind = answers.shift() ?? "reject_once";
    const option = params.options.find((o) => o.kind === kind);
    report.permissions.push({ kind, options: params.options.map((o) => o.kind), title: params.toolCall.title });
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onRequest(methods.client.fs.readTextFile, ({ params }) => {
    report.fs.reads.push(params.path);
    if (!buffers.has(params.path)) throw new Error(`no buffer for ${params.path}`);
    return { content: buffers.get(params.path) };
  })
  .onRequest(methods.client.fs.writeTextFile, ({ params }) => {
    report.fs.writes.push({ path: params.path, content: params.content });
    buffers.set(params.path, params.content);
    return {};
  })
  .onNotification(methods.client.session.update, ({ params }) => {
    report.updates.push(params);
  })
  .onRequest(methods.client.terminal.create, ({ params }) => {
    report.terminal.push({ method: "terminal/create", command: params.command, args: params.args, limit: params.outputByteLimit });
    const terminalId = `term-${terminals.size + 1}`;
    const child = spawn(params.command, params.args ?? [], { cwd: params.cwd, stdio: ["ignore", "pipe", "pipe"] });
    const terminal = { output: "", exit: null };
    child.stdout.on("data", (chunk) => (terminal.output += chunk));
    child.stderr.on("data", (chunk) => (terminal.output += chunk));
    terminal.exited = new Promise((resolve) =>
      child.on("exit", (code, signal) => {
        terminal.exit = { exitCode: code, signal };
        resolve(terminal.exit);
      }),
    );
    terminal.child = child;
    terminals.set(terminalId, terminal);
    return { terminalId };
  })
  .onRequest(methods.client.terminal.waitForExit, async ({ params }) => {
    report.terminal.push({ method: "terminal/wait_for_exit" });
    return await terminals.get(params.terminalId).exited;
  })
  .onRequest(methods.client.terminal.output, ({ params }) => {
    report.terminal.push({ method: "terminal/output" });
    const terminal = terminals.get(params.terminalId);
    return { output: terminal.output, truncated: false, exitStatus: terminal.exit };
  })
  .onRequest(methods.client.terminal.kill, ({ params }) => {
    report.terminal.push({ method: "terminal/kill" });
    terminals.get(params.terminalId).child.kill();
    return {};
  })
  .onRequest(methods.client.terminal.release, ({ params }) => {
    report.terminal.push({ method: "terminal/release" });
    terminals.delete(params.terminalId);
    return {};
  });

// The SDK resolves a response at once but hands notifications to their handlers
// through a chain of promises, so the updates sent just before a prompt's answer may
// still be on their way when it resolves: one macrotask lets them land first.
function settled() {
  return new Promise((resolve) => setImmediate(resolve));
}

function text(sessionId, from) {
  return report.updates
    .slice(from)
    .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === "agent_message_chunk")
    .map((u) => u.update.content.text)
    .join("");
}

async function firstConnection(ctx) {
  const init = await ctx.request(methods.agent.initialize, {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: {},
  });
  report.steps.initialize = init;
  const a = await ctx.request(methods.agent.session.new, { cwd: workspace, mcpServers: [] });
  report.steps.new = a;
  const id = a.sessionId;
  const turn = async (name, prompt) => {
    const from = report.updates.length;
    const answer = await ctx.request(methods.agent.session.prompt, {
      sessionId: id,
      prompt: [{ type: "text", text: prompt }],
    });
    await settled();
    report.steps[name] = { stopReason: answer.stopReason, text: text(id, from), from };
  };
  await turn("hello", "Say hello");
  await turn("allowed", "Run it");
  await turn("rejected", "Try this");
  await turn("always", "Touch both");
  await turn("write", "Write notes");
  await turn("plan", "Plan it");
  // Cancel mid-turn: the reply is held by the mock until the test releases it.
  {
    const from = report.updates.length;
    const pending = ctx.request(methods.agent.session.prompt, {
      sessionId: id,
      prompt: [{ type: "text", text: "Go on" }],
    });
    while (text(id, from) === "") {
      await new Promise((resolve) => setImmediate(resolve));
    }
    await ctx.notify(methods.agent.session.cancel, { sessionId: id });
    const answer = await pending;
    await settled();
    report.steps.cancel = { stopReason: answer.stopReason, text: text(id, from) };
  }
  const model = a.configOptions.find((o) => o.id === "model");
  report.steps.setModel = await ctx.request(methods.agent.session.setConfigOption, {
    sessionId: id,
    configId: "model",
    value: model.currentValue,
  });
  // The approval mode is a config option of category `mode`, switched the same way.
  report.steps.setMode = await ctx.request(methods.agent.session.setConfigOption, {
    sessionId: id,
    configId: "mode",
    value: "ask",
  });
  report.steps.list = await ctx.request(methods.agent.session.list, { cwd: workspace });
  // Two sessions in two folders at once.
  const b = await ctx.request(methods.agent.session.new, { cwd: other, mcpServers: [] });
  const both = await Promise.all(
    [a.sessionId, b.sessionId].map((sessionId) =>
      ctx.request(methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: "text", text: "Same for both" }],
      }),
    ),
  );
  report.steps.parallel = { sessions: [a.sessionId, b.sessionId], stops: both.map((r) => r.stopReason) };
  // An MCP server passed by the client, for its session only.
  const c = await ctx.request(methods.agent.session.new, {
    cwd: workspace,
    mcpServers: [{ name: "editor tools", command: mcpServer, args: [], env: [] }],
  });
  const from = report.updates.length;
  const answer = await ctx.request(methods.agent.session.prompt, {
    sessionId: c.sessionId,
    prompt: [{ type: "text", text: "Echo something" }],
  });
  await settled();
  report.steps.mcp = { stopReason: answer.stopReason, text: text(c.sessionId, from), from };
  return id;
}

async function secondConnection(ctx, id) {
  await ctx.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
  const from = report.updates.length;
  const loaded = await ctx.request(methods.agent.session.load, { sessionId: id, cwd: workspace, mcpServers: [] });
  report.steps.load = {
    response: loaded,
    kinds: report.updates.slice(from).map((u) => u.update.sessionUpdate),
  };
}

// A client offering its file system: the agent reads and edits the unsaved buffer.
async function filesConnection(ctx) {
  await ctx.request(methods.agent.initialize, {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
  });
  buffers.set(`${realpathSync(workspace)}/buffer.txt`, "from the editor buffer\n");
  const s = await ctx.request(methods.agent.session.new, { cwd: workspace, mcpServers: [] });
  for (const name of ["fsRead", "fsEdit"]) {
    const answer = await ctx.request(methods.agent.session.prompt, {
      sessionId: s.sessionId,
      prompt: [{ type: "text", text: name }],
    });
    report.steps[name] = { stopReason: answer.stopReason };
  }
}

// A client offering its terminal, in a folder whose settings opt in: `bash` runs there.
async function terminalConnection(ctx) {
  await ctx.request(methods.agent.initialize, {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: { terminal: true },
  });
  const s = await ctx.request(methods.agent.session.new, { cwd: workspace, mcpServers: [] });
  const from = report.updates.length;
  const answer = await ctx.request(methods.agent.session.prompt, {
    sessionId: s.sessionId,
    prompt: [{ type: "text", text: "Run it in the terminal" }],
  });
  await settled();
  report.steps.terminal = { stopReason: answer.stopReason, text: text(s.sessionId, from), from };
}

const first = start();
const id = await app.connectWith(first.stream, firstConnection);
first.child.stdin.end();
await new Promise((resolve) => first.child.on("exit", resolve));
const second = start();
await app.connectWith(second.stream, (ctx) => secondConnection(ctx, id));
second.child.stdin.end();
await new Promise((resolve) => second.child.on("exit", resolve));
const third = start();
await app.connectWith(third.stream, filesConnection);
third.child.stdin.end();
await new Promise((resolve) => third.child.on("exit", resolve));
const fourth = start();
await app.connectWith(fourth.stream, terminalConnection);
fourth.child.stdin.end();
await new Promise((resolve) => fourth.child.on("exit", resolve));
process.stdout.write(JSON.stringify(report));
