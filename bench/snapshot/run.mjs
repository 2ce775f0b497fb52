#!/usr/bin/env node
// The page snapshot an AI agent reads, from three tools, on the same real documentation
// pages served on 127.0.0.1: ABR (`abr mcp`, tool `browse_snapshot`), Playwright MCP
// (`@playwright/mcp`, `browser_snapshot`) and agent-browser (`agent-browser snapshot -i`).
//
//   npm ci --prefix bench/snapshot && node bench/snapshot/run.mjs [options]
//
// Per page and tool: the tokens the agent's model reads (o200k_base, gpt-tokenizer), the
// elements exposed, the coverage of the page's visible actionable elements (ground truth
// from playwright-core in the page) and the time of a snapshot call on a loaded page (median
// of 3). Prints one markdown report and a line `SNAPSHOT_JSON {...}`.
//
// Options:
//   --tools abr,playwright-mcp,agent-browser   which tools (default: all three)
//   --pages vec,iterator,...                   which pages, by id (default: all)
//   --save <dir>                               keep every raw answer, the ground truth and
//                                              the unmatched names per page and tool
//   --abr-browser chromium|headless-shell      ABR_LOCAL_JOB_BROWSER (default: chromium,
//                                              the binary the two other tools run on)
import { spawn, execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { chromium } from 'playwright-core';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..', '..');
const require = createRequire(import.meta.url);
/** A dependency's directory and package.json (some packages do not export them). */
const pkgDir = (name) => path.join(HERE, 'node_modules', ...name.split('/'));
const pkgJson = (name) => JSON.parse(fs.readFileSync(path.join(pkgDir(name), 'package.json'), 'utf8'));

const CHROMIUM = '/usr/lib/chromium/chromium';
const HEADLESS_SHELL = '/usr/lib/chromium/chromium-headless-shell';
// ABR's local provider has a fixed 1280x800 viewport (crates/abr-providers/src/local.rs);
// the others are set to it, and so is the ground truth.
const VIEWPORT = { width: 1280, height: 800 };
const SNAPSHOTS = 3;
const SETTLE_MS = 300; // after a page is opened, the same for every tool
const AS_ROOT = typeof process.getuid === 'function' && process.getuid() === 0;

// ---------------------------------------------------------------------------------------
// Options and pages

function parseArgs(argv) {
  const o = { tools: ['abr', 'playwright-mcp', 'agent-browser'], pages: null, save: null, abrBrowser: 'chromium' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--tools') o.tools = v().split(',').filter(Boolean);
    else if (a === '--pages') o.pages = v().split(',').filter(Boolean);
    else if (a === '--save') o.save = path.resolve(v());
    else if (a === '--abr-browser') o.abrBrowser = v();
    else if (a === '-h' || a === '--help') {
      console.log(fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\nimport ')[0]);
      process.exit(0);
    } else throw new Error(`unknown option ${a}`);
  }
  for (const t of o.tools) {
    if (!['abr', 'playwright-mcp', 'agent-browser'].includes(t)) throw new Error(`unknown tool ${t}`);
  }
  return o;
}

function rustDocsRoot() {
  if (process.env.BENCH_RUST_DOCS) return process.env.BENCH_RUST_DOCS;
  try {
    const sysroot = execFileSync('rustc', ['--print', 'sysroot'], { encoding: 'utf8' }).trim();
    return path.join(sysroot, 'share', 'doc', 'rust', 'html');
  } catch (e) {
    throw new Error(`cannot find the Rust docs (rustc --print sysroot failed: ${e.message}); set BENCH_RUST_DOCS`);
  }
}

const PYTHON_DOCS = '/usr/share/doc/python3.11/html'; // Debian's python3.11-doc (Sphinx)

// Each page: its id, where it is served from (root prefix + path), what kind of page it is,
// and alternatives tried in order when the first file is missing.
const PAGE_CANDIDATES = [
  { id: 'vec', root: 'rust', kind: 'rustdoc API page, very large', paths: ['std/vec/struct.Vec.html'], required: true },
  { id: 'iterator', root: 'rust', kind: 'rustdoc trait page, large', paths: ['std/iter/trait.Iterator.html', 'core/iter/trait.Iterator.html'] },
  { id: 'std-index', root: 'rust', kind: 'rustdoc crate index, many links', paths: ['std/index.html'] },
  { id: 'collections', root: 'rust', kind: 'rustdoc module page', paths: ['std/collections/index.html', 'std/prelude/index.html'] },
  { id: 'book-ownership', root: 'rust', kind: 'mdBook chapter: prose + sidebar', paths: ['book/ch04-01-what-is-ownership.html', 'book/ch04-00-understanding-ownership.html'] },
  { id: 'cargo-manifest', root: 'rust', kind: 'mdBook (Cargo book): tables', paths: ['cargo/reference/manifest.html', 'cargo/reference/config.html'] },
  { id: 'reference-expr', root: 'rust', kind: 'mdBook (Reference)', paths: ['reference/expressions.html', 'rustc/command-line-arguments.html'] },
  { id: 'docs-root', root: 'rust', kind: 'docs landing page', paths: ['index.html'] },
  { id: 'python-os', root: 'python', kind: 'Sphinx (Python docs), large', paths: ['library/os.html'] },
];

function resolvePages(roots, only) {
  const pages = [];
  const skipped = [];
  for (const c of PAGE_CANDIDATES) {
    if (only && !only.includes(c.id)) continue;
    const root = roots[c.root];
    if (!root) {
      skipped.push({ id: c.id, why: `${c.root} docs not installed` });
      continue;
    }
    const found = c.paths.find((p) => fs.existsSync(path.join(root.dir, p)));
    if (!found) {
      if (c.required) throw new Error(`required page missing: ${path.join(root.dir, c.paths[0])}`);
      skipped.push({ id: c.id, why: `none of ${c.paths.join(', ')} in ${root.dir}` });
      continue;
    }
    pages.push({ id: c.id, kind: c.kind, file: path.join(root.dir, found), urlPath: root.prefix + found });
  }
  return { pages, skipped };
}

// ---------------------------------------------------------------------------------------
// Static server

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.htm': 'text/html; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8', '.json': 'application/json',
  '.svg': 'image/svg+xml', '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif',
  '.ico': 'image/x-icon', '.woff': 'font/woff', '.woff2': 'font/woff2', '.ttf': 'font/ttf', '.txt': 'text/plain; charset=utf-8',
};

// roots: [{ prefix: '/python3.11/', dir }], the longest prefix first; '/' last.
function startServer(roots) {
  const sorted = [...roots].sort((a, b) => b.prefix.length - a.prefix.length);
  const server = http.createServer((req, res) => {
    let pathname;
    try {
      pathname = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    } catch {
      res.writeHead(400).end();
      return;
    }
    const root = sorted.find((r) => pathname.startsWith(r.prefix));
    const rel = path.posix.normalize(pathname.slice(root.prefix.length));
    if (rel.startsWith('..') || rel.includes('\0')) {
      res.writeHead(403).end();
      return;
    }
    let file = path.join(root.dir, rel);
    fs.stat(file, (err, st) => {
      if (!err && st.isDirectory()) {
        file = path.join(file, 'index.html');
        st = fs.existsSync(file) ? fs.statSync(file) : null;
      }
      if (err || !st || !st.isFile()) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      res.writeHead(200, {
        'content-type': TYPES[path.extname(file).toLowerCase()] || 'application/octet-stream',
        'content-length': st.size,
        'cache-control': 'no-cache',
      });
      if (req.method === 'HEAD') res.end();
      else fs.createReadStream(file).pipe(res);
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

// ---------------------------------------------------------------------------------------
// Processes: everything started is recorded (pid + start time, so a reused pid is never
// killed) and killed at the end if it is still there.

const started = new Map(); // pid -> { start, what }

function procStat(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(rest[1]), start: rest[19], state: rest[0] };
  } catch {
    return null;
  }
}

function descendants(rootPid) {
  const children = new Map();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const st = procStat(Number(d));
    if (!st) continue;
    if (!children.has(st.ppid)) children.set(st.ppid, []);
    children.get(st.ppid).push(Number(d));
  }
  const out = [];
  const queue = [rootPid];
  while (queue.length) {
    const p = queue.shift();
    for (const c of children.get(p) || []) {
      out.push(c);
      queue.push(c);
    }
  }
  return out;
}

function track(pid, what) {
  if (!pid) return;
  // Our own process is never one to kill; its descendants all are ours.
  for (const p of pid === process.pid ? descendants(pid) : [pid, ...descendants(pid)]) {
    const st = procStat(p);
    if (st && !started.has(p)) started.set(p, { start: st.start, what });
  }
}

function alive(pid, start) {
  const st = procStat(pid);
  return st && st.start === start && st.state !== 'Z';
}

async function killLeftovers() {
  const left = [...started].filter(([pid, { start }]) => alive(pid, start));
  for (const [pid] of left) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {}
  }
  if (left.length) await sleep(500);
  const still = [];
  for (const [pid, { start, what }] of left) {
    if (!alive(pid, start)) continue;
    still.push(`${pid} (${what})`);
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
  return { terminated: left.length, killed: still };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const tokens = (text) => encode(text).length;
/** How far apart in tokens the answers of repeated snapshot calls are (0: identical). */
const spread = (texts) => {
  const uniq = [...new Set(texts)];
  if (uniq.length < 2) return 0;
  const ts = uniq.map(tokens);
  return Math.max(...ts) - Math.min(...ts);
};

// ---------------------------------------------------------------------------------------
// Names and coverage

const clean = (s) => String(s ?? '').replace(/\s+/g, ' ').trim();
/** The normalized name: whitespace collapsed, lower case, the first 80 characters. */
const norm = (s) => clean(s).toLowerCase().slice(0, 80);
/** What names are matched on: the normalized name without any whitespace (an accessible
 * name and innerText disagree on spaces around inline elements, e.g. `main()` in code). */
const key = (s) => norm(s).replace(/\s+/g, '');

/** Multiset matching: each exposed name matches at most one ground-truth element. */
function cover(truth, exposed) {
  const want = new Map();
  for (const n of truth) want.set(key(n), (want.get(key(n)) || 0) + 1);
  let matched = 0;
  let matchedEmpty = 0;
  for (const n of exposed) {
    const k = key(n);
    const w = want.get(k) || 0;
    if (w > 0) {
      want.set(k, w - 1);
      matched++;
      if (k === '') matchedEmpty++;
    }
  }
  const unmatched = [];
  for (const [k, w] of want) for (let i = 0; i < w; i++) unmatched.push(k);
  return { matched, matchedEmpty, total: truth.length, coverage: truth.length ? matched / truth.length : 1, unmatched };
}

// The ground truth, evaluated in the page: visible interactive elements anywhere on the page
// (the document and its open shadow roots), with a name computed the way the brief says.
const TRUTH_JS = () => {
  const SEL =
    'a[href], button, input:not([type=hidden]), select, textarea, summary, [role=button], [role=link], ' +
    '[role=checkbox], [role=radio], [role=tab], [role=menuitem], [role=option], [role=switch], ' +
    '[role=combobox], [role=textbox], [role=searchbox], [contenteditable=true]';
  const clean = (s) => String(s ?? '').replace(/\s+/g, ' ').trim();
  const roots = [document];
  for (let i = 0; i < roots.length; i++) {
    for (const el of roots[i].querySelectorAll('*')) if (el.shadowRoot) roots.push(el.shadowRoot);
  }
  // innerText, else textContent; without the text of aria-hidden descendants (an accessible
  // name never has it: mdBook's "1.2." chapter numbers are aria-hidden).
  const textOf = (el) => {
    if (!el.querySelector('[aria-hidden="true"]')) return clean(el.innerText);
    let s = '';
    const walk = (n) => {
      for (const c of n.childNodes) {
        if (c.nodeType === 3) s += c.nodeValue;
        else if (c.nodeType === 1) {
          if (c.getAttribute('aria-hidden') === 'true') continue;
          if (typeof c.checkVisibility === 'function' && !c.checkVisibility({ visibilityProperty: true })) continue;
          s += ' ';
          walk(c);
          s += ' ';
        }
      }
    };
    walk(el);
    return clean(s);
  };
  // The strings of a pseudo-element's `content` (not url(), counters or attr()).
  const pseudo = (el, which) => {
    const c = getComputedStyle(el, which).content || '';
    if (c === 'none' || c === 'normal') return '';
    const out = [];
    const re = /url\((?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^)]*)\)|"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'/g;
    let m;
    while ((m = re.exec(c)) !== null) {
      if (m[1] !== undefined) out.push(m[1].replace(/\\(.)/g, '$1'));
      else if (m[2] !== undefined) out.push(m[2].replace(/\\(.)/g, '$1'));
    }
    return out.join('');
  };
  const nameOf = (el) => {
    let n = clean(el.getAttribute('aria-label'));
    if (n) return n;
    const ids = el.getAttribute('aria-labelledby');
    if (ids) {
      const root = el.getRootNode();
      n = clean(ids.split(/\s+/).map((id) => (root.getElementById ? root.getElementById(id) : document.getElementById(id))?.textContent || '').join(' '));
      if (n) return n;
    }
    if (el.labels && el.labels.length) {
      n = clean([...el.labels].map((l) => l.innerText).join(' '));
      if (n) return n;
    }
    n = textOf(el);
    if (n) return n;
    // Nothing rendered as text: CSS generated text (`::before`/`::after` strings, as an
    // accessible name has it: rustdoc's open toggle says "Collapse" that way), else textContent.
    n = clean(pseudo(el, '::before') + ' ' + pseudo(el, '::after')) || clean(el.textContent);
    if (n) return n;
    // A field's value is what the user typed: only a button's value is its name.
    if (el.localName === 'input' && ['button', 'submit', 'reset'].includes((el.type || '').toLowerCase())) {
      n = clean(el.value);
      if (n) return n;
    }
    n = clean(el.getAttribute('placeholder')) || clean(el.getAttribute('title'));
    if (n) return n;
    const img = el.querySelector('img[alt], [role=img][aria-label], svg title');
    if (img) return clean(img.getAttribute('alt') || img.getAttribute('aria-label') || img.textContent);
    return '';
  };
  const out = [];
  let zeroBox = 0;
  let hidden = 0;
  for (const root of roots) {
    for (const el of root.querySelectorAll(SEL)) {
      const rendered = typeof el.checkVisibility === 'function' ? el.checkVisibility({ visibilityProperty: true }) : true;
      const vis = getComputedStyle(el).visibility;
      if (!rendered || vis === 'hidden' || vis === 'collapse') {
        hidden++;
        continue;
      }
      if (![...el.getClientRects()].some((r) => r.width > 0 && r.height > 0)) {
        zeroBox++;
        continue;
      }
      out.push({ tag: el.localName, name: nameOf(el) });
    }
  }
  return { elements: out, zeroBox, hidden, viewport: [innerWidth, innerHeight] };
};

// Interactive roles, in the tools' own words. An element of another role counts as exposed
// actionable when the tool marks it clickable (`[cursor=pointer]`, `clickable`, `[onclick]`).
const INTERACTIVE_ROLES = new Set([
  'link', 'button', 'textbox', 'searchbox', 'checkbox', 'radio', 'combobox', 'listbox', 'tab', 'menuitem',
  'menuitemcheckbox', 'menuitemradio', 'option', 'switch', 'slider', 'spinbutton', 'treeitem', 'file',
]);

function unquote(s) {
  s = s.trim();
  if (s.length >= 2 && s.startsWith('"') && s.endsWith('"')) {
    try {
      return JSON.parse(s);
    } catch {
      return s.slice(1, -1);
    }
  }
  if (s.length >= 2 && s.startsWith("'") && s.endsWith("'")) return s.slice(1, -1).replace(/''/g, "'");
  return s;
}

/** The result of a peer that answers a page whole in one text (Playwright MCP,
 * agent-browser): `texts` are the repeated snapshots of one page, `times` their ms. */
function oneAnswer(texts, times) {
  const els = parseAriaTree(texts[0]);
  const exposed = els.filter((e) => e.actionable).map((e) => e.name);
  return {
    tokensFirst: tokens(texts[0]),
    tokensAll: tokens(texts[0]),
    answers: 1,
    charsFirst: texts[0].length,
    stable: texts.every((t) => t === texts[0]),
    tokenSpread: spread(texts),
    exposedFirst: exposed,
    exposedAll: exposed,
    anyRef: els.map((e) => e.name),
    refs: els.length,
    ms: times,
    raw: texts,
  };
}

/** The elements of an ARIA-snapshot-like YAML text (Playwright MCP's `browser_snapshot`,
 * agent-browser's `snapshot`): each line with a `ref=eN`, its role, its name (the quoted
 * one, else the text of its descendants, as an accessible name from content), and whether
 * the tool marks it clickable. */
function parseAriaTree(text) {
  const lines = text.split('\n');
  const LINE = /^(\s*)- ([A-Za-z][\w-]*)(?: ("(?:[^"\\]|\\.)*"))?(.*)$/;
  const parsed = lines.map((l) => {
    // YAML single-quotes a key holding ': ' (`- 'link "a: b" [ref=e1]':`): unquote it.
    const q = /^(\s*)- '((?:[^']|'')*)'(:.*)?$/.exec(l);
    if (q) l = `${q[1]}- ${q[2].replace(/''/g, "'")}${q[3] || ''}`;
    const m = LINE.exec(l);
    if (!m) {
      const t = /^(\s*)- (\/?[\w-]+): (.*)$/.exec(l) || /^(\s*)- (".*")$/.exec(l);
      return t ? { indent: t[1].length, prop: t[2].startsWith('/'), text: t[3] !== undefined ? unquote(t[3]) : unquote(t[2]) } : null;
    }
    const [, ind, role, quoted, rest] = m;
    // e12, or f1e12 for an element in a frame (Playwright MCP)
    const ref = /\bref=([a-z]?\d*e\d+)\b/.exec(rest);
    let inline = '';
    const colon = rest.lastIndexOf(']: ');
    if (colon >= 0) inline = unquote(rest.slice(colon + 3));
    else if (/^: /.test(rest)) inline = unquote(rest.slice(2));
    if (role === 'text') return { indent: ind.length, text: inline || (quoted ? unquote(quoted) : '') };
    return {
      indent: ind.length,
      role,
      name: quoted !== undefined ? unquote(quoted) : null,
      ref: ref ? ref[1] : null,
      clickable: /\[cursor=pointer\]|\bclickable\b|\[onclick\]/.test(rest),
      inline,
    };
  });
  const contentName = (i) => {
    const me = parsed[i];
    const parts = [];
    if (me.inline) parts.push(me.inline);
    for (let j = i + 1; j < parsed.length; j++) {
      const p = parsed[j];
      if (!p) continue;
      if (p.indent <= me.indent) break;
      if (p.prop) continue;
      if (p.role === undefined) {
        parts.push(p.text);
        continue;
      }
      if (p.name !== null) {
        parts.push(p.name);
        // its descendants are in its name already
        let k = j + 1;
        while (k < parsed.length && (!parsed[k] || parsed[k].indent > p.indent)) k++;
        j = k - 1;
      } else if (p.inline) parts.push(p.inline);
    }
    return parts.join(' ');
  };
  const out = [];
  parsed.forEach((p, i) => {
    if (!p || !p.ref) return;
    const name = p.name !== null ? p.name : contentName(i);
    out.push({ ref: p.ref, role: p.role, name, actionable: INTERACTIVE_ROLES.has(p.role) || p.clickable });
  });
  return out;
}

