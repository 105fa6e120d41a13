// Drives `threadline acp` with the official ACP TypeScript SDK (stable v1 entrypoint).
// Usage: node client.mjs FOLDER -- COMMAND ARGS...   (the environment reaches the agent unchanged)
// Prints one JSON object: what the agent sent and answered, for tests/acp/test_acp_node.py to check.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [folder, sep, command, ...args] = process.argv.slice(2);
if (sep !== "--" || !command) throw new Error("usage: node client.mjs FOLDER -- COMMAND ARGS...");

const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const updates = [];
const permissions = [];
const answers = ["allow_once", "reject_once"];

const app = acp
  .client({ name: "threadline-node-test" })
  .onRequest("session/request_permission", ({ params }) => {
    permissions.push({ toolCallId: params.toolCall.toolCallId, kinds: params.options.map((o) => o.kind) });
    return { outcome: { outcome: "selected", optionId: answers.shift() ?? "reject_once" } };
  })
  .onNotification("session/update", ({ params }) => {
    updates.push(params.update);
  });

const result = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  const { sessionId } = await ctx.request("session/new", { cwd: folder, mcpServers: [] });
  const first = await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "write a.txt" }] });
  const second = await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "write b.txt" }] });
  let unknown = null;
  try {
    await ctx.request("session/set_mode", { sessionId, modeId: "nonsense" });
  } catch (err) {
    unknown = err.code ?? String(err);
  }
  const listed = await ctx.request("session/list", {});
  return {
    protocolVersion: init.protocolVersion,
    loadSession: init.agentCapabilities?.loadSession ?? false,
    sessionId,
    stopReasons: [first.stopReason, second.stopReason],
    listed: listed.sessions.map((s) => s.sessionId),
    unknownModeError: unknown,
  };
});
child.stdin.end();
process.stdout.write(JSON.stringify({ ...result, permissions, updates }) + "\n");
