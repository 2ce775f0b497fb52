//! The viewer pages and the headers every live-view response carries.

use axum::http::{HeaderMap, HeaderValue, header};

/// Security headers of a live-view page: a strict CSP (scripts and styles only with this
/// response's nonce, connections only to the runner, framing only by `frame_ancestors`),
/// `nosniff`, no caching, no referrer. Every live page has them from here: the runner's,
/// the approval page, and a runner's page the hub serves over the relay (a second copy is
/// the one that drifts: `.ci/check-layering` refuses another writer of `Referrer-Policy`).
pub(crate) fn secure(headers: &mut HeaderMap, csp: &str) {
    let pairs = [
        (header::CONTENT_SECURITY_POLICY, csp),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::CACHE_CONTROL, "no-store"),
        (header::REFERRER_POLICY, "no-referrer"),
    ];
    for (name, value) in pairs {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.insert(name, value);
        }
    }
}

/// The CSP of the runner's own viewer page (and the only one under which the hub lets a
/// runner's page run its script, with the runner's nonce).
pub(crate) fn viewer_csp(nonce: &str, frame_ancestors: &str) -> String {
    format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; \
         img-src blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
         frame-ancestors {frame_ancestors}"
    )
}

/// The CSP of the page that frames a proxied provider viewer.
pub(crate) fn frame_csp(nonce: &str, frame_ancestors: &str) -> String {
    format!(
        "default-src 'none'; style-src 'nonce-{nonce}'; frame-src 'self'; base-uri 'none'; \
         form-action 'none'; frame-ancestors {frame_ancestors}"
    )
}

/// The CSP of proxied provider-viewer responses: they may load from and connect to the
/// runner only, so a viewer that hard-codes its provider's address cannot reach it.
pub(crate) fn proxied_csp(frame_ancestors: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' \
         'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; base-uri 'none'; \
         form-action 'none'; frame-ancestors {frame_ancestors}"
    )
}

/// The page framing a proxied provider viewer at `view` (a path on the runner).
pub(crate) fn frame_page(nonce: &str, view: &str) -> String {
    FRAME_PAGE.replace("{nonce}", nonce).replace("{view}", view)
}

/// The runner's own viewer page.
pub(crate) fn viewer_page(nonce: &str) -> String {
    VIEWER_PAGE.replace("{nonce}", nonce)
}

