#!/usr/bin/env node
// A stand-in for `abr mcp` that pages its snapshots, to check run.mjs's paging path before
// ABR pages for real (it does not look at the page: its elements are the page's links,
// read from the HTML with a regex, 250 an answer):
//
//   BENCH_ABR_BIN=bench/snapshot/fake-abr-paged.mjs node bench/snapshot/run.mjs --tools abr
//
// browse_snapshot {browseId, from?} answers {url, title, elements, text, truncated,
// page: {from, count, total, next?}} (`next` only when there is more).
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

if (process.argv.includes('--version')) {
  console.log('fake-abr-paged 0');
  process.exit(0);
}

const PER_ANSWER = 250;
const sessions = new Map();

async function links(url) {
  const html = await (await fetch(url)).text();
  const out = [];
  const re = /<a\b[^>]*href="([^"]*)"[^>]*>([\s\S]*?)<\/a>/gi;
  let m;
  while ((m = re.exec(html)) !== null) {
    const name = m[2].replace(/<[^>]*>/g, '').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&').replace(/\s+/g, ' ').trim();
    out.push({ ref: `e${out.length + 1}`, role: 'link', name, href: new URL(m[1], url).href });
  }
  return out;
}

function snapshot(s, from = 1) {
  const elements = s.elements.slice(from - 1, from - 1 + PER_ANSWER);
  const page = { from, count: elements.length, total: s.elements.length };
  if (from - 1 + PER_ANSWER < s.elements.length) page.next = from + PER_ANSWER;
  return { url: s.url, title: 'fake', elements, text: '', truncated: page.next !== undefined, page };
}

const answer = (obj) => ({ content: [{ type: 'text', text: JSON.stringify(obj) }], structuredContent: obj });

const server = new Server({ name: 'fake-abr-paged', version: '0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: ['browse_open', 'browse_snapshot', 'browse_close'].map((name) => ({ name, inputSchema: { type: 'object' } })),
}));
server.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
  const a = params.arguments || {};
  if (params.name === 'browse_open') {
    const id = `browse_${sessions.size + 1}`;
    const s = { url: a.url, elements: await links(a.url) };
    sessions.set(id, s);
    return answer({ browseId: id, outcome: 'done', snapshot: snapshot(s) });
  }
  const s = sessions.get(a.browseId);
  if (!s) return { content: [{ type: 'text', text: 'browse_not_found' }], isError: true };
  if (params.name === 'browse_snapshot') return answer(snapshot(s, a.from ?? 1));
  if (params.name === 'browse_close') {
    sessions.delete(a.browseId);
    return answer({ closed: true });
  }
  return { content: [{ type: 'text', text: `unknown tool ${params.name}` }], isError: true };
});
await server.connect(new StdioServerTransport());
