// The page probe's script: the body of the functions `src/probe.rs` evaluates in the page.
// It defines helpers and the entry points (`inspect`, `focused`, `signals`, `redactApply`,
// `redactFinish`, `redactRemove`, `still`, `snapshot`); the Rust side appends the call.
// Reading never acts on the page: no focus, click, scroll or event (a frame's watch only
// listens). It never reads the value of a field a person types or chooses in (`isField`).

/** The blur every field gets for a frame, exactly as `getComputedStyle` reports it. */
const BLUR = 'blur(16px)';

/** Where the redaction of the frame being taken keeps its state (on the top window). */
const KEY = '__abrRedaction';

/** Every field whose content a frame must not show (a hidden input is never rendered). */
const FIELDS =
  'input:not([type="hidden" i]), textarea, select, [contenteditable]:not([contenteditable="false" i])';

/** What a field looks like in a frame: blurred, its text and caret not painted at all. */
const REDACT_RULE =
  '{ filter: ' + BLUR + ' !important; color: transparent !important;' +
  ' -webkit-text-fill-color: transparent !important; text-shadow: none !important;' +
  ' caret-color: transparent !important; transition: none !important; }';

/** Bounds on the work of one call, whatever the page holds. */
const MAX_ROOTS = 200;
const MAX_TEXT_NODES = 2000;
const MAX_NAME = 200;
const MAX_FORMS = 100;
const MAX_CARD_CANDIDATES = 1000;

/** Input types that are buttons, not fields. */
const BUTTON_INPUTS = ['submit', 'button', 'reset', 'image'];

/** Input types a form counts as its text fields. */
const TEXT_INPUTS = ['text', 'email', 'number', 'tel', 'url'];

const clean = (s) => (s || '').replace(/\s+/g, ' ').trim();

const wellFormed = (s) => (typeof s.toWellFormed === 'function' ? s.toWellFormed() : s);

/** `s` cleaned and cut to `n` UTF-16 units (so at most `n` characters). */
const cap = (s, n) => wellFormed(clean(s).slice(0, n).trim());

const lower = (s) => {
  const t = (s || '').trim().toLowerCase();
  return t === '' ? null : wellFormed(t);
};

const styleOf = (el) => el.ownerDocument.defaultView.getComputedStyle(el);

/** The `type` of an input (normalised by the browser: `text` when absent or unknown), the
 * `type` of a button that has the attribute (`submit` when unknown), else null. */
const typeOf = (el) => {
  if (el.localName === 'input') return (el.type || 'text').toLowerCase();
  if (el.localName === 'button' && el.hasAttribute('type')) return (el.type || 'submit').toLowerCase();
  return null;
};

/** A field a person types or chooses in: its value is never read. */
const isField = (el) => {
  const tag = el.localName;
  if (tag === 'textarea' || tag === 'select') return true;
  if (tag === 'input') return !BUTTON_INPUTS.includes(typeOf(el)) && typeOf(el) !== 'hidden';
  return el.isContentEditable === true;
};

/** The label of an `<input>` that is a button: the `value` of `submit|button|reset`
 * (page-authored, not typed), the `alt` of `image`; nothing for any other input (the value
 * of a hidden one can be a token). */
const buttonLabel = (el) => {
  const type = typeOf(el);
  if (type === 'image') return el.getAttribute('alt') || '';
  if (type !== 'submit' && type !== 'button' && type !== 'reset') return '';
  if (el.hasAttribute('value')) return el.getAttribute('value') || '';
  if (type === 'submit') return 'Submit';
  if (type === 'reset') return 'Reset';
  return '';
};

/** Laid out and not hidden (`offsetParent`/client rects, and `visibility`). */
const visible = (el) => {
  if (el.offsetParent === null && el.getClientRects().length === 0) return false;
  const v = styleOf(el).visibility;
  return v !== 'hidden' && v !== 'collapse';
};

/** The text CSS draws with `content` before or after `el` (`::before`, `::after`), as the
 * accessibility tree shows it: quoted strings and `attr(name)`; nothing else. */
