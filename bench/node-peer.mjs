// The Node peer of ABR's provider benchmark: the same work as the Rust side, done the way a
// Node Playwright user would, on one shared browser with newContext({ storageState }).
//
//   node bench/node-peer.mjs '<json config>'
// config: { mode: "acquire" | "job" | "hold", recipe?: "abr", iterations, concurrency, executablePath, args,
//           originA, originB, cookies: [...], origins: [...] }
// Prints one JSON line: { samplesMs: [...], wallMs, jobs, phases: { acquire, goto, release },
// cpuMs: { script, browser } } (the phases' samples in acquire mode; CPU after the warm-up).
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'driver', 'package.json'));
const { chromium } = require('playwright-core');

const cfg = JSON.parse(process.argv[2]);
// withOrigins=false drops localStorage: the floor of a context with cookies only.
const state = { cookies: cfg.cookies, origins: cfg.withOrigins === false ? [] : cfg.origins };

const browser = await chromium.launch({ executablePath: cfg.executablePath, headless: true, args: cfg.args });

// acquire mode: each phase's time too (the context and its page, the page load, the close).
const phases = { acquire: [], goto: [], release: [] };

async function acquireGotoRelease() {
  const t0 = performance.now();
  const context = await browser.newContext({ storageState: state, viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const t1 = performance.now();
  await page.goto(`${cfg.originA}/page`);
  const t2 = performance.now();
  await context.close();
  const t3 = performance.now();
  phases.acquire.push(t1 - t0);
  phases.goto.push(t2 - t1);
  phases.release.push(t3 - t2);
}

// recipe "abr": what ABR does, written in Node (the best a Playwright script gets with
// ABR's design): contexts and pages made ahead (two kept ready, refilled in the
// background), cookies added on claim, localStorage seeded by an init script, service
// workers blocked, downloads denied. Otherwise newContext({ storageState }).
const abrRecipe = cfg.recipe === 'abr';
const abrOptions = { viewport: { width: 1280, height: 800 }, serviceWorkers: 'block', acceptDownloads: false };
const seedScript = `(() => { const seeds = ${JSON.stringify(Object.fromEntries(
  state.origins.map((o) => [new URL(o.origin).origin, o.localStorage.map((i) => [i.name, i.value])]),
))}; const items = seeds[location.origin]; if (!items) return;
  if (sessionStorage.getItem('__seeded') !== null) return;
  for (const [k, v] of items) localStorage.setItem(k, v); sessionStorage.setItem('__seeded', '1'); })();`;
const warm = [];
function refill() {
  while (abrRecipe && warm.length < 2) {
    warm.push(browser.newContext(abrOptions).then(async (context) => { await context.newPage(); return context; }));
  }
}
refill();

async function open() {
  if (!abrRecipe) {
    const context = await browser.newContext({ storageState: state, viewport: { width: 1280, height: 800 } });
    return { context, page: await context.newPage() };
  }
  // A ready one if there is one (more jobs at once than the pool holds make their own).
  const claimed = warm.shift();
  refill();
  const context = claimed ? await claimed : await browser.newContext(abrOptions);
  await Promise.all([context.addCookies(state.cookies), context.addInitScript(seedScript)]);
  return { context, page: context.pages()[0] ?? (await context.newPage()) };
}

async function job(i) {
  const { context, page } = await open();
  await page.goto(`${cfg.originA}/page`);
  await page.locator('#name').fill(`job${i}`);
  await page.locator('#go').click();
  const text = await page.locator('#out').textContent();
  if (text !== `Hello, job${i}`) throw new Error(`job ${i} read back ${text}`);
  const exported = await context.storageState();
  if (exported.cookies.length < cfg.cookies.length) throw new Error(`job ${i} lost cookies`);
  await context.close();
}

if (cfg.mode === 'hold') {
  // Memory: `concurrency` jobs held open (state, page loaded, filled, clicked) while the
  // benchmark reads the process tree; a line on stdin ends it.
  const line = () => new Promise((resolve) => process.stdin.once('data', resolve));
  console.log(JSON.stringify({ ready: 0 }));
  await line();
  const held = [];
  for (let i = 0; i < cfg.concurrency; i++) {
    const context = await browser.newContext({ storageState: state, viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${cfg.originA}/page`);
    await page.locator('#name').fill(`job${i}`);
    await page.locator('#go').click();
    await page.locator('#out').textContent();
    held.push(context);
  }
  console.log(JSON.stringify({ ready: cfg.concurrency }));
  await line();
  for (const context of held) await context.close();
  await browser.close();
  process.exit(0);
}

// CPU ms of the processes under this one (the browser Playwright launched; Linux /proc,
// clock ticks of 10 ms) and of this script, for the throughput cells' CPU split.
function childrenCpuMs(root) {
  const rows = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // utime stime, and cutime cstime: children that ended (renderers of closed contexts).
      rows.push({ pid: Number(name), ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]) });
    } catch { /* gone */ }
  }
  const tree = new Set([root]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const r of rows) if (!tree.has(r.pid) && tree.has(r.ppid)) { tree.add(r.pid); grew = true; }
  }
  return rows.filter((r) => r.pid !== root && tree.has(r.pid)).reduce((sum, r) => sum + r.ticks * 10, 0);
}
const cpuNow = () => ({ script: process.cpuUsage(), browser: childrenCpuMs(process.pid) });

const work = cfg.mode === 'acquire' ? () => acquireGotoRelease() : (i) => job(i);
for (let w = 0; w < 3; w++) await work(-1 - w); // warm-up, untimed
for (const list of Object.values(phases)) list.length = 0;
const cpuStart = cpuNow();

const samples = [];
let next = 0;
const started = performance.now();
async function worker() {
  while (next < cfg.iterations) {
    const i = next++;
    const t0 = performance.now();
    await work(i);
    samples.push(performance.now() - t0);
  }
}
await Promise.all(Array.from({ length: cfg.concurrency }, worker));
const wallMs = performance.now() - started;
const cpuEnd = cpuNow();
for (const context of warm) await (await context).close();
const used = process.cpuUsage(cpuStart.script);
const cpuMs = { script: (used.user + used.system) / 1000, browser: cpuEnd.browser - cpuStart.browser };
await browser.close();
console.log(JSON.stringify({ samplesMs: samples, wallMs, jobs: samples.length, phases, cpuMs }));