const FRAME_PAGE: &str = r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in · ABR live view</title>
<style nonce="{nonce}">html,body{margin:0;height:100%;background:#1e1e1e}iframe{border:0;width:100%;height:100%}</style></head>
<body><iframe src="{view}" allow="clipboard-read; clipboard-write"></iframe></body></html>"#;

/// The viewer: frames arrive as a text message `{"type":"frame","width","height"}` followed
/// by the JPEG as a binary message; input goes out as JSON (see `wire.rs`). Text is read
/// from a transparent textarea over the picture, so input methods, dead keys and any script
/// work; editing keys and shortcuts go out as keys.
const VIEWER_PAGE: &str = r#"<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Sign in · ABR live view</title>
<style nonce="{nonce}">
html,body{margin:0;height:100%;background:#1e1e1e;color:#ddd;font:14px system-ui,sans-serif}
body{display:flex;flex-direction:column}
#bar{display:flex;gap:6px;align-items:center;padding:6px 8px;background:#2b2b2b}
#nav{display:flex;flex:1;min-width:0}
#url{flex:1;min-width:0;background:#111;color:#ddd;border:1px solid #444;border-radius:4px;padding:5px 8px}
button{background:#3a3a3a;color:#ddd;border:1px solid #555;border-radius:4px;padding:4px 9px;cursor:pointer}
#status{min-width:7em;text-align:right;color:#9a9a9a}
#stage{position:relative;flex:1;overflow:auto;display:flex;justify-content:center;align-items:flex-start}
#screen{position:relative;outline:none;max-width:100%}
#screen img{display:block;max-width:100%;user-select:none;-webkit-user-drag:none}
#screen:focus-within{box-shadow:0 0 0 2px #3d7eff}
#keys{position:absolute;inset:0;width:100%;height:100%;opacity:0;resize:none;border:0;padding:0;cursor:default;caret-color:transparent}
#veil{position:absolute;inset:0;display:flex;align-items:center;justify-content:center;background:rgba(20,20,20,.82);font-size:16px;text-align:center;padding:24px}
#veil[hidden],#note[hidden]{display:none}
#note{position:absolute;top:12px;left:50%;transform:translateX(-50%);background:#5a2a2a;color:#fff;padding:8px 14px;border-radius:6px;max-width:80%}
.spin{display:inline-block;width:14px;height:14px;border:2px solid #777;border-top-color:#ddd;border-radius:50%;animation:s 1s linear infinite;vertical-align:-2px;margin-right:8px}
@keyframes s{to{transform:rotate(360deg)}}
</style></head><body>
<div id="bar"><button id="back" title="Back" aria-label="Back">&larr;</button><button id="fwd" title="Forward" aria-label="Forward">&rarr;</button>
<button id="reload" title="Reload" aria-label="Reload">&#8635;</button>
<form id="nav"><input id="url" placeholder="Address" autocomplete="off" spellcheck="false" aria-label="Address"></form>
<span id="status" role="status">connecting&hellip;</span></div>
<div id="stage"><div id="screen" tabindex="0" aria-label="Live browser: click and type to use it">
<img id="picture" alt=""><textarea id="keys" autocomplete="off" autocapitalize="off" spellcheck="false" aria-label="Type into the live browser"></textarea>
<div id="note" hidden role="alert"></div></div>
<div id="veil"><span><span class="spin"></span>Connecting to the browser&hellip;</span></div></div>
<script nonce="{nonce}">
(() => {
  const token = location.pathname.split('/').filter(Boolean)[1];
  const $ = (id) => document.getElementById(id);
  const screen = $('screen'), picture = $('picture'), keys = $('keys'), veil = $('veil'), note = $('note'), status = $('status'), urlBox = $('url');
  const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/live/' + token + '/ws');
  ws.binaryType = 'blob';
  let dw = 1280, dh = 800, frames = 0, pending = null, lastUrl = null, closed = false, noteTimer = 0, loading = false;
  const send = (m) => { if (ws.readyState === 1) ws.send(JSON.stringify(m)); };
  const veilWith = (html) => { veil.innerHTML = html; veil.hidden = false; };
  const say = (text) => { note.textContent = text; note.hidden = false; clearTimeout(noteTimer); noteTimer = setTimeout(() => { note.hidden = true; }, 4000); };
  const setLoading = (on) => { loading = on; status.innerHTML = on ? '<span class="spin"></span>loading' : 'live'; };
  const reasons = { outside_sites: 'This address cannot be opened here: only the sign-in sites of this platform.', scheme: 'Only web pages (http, https) can be opened here.', invalid_url: 'That is not a web address.', text_too_long: 'Too much text at once.', unknown_key: '' };
  ws.onmessage = (e) => {
    if (typeof e.data !== 'string') {
      const src = URL.createObjectURL(e.data);
      picture.onload = () => { URL.revokeObjectURL(src); };
      picture.src = src;
      frames += 1; screen.dataset.frames = String(frames);
      if (frames === 1) { veil.hidden = true; status.textContent = 'live'; }
      return;
    }
    const m = JSON.parse(e.data);
    if (m.type === 'frame') { dw = m.width || dw; dh = m.height || dh; }
    else if (m.type === 'location') {
      if (m.url !== lastUrl) { lastUrl = m.url; if (document.activeElement !== urlBox) urlBox.value = m.url; }
      document.title = (m.title ? m.title + ' · ' : '') + 'ABR live view';
      if (loading) setLoading(false);
    }
    else if (m.type === 'refused') { if (reasons[m.reason] !== '') say(reasons[m.reason] || 'That was not allowed here.'); if (loading) setLoading(false); }
    else if (m.type === 'closed') { closed = true; veilWith('<span>' + (m.reason === 'page_closed' ? 'The browser page was closed.' : 'This sign-in has ended. You can close this window.') + '</span>'); status.textContent = 'ended'; }
  };
  ws.onclose = () => { if (!closed) { veilWith('<span>The connection to the browser was lost. Reload this page to try again.</span>'); status.textContent = 'disconnected'; } };
  const mods = (e) => ({ alt: e.altKey, ctrl: e.ctrlKey, meta: e.metaKey, shift: e.shiftKey });
  const pos = (e) => { const r = picture.getBoundingClientRect(); return { x: Math.max(0, (e.clientX - r.left) * dw / r.width), y: Math.max(0, (e.clientY - r.top) * dh / r.height) }; };
  const button = (e) => ['left', 'middle', 'right'][e.button] || 'left';
  keys.addEventListener('pointerdown', (e) => { keys.focus(); const p = pos(e); send({ type: 'pointer', action: 'down', x: p.x, y: p.y, button: button(e), clickCount: e.detail || 1, modifiers: mods(e) }); e.preventDefault(); });
  keys.addEventListener('pointerup', (e) => { const p = pos(e); send({ type: 'pointer', action: 'up', x: p.x, y: p.y, button: button(e), clickCount: e.detail || 1, modifiers: mods(e) }); });
  keys.addEventListener('pointermove', (e) => {
    if (pending) { pending = e; return; }
    pending = e;
    requestAnimationFrame(() => { const p = pos(pending); pending = null; send({ type: 'pointer', action: 'move', x: p.x, y: p.y, modifiers: mods(e) }); });
  });
  keys.addEventListener('contextmenu', (e) => e.preventDefault());
  keys.addEventListener('wheel', (e) => { const p = pos(e); const k = e.deltaMode === 1 ? 40 : e.deltaMode === 2 ? dh : 1; send({ type: 'wheel', x: p.x, y: p.y, deltaX: e.deltaX * k, deltaY: e.deltaY * k }); e.preventDefault(); }, { passive: false });
  const named = new Set(['Enter', 'Tab', 'Backspace', 'Delete', 'Escape', 'ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'Home', 'End', 'PageUp', 'PageDown', 'Insert']);
  keys.addEventListener('keydown', (e) => {
    if (e.isComposing) return;
    const command = e.ctrlKey || e.metaKey || e.altKey;
    if (named.has(e.key)) { send({ type: 'key', key: e.key, modifiers: mods(e) }); e.preventDefault(); }
    else if (command && /^[a-zA-Z0-9]$/.test(e.key) && !((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'v')) { send({ type: 'key', key: e.key, modifiers: mods(e) }); e.preventDefault(); }
  });
  const flush = () => { if (keys.value) { send({ type: 'text', text: keys.value }); keys.value = ''; } };
  keys.addEventListener('input', (e) => { if (!e.isComposing) flush(); });
  keys.addEventListener('compositionend', flush);
  keys.addEventListener('paste', (e) => { const t = e.clipboardData.getData('text'); if (t) send({ type: 'text', text: t }); e.preventDefault(); });
  screen.addEventListener('focus', () => keys.focus());
  $('nav').addEventListener('submit', (e) => {
    e.preventDefault();
    let u = urlBox.value.trim();
    if (!u) return;
    if (!/^[a-z][a-z0-9+.-]*:/i.test(u)) u = 'https://' + u;
    setLoading(true); send({ type: 'navigate', url: u }); keys.focus();
  });
  $('back').onclick = () => { setLoading(true); send({ type: 'back' }); keys.focus(); };
  $('fwd').onclick = () => { setLoading(true); send({ type: 'forward' }); keys.focus(); };
  $('reload').onclick = () => { setLoading(true); send({ type: 'reload' }); keys.focus(); };
})();
</script></body></html>"#;
