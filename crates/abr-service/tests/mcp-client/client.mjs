// A real MCP client that ABR did not write: the official TypeScript SDK
// (@modelcontextprotocol/sdk, pinned in package-lock.json), driven by
// crates/abr-service/tests/mcp_client.rs.
//
// Usage: node client.mjs '<script JSON>'
//
// The script:
//   {
//     "transport": "stdio", "command": "/path/to/abr", "args": ["mcp"], "env": {...}
//   | "transport": "http", "url": "http://127.0.0.1:PORT/mcp", "token": "...", "tenant"?: "...",
//     "steps": [
//       {"listTools": true},
//       {"tool": "browse_open", "arguments": {...},
//        "save"?: {"var": "/json/pointer/in/structuredContent"},
//        "saveRef"?: {"var": {"role": "button", "name": "Post"}}},
//       ...
//     ]
//   }
// A string argument "{{var}}" (whole string) is replaced by a saved value. "saveRef" finds the
// ref of the first element of the answered snapshot (structuredContent.snapshot, or the
// structuredContent itself) whose role is `role` and whose name is `name`.
//
// Output: one JSON line per step on stdout:
//   {"step": i, "tools": [names]}                                     (listTools)
//   {"step": i, "isError": bool, "structuredContent": ..., "text": "..."}  (a tool result)
//   {"step": i, "mcpError": {"code": n, "message": "..."}}            (a protocol error)
// then {"done": true}. Exit code 0 once connected, whatever the tools answered; 1 when the
// script is bad or the connection failed.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";

function out(value) {
  process.stdout.write(JSON.stringify(value) + "\n");
}

function transportFor(script) {
  if (script.transport === "stdio") {
    return new StdioClientTransport({
      command: script.command,
      args: script.args ?? ["mcp"],
      env: script.env ?? {},
      stderr: "inherit",
    });
  }
  if (script.transport === "http") {
    const headers = { Authorization: `Bearer ${script.token}` };
    if (script.tenant) headers["x-tenant-id"] = script.tenant;
    return new StreamableHTTPClientTransport(new URL(script.url), {
      requestInit: { headers },
    });
  }
  throw new Error(`unknown transport ${script.transport}`);
}

function pointer(value, path) {
  if (path === "" || path === "/") return value;
  return path
    .split("/")
    .slice(1)
    .reduce((v, key) => (v === undefined || v === null ? undefined : v[key]), value);
}

function substitute(value, vars) {
  if (typeof value === "string") {
    const m = /^\{\{(\w+)\}\}$/.exec(value);
    if (m) {
      if (!(m[1] in vars)) throw new Error(`no saved value ${m[1]}`);
      return vars[m[1]];
    }
    return value;
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, vars));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, vars)]));
  }
  return value;
}

function findRef(structured, { role, name }) {
  const snapshot = structured?.snapshot ?? structured;
  const element = (snapshot?.elements ?? []).find(
    (e) => e.role === role && (e.name ?? "").trim() === name,
  );
  return element?.ref;
}

async function main() {
  const script = JSON.parse(process.argv[2] ?? "");
  const client = new Client({ name: "abr-test-client", version: "0.0.0" });
  await client.connect(transportFor(script));
  const vars = {};
  try {
    for (const [i, step] of (script.steps ?? []).entries()) {
      if (step.listTools) {
        const { tools } = await client.listTools();
        out({ step: i, tools: tools.map((t) => t.name) });
        continue;
      }
      try {
        const result = await client.callTool({
          name: step.tool,
          arguments: substitute(step.arguments ?? {}, vars),
        });
        const text = (result.content ?? [])
          .filter((c) => c.type === "text")
          .map((c) => c.text)
          .join("\n");
        out({
          step: i,
          isError: result.isError === true,
          structuredContent: result.structuredContent ?? null,
          text,
        });
        for (const [name, path] of Object.entries(step.save ?? {})) {
          vars[name] = pointer(result.structuredContent, path);
        }
        for (const [name, query] of Object.entries(step.saveRef ?? {})) {
          vars[name] = findRef(result.structuredContent, query);
        }
      } catch (e) {
        if (e instanceof McpError) {
          out({ step: i, mcpError: { code: e.code, message: e.message } });
        } else {
          throw e;
        }
      }
    }
  } finally {
    await client.close();
  }
  out({ done: true });
}

main().catch((e) => {
  process.stderr.write(`client.mjs: ${e?.stack ?? e}\n`);
  process.exit(1);
});
