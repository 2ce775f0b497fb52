// The Node peer of ABR's post benchmark: the demo strategy's steps, written the way a Node
// Playwright user would, on one shared browser with newContext({ storageState }).
//
//   node bench/node-post.mjs '<json config>'
// config: { base, iterations, executablePath, args, storageState }
// Prints one JSON line: { samplesMs: [...] }.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'driver', 'package.json'));
const { chromium } = require('playwright-core');

const cfg = JSON.parse(process.argv[2]);
const FETCH_FEED = `async () => {
  const r = await fetch('/feed', { credentials: 'same-origin', redirect: 'manual' });
  if (r.type === 'opaqueredirect') return null;
  const doc = new DOMParser().parseFromString(await r.text(), 'text/html');
  return [...doc.querySelectorAll('li.post')].map(li => li.dataset.id); }`;
const browser = await chromium.launch({ executablePath: cfg.executablePath, headless: true, args: cfg.args });

async function post(i) {
  const context = await browser.newContext({ storageState: cfg.storageState, viewport: { width: 1280, height: 800 } });
  const check = await context.request.get(`${cfg.base}/compose`, { maxRedirects: 0 });
  if (check.status() !== 200) throw new Error(`not signed in: ${check.status()}`);
  const page = await context.newPage();
  await page.goto(`${cfg.base}/compose`);
  await page.evaluate(FETCH_FEED);
  await page.locator('#post-text').fill(`node bench post ${i} ${Date.now()}`);
  await page.evaluate(() => { window.__submitted = true; });
  await page.locator('#submit').click();
  await page.waitForFunction(() => window.__submitted !== true && document.readyState === 'complete', null, { polling: 100 });
  const link = await page.locator('.toast-success a').first().getAttribute('href');
  if (!link) throw new Error('no toast');
  await context.storageState();
  await context.close();
}

for (let w = 0; w < 2; w++) await post(-1 - w);
const samples = [];
for (let i = 0; i < cfg.iterations; i++) {
  const t0 = performance.now();
  await post(i);
  samples.push(performance.now() - t0);
}
await browser.close();
console.log(JSON.stringify({ samplesMs: samples }));
