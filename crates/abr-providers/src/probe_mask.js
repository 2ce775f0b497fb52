// The page probe's text masks: sensitive text a page shows (not only what was typed) is
// hidden in every frame. Part of the probe's source (`probe_script.rs` joins it after
// `probe.js`); `redactApply`, `redactCheck` and `redactRemove` call it.
//
// Each match of a sensitive pattern in the text of a document, an open shadow root or a
// same-origin frame is a `Range` in a custom highlight named for the frame being taken
// (random to it: no page style can name it), painted as a solid bar with its glyphs not
// painted at all. Like the field blur, it changes no element: a highlight registry entry
// and a rule in the style sheet each root adopted for the frame. Text the highlight cannot
// be trusted to hide (a text shadow, which Chromium still paints under a highlight; SVG
// text) has its element blurred inline instead, as an opaque frame is.

/** What a masked run of text looks like in a frame: a grey bar, nothing of its glyphs. */
const MASK_BACKGROUND = 'rgb(119, 119, 119)';
const MASK_STYLE =
  '{ color: transparent !important; background-color: ' + MASK_BACKGROUND + ' !important;' +
  ' -webkit-text-fill-color: transparent !important;' +
  ' -webkit-text-stroke-color: transparent !important; text-shadow: none !important; }';
const TRANSPARENT = 'rgba(0, 0, 0, 0)';

/** Bounds on the text one frame checks: a page over them has no frame kept. */
const MAX_MASK_NODES = 50000;
const MAX_MASK_CHARS = 4000000;
const MAX_MASKS = 5000;

/** A highlight's highest priority: a page's own highlights never paint over the masks. */
const MASK_PRIORITY = 2147483647;

/** Elements whose text is never painted as text (or is a field, blurred already). */
const UNPAINTED = new Set(['script', 'style', 'noscript', 'template', 'textarea', 'title', 'select', 'option']);

const digitsOf = (s) => s.replace(/\D/g, '');

/** The Luhn check of a payment card number. */
const luhn = (s) => {
  const d = digitsOf(s);
  if (d.length < 13 || d.length > 19) return false;
  let sum = 0;
  for (let i = 0; i < d.length; i += 1) {
    let n = d.charCodeAt(d.length - 1 - i) - 48;
    if (i % 2 === 1) {
      n *= 2;
      if (n > 9) n -= 9;
    }
    sum += n;
  }
  return sum % 10 === 0;
};

/** The ISO 13616 check of an IBAN (mod 97 of its rearranged digits is 1). */
const ibanValid = (s) => {
  const c = s.replace(/ /g, '').toUpperCase();
  if (c.length < 15 || c.length > 34) return false;
  const moved = c.slice(4) + c.slice(0, 4);
  let rest = 0;
  for (const ch of moved) {
    const v = ch >= 'A' && ch <= 'Z' ? ch.charCodeAt(0) - 55 : ch.charCodeAt(0) - 48;
    if (v < 0 || v > 35) return false;
    rest = (v > 9 ? rest * 100 + v : rest * 10 + v) % 97;
  }
  return rest === 1;
};

/** A phone number: 7 to 15 digits (E.164), not a date. */
const phoneLike = (s) => {
  const n = digitsOf(s).length;
  if (n < 7 || n > 15) return false;
  return !/^\d{4}[-./]\d{1,2}[-./]\d{1,2}$|^\d{1,2}[-./]\d{1,2}[-./]\d{4}$/.test(s.trim());
};

/** An IPv4 address of a private, loopback, link-local, shared or unspecified network. */
const internalIpv4 = (s) => {
  const p = s.split('.').map(Number);
  if (p.length !== 4 || p.some((n) => !(n >= 0 && n <= 255))) return false;
  const [a, b] = p;
  return (
    a === 10 || a === 127 || a === 0 ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 169 && b === 254) ||
    (a === 100 && b >= 64 && b <= 127)
  );
};

/** An IPv6 address of loopback, unique-local or link-local networks. */
const internalIpv6 = (s) => {
  const t = s.toLowerCase();
  return t === '::1' || /^f[cd][0-9a-f]{0,2}:/.test(t) || /^fe[89ab][0-9a-f]?:/.test(t);
};

/** A long token: 32 characters or more of one word, letters and digits mixed. */
const tokenLike = (s) => s.startsWith('eyJ') || (/[0-9]/.test(s) && /[A-Za-z]/.test(s));

