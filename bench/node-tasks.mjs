// The Node peer of ABR's task benchmark: the plan's browser work (the target URL, the six
// steps, the verification's DOM check), written the way a Node Playwright user would, on one
// shared browser with newContext({ storageState }) per task.
//
//   node bench/node-tasks.mjs '<json config>'
// config: { base, executablePath, args, storageState }
// Then one JSON command per line on stdin, one JSON answer per line on stdout, so the Rust
// side can interleave its rounds with ours:
//   {"email": "..."}  → {"ms": <task ms>, "phases": [<ms per phase, PHASES' order>],
//                       "found": <the new email is in the extracted table>}
//   {"quit": true}    → closes the browser → {"closed": true}; EOF does the same.
// The first line printed, once the browser is up, is {"ready": true}.
import { createRequire } from 'node:module';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'driver', 'package.json'));
const { chromium } = require('playwright-core');

const cfg = JSON.parse(process.argv[2]);
// The same table reading as ABR's `extract` (kind: table): rows named by the header cells.
const TABLE_JS = (el) => {
  const table = el instanceof HTMLTableElement ? el : el.querySelector('table');
  if (!table) return null;
  const text = (c) => (c.innerText ?? c.textContent ?? '').trim();
  const head = table.tHead;
  const header = head && head.rows.length > 0 ? head.rows[head.rows.length - 1] : null;
  const body = Array.from(table.rows).filter((r) => r.cells.length > 0 && r.parentElement !== head);
  const names = header ? Array.from(header.cells).map((c, i) => text(c) || `column${i + 1}`) : [];
  return body.map((r) => {
    const row = {};
    Array.from(r.cells).forEach((c, i) => { row[names[i] ?? `column${i + 1}`] = text(c); });
    return row;
  });
};

const browser = await chromium.launch({ executablePath: cfg.executablePath, headless: true, args: cfg.args });

// The phases of a task, in the order ABR's benchmark times its own: the times between them
// are reported side by side.
const PHASES = ['acquire', 'navigate', 'click', 'type', 'select', 'submit', 'extract', 'check', 'release'];

async function task(email) {
  const t0 = performance.now();
  const marks = [];
  const mark = () => marks.push(performance.now());
  const context = await browser.newContext({ storageState: cfg.storageState, viewport: { width: 1280, height: 800 } });
  let users;
  try {
    const page = await context.newPage();
    mark();
    // ABR's task runner opens the plan's target URL before the first step, unless that
    // step opens it (as here): once, as a person's script does.
    // 1. navigate, 2. open the form, 3. type the email, 4. choose the role, 5. submit,
    // 6. read the users table.
    await page.goto(`${cfg.base}/admin/users`);
    mark();
    await page.locator('#add-user-btn').click();
    mark();
    await page.locator('#email-input').fill(email);
    mark();
    await page.locator('#role-dropdown').selectOption('editor');
    mark();
    await page.getByRole('button', { name: 'Submit' }).click();
    mark();
    users = await page.locator('#users').evaluate(TABLE_JS);
    mark();
    // The verification: the success message is shown.
    await page.locator('.success-message', { hasText: 'User created successfully' }).first().waitFor();
    mark();
  } finally {
    // Timed, as ABR's release of the browser context is.
    await context.close();
  }
  mark();
  const ms = performance.now() - t0;
  const phases = marks.map((t, i) => t - (i === 0 ? t0 : marks[i - 1]));
  return {
    ms,
    phases: phases.length === PHASES.length ? phases : null,
    found: Array.isArray(users) && users.some((u) => u.Email === email),
  };
}

let closed = false;
async function close() {
  if (closed) return;
  closed = true;
  await browser.close();
}
// Killed by a signal (the Rust side panicked): close the browser first, so that no profile
// folder is left behind.
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => close().finally(() => process.exit(1)));
}

console.log(JSON.stringify({ ready: true }));
const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
try {
  for await (const line of lines) {
    if (!line.trim()) continue;
    const cmd = JSON.parse(line);
    if (cmd.quit) break;
    console.log(JSON.stringify(await task(cmd.email)));
  }
} finally {
  await close();
  console.log(JSON.stringify({ closed: true }));
  // Let go of stdin, or the process waits on it.
  lines.close();
  process.stdin.destroy();
}