// ---------------------------------------------------------------------------------------
// Ground truth (playwright-core + chromium-headless-shell)

async function groundTruth(base, pages) {
  const browser = await chromium.launch({ executablePath: HEADLESS_SHELL, headless: true });
  track(process.pid, 'ground-truth chromium');
  try {
    const context = await browser.newContext({ viewport: VIEWPORT });
    const page = await context.newPage();
    const out = {};
    for (const p of pages) {
      await page.goto(base + p.urlPath, { waitUntil: 'load' });
      await sleep(SETTLE_MS);
      out[p.id] = await page.evaluate(TRUTH_JS);
    }
    return out;
  } finally {
    await browser.close().catch(() => {});
  }
}

// ---------------------------------------------------------------------------------------
// MCP clients

function mcpText(result) {
  return (result.content || []).filter((b) => b.type === 'text').map((b) => b.text).join('\n');
}

async function mcpConnect(name, params) {
  const transport = new StdioClientTransport({ ...params, stderr: 'pipe' });
  const stderr = [];
  transport.stderr?.on('data', (d) => {
    stderr.push(String(d));
    if (stderr.length > 200) stderr.shift();
  });
  const client = new Client({ name: 'abr-bench-snapshot', version: '0.1.0' });
  try {
    await client.connect(transport);
  } catch (e) {
    throw new Error(`${name}: MCP connect failed: ${e.message}\n${stderr.join('').slice(-3000)}`);
  }
  track(transport.pid, name);
  const call = async (tool, args, timeout = 120_000) => {
    const r = await client.callTool({ name: tool, arguments: args }, undefined, { timeout });
    return r;
  };
  const close = async () => {
    if (transport.pid) track(transport.pid, name); // the browsers it started
    await client.close().catch(() => {});
  };
  return { client, transport, call, close, stderr };
}