/** The kinds of sensitive text every frame masks: a pattern and the check a match passes. */
const MASK_KINDS = [
  ['email', /[A-Za-z0-9._%+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+/g, null],
  ['card', /\b\d(?:[ -]?\d){12,18}\b/g, luhn],
  ['iban', /\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b/g, ibanValid],
  ['ip', /\b(?:\d{1,3}\.){3}\d{1,3}\b/g, internalIpv4],
  ['ip', /(?:\b[0-9A-Fa-f]{1,4}|)(?::[0-9A-Fa-f]{0,4}){2,7}\b/g, internalIpv6],
  ['host', /\b(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+(?:internal|intranet|corp|lan|local|localdomain|home\.arpa)\b|\blocalhost\b/gi, null],
  ['token', /\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*|[A-Za-z0-9_-]{32,}/g, tokenLike],
  ['phone', /(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]?\d{2,4}){1,4}\b/g, phoneLike],
];

/** Whether `el` lays out inline: its text joins the text around it. */
const inlineBox = (el, cache) => {
  let v = cache.get(el);
  if (v === undefined) {
    const d = styleOf(el).display;
    v = d.startsWith('inline') || d === 'contents' || d.startsWith('ruby');
    cache.set(el, v);
  }
  return v;
};

/** The block `node`'s text lays out in: its nearest ancestor that is not inline. */
const blockOf = (node, cache) => {
  let el = node.parentElement;
  while (el && inlineBox(el, cache)) el = el.parentElement;
  return el || node.parentNode;
};

/** The text of `root` as one string, a line break between blocks, with where each node's
 * text starts in it. `null` when the root holds more than a frame may check. */
const shownTextOf = (root, budget, cache) => {
  const segments = [];
  let text = '';
  let block = null;
  const doc = root.nodeType === 9 ? root : root.ownerDocument;
  const walker = doc.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || UNPAINTED.has(parent.localName) || node.data.length === 0) continue;
    budget.nodes -= 1;
    budget.chars -= node.data.length;
    if (budget.nodes < 0 || budget.chars < 0) return null;
    const b = blockOf(node, cache);
    if (b !== block) {
      text += '\n';
      block = b;
    }
    segments.push([text.length, node]);
    text += node.data;
  }
  return { text, segments };
};

/** The node and offset at `pos` of `shownTextOf`'s string (a line break between blocks maps to
 * the start of the next node). */
const pointAt = (segments, pos, end) => {
  let lo = 0;
  let hi = segments.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (segments[mid][0] <= (end ? pos - 1 : pos)) lo = mid;
    else hi = mid - 1;
  }
  const [start, node] = segments[lo];
  return [node, Math.max(0, Math.min(node.data.length, pos - start))];
};

/** The platform's extra patterns, compiled; an error names the first that does not. */
const compilePatterns = (sources) => {
  const out = [];
  for (let i = 0; i < sources.length; i += 1) {
    try {
      out.push(['platform', new RegExp(sources[i], 'gu'), null]);
    } catch (e) {
      return { error: `the platform's redaction pattern ${i + 1} is not a valid regular expression` };
    }
  }
  return { kinds: out };
};

/** Every run of sensitive text in `roots`, as `[start node, start offset, end node, end
 * offset]`, or `{ error }` when the page cannot be checked. */
const findMasks = (roots, patterns) => {
  const compiled = compilePatterns(patterns);
  if (compiled.error) return { error: compiled.error };
  const kinds = MASK_KINDS.concat(compiled.kinds);
  const budget = { nodes: MAX_MASK_NODES, chars: MAX_MASK_CHARS };
  const cache = new Map();
  const masks = [];
  for (const root of roots) {
    const read = shownTextOf(root, budget, cache);
    if (!read) return { error: 'the page holds more text than a frame can check' };
    if (read.segments.length === 0) continue;
    const spans = [];
    for (const [, pattern, valid] of kinds) {
      pattern.lastIndex = 0;
      for (let m = pattern.exec(read.text); m; m = pattern.exec(read.text)) {
        if (m[0].length === 0) {
          pattern.lastIndex += 1;
          continue;
        }
        if (valid && !valid(m[0])) continue;
        spans.push([m.index, m.index + m[0].length]);
        if (spans.length > MAX_MASKS) return { error: 'the page shows more sensitive text than a frame can mask' };
      }
    }
    spans.sort((a, b) => a[0] - b[0]);
    const merged = [];
    for (const s of spans) {
      const last = merged[merged.length - 1];
      if (last && s[0] <= last[1]) last[1] = Math.max(last[1], s[1]);
      else merged.push(s);
    }
    for (const [from, to] of merged) {
      const [startNode, startOffset] = pointAt(read.segments, from, false);
      const [endNode, endOffset] = pointAt(read.segments, to, true);
      masks.push([startNode, startOffset, endNode, endOffset]);
    }
    if (masks.length > MAX_MASKS) return { error: 'the page shows more sensitive text than a frame can mask' };
  }
  return { masks };
};

