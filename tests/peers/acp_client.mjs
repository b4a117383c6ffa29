// An editor, as far as the Agent Client Protocol goes: the official TypeScript SDK's client
// (@agentclientprotocol/sdk, pinned in package-lock.json) drives an ACP agent over stdio.
// tests/test_acp_client.py runs it against `manage.py acp` and asserts on what it prints.
//
//   node acp_client.mjs COMMAND [ARGS...]      (the agent to spawn; env and cwd are inherited)
//
// The scenario comes as JSON in ACP_SCENARIO: {"cwd": "/abs/path", "prompts": [STEP, ...]}, a
// STEP being {"text": "..."} (or {"blocks": [ContentBlock, ...]}), optionally with "cancelAfterChunks": N and/or "cancelAfterMs": MS
// (cancel once N agent_message_chunk updates of that prompt arrived, or after MS milliseconds,
// whichever is first) and "how": "session" (session/cancel, the default) or "request" (abort
// the prompt's cancellationSignal: the SDK sends $/cancel_request). Each prompt waits for the
// one before to stop.
//
// stdout: one JSON object a line, in the order seen --
//   {"kind": "initialize", "response": ...}      {"kind": "session", "response": ...}
//   {"kind": "update", "prompt": I|null, "notification": ...}   (every session/update)
//   {"kind": "cancel", "prompt": I, "chunksBefore": N, "how": ...}
//   {"kind": "stop", "prompt": I, "stopReason": ..., "response": ...}
//   {"kind": "error", "prompt": I|null, "code": ..., "message": ..., "data": ...}
//   {"kind": "done"}
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";

import * as acp from "@agentclientprotocol/sdk";

const [command, ...args] = process.argv.slice(2);
const scenario = JSON.parse(process.env.ACP_SCENARIO ?? "{}");
const started = Date.now();

function emit(record) {
  process.stdout.write(`${JSON.stringify({ ...record, ms: Date.now() - started })}\n`);
}

function emitError(prompt, error) {
  emit({
    kind: "error",
    prompt,
    code: error?.code ?? null,
    message: String(error?.message ?? error),
    data: error?.data ?? null,
  });
}

// The agent's stderr (its logs) goes to ours, so the test can show it when something fails.
const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
agent.on("error", (error) => {
  emitError(null, error);
  process.exit(2);
});

let current = null; // the prompt being run: {index, chunks, onChunk}

const app = acp
  .client({ name: "hermes-test-editor" })
  .onNotification(acp.methods.client.session.update, async ({ params }) => {
    emit({ kind: "update", prompt: current?.index ?? null, notification: params });
    if (current && params.update.sessionUpdate === "agent_message_chunk") {
      current.chunks += 1;
      current.onChunk?.();
    }
  })
  .onRequest(acp.methods.client.session.requestPermission, async () => ({
    outcome: { outcome: "cancelled" },
  }));

const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));

async function runPrompt(session, index, step) {
  current = { index, chunks: 0, onChunk: null };
  const turn = current;
  let timer = null;
  const abort = new AbortController();
  const cancel = () => {
    if (turn.cancelSent) return;
    turn.cancelSent = true;
    clearTimeout(timer);
    emit({ kind: "cancel", prompt: index, chunksBefore: turn.chunks, how: step.how ?? "session" });
    if (step.how === "request") {
      abort.abort(); // the SDK sends $/cancel_request for the prompt's request id
    } else {
      session.cx.notify(acp.methods.agent.session.cancel, { sessionId: session.sessionId });
    }
  };
  if (step.cancelAfterChunks !== undefined) {
    turn.onChunk = () => {
      if (turn.chunks >= step.cancelAfterChunks) cancel();
    };
  }
  if (step.cancelAfterMs !== undefined) timer = setTimeout(cancel, step.cancelAfterMs);
  try {
    const response = await session.prompt(step.blocks ?? step.text, {
      cancellationSignal: abort.signal,
    });
    emit({ kind: "stop", prompt: index, stopReason: response.stopReason, response });
  } catch (error) {
    emitError(index, error);
  } finally {
    clearTimeout(timer);
    current = null;
  }
}

try {
  await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      clientInfo: { name: "hermes-test-editor", version: "1" },
    });
    emit({ kind: "initialize", response: init });
    const session = await ctx.buildSession(scenario.cwd ?? process.cwd()).start();
    session.cx = ctx;
    emit({ kind: "session", response: session.newSessionResponse });
    for (const [index, step] of (scenario.prompts ?? []).entries()) {
      await runPrompt(session, index, step);
    }
    session.dispose();
  });
} catch (error) {
  emitError(null, error);
}
emit({ kind: "done" });
agent.stdin.end();
const exited = new Promise((resolve) => agent.once("exit", resolve));
const timeout = setTimeout(() => agent.kill("SIGTERM"), 5000);
await exited;
clearTimeout(timeout);