const pseudoText = (el, which) => {
  let content = '';
  try {
    content = el.ownerDocument.defaultView.getComputedStyle(el, which).content || '';
  } catch (e) {
    return '';
  }
  if (content === 'none' || content === 'normal' || content === '') return '';
  // An image (`url("data:…")`, `image-set(…)`, a gradient) draws no text; only what is left
  // is read (its quoted strings, `attr()`, and the alternative text after a `/`).
  content = content.replace(/(?:url|image-set|-webkit-image-set|[a-z-]*gradient)\((?:[^()"']|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\([^()]*\))*\)/gi, ' ');
  const out = [];
  const re = /"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|attr\(\s*([\w-]+)\s*\)/g;
  let m;
  while ((m = re.exec(content)) !== null && out.length < 8) {
    if (m[3] !== undefined) out.push(el.getAttribute(m[3]) || '');
    else out.push((m[1] !== undefined ? m[1] : m[2]).replace(/\\(.)/g, '$1'));
  }
  return out.join('');
};

/** The rendered text inside `root` as `innerText` would give it, except that fields (and
 * everything in them) are skipped, images give their `alt`, input buttons their label, and
 * other inputs nothing; with `pseudo`, the text CSS draws before and after each element
 * too (as accessible names include it).
 * Bounded; follows open shadow roots and slots. */
const textOf = (root, pseudo = false) => {
  const parts = [];
  let budget = MAX_TEXT_NODES;
  const walk = (node, top) => {
    if (budget-- <= 0) return;
    if (node.nodeType === 3) {
      parts.push(node.data);
      return;
    }
    if (node.nodeType !== 1 && node.nodeType !== 11) return;
    if (node.nodeType === 1) {
      const tag = node.localName;
      if (['script', 'style', 'template', 'noscript', 'datalist', 'option'].includes(tag)) return;
      if (isField(node)) return;
      if (!top) {
        const style = styleOf(node);
        if (style.display === 'none' || style.visibility === 'hidden') return;
        if (node.getAttribute('aria-hidden') === 'true') return;
      }
      if (tag === 'img') {
        parts.push(' ', node.getAttribute('alt') || '', ' ');
        return;
      }
      if (tag === 'input') {
        parts.push(' ', buttonLabel(node), ' ');
        return;
      }
      if (tag === 'br') {
        parts.push(' ');
        return;
      }
      if (tag === 'slot') {
        const assigned = node.assignedNodes({ flatten: true });
        for (const child of assigned.length ? assigned : node.childNodes) walk(child, false);
        return;
      }
      const children = node.shadowRoot ? node.shadowRoot.childNodes : node.childNodes;
      if (pseudo) parts.push(pseudoText(node, '::before'));
      for (const child of children) walk(child, false);
      if (pseudo) parts.push(pseudoText(node, '::after'));
      if (!top && !styleOf(node).display.startsWith('inline')) parts.push(' ');
      return;
    }
    for (const child of node.childNodes) walk(child, false);
  };
  walk(root, true);
  return clean(parts.join(''));
};

/** The element `id` names in `el`'s tree (its document or shadow root). */
const byId = (el, id) => {
  const root = el.getRootNode();
  return typeof root.getElementById === 'function'
    ? root.getElementById(id)
    : el.ownerDocument.getElementById(id);
};

/** The accessible name, approximately as the browser computes it, never from a field's
 * value: `aria-labelledby`, `aria-label`, a field's `<label>`s, an input button's label or
 * an image input's `alt`, an element's own text, then `title` (and a field's placeholder). */
const accessibleName = (el) => {
  const tag = el.localName;
  const ids = (el.getAttribute('aria-labelledby') || '').split(/\s+/).filter(Boolean);
  if (ids.length) {
    const text = clean(
      ids
        .map((id) => {
          const ref = byId(el, id);
          return ref && !isField(ref) ? textOf(ref) : '';
        })
        .join(' '),
    );
    if (text) return text;
  }
  const aria = clean(el.getAttribute('aria-label'));
  if (aria) return aria;
  const field = isField(el);
  if (field) {
    const labels = el.labels ? Array.from(el.labels) : [];
    const text = clean(labels.map(textOf).join(' '));
    if (text) return text;
  } else if (tag === 'input') {
    const text = clean(buttonLabel(el));
    if (text) return text;
  } else {
    const text = textOf(el, true);
    if (text) return text;
  }
  const title = clean(el.getAttribute('title'));
  if (title) return title;
  if (field) return clean(el.getAttribute('placeholder'));
  return '';
};

/** A form's controls and its tree, read through the prototype: a control named `elements`
 * or `getRootNode` shadows the form's own property. */
const formElements = (form) =>
  Array.from(Object.getOwnPropertyDescriptor(HTMLFormElement.prototype, 'elements').get.call(form));
const rootOf = (node) => Node.prototype.getRootNode.call(node);

/** `<button type=submit>` (or without a type), `<input type=submit|image>`. */
const isSubmit = (el) =>
  (el.localName === 'button' && el.type === 'submit') ||
  (el.localName === 'input' && (el.type === 'submit' || el.type === 'image'));

/** The form's submit controls, including those outside it that name it with `form=`
 * (image inputs are not in `form.elements`). */
const submitControls = (form) =>
  Array.from(rootOf(form).querySelectorAll('button, input')).filter(
    (c) => c.form === form && isSubmit(c),
  );

/** Lower-case `name`, `id`, and the identifier-like `data-*` values of at most 64
 * characters (never anything that looks like a value: digits first, spaces, `@`...). */
const hintsOf = (el) => {
  const out = [];
  const push = (v, max) => {
    const t = (v || '').trim().toLowerCase();
    if (t && t.length <= max && !out.includes(t) && out.length < 16) out.push(wellFormed(t));
  };
  push(el.getAttribute('name'), 128);
  push(el.id, 128);
  for (const attr of Array.from(el.attributes)) {
    if (attr.name.startsWith('data-') && /^[a-z][a-z0-9_.:-]*$/i.test(attr.value.trim())) {
      push(attr.value, 64);
    }
  }
  return out;
};

/** Input types that block HTML's implicit submission (Enter submits a form without a
 * submit control only when it has exactly one such field). */
const BLOCKING_INPUTS = [
  'text', 'search', 'url', 'tel', 'email', 'password', 'date', 'month', 'week', 'time',
  'datetime-local', 'number',
];

/** Elements a click activates on their own (a click inside one is its click). */
const ACTIVATABLE =
  'button, a[href], input, select, textarea, summary, label, [role=button], [role=link], ' +
  '[role=switch], [role=checkbox], [role=radio], [role=tab], [role=menuitem], ' +
  '[role=menuitemcheckbox], [role=menuitemradio], [role=option], ' +
  '[contenteditable]:not([contenteditable="false" i])';

/** `el`'s parent in the flat tree: its parent element, or its shadow root's host. */
const up = (el) => el.parentElement || (el.parentNode && el.parentNode.host) || null;

/** The closest of `el` and its ancestors matching `selector`, across shadow boundaries. */
const closestComposed = (el, selector) => {
  let node = el;
  for (let depth = 0; node && depth < 512; depth += 1) {
    if (node.nodeType === 1 && node.matches(selector)) return node;
    node = up(node);
  }
  return null;
};

/** What a click on `el` activates: the closest control around it (a click on a button's
 * icon is the button's), and for a label, the control it labels. */
const activated = (el) => {
  const target = closestComposed(el, ACTIVATABLE) || el;
  if (target.localName === 'label' && target.control) return target.control;
  return target;
};

/** A form's property through the prototype (a control named `method` shadows it). */
const formProp = (form, name) =>
  Object.getOwnPropertyDescriptor(HTMLFormElement.prototype, name).get.call(form);

/** How `el` submits `form`: the submitter's `formmethod`, else the form's method. */
const methodOf = (el, form) => {
  if (!form) return null;
  const submitter = el.localName === 'button' || el.localName === 'input';
  if (submitter && el.hasAttribute('formmethod')) return lower(el.formMethod) || 'get';
  return lower(formProp(form, 'method')) || 'get';
};

/** The facts `ElementFacts` holds about what acting on `el` reaches. */
const inspect = (el) => inspectOne(activated(el));

/** The facts of `el` itself. */
const inspectOne = (el) => {
  const form = el.form || closestComposed(el, 'form');
  const role = lower(el.getAttribute('role'));
  const controls = form ? formElements(form) : [];
  const popup = el.getAttribute('aria-haspopup');
  const formRole = form ? lower(form.getAttribute('role')) : null;
  return {
    tag: el.localName.toLowerCase(),
    inputType: typeOf(el),
    role: role === null ? null : role.split(/\s+/)[0],
    name: cap(accessibleName(el), MAX_NAME),
    inForm: !!form,
    formHasSubmit: !!form && submitControls(form).length > 0,
    formMissingRequired: controls.some((c) => c.validity && c.validity.valueMissing),
    formMethod: methodOf(el, form),
    formBlockingFields: controls.filter(
      (c) => c.localName === 'input' && BLOCKING_INPUTS.includes(typeOf(c)),
    ).length,
    editable: el.isContentEditable === true || el.ownerDocument.designMode === 'on',
    search:
      typeOf(el) === 'search' ||
      role === 'searchbox' ||
      formRole === 'search' ||
      !!closestComposed(el, '[role=search i], search'),
    disclosure:
      el.localName === 'summary' ||
      el.hasAttribute('aria-expanded') ||
      (popup !== null && popup.toLowerCase() !== 'false'),
    autocomplete: lower(el.getAttribute('autocomplete')),
    fieldHints: hintsOf(el),
  };
};

/** The element with the keyboard focus, followed into same-origin frames and open shadow
 * roots: its facts, `none` when only the document has it, `opaque` when it is in a frame
 * this script cannot reach into. */
const focused = () => {
  let el = document.activeElement;
  for (let depth = 0; el && depth < 32; depth += 1) {
    if (el.shadowRoot && el.shadowRoot.activeElement) {
      el = el.shadowRoot.activeElement;
      continue;
    }
    if (el.localName === 'iframe' || el.localName === 'frame') {
      let inner = null;
      try {
        inner = el.contentDocument || null;
      } catch (e) {
        inner = null;
      }
      if (!inner) return { kind: 'opaque' };
      el = inner.activeElement;
      continue;
    }
    break;
  }
  if (!el) return { kind: 'none' };
  const doc = el.ownerDocument;
  const page = el === doc.body || el === doc.documentElement;
  if (page && doc.designMode !== 'on' && !el.isContentEditable) return { kind: 'none' };
  return { kind: 'facts', facts: inspectOne(el) };
};

/** The document, its open shadow roots and its same-origin frames' documents (with
 * theirs), and the frame elements whose document cannot be reached (cross-origin, sandboxed,
 * plugins). Bounded. */
const collectRoots = (doc) => {
  const roots = [];
  const opaque = [];
  const visit = (root) => {
    if (roots.length >= MAX_ROOTS) return;
    roots.push(root);
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) visit(el.shadowRoot);
      const tag = el.localName;
      if (tag === 'iframe' || tag === 'frame' || tag === 'object' || tag === 'embed') {
        let inner = null;
        try {
          inner = el.contentDocument || null;
        } catch (e) {
          inner = null;
        }
        if (inner && inner.documentElement) visit(inner);
        else opaque.push(el);
      }
    }
  };
  visit(doc);
  return { roots, opaque };
};

/** Every match of `selector` in every root. */
const queryAll = (roots, selector) => roots.flatMap((r) => Array.from(r.querySelectorAll(selector)));

const hasToken = (el, token) =>
  (el.getAttribute('autocomplete') || '').toLowerCase().split(/\s+/).includes(token);

/** What the pause detector reads, in one pass. */
const signals = () => {
  const { roots } = collectRoots(document);
  const inputs = queryAll(roots, 'input');
  const nav = performance.getEntriesByType('navigation')[0];
  const status = nav && nav.responseStatus ? nav.responseStatus : null;
  const body = document.body ? document.body.innerText : '';
  const text = wellFormed((document.title + ' ' + body).slice(0, 20000).toLowerCase().slice(0, 20000));
  const invisibleWidget = (el) => (el.getAttribute('data-size') || '').toLowerCase() === 'invisible';
  const captchaWidget = queryAll(
    roots,
    '.g-recaptcha, .h-captcha, .cf-turnstile, #FunCaptcha, #arkose, [id^="arkose-" i]',
  ).some((el) => !invisibleWidget(el) && visible(el));
  const captchaFrame = queryAll(roots, 'iframe').some((f) => {
    const src = f.getAttribute('src') || '';
    return (
      /recaptcha|hcaptcha|challenges\.cloudflare\.com|arkoselabs|funcaptcha/i.test(src) &&
      !/[?&]size=invisible/i.test(src) &&
      visible(f)
    );
  });
  const cardCandidates = queryAll(roots, 'input, select, textarea')
    .filter((el) => isField(el) && visible(el))
    .slice(0, MAX_CARD_CANDIDATES)
    .map((el) => ({ autocomplete: lower(el.getAttribute('autocomplete')), fieldHints: hintsOf(el) }));
  const forms = queryAll(roots, 'form')
    .filter(visible)
    .slice(0, MAX_FORMS)
    .map((form) => {
      const controls = formElements(form);
      return {
        hasPassword: controls.some(
          (c) => c.localName === 'input' && c.type === 'password' && visible(c),
        ),
        submitNames: submitControls(form)
          .filter(visible)
          .map((c) => cap(accessibleName(c), MAX_NAME)),
        fields: controls.filter(
          (c) =>
            ((c.localName === 'input' && TEXT_INPUTS.includes(c.type)) ||
              c.localName === 'textarea') &&
            visible(c),
        ).length,
      };
    });
  return {
    url: location.href,
    status,
    text,
    passwordFields: inputs.filter((i) => i.type === 'password' && visible(i)).length,
    captcha: captchaWidget || captchaFrame,
    oneTimeCode: inputs.some((i) => hasToken(i, 'one-time-code') && visible(i)),
    fileInputs: inputs.filter((i) => i.type === 'file' && !i.disabled).length,
    cardCandidates,
    forms,
  };
};

/** Whether the blur holds on `el` (a field, or an opaque frame) right now. An element with
 * `display: contents` has no box to blur while its children are painted: never confirmed. */
const blurHolds = (el) => {
  const style = styleOf(el);
  return style.filter === BLUR && style.display !== 'contents';
};

/** The selector of what the frame of `state` blurs: every field, and the platform's own. */
const blurSelector = (state) => [FIELDS, ...state.selectors].join(', ');

/** Counts the fields (and opaque frames, and the platform's selected elements) of the page
 * and those the blur of `token` does not cover now, and the sensitive text the page shows
 * and what of it the masks do not hide now. Everything is unconfirmed when the redaction is
 * not this one (the document was replaced, or another frame took over). */
const redactCheck = (token) => {
  const state = window[KEY];
  const intact = !!state && state.token === token;
  const { roots, opaque } = collectRoots(document);
  let fields = 0;
  let unconfirmed = 0;
  let masked = 0;
  let maskUnconfirmed = 0;
  let error = null;
  const count = (el) => {
    fields += 1;
    if (!intact || !blurHolds(el)) unconfirmed += 1;
  };
  const selector = intact ? blurSelector(state) : FIELDS;
  for (const root of roots) {
    if (root.nodeType === 9 && root.designMode === 'on' && root.documentElement) {
      count(root.documentElement);
    }
    for (const el of root.querySelectorAll(selector)) count(el);
  }
  for (const el of opaque) count(el);
  if (intact) {
    const found = findMasks(roots, state.patterns);
    if (found.error) {
      error = found.error;
      maskUnconfirmed = 1;
    } else {
      masked = found.masks.length;
      maskUnconfirmed = maskCheck(state, found.masks);
    }
  }
  if (!intact && unconfirmed === 0) unconfirmed = 1;
  unconfirmed += maskUnconfirmed;
  return {
    fields, masked, unconfirmed, maskUnconfirmed, error, url: location.href, clip: viewportClip(),
  };
};

/** The visible viewport as a capture clip: in CSS pixels of the document (where the visual
 * viewport is scrolled to), scaled to one image pixel per CSS pixel (Playwright's
 * `scale: 'css'`). */
const viewportClip = () => {
  const vv = window.visualViewport;
  const zoom = vv && vv.scale > 0 ? vv.scale : 1;
  return {
    x: vv ? vv.pageLeft : window.scrollX,
    y: vv ? vv.pageTop : window.scrollY,
    width: window.innerWidth / zoom,
    height: window.innerHeight / zoom,
    scale: zoom / (window.devicePixelRatio || 1),
  };
};

/** Takes the redaction of `token` off (any earlier one too when `token` is null). */
const redactRemove = (token) => {
  const state = window[KEY];
  if (!state || (token !== null && state.token !== token)) return false;
  for (const [root, sheet] of state.sheets) {
    try {
      root.adoptedStyleSheets = root.adoptedStyleSheets.filter((s) => s !== sheet);
    } catch (e) {
      // A frame that went away took its styles with it.
    }
  }
  for (const [el, value, priority, hadStyle] of state.inline) {
    try {
      if (value) el.style.setProperty('filter', value, priority);
      else el.style.removeProperty('filter');
      if (!hadStyle && el.getAttribute('style') === '') el.removeAttribute('style');
    } catch (e) {
      // Gone with its document.
    }
  }
  maskRemove(state);
  delete window[KEY];
  return true;
};

/** Blurs every field and the platform's `selectors` (a constructed style sheet adopted by
 * the document, each open shadow root and each same-origin frame: no element is added or
 * changed), masks the sensitive text (`probe_mask.js`: the built-in kinds and the
 * platform's `patterns`), blurs every opaque frame element and the text a mask cannot hide
 * (an inline `filter`, restored after), then confirms it all. Takes it off again at once
 * when anything is unconfirmed. */
const redactApply = ({ token, patterns, selectors }) => {
  redactRemove(null);
  for (const s of selectors) {
    try {
      document.querySelector(s);
    } catch (e) {
      return { fields: 0, masked: 0, unconfirmed: 1, maskUnconfirmed: 1, url: location.href,
        clip: null, error: "a platform's redaction selector is not a valid selector" };
    }
  }
  const w = watchStart();
  const { roots, opaque } = collectRoots(document);
  const state = { token, patterns, selectors, sheets: [], inline: [], masks: [], highlights: [], blurred: new Set() };
  Object.defineProperty(window, KEY, { value: state, configurable: true, writable: true });
  const selector = blurSelector(state);
  for (const root of roots) {
    const doc = root.nodeType === 9 ? root : root.ownerDocument;
    const win = doc && doc.defaultView;
    if (!win) continue;
    const blur = root.nodeType === 9 && root.designMode === 'on' ? selector + ', :root' : selector;
    const sheet = new win.CSSStyleSheet();
    sheet.replaceSync(blur + ' ' + REDACT_RULE + ' ' + maskRule(token));
    root.adoptedStyleSheets = [...root.adoptedStyleSheets, sheet];
    state.sheets.push([root, sheet]);
  }
  const found = findMasks(roots, patterns);
  const blurInline = found.error ? [] : [...maskApply(state, found.masks)];
  for (const el of [...opaque, ...blurInline]) {
    state.inline.push([
      el,
      el.style.getPropertyValue('filter'),
      el.style.getPropertyPriority('filter'),
      el.hasAttribute('style'),
    ]);
    el.style.setProperty('filter', BLUR, 'important');
  }
  for (const el of blurInline) state.blurred.add(el);
  const result = redactCheck(token);
  if (result.unconfirmed > 0) redactRemove(token);
  else if (w) result.mark = markOf(w);
  return result;
};

/** After the capture: checks again (a field that appeared since would be in the frame
 * unblurred), then takes the redaction off. */
const redactFinish = (token) => {
  const result = redactCheck(token);
  redactRemove(token);
  return result;
};

/** The constructors the watch uses, as the document had them when the probe was defined
 * (before the page's own scripts, where the context installs it). */
const WatchObserver = typeof MutationObserver === 'function' ? MutationObserver : null;
const listenOn = EventTarget.prototype.addEventListener;
const onNextFrame =
  typeof requestAnimationFrame === 'function' ? requestAnimationFrame.bind(window) : null;
const after = typeof setTimeout === 'function' ? setTimeout.bind(window) : null;

/** What may change what a frame shows without a change to the DOM: scrolling, loads, focus,
 * animations, and any input (a step's, or a person's in the live view: a pointer moved over
 * an element restyles it by `:hover`). Not `pointerover` and its kin alone: the browser
 * sends those without any input when the element under a still pointer is found again after
 * a layout (a change counted here already). */
const WATCHED_EVENTS = [
  'scroll', 'resize', 'load', 'error', 'focusin', 'focusout', 'toggle', 'fullscreenchange',
  'animationstart', 'animationiteration', 'animationend', 'animationcancel',
  'transitionrun', 'transitionstart', 'transitionend', 'transitioncancel',
  'pointermove', 'pointerdown', 'pointerup', 'mousemove', 'mousedown', 'mouseup', 'click',
  'wheel', 'touchstart', 'keydown', 'keyup', 'input', 'change', 'select', 'selectionchange',
  'compositionstart', 'dragstart',
];

/** Elements whose pixels change without the DOM changing (a frame's content, a canvas, a
 * video): a page holding one is never still. */
const UNWATCHABLE = 'iframe, frame, object, embed, canvas, video, audio, marquee';

/** The document's watch, started by the first frame taken in it: every change of the DOM
 * and every event above, counted. The blur itself changes no element (an adopted style
 * sheet), except the inline filter on an opaque frame, which the watch counts: a page with
 * one is never still anyway (`UNWATCHABLE`). One per document where the probe is installed
 * (a probe evaluated from its source has a watch of its own, which no later read finds). */
let watch = null;

/** Starts the watch (once), or null where it cannot run. */
const watchStart = () => {
  if (watch) return watch;
  if (!WatchObserver) return null;
  const w = { nonce: Math.random().toString(36).slice(2), changes: 0, observer: null };
  try {
    w.observer = new WatchObserver((records) => {
      w.changes += records.length;
    });
    w.observer.observe(document, {
      subtree: true, childList: true, attributes: true, characterData: true,
    });
    const bump = () => {
      w.changes += 1;
    };
    for (const type of WATCHED_EVENTS) listenOn.call(window, type, bump, { capture: true, passive: true });
    if (document.fonts) listenOn.call(document.fonts, 'loadingdone', bump);
  } catch (e) {
    return null;
  }
  watch = w;
  return w;
};

/** Counts the changes the observer holds but has not delivered yet. */
const watchFlush = (w) => {
  w.changes += w.observer.takeRecords().length;
};

/** What the document looks like to the watch now: a change since makes another mark. */
const markOf = (w) => {
  watchFlush(w);
  return w.nonce + ':' + w.changes + ':' + location.href;
};

/** How long `still` waits for the page's next rendering before it answers no. */
const STILL_WAIT_MS = 100;

/** Whether the page is as it was at `mark` (a frame's): the same document at the same URL,
 * no change to its DOM and none of the events above since, no animation running, and
 * nothing in it whose pixels change unseen (a frame, a canvas, a video, an open shadow
 * root, a custom element, which may hold a closed one). Answered at the page's next
 * rendering, so that what the page did before the question (a scroll, whose event waits
 * for it) is counted; no rendering within `STILL_WAIT_MS` (a hidden page): no. */
const still = (mark) => new Promise((resolve) => {
  if (!watch || typeof mark !== 'string' || !onNextFrame || !after) {
    resolve(false);
    return;
  }
  after(() => resolve(false), STILL_WAIT_MS);
  onNextFrame(() => {
    try {
      resolve(stillNow(mark));
    } catch (e) {
      resolve(false);
    }
  });
});

const stillNow = (mark) => {
  if (markOf(watch) !== mark) return false;
  if (document.querySelector(UNWATCHABLE)) return false;
  for (const el of document.getElementsByTagName('*')) {
    if (el.shadowRoot || el.localName.includes('-')) return false;
  }
  if (typeof document.getAnimations !== 'function') return false;
  return !document.getAnimations().some((a) => a.playState === 'running');
};

/** Elements a brain can act on. */
const ACTIONABLE =
  'a[href], button, input, select, textarea, summary, [contenteditable=""], ' +
  '[contenteditable="true"], [role=button], [role=link], [role=checkbox], [role=radio], ' +
  '[role=tab], [role=menuitem], [role=option], [role=switch], [role=combobox], ' +
  '[role=textbox], [role=searchbox], [onclick]';

/** The role a snapshot gives `el`: its own `role`, else what its tag and type imply. */
const roleOf = (el) => {
  const own = lower(el.getAttribute('role'));
  if (own) return own.split(/\s+/)[0];
  const tag = el.localName;
  if (tag === 'a') return 'link';
  if (tag === 'button' || tag === 'summary') return 'button';
  if (tag === 'select') return el.multiple ? 'listbox' : 'combobox';
  if (tag === 'textarea') return 'textbox';
  if (tag === 'input') {
    const type = typeOf(el);
    if (BUTTON_INPUTS.includes(type)) return 'button';
    if (type === 'checkbox' || type === 'radio') return type;
    if (type === 'search') return 'searchbox';
    if (type === 'range') return 'slider';
    if (type === 'file') return 'file';
    return 'textbox';
  }
  if (el.isContentEditable) return 'textbox';
  return tag;
};

/** Headings: structure a snapshot shows among the elements. */
const HEADINGS = 'h1, h2, h3, h4, h5, h6, [role=heading]';

/** What a snapshot lists: the elements one can act on, and the headings among them. */
const LISTED = ACTIONABLE + ', ' + HEADINGS;

/** Where an element can sit that a snapshot names (a landmark, by role or implied by tag). */
const LANDMARKS =
  'nav, main, header, footer, aside, form, search, dialog, section[aria-label], ' +
  'section[aria-labelledby], [role=navigation], [role=main], [role=banner], ' +
  '[role=contentinfo], [role=complementary], [role=search], [role=form], [role=dialog], ' +
  '[role=region]';

const LANDMARK_ROLES = [
  'navigation', 'main', 'banner', 'contentinfo', 'complementary', 'search', 'form', 'dialog',
  'region',
];

/** What `node` (a match of LANDMARKS) is as a landmark, or null (a header or footer inside
 * sectioning content is none, as in the accessibility tree). */
const landmarkName = (node) => {
  const own = lower(node.getAttribute('role'));
  if (own) return LANDMARK_ROLES.includes(own.split(/\s+/)[0]) ? own.split(/\s+/)[0] : null;
  const tag = node.localName;
  const sectioned = () =>
    node.parentElement !== null && node.parentElement.closest('article, aside, main, nav, section') !== null;
  if (tag === 'nav') return 'navigation';
  if (tag === 'main') return 'main';
  if (tag === 'header') return sectioned() ? null : 'banner';
  if (tag === 'footer') return sectioned() ? null : 'contentinfo';
  if (tag === 'aside') return 'complementary';
  if (tag === 'form') return 'form';
  if (tag === 'search') return 'search';
  if (tag === 'dialog') return 'dialog';
  if (tag === 'section') return 'region';
  return null;
};

/** The nearest landmark around `el` (in its tree), or undefined. */
const landmarkOf = (el) => {
  let node = el.parentElement;
  for (let hops = 0; node && hops < 32; hops++) {
    const found = node.closest(LANDMARKS);
    if (!found) return undefined;
    const name = landmarkName(found);
    if (name) return name;
    node = found.parentElement;
  }
  return undefined;
};

/** A heading's level: its tag's, else `aria-level`, else 2. */
const headingLevel = (el) => {
  const m = /^h([1-6])$/.exec(el.localName);
  if (m) return Number(m[1]);
  const level = Number(el.getAttribute('aria-level'));
  return Number.isInteger(level) && level >= 1 && level <= 6 ? level : 2;
};

/** `href` as a snapshot gives it: relative on the page's origin (`/a/b`, `#part`), else whole. */
const shortHref = (href) => {
  try {
    const u = new URL(href);
    if (u.origin !== location.origin) return href;
    if (u.pathname === location.pathname && u.search === location.search && u.hash) return u.hash;
    return u.pathname + u.search + u.hash;
  } catch (e) {
    return href;
  }
};

/** The page's visible text outside actionable elements, headings and labels (what the
 * elements and headings already say), in blocks, each block once. Bounded; follows open
 * shadow roots and slots. `total` is the length of the whole text (within the bound), in
 * characters. */
const proseOf = (root, max) => {
  const blocks = [];
  let line = [];
  let budget = MAX_TEXT_NODES * 10;
  const flush = () => {
    const text = clean(line.join(''));
    if (text) blocks.push(text);
    line = [];
  };
  const walk = (node) => {
    if (budget-- <= 0) return;
    if (node.nodeType === 3) {
      line.push(node.data);
      return;
    }
    if (node.nodeType !== 1 && node.nodeType !== 11) return;
    if (node.nodeType === 1) {
      const tag = node.localName;
      if (['script', 'style', 'template', 'noscript', 'datalist', 'option', 'label'].includes(tag)) return;
      if (node.matches(LISTED)) {
        line.push(' ');
        return;
      }
      const style = styleOf(node);
      if (style.display === 'none' || style.visibility === 'hidden') return;
      if (node.getAttribute('aria-hidden') === 'true') return;
      if (tag === 'img') {
        line.push(' ', node.getAttribute('alt') || '', ' ');
        return;
      }
      if (tag === 'br') {
        line.push(' ');
        return;
      }
      const block = !style.display.startsWith('inline');
      if (block) flush();
      if (tag === 'slot') {
        const assigned = node.assignedNodes({ flatten: true });
        for (const child of assigned.length ? assigned : node.childNodes) walk(child);
      } else {
        for (const child of node.shadowRoot ? node.shadowRoot.childNodes : node.childNodes) walk(child);
      }
      if (block) flush();
      return;
    }
    for (const child of node.childNodes) walk(child);
  };
  walk(root);
  flush();
  const once = new Set();
  const kept = [];
  for (const block of blocks) {
    if (once.has(block)) continue;
    once.add(block);
    kept.push(block);
  }
  // Counted and cut in characters (code points), the unit of the budget and of the Rust
  // side (`chars()`): in UTF-16 units an emoji counts twice, and a page that was not cut
  // would say it was.
  const chars = Array.from(wellFormed(kept.join('\n')));
  const text = chars.length > max ? chars.slice(0, max).join('') : chars.join('');
  return { text, total: chars.length, cut: chars.length > max };
};

/** Rendered as the browser paints it: also not in a closed `<details>` or other content the
 * browser skips (`checkVisibility`, where the browser has it). */
const rendered = (el) =>
  typeof el.checkVisibility !== 'function' ||
  el.checkVisibility({ contentVisibilityAuto: false, visibilityProperty: true });

/** A snapshot of the page for a brain: the visible actionable elements of the document and
 * its open shadow roots (not frames: a reference must resolve with a page selector), each
 * tagged with a reference in the attribute `attr` (a per-session name), in pages of
 * `maxElements` from the position `from`; the headings among the listed elements; and the
 * visible text the elements and headings do not already say. Every visible element gets its
 * reference whichever page lists it. Field values are never read: a field that holds one says
 * `[redacted]`. */
const snapshot = ({ attr, from, maxElements, maxText, maxName, hrefs }) => {
  const doc = document;
  const key = '__abrSnapshotRefs';
  let counter = window[key];
  if (!counter || counter.attr !== attr) {
    counter = { attr, next: 1 };
    Object.defineProperty(window, key, { value: counter, configurable: true, enumerable: false });
  }
  const roots = [];
  const visit = (root) => {
    if (roots.length >= MAX_ROOTS) return;
    roots.push(root);
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) visit(el.shadowRoot);
  };
  visit(doc);
  const first = Math.max(1, from | 0);
  const end = first + maxElements; // the first position past this page
  const seen = new Set();
  const elements = [];
  const headings = [];
  const trailing = []; // headings after the page's last element: shown if no element follows
  let total = 0;
  for (const root of roots) {
    for (const el of root.querySelectorAll(LISTED)) {
      if (!el.matches(ACTIONABLE)) {
        if (total + 1 < first || !visible(el) || !rendered(el)) continue;
        if (el.parentElement && el.parentElement.closest(ACTIONABLE)) continue;
        // Its place: the position of the element after it.
        if (total + 1 < end) headings.push({ el, at: total + 1 });
        else trailing.push({ el, at: total + 1 });
        continue;
      }
      if (el.localName === 'input' && typeOf(el) === 'hidden') continue;
      if (!visible(el) || !rendered(el)) continue;
      total += 1;
      if (total >= end) trailing.length = 0;
      let ref = el.getAttribute(attr);
      // A reference is the runner's: one the page made up, or copied onto a second element,
      // is replaced.
      if (!ref || !/^e[0-9]{1,7}$/.test(ref) || seen.has(ref)) {
        ref = 'e' + counter.next++;
        el.setAttribute(attr, ref);
      }
      seen.add(ref);
      if (total < first || total >= end) continue;
      const item = { ref, role: roleOf(el), name: cap(accessibleName(el), maxName) };
      if (isField(el)) {
        const holds =
          el.localName === 'select'
            ? el.selectedIndex > 0 || (el.selectedIndex === 0 && el.options[0].value !== '')
            : el.isContentEditable && el.localName !== 'input' && el.localName !== 'textarea'
              ? clean(el.textContent) !== ''
              : typeOf(el) === 'checkbox' || typeOf(el) === 'radio'
                ? false
                : (el.value || '') !== '';
        if (holds) item.value = '[redacted]';
      }
      if (el.localName === 'input' && (typeOf(el) === 'checkbox' || typeOf(el) === 'radio')) {
        item.checked = el.checked === true;
      } else if (el.getAttribute('aria-checked') !== null) {
        item.checked = el.getAttribute('aria-checked') === 'true';
      }
      if (el.disabled === true || el.getAttribute('aria-disabled') === 'true') item.disabled = true;
      if (hrefs && el.localName === 'a' && el.href) item.href = shortHref(String(el.href)).slice(0, 500);
      if (el.localName === 'select') {
        item.options = Array.from(el.options)
          .slice(0, 50)
          .map((o) => cap(o.label || o.text, maxName));
      }
      const landmark = landmarkOf(el);
      if (landmark) item.landmark = landmark;
      elements.push(item);
    }
  }
  const last = total < end;
  const placed = [];
  for (const { el, at } of last ? headings.concat(trailing) : headings) {
    const text = cap(textOf(el), maxName);
    if (text) placed.push({ level: headingLevel(el), text, at });
  }
  const prose = doc.body ? proseOf(doc.body, maxText) : { text: '', total: 0, cut: false };
  const count = elements.length;
  const page = { from: first, count, total, textTotal: prose.total };
  if (!last) page.next = end;
  return {
    url: String(location.href),
    title: cap(doc.title, maxName),
    elements,
    text: prose.text,
    truncated: !last || prose.cut,
    headings: placed,
    page,
  };
};
