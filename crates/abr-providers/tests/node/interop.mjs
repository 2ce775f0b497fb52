// Node Playwright side of the storageState interop test.
//   node interop.mjs load  '<config>'  loads config.state with newContext({storageState}),
//                                       visits each URL and prints what the page saw
//   node interop.mjs write '<config>'  signs a context in (cookie + localStorage written by
//                                       the page) and prints context.storageState()
// config: { driverPackage, executablePath, args, urls: [...], state?, setUrl? }
import { createRequire } from 'node:module';

const [mode, raw] = process.argv.slice(2);
const cfg = JSON.parse(raw);
const require = createRequire(cfg.driverPackage);
const { chromium } = require('playwright-core');
const browser = await chromium.launch({ executablePath: cfg.executablePath, headless: true, args: cfg.args });
try {
  if (mode === 'load') {
    const context = await browser.newContext({ storageState: cfg.state });
    const page = await context.newPage();
    const seen = [];
    for (const url of cfg.urls) {
      await page.goto(url);
      seen.push(await page.evaluate(() => window.__seen));
    }
    console.log(JSON.stringify(seen));
  } else {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(cfg.setUrl);
    await page.evaluate(() => localStorage.setItem('from_node', 'n1'));
    await page.goto(cfg.urls[1]);
    await page.evaluate(() => localStorage.setItem('from_node_b', 'n2'));
    console.log(JSON.stringify(await context.storageState()));
  }
} finally {
  await browser.close();
}