/** The elements whose text a mask covers (the start's to the end's, in one parent or two). */
const maskedElements = (mask) => {
  const out = new Set();
  for (const node of [mask[0], mask[2]]) if (node.parentElement) out.add(node.parentElement);
  return out;
};

/** Whether the highlight cannot be trusted to hide the text of `el`. */
const needsBlur = (el) =>
  el.namespaceURI === 'http://www.w3.org/2000/svg' || styleOf(el).textShadow !== 'none';

/** The name of the masks' highlight for the frame of `token`. */
const maskName = (token) => 'abr-mask-' + String(token).replace(/[^A-Za-z0-9_-]/g, '');

/** The rule each root's frame sheet carries for the masks. */
const maskRule = (token) => '::highlight(' + maskName(token) + ') ' + MASK_STYLE;

/** Registers the masks of `found` under the frame's highlight, one per document; answers
 * the elements to blur instead. */
const maskApply = (state, found) => {
  const name = maskName(state.token);
  const byWindow = new Map();
  const blur = new Set();
  for (const mask of found) {
    const doc = mask[0].ownerDocument;
    const win = doc && doc.defaultView;
    if (!win) continue;
    const range = new win.Range();
    range.setStart(mask[0], mask[1]);
    range.setEnd(mask[2], mask[3]);
    if (!byWindow.has(win)) byWindow.set(win, []);
    byWindow.get(win).push(range);
    state.masks.push([mask, range, win]);
    for (const el of maskedElements(mask)) if (needsBlur(el)) blur.add(el);
  }
  for (const [win, ranges] of byWindow) {
    if (!win.CSS || !win.CSS.highlights || typeof win.Highlight !== 'function') continue;
    const highlight = new win.Highlight(...ranges);
    highlight.priority = MASK_PRIORITY;
    win.CSS.highlights.set(name, highlight);
    state.highlights.push([win, highlight]);
  }
  return blur;
};

/** Whether a non-empty selection of `win` overlaps `range` (a selection paints over it). */
const selectedOver = (win, range) => {
  const sel = win.getSelection && win.getSelection();
  if (!sel || sel.isCollapsed) return false;
  for (let i = 0; i < sel.rangeCount; i += 1) {
    const s = sel.getRangeAt(i);
    try {
      if (s.compareBoundaryPoints(Range.END_TO_START, range) < 0 &&
          s.compareBoundaryPoints(Range.START_TO_END, range) > 0) return true;
    } catch (e) {
      // Another tree: it cannot overlap.
    }
  }
  return false;
};

/** Whether the masks of `state` hide `found` (the sensitive text the page shows now): each
 * a range still registered, at the same place, painted as a mask (or its element blurred),
 * no selection over it and no highlight of the page's above it. Answers how many do not. */
const maskCheck = (state, found) => {
  const name = maskName(state.token);
  const registered = new Map(state.highlights);
  for (const [win, highlight] of state.highlights) {
    if (win.CSS.highlights.get(name) !== highlight) registered.delete(win);
    for (const [other, h] of win.CSS.highlights) {
      if (other !== name && h.priority >= MASK_PRIORITY) registered.delete(win);
    }
  }
  const live = new Map();
  for (const [, range, win] of state.masks) {
    const key = range.startContainer;
    if (!live.has(key)) live.set(key, []);
    live.get(key).push([range, win]);
  }
  const painted = new Map();
  const paints = (el) => {
    let v = painted.get(el);
    if (v === undefined) {
      if (state.blurred.has(el)) v = blurHolds(el);
      else {
        const s = el.ownerDocument.defaultView.getComputedStyle(el, '::highlight(' + name + ')');
        v = s.color === TRANSPARENT && s.webkitTextFillColor === TRANSPARENT &&
          s.backgroundColor === MASK_BACKGROUND && !needsBlur(el);
      }
      painted.set(el, v);
    }
    return v;
  };
  let unconfirmed = 0;
  for (const mask of found) {
    const held = (live.get(mask[0]) || []).find(([r, win]) =>
      r.startOffset === mask[1] && r.endContainer === mask[2] && r.endOffset === mask[3] &&
      registered.has(win) && registered.get(win).has(r) && !selectedOver(win, r));
    const elements = [...maskedElements(mask)];
    if (!held || !elements.every(paints)) unconfirmed += 1;
  }
  return unconfirmed;
};

/** Takes the masks of `state` off. */
const maskRemove = (state) => {
  const name = maskName(state.token);
  for (const [win, highlight] of state.highlights) {
    try {
      if (win.CSS.highlights.get(name) === highlight) win.CSS.highlights.delete(name);
    } catch (e) {
      // Gone with its document.
    }
  }
};