// ---------------------------------------------------------------------------------------
// ABR

function abrBinary() {
  // A stand-in server (e.g. fake-abr-paged.mjs, which pages) to check this harness.
  if (process.env.BENCH_ABR_BIN) return path.resolve(process.env.BENCH_ABR_BIN);
  for (const p of ['target/release/abr', 'target/debug/abr']) {
    const f = path.join(REPO, p);
    if (fs.existsSync(f)) return f;
  }
  throw new Error('no ABR binary: target/release/abr nor target/debug/abr (this bench never builds it)');
}

/** The snapshot object of an ABR tool result: structuredContent, else the JSON text; a
 * `snapshot` member (browse_open, browse_act) or the object itself (browse_snapshot). */
function abrSnapshotOf(result) {
  let sc = result.structuredContent;
  if (!sc) {
    try {
      sc = JSON.parse(mcpText(result));
    } catch {
      sc = {};
    }
  }
  return sc.elements ? sc : sc.snapshot && sc.snapshot.elements ? sc.snapshot : sc;
}

function abrPageInfo(result) {
  const sc = result.structuredContent || {};
  return sc.page || abrSnapshotOf(result).page || null;
}

async function runAbr(base, port, pages, opts, tmp) {
  const bin = abrBinary();
  const script = /\.[cm]?js$/.test(bin);
  const command = script ? process.execPath : bin;
  const pre = script ? [bin] : [];
  const version = execFileSync(command, [...pre, '--version'], { encoding: 'utf8' }).trim();
  const dataDir = fs.mkdtempSync(path.join(tmp, 'abr-data-'));
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    ABR_API_TOKEN: crypto.randomBytes(24).toString('hex'),
    ABR_DATA_DIR: dataDir,
    ABR_EGRESS_ALLOW_PRIVATE: `127.0.0.1:${port}`,
    ABR_LOCAL_JOB_BROWSER: opts.abrBrowser,
    PLAYWRIGHT_DRIVER_PATH: path.join(REPO, 'driver', 'dist'),
    RUST_LOG: 'warn',
  };
  const mcp = await mcpConnect('abr', { command, args: [...pre, 'mcp'], env, cwd: tmp });
  const results = {};
  try {
    for (const p of pages) {
      const opened = await mcp.call('browse_open', { url: base + p.urlPath });
      if (opened.isError) throw new Error(`abr browse_open ${p.urlPath}: ${mcpText(opened).slice(0, 500)}`);
      const browseId = opened.structuredContent?.browseId ?? JSON.parse(mcpText(opened)).browseId;
      track(mcp.transport.pid, 'abr');
      try {
        await sleep(SETTLE_MS);
        const times = [];
        const texts = [];
        let answers = null;
        let msAll = null;
        for (let i = 0; i < SNAPSHOTS; i++) {
          const t0 = performance.now();
          const r = await mcp.call('browse_snapshot', { browseId });
          times.push(performance.now() - t0);
          if (r.isError) throw new Error(`abr browse_snapshot: ${mcpText(r).slice(0, 500)}`);
          texts.push(mcpText(r));
          if (i === 0) {
            // Paged: ask for the rest (`page.next`) until there is none.
            answers = [r];
            const tAll = performance.now();
            let info = abrPageInfo(r);
            let guard = 0;
            while (info && info.next != null && guard++ < 10_000) {
              const prevFrom = info.from ?? 0;
              const next = await mcp.call('browse_snapshot', { browseId, from: info.next });
              if (next.isError) throw new Error(`abr browse_snapshot from ${info.next}: ${mcpText(next).slice(0, 500)}`);
              answers.push(next);
              info = abrPageInfo(next);
              if (info && info.from != null && info.from <= prevFrom) break;
            }
            msAll = times[0] + (performance.now() - tAll);
          }
        }
        const first = abrSnapshotOf(answers[0]);
        const all = answers.flatMap((a) => abrSnapshotOf(a).elements || []);
        results[p.id] = {
          tokensFirst: tokens(texts[0]),
          tokensAll: answers.reduce((s, a) => s + tokens(mcpText(a)), 0),
          answers: answers.length,
          charsFirst: texts[0].length,
          stable: texts.every((t) => t === texts[0]),
          tokenSpread: spread(texts),
          exposedFirst: (first.elements || []).map((e) => e.name ?? ''),
          exposedAll: all.map((e) => e.name ?? ''),
          refs: all.length,
          truncated: !!first.truncated,
          page: abrPageInfo(answers[0]),
          ms: times,
          msAll,
          raw: answers.map(mcpText),
        };
      } finally {
        await mcp.call('browse_close', { browseId }).catch(() => {});
      }
    }
  } catch (e) {
    e.message += `\nabr stderr (last lines):\n${mcp.stderr.join('').slice(-2000)}`;
    throw e;
  } finally {
    await mcp.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  const built = fs.statSync(bin).mtime.toISOString().replace(/\.\d+Z$/, 'Z');
  return { version, binary: `${path.relative(REPO, bin)}, built ${built}`, results };
}

