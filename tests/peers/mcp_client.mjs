// An agent, as far as MCP goes: the official TypeScript SDK's client (@modelcontextprotocol/sdk,
// pinned in package-lock.json). tests/test_mcp_typescript.py runs it against this service and
// asserts on what it prints.
//
//   node mcp_client.mjs                      (everything comes in MCP_SCENARIO)
//
// MCP_SCENARIO is JSON: {"url": "http://…/mcp", "key": "hm_…"} for streamable HTTP, or
// {"command": "python", "args": [...], "env": {...}} for stdio; and "calls": [{"name": ...,
// "arguments": {...}}, ...], made in order after listing the tools.
//
// stdout: one JSON object a line --
//   {"kind": "server", "version": ..., "capabilities": ...}
//   {"kind": "tools", "tools": [...]}
//   {"kind": "result", "call": I, "result": ...}      (isError results included)
//   {"kind": "error", "call": I|null, "message": ...}  (a protocol error)
//   {"kind": "done"}
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const scenario = JSON.parse(process.env.MCP_SCENARIO ?? "{}");
const emit = (record) => process.stdout.write(JSON.stringify(record) + "\n");

const transport = scenario.url
  ? new StreamableHTTPClientTransport(new URL(scenario.url), {
      requestInit: { headers: scenario.key ? { Authorization: `Bearer ${scenario.key}` } : {} },
    })
  : new StdioClientTransport({
      command: scenario.command,
      args: scenario.args ?? [],
      env: scenario.env,
      cwd: scenario.cwd,
      stderr: "ignore",
    });

const client = new Client({ name: "hermes-memory-ts-test", version: "1.0.0" });
try {
  await client.connect(transport);
  emit({
    kind: "server",
    version: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
  });
  emit({ kind: "tools", tools: (await client.listTools()).tools });
  for (const [i, call] of (scenario.calls ?? []).entries()) {
    try {
      emit({ kind: "result", call: i, result: await client.callTool(call) });
    } catch (error) {
      emit({ kind: "error", call: i, message: String(error?.message ?? error) });
    }
  }
} catch (error) {
  emit({ kind: "error", call: null, message: String(error?.message ?? error) });
} finally {
  await client.close().catch(() => {});
  emit({ kind: "done" });
}
