// The demo's round trip through a TypeScript client generated from docs/openapi.json:
// the types by openapi-typescript (generated/abr.d.ts, never written by hand), the calls by
// openapi-fetch; all pinned in package-lock.json. `tsc` type-checks every request and
// answer below against the description before it runs. Driven by
// crates/abr-service/tests/service/clients.rs against a real runner and the demo site:
//
//   ABR_URL      the runner          ABR_TOKEN    an operator's token
//   DEMO_URL     the demo site       ABR_SESSION  a signed-in demo session (storageState)
//   ABR_TENANT   the tenant this run acts in
//
// Prints one JSON line per step; exits non-zero at the first step not as expected.

import createClient from "openapi-fetch";
import type { components, paths } from "./generated/abr.js";

type Schemas = components["schemas"];

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const URL = env("ABR_URL");
const DEMO = env("DEMO_URL").replace(/\/$/, "");
const TENANT = env("ABR_TENANT");
const SESSION = JSON.parse(env("ABR_SESSION")) as Schemas["AgentSessionState"];

function step(name: string, facts: Record<string, unknown>): void {
  console.log(JSON.stringify({ step: name, ...facts }));
}

function expect(condition: unknown, what: string): asserts condition {
  if (!condition) {
    console.log(JSON.stringify({ failed: what }));
    process.exit(1);
  }
}

/** The answer of a call that must have `status`. */
function answered<T>(
  result: { data?: T; error?: unknown; response: Response },
  status: number,
  what: string,
): T {
  expect(
    result.response.status === status && result.data !== undefined,
    `${what}: HTTP ${result.response.status} ${JSON.stringify(result.error)}`,
  );
  return result.data as T;
}

function client(token: string) {
  return createClient<paths>({ baseUrl: URL, headers: { Authorization: `Bearer ${token}` } });
}

const operator = client(env("ABR_TOKEN"));

// Keys: an agent and an approver of the tenant.
const tokens: Record<"agent" | "approver", string> = { agent: "", approver: "" };
for (const role of ["agent", "approver"] as const) {
  const made = answered(
    await operator.POST("/v1/keys", {
      body: { name: `typescript-${role}`, role, tenantId: TENANT },
    }),
    201,
    `create the ${role} key`,
  );
  expect(made.key.role === role && made.token, `the ${role} key`);
  tokens[role] = made.token;
}
const agent = client(tokens.agent);
const approver = client(tokens.approver);
step("keys", { roles: Object.keys(tokens) });

// A capture: started, its status read, cancelled.
const started = answered(
  await agent.POST("/v1/capture/start", {
    body: { workspaceId: TENANT, accountId: "acct", platform: "demo" },
  }),
  200,
  "start a capture",
);
const ref: Schemas["CaptureRef"] = {
  captureId: started.captureId,
  workspaceId: TENANT,
  accountId: "acct",
};
const status = answered(await agent.POST("/v1/capture/status", { body: ref }), 200, "status");
expect(status.state === "open", `capture state ${status.state}`);
const cancelled = answered(await agent.POST("/v1/capture/cancel", { body: ref }), 200, "cancel");
expect(cancelled.cancelled, "cancelled");
step("capture", { state: status.state });

// A session kept on the runner.
const stored = answered(
  await agent.PUT("/v1/sessions/{id}", {
    params: { path: { id: "alice-demo" } },
    body: { session: SESSION, platform: "demo" },
  }),
  200,
  "store the session",
);
expect(stored.cookieCount >= 1, "the session's cookies were kept");
step("session", { cookies: stored.cookieCount });

// A post with an idempotency key, repeated, and its record read back.
const post: Schemas["PostRequest"] = {
  platform: "demo",
  sessionId: "alice-demo",
  content: { text: "Hello from TypeScript" },
};
const key = { header: { "idempotency-key": "ts-post-1" } };
const first = await agent.POST("/v1/post", { params: key, body: post });
const result = answered(first, 200, "post") as Schemas["AgentPostResult"];
expect(result.ok && typeof result.postId === "string", `post ${JSON.stringify(result)}`);
const again = await agent.POST("/v1/post", { params: key, body: post });
const replayed = answered(again, 200, "repeat the post") as Schemas["AgentPostResult"];
expect(again.response.headers.get("idempotent-replayed") === "true", "answered as a replay");
expect(replayed.postId === result.postId, "the same post");
const record = answered(
  await agent.GET("/v1/posts/{id}", { params: { path: { id: result.postId } } }),
  200,
  "read the post",
);
expect(record.state === "succeeded", `post state ${record.state}`);
step("post", { postId: result.postId, state: record.state });

// A task proposed by the agent, approved by the approver, run to its end.
const task: Schemas["TaskRequest"] = {
  plan: {
    targetUrl: `${DEMO}/admin/users`,
    steps: [
      { type: "navigate", url: `${DEMO}/admin/users`, description: "Open the users" },
      {
        type: "extract",
        name: "users",
        kind: "table",
        selector: "#users",
        description: "Read the users table",
      },
    ],
    verification: { method: "dom_check", selector: "#users" },
    risk: "low",
  },
  sessionId: "alice-demo",
  platform: "demo",
};
const created = answered(await agent.POST("/v1/tasks", { body: task }), 201, "create the task");
expect(created.state === "pending_approval", `task state ${created.state}`);
const approved = answered(
  await approver.POST("/v1/tasks/{id}/approve", {
    params: { path: { id: created.taskId } },
    body: { planHash: created.planHash, approvedBy: "TypeScript approver" },
  }),
  200,
  "approve the task",
);
expect(["queued", "running", "succeeded"].includes(approved.state), `approved: ${approved.state}`);
const done = answered(
  await agent.GET("/v1/tasks/{id}", {
    params: { path: { id: created.taskId }, query: { waitSecs: 30 } },
  }),
  200,
  "wait for the task",
);
expect(done.state === "succeeded", `task ended ${done.state}: ${JSON.stringify(done.error)}`);
step("task", { taskId: created.taskId, state: done.state });

// The tenant's tasks, listed.
const page = answered(
  await agent.GET("/v1/tasks", { params: { query: { limit: 10 } } }),
  200,
  "list tasks",
);
expect(page.items.some((t) => t.taskId === created.taskId), "the task is listed");
step("list", { tasks: page.items.length });

// The event stream, from the start of the tenant's log, until the task's end.
const stream = await agent.GET("/v1/events", {
  params: { header: { "last-event-id": "0" } },
  parseAs: "stream",
});
expect(stream.response.status === 200 && stream.data, `event stream: ${stream.response.status}`);
const reader = stream.data.pipeThrough(new TextDecoderStream()).getReader();
let buffered = "";
let ended: Schemas["RunEvent"] | undefined;
while (!ended) {
  const { value, done: over } = await reader.read();
  if (over) break;
  buffered += value;
  const lines = buffered.split("\n");
  buffered = lines.pop() ?? "";
  for (const line of lines) {
    if (!line.startsWith("data:")) continue;
    const event = JSON.parse(line.slice(5)) as Schemas["RunEvent"];
    if (event.event === "run_ended" && event.runId === created.taskId) ended = event;
  }
}
await reader.cancel();
expect(ended, "the task's run_ended event arrived");
step("events", { ended: ended.event });
console.log(JSON.stringify({ done: true }));