// ---------------------------------------------------------------------------------------
// Playwright MCP

async function runPlaywrightMcp(base, pages, tmp) {
  const pkg = pkgJson('@playwright/mcp');
  const cli = path.join(pkgDir('@playwright/mcp'), 'cli.js');
  let coreVersion = '?';
  try {
    coreVersion = JSON.parse(fs.readFileSync(path.join(path.dirname(cli), 'node_modules', 'playwright-core', 'package.json'), 'utf8')).version;
  } catch {
    coreVersion = pkgJson('playwright-core').version;
  }
  const work = fs.mkdtempSync(path.join(tmp, 'pw-mcp-'));
  const args = [
    cli, '--headless', '--isolated', '--executable-path', CHROMIUM,
    '--viewport-size', `${VIEWPORT.width}x${VIEWPORT.height}`, '--output-dir', path.join(work, 'out'),
  ];
  // Chromium refuses its sandbox as root (ABR and agent-browser drop it there too).
  if (AS_ROOT) args.push('--no-sandbox');
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1' };
  const mcp = await mcpConnect('playwright-mcp', { command: process.execPath, args, env, cwd: work });
  const results = {};
  try {
    for (const p of pages) {
      const nav = await mcp.call('browser_navigate', { url: base + p.urlPath });
      if (nav.isError) throw new Error(`playwright-mcp browser_navigate ${p.urlPath}: ${mcpText(nav).slice(0, 800)}`);
      track(mcp.transport.pid, 'playwright-mcp');
      await sleep(SETTLE_MS);
      const times = [];
      const texts = [];
      for (let i = 0; i < SNAPSHOTS; i++) {
        const t0 = performance.now();
        const r = await mcp.call('browser_snapshot', {});
        times.push(performance.now() - t0);
        if (r.isError) throw new Error(`playwright-mcp browser_snapshot: ${mcpText(r).slice(0, 800)}`);
        texts.push(mcpText(r));
      }
      results[p.id] = oneAnswer(texts, times);
      // Every page on a fresh browser, as ABR's browse_open gives it: refs would otherwise
      // carry the session's history (Playwright prefixes them per navigation, f7e1...).
      track(mcp.transport.pid, 'playwright-mcp');
      await mcp.call('browser_close', {}).catch(() => {});
    }
  } catch (e) {
    e.message += `\nplaywright-mcp stderr (last lines):\n${mcp.stderr.join('').slice(-2000)}`;
    throw e;
  } finally {
    await mcp.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
  return { version: `${pkg.version} (playwright-core ${coreVersion})`, results };
}

// ---------------------------------------------------------------------------------------
// agent-browser

function agentBrowserBinary() {
  const dir = path.join(pkgDir('agent-browser'), 'bin');
  const arch = { x64: 'x64', arm64: 'arm64' }[process.arch];
  const native = path.join(dir, `agent-browser-${process.platform}-${arch}`);
  if (fs.existsSync(native)) {
    // npm does not always keep the execute bit (the package's postinstall sets it).
    try {
      fs.accessSync(native, fs.constants.X_OK);
    } catch {
      fs.chmodSync(native, 0o755);
    }
    return { command: native, pre: [] };
  }
  return { command: process.execPath, pre: [path.join(dir, 'agent-browser.js')] };
}

/** Runs the CLI; resolves at its exit (the daemon it may start keeps no pipe of ours open:
 * its stdio is ignored by us after the CLI exits). */
function runCli(bin, args, env, timeoutMs = 120_000) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(bin.command, [...bin.pre, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`agent-browser ${args.join(' ')}: timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('exit', (code) => {
      const ms = performance.now() - t0;
      clearTimeout(timer);
      // Let the pipes drain what the CLI wrote before it exited.
      setImmediate(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        resolve({ code, ms, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
      });
    });
  });
}

async function runAgentBrowser(base, pages, tmp) {
  const pkg = pkgJson('agent-browser');
  const bin = agentBrowserBinary();
  const work = fs.mkdtempSync(path.join(tmp, 'agent-browser-'));
  const home = path.join(work, 'home');
  const sockets = path.join(work, 's');
  fs.mkdirSync(home);
  fs.mkdirSync(sockets);
  const config = path.join(work, 'config.json');
  fs.writeFileSync(config, '{}\n');
  const session = `abrbench${process.pid}`;
  const env = {
    PATH: process.env.PATH,
    HOME: home, // its ~/.agent-browser state stays in this run's temp dir
    AGENT_BROWSER_CONFIG: config, // no user or project config is read
    AGENT_BROWSER_SOCKET_DIR: sockets,
    AGENT_BROWSER_EXECUTABLE_PATH: CHROMIUM,
    AGENT_BROWSER_NO_VERSION_CHECK: '1', // no CVE check over the internet
    AGENT_BROWSER_IDLE_TIMEOUT_MS: '600000', // a daemon left by a killed run goes away by itself
  };
  const ab = async (...args) => {
    const r = await runCli(bin, ['--session', session, ...args], env);
    if (r.code !== 0) throw new Error(`agent-browser ${args.join(' ')}: exit ${r.code}: ${(r.stderr || r.stdout).slice(0, 800)}`);
    return r;
  };
  const daemonPid = () => {
    try {
      return Number(fs.readFileSync(path.join(sockets, `${session}.pid`), 'utf8').trim()) || null;
    } catch {
      return null;
    }
  };
  const version = (await runCli(bin, ['--version'], env)).stdout.trim();
  const results = {};
  try {
    for (const p of pages) {
      // Every page on a fresh browser, as ABR's browse_open gives it: refs would otherwise
      // keep counting over the session (e7223 on the 8th page).
      await ab('set', 'viewport', String(VIEWPORT.width), String(VIEWPORT.height));
      track(daemonPid(), 'agent-browser daemon');
      await ab('open', base + p.urlPath);
      track(daemonPid(), 'agent-browser daemon');
      await sleep(SETTLE_MS);
      const times = [];
      const texts = [];
      for (let i = 0; i < SNAPSHOTS; i++) {
        const r = await ab('snapshot', '-i');
        times.push(r.ms);
        texts.push(r.stdout);
      }
      results[p.id] = oneAnswer(texts, times);
      track(daemonPid(), 'agent-browser daemon');
      await ab('close');
    }
  } finally {
    track(daemonPid(), 'agent-browser daemon');
    await runCli(bin, ['--session', session, 'close'], env, 30_000).catch(() => {});
    fs.rmSync(work, { recursive: true, force: true });
  }
  return { version: `${pkg.version} (${version})`, results };
}

// ---------------------------------------------------------------------------------------
// Report

const TOOL_LABEL = { abr: 'ABR', 'playwright-mcp': 'Playwright MCP', 'agent-browser': 'agent-browser' };
const pct = (x) => (x == null ? '–' : `${(100 * x).toFixed(1)}%`);
const int = (x) => (x == null ? '–' : x.toLocaleString('en-US'));
const ratio = (a, b) => (a != null && b ? a / b : null);
const fx = (x) => (x == null ? '–' : `${x.toFixed(2)}×`);

function chromiumVersion(bin) {
  try {
    return execFileSync(bin, ['--version'], { encoding: 'utf8', timeout: 20_000 }).trim();
  } catch {
    return '?';
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const t0 = performance.now();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'abr-bench-snapshot-'));
  let server;
  const cleanup = async () => {
    if (server) {
      server.closeAllConnections?.();
      server.close();
      server = null;
    }
    const k = await killLeftovers();
    fs.rmSync(tmp, { recursive: true, force: true });
    return k;
  };
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.once(sig, () => {
      console.error(`\n${sig}: stopping everything started`);
      cleanup().finally(() => process.exit(130));
    });
  }
  try {
    const rustDir = rustDocsRoot();
    const roots = { rust: { prefix: '/', dir: rustDir } };
    if (fs.existsSync(path.join(PYTHON_DOCS, 'library'))) roots.python = { prefix: '/python3.11/', dir: PYTHON_DOCS };
    const { pages, skipped } = resolvePages(roots, opts.pages);
    if (!pages.length) throw new Error('no pages');
    server = await startServer(Object.values(roots));
    const port = server.address().port;
    const base = `http://127.0.0.1:${port}`;
    const load = os.loadavg().map((x) => x.toFixed(2)).join(' ');
    console.error(`serving ${Object.values(roots).map((r) => `${r.prefix} → ${r.dir}`).join(', ')} on ${base}; load ${load}`);

    console.error('ground truth (playwright-core, chromium-headless-shell)…');
    const g0 = performance.now();
    const truth = await groundTruth(base, pages);
    console.error(`ground truth: ${((performance.now() - g0) / 1000).toFixed(1)} s`);

    const tools = {};
    for (const tool of opts.tools) {
      const s = performance.now();
      console.error(`${tool}…`);
      if (tool === 'abr') tools[tool] = await runAbr(base, port, pages, opts, tmp);
      else if (tool === 'playwright-mcp') tools[tool] = await runPlaywrightMcp(base, pages, tmp);
      else tools[tool] = await runAgentBrowser(base, pages, tmp);
      console.error(`${tool}: ${((performance.now() - s) / 1000).toFixed(1)} s`);
    }

    // Per page and tool: coverage and the numbers.
    const rows = {};
    for (const p of pages) {
      const gt = truth[p.id].elements.map((e) => e.name);
      rows[p.id] = {};
      for (const tool of opts.tools) {
        const r = tools[tool].results[p.id];
        const cFirst = cover(gt, r.exposedFirst);
        const cAll = cover(gt, r.exposedAll);
        const cAny = r.anyRef ? cover(gt, r.anyRef) : cAll;
        rows[p.id][tool] = {
          tokensFirst: r.tokensFirst,
          tokensAll: r.tokensAll,
          answers: r.answers,
          chars: r.charsFirst,
          exposed: r.exposedAll.length,
          refs: r.refs,
          matched: cAll.matched,
          matchedFirst: cFirst.matched,
          matchedAnyRef: cAny.matched,
          coverage: cAll.coverage,
          coverageFirst: cFirst.coverage,
          coverageAnyRef: cAny.coverage,
          matchedEmpty: cAll.matchedEmpty,
          msMedian: median(r.ms),
          ms: r.ms.map((x) => Math.round(x)),
          stable: r.stable,
          tokenSpread: r.tokenSpread,
          ...(tool === 'abr' ? { truncated: r.truncated, page: r.page, msAllAnswers: r.msAll } : {}),
        };
        if (opts.save) {
          const dir = path.join(opts.save, p.id);
          fs.mkdirSync(dir, { recursive: true });
          r.raw.forEach((t, i) => fs.writeFileSync(path.join(dir, `${tool}.${i + 1}.txt`), t));
          fs.writeFileSync(path.join(dir, `${tool}.unmatched.txt`), cAll.unmatched.join('\n') + '\n');
          fs.writeFileSync(path.join(dir, `${tool}.exposed.txt`), r.exposedAll.map(norm).join('\n') + '\n');
        }
      }
      if (opts.save) {
        fs.writeFileSync(path.join(opts.save, p.id, 'truth.json'), JSON.stringify(truth[p.id], null, 1));
      }
    }

    // Summary over pages.
    const summary = {};
    for (const tool of opts.tools) {
      const rs = pages.map((p) => rows[p.id][tool]);
      const gtTotal = pages.reduce((s, p) => s + truth[p.id].elements.length, 0);
      summary[tool] = {
        tokensFirst: rs.reduce((s, r) => s + r.tokensFirst, 0),
        tokensAll: rs.reduce((s, r) => s + r.tokensAll, 0),
        exposed: rs.reduce((s, r) => s + r.exposed, 0),
        matched: rs.reduce((s, r) => s + r.matched, 0),
        truth: gtTotal,
        coverage: rs.reduce((s, r) => s + r.matched, 0) / gtTotal,
        coverageFirst: rs.reduce((s, r) => s + r.matchedFirst, 0) / gtTotal,
        coverageAnyRef: rs.reduce((s, r) => s + r.matchedAnyRef, 0) / gtTotal,
        coverageMeanOfPages: rs.reduce((s, r) => s + r.coverage, 0) / rs.length,
        tokensPerMatched: rs.reduce((s, r) => s + r.matched, 0) ? rs.reduce((s, r) => s + r.tokensAll, 0) / rs.reduce((s, r) => s + r.matched, 0) : null,
        msMedianSum: rs.reduce((s, r) => s + r.msMedian, 0),
      };
    }
    const abr = summary.abr;
    const ratios = {};
    for (const other of ['playwright-mcp', 'agent-browser']) {
      if (!abr || !summary[other]) continue;
      ratios[other] = {
        tokensFirst: ratio(abr.tokensFirst, summary[other].tokensFirst),
        tokensAll: ratio(abr.tokensAll, summary[other].tokensAll),
      };
    }

    // Print.
    const versions = {
      abr: tools.abr ? `${tools.abr.version} (${tools.abr.binary}, ABR_LOCAL_JOB_BROWSER=${opts.abrBrowser})` : undefined,
      'playwright-mcp': tools['playwright-mcp']?.version,
      'agent-browser': tools['agent-browser']?.version,
      'ground truth': `playwright-core ${pkgJson('playwright-core').version}, ${chromiumVersion(HEADLESS_SHELL)}`,
      chromium: chromiumVersion(CHROMIUM),
      tokenizer: `gpt-tokenizer ${pkgJson('gpt-tokenizer').version} (o200k_base)`,
      node: process.version,
    };
    const out = [];
    out.push('# Snapshot benchmark: ABR vs Playwright MCP vs agent-browser', '');
    out.push(`Pages served on 127.0.0.1 from ${rustDir}${roots.python ? ` and ${PYTHON_DOCS} (under /python3.11/)` : ''}; viewport ${VIEWPORT.width}x${VIEWPORT.height}; load average at start ${load}.`);
    for (const [k, v] of Object.entries(versions)) if (v) out.push(`- ${k}: ${v}`);
    if (skipped.length) out.push(`- skipped pages: ${skipped.map((s) => `${s.id} (${s.why})`).join('; ')}`);
    out.push('');
    out.push('Tokens: o200k_base tokens of exactly what the model reads (MCP: the `text` content blocks of the snapshot result; agent-browser: stdout of `snapshot -i`). ' +
      '"all answers": ABR\'s paged answers together (same as the first when it does not page). ' +
      'Exposed: elements the tool gives a ref with an interactive role or a clickable mark (ABR: every listed element); (refs): every ref in the answer. ' +
      'ABR (truncated): its answer says elements or text were left out. ' +
      'Coverage: share of the ground truth\'s visible interactive elements matched by name (multiset); "any ref" also counts refs of non-interactive roles (e.g. `<summary>`, which Playwright shows as `generic`). ' +
      `ms: median of ${SNAPSHOTS} snapshot calls on the loaded page (for a paged ABR answer, the first call; in brackets the first call plus the calls for the further answers, once). ` +
      'Every page is opened on a fresh session/browser of each tool.', '');
    for (const p of pages) {
      const t = truth[p.id];
      const empty = t.elements.filter((e) => clean(e.name) === '').length;
      out.push(`## ${p.id}: \`${p.urlPath}\` (${p.kind})`, '');
      out.push(`Ground truth: ${t.elements.length} visible interactive elements (${empty} with an empty name; ${t.zeroBox} more rendered with a zero-size box and ${t.hidden} hidden, not counted).`, '');
      out.push('| tool | tokens (first answer) | tokens (all answers) | elements exposed (refs) | coverage | coverage (any ref) | ms / snapshot |');
      out.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
      for (const tool of opts.tools) {
        const r = rows[p.id][tool];
        const notes = [];
        if (tool === 'abr' && r.truncated) notes.push('truncated');
        if (r.answers > 1) notes.push(`${r.answers} answers`);
        if (!r.stable) notes.push(r.tokenSpread ? `repeated calls differ by up to ${r.tokenSpread} tokens` : 'repeated calls differ, same token count');
        out.push(`| ${TOOL_LABEL[tool]}${notes.length ? ` (${notes.join(', ')})` : ''} | ${int(r.tokensFirst)} | ${int(r.tokensAll)} | ${int(r.exposed)} (${int(r.refs)}) | ${pct(r.coverage)} | ${pct(r.coverageAnyRef)} | ${Math.round(r.msMedian)}${r.answers > 1 && r.msAllAnswers != null ? ` (all ${r.answers} answers: ${Math.round(r.msAllAnswers)})` : ''} |`);
      }
      out.push('');
    }
    out.push(`## Summary over ${pages.length} pages`, '');
    out.push('| tool | tokens (first answers) | tokens (all answers) | ABR / tool (first) | ABR / tool (all) | coverage (pooled) | coverage (any ref, pooled) | coverage (mean of pages) | tokens (all) per matched element | ms / snapshot (sum of medians) |');
    out.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const tool of opts.tools) {
      const s = summary[tool];
      const r = ratios[tool];
      out.push(`| ${TOOL_LABEL[tool]} | ${int(s.tokensFirst)} | ${int(s.tokensAll)} | ${r ? fx(r.tokensFirst) : '–'} | ${r ? fx(r.tokensAll) : '–'} | ${pct(s.coverage)} (${int(s.matched)}/${int(s.truth)}) | ${pct(s.coverageAnyRef)} | ${pct(s.coverageMeanOfPages)} | ${s.matched ? (s.tokensAll / s.matched).toFixed(1) : '–'} | ${Math.round(s.msMedianSum)} |`);
    }
    out.push('');
    console.log(out.join('\n'));

    const k = await cleanup();
    const json = {
      pages: pages.map((p) => ({ id: p.id, path: p.urlPath, kind: p.kind, truth: truth[p.id].elements.length, truthEmptyNames: truth[p.id].elements.filter((e) => clean(e.name) === '').length })),
      skipped,
      viewport: VIEWPORT,
      snapshotsPerPage: SNAPSHOTS,
      versions,
      rows,
      summary,
      ratios,
      leftovers: k,
      seconds: Math.round((performance.now() - t0) / 100) / 10,
    };
    console.log(`SNAPSHOT_JSON ${JSON.stringify(json)}`);
    if (k.killed.length) console.error(`had to SIGKILL: ${k.killed.join(', ')}`);
  } catch (e) {
    await cleanup().catch(() => {});
    throw e;
  }
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
