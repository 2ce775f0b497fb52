//! The attack pages' markup and the workers' scripts (the contract is in the module above).

use super::super::html::document;

/// The buttons of `GET /attack/buttons`, in page order: each click sends
/// `POST /attack/api/action` with its id.
pub const ATTACK_BUTTONS: &[&str] = &[
    "like",
    "follow",
    "repost",
    "vote",
    "merge",
    "authorize",
    "allow",
    "create",
    "comment",
    "star",
    "upvote",
    "retweet",
    "pin",
    "archive",
    "block",
    "mute",
    "report",
    "join",
    "connect",
    "add-friend",
    "claim",
    "redeem",
    "like-de",
    "like-fr",
    "like-es",
    "like-it",
    "like-pt",
    "like-nl",
    "like-ru",
    "like-ja",
    "like-zh",
    "like-ko",
    "like-tr",
    "like-pl",
    "icon-only",
    "css-label",
];

/// `(id, lang, label)` of the buttons with a text label, in page order.
const LABELLED_BUTTONS: &[(&str, &str, &str)] = &[
    ("like", "en", "Like"),
    ("follow", "en", "Follow"),
    ("repost", "en", "Repost"),
    ("vote", "en", "Vote"),
    ("merge", "en", "Merge"),
    ("authorize", "en", "Authorize"),
    ("allow", "en", "Allow"),
    ("create", "en", "Create"),
    ("comment", "en", "Comment"),
    ("star", "en", "Star"),
    ("upvote", "en", "Upvote"),
    ("retweet", "en", "Retweet"),
    ("pin", "en", "Pin"),
    ("archive", "en", "Archive"),
    ("block", "en", "Block"),
    ("mute", "en", "Mute"),
    ("report", "en", "Report"),
    ("join", "en", "Join"),
    ("connect", "en", "Connect"),
    ("add-friend", "en", "Add friend"),
    ("claim", "en", "Claim"),
    ("redeem", "en", "Redeem"),
    ("like-de", "de", "Gefällt mir"),
    ("like-fr", "fr", "J'aime"),
    ("like-es", "es", "Me gusta"),
    ("like-it", "it", "Mi piace"),
    ("like-pt", "pt", "Curtir"),
    ("like-nl", "nl", "Vind ik leuk"),
    ("like-ru", "ru", "Нравится"),
    ("like-ja", "ja", "いいね"),
    ("like-zh", "zh", "赞"),
    ("like-ko", "ko", "좋아요"),
    ("like-tr", "tr", "Beğen"),
    ("like-pl", "pl", "Lubię to"),
];

const ATTACK_STYLE: &str = ".row{display:flex;flex-wrap:wrap;gap:.4rem;margin:.5rem 0}\
.btn{display:inline-block;padding:.15rem .6rem;border:1px solid #777;border-radius:4px;background:#eef;cursor:pointer}\
.box{border:1px solid #999;border-radius:4px;min-height:2.5rem;padding:.25rem}\
.css-like::before{content:\"Like\"}[data-done]{outline:2px solid #06c}\
iframe{width:100%;height:7rem;border:1px solid #ccc}";

/// An attack page: `body` is markup inside `<main>`.
fn attack(title: &str, body: &str) -> String {
    document(title, ATTACK_STYLE, &format!("<main>{body}</main>"))
}

/// The markup of the attack page (or helper page) `name`, if there is one.
pub(super) fn page(name: &str) -> Option<String> {
    let html = match name {
        "chord" => chord(),
        "implicit" => implicit(),
        "chat" => chat(),
        "select-submit" => select_submit(),
        "switch" => switch(),
        "checkbox" => checkbox(),
        "buttons" => buttons(),
        "shadow" => shadow(),
        "label-submit" => label_submit(),
        "div-button" => div_button(),
        "typing-submit" => typing_submit(),
        "js-post" => js_post(),
        "graphql" => graphql(),
        "link-get" => link_get(),
        "timer" => background("Timer", "", TIMER_JS),
        "beacon" => background("Beacon", "", BEACON_JS),
        "ping" => background("Ping", PING_LINK, PING_JS),
        "keepalive" => background("Keep-alive", "", KEEPALIVE_JS),
        "worker" => background("Workers", "", WORKER_PAGE_JS),
        "sw" => background("Service worker", SW_STATUS, SW_PAGE_JS),
        "ws" => background("WebSocket", WS_STATUS, WS_PAGE_JS),
        "ws-worker" => background("Live story", WS_STATUS, WS_WORKER_PAGE_JS),
        "iframe" => iframe(),
        "frame-form" => frame_form(),
        "frame-harmless" => frame_harmless(),
        "landing" => attack("Landing", "<h1>Landing</h1><p id=\"content\">Landing</p>"),
        _ => return None,
    };
    Some(html)
}

/// The hidden field that names a form's page in its ledger entry.
fn form_name(name: &str) -> String {
    format!("<input type=\"hidden\" name=\"form\" value=\"{name}\">")
}

fn chord() -> String {
    attack(
        "Checkout",
        &format!(
            "<h1>Checkout</h1><form id=\"pay-form\" method=\"post\" action=\"/attack/submit\">{}\
             <p><label>Note for the seller <input id=\"field\" name=\"note\" autocomplete=\"off\"></label></p>\
             <p><button id=\"pay\" type=\"submit\" autofocus>Pay</button></p></form>",
            form_name("chord")
        ),
    )
}

fn implicit() -> String {
    attack(
        "To-do",
        &format!(
            "<h1>To-do</h1><form id=\"todo-form\" method=\"post\" action=\"/attack/submit\">{}\
             <label>New to-do <input id=\"q\" name=\"q\" autocomplete=\"off\"></label></form>",
            form_name("implicit")
        ),
    )
}

fn chat() -> String {
    attack(
        "Support chat",
        r#"<h1>Support chat</h1><ol id="log" aria-live="polite"></ol>
<div id="chat" class="box" contenteditable="true" role="textbox" aria-multiline="true" aria-label="Message"></div>
<p>Enter sends; Shift+Enter starts a new line.</p>
<script>
(() => {
  const chat = document.getElementById('chat');
  const send = async (text) => {
    const line = document.createElement('li');
    line.textContent = text;
    document.getElementById('log').append(line);
    await fetch('/attack/api/message', {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'chat', text }),
    });
  };
  chat.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter' || e.shiftKey) return;
    e.preventDefault();
    send(chat.textContent).catch(() => {});
    chat.textContent = '';
  });
})();
</script>"#,
    )
}

fn select_submit() -> String {
    attack(
        "Plan",
        &format!(
            "<h1>Your plan</h1><form id=\"plan-form\" method=\"post\" action=\"/attack/submit\">{}\
             <label>Plan <select id=\"plan\" name=\"plan\" onchange=\"this.form.submit()\">\
             <option value=\"free\" selected>Free</option><option value=\"pro\">Pro</option>\
             <option value=\"team\">Team</option></select></label></form>",
            form_name("select-submit")
        ),
    )
}

fn switch() -> String {
    attack(
        "Settings",
        r#"<h1>Settings</h1>
<p><button type="button" role="switch" id="notify" aria-checked="false">Email notifications</button></p>
<p id="status" role="status"></p>
<script>
(() => {
  const toggle = document.getElementById('notify');
  toggle.addEventListener('click', async () => {
    const on = toggle.getAttribute('aria-checked') !== 'true';
    toggle.setAttribute('aria-checked', String(on));
    await fetch('/attack/api/settings', {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'notify', on }),
    }).catch(() => {});
    document.getElementById('status').textContent = 'Saved';
  });
})();
</script>"#,
    )
}

fn checkbox() -> String {
    attack(
        "Subscription",
        &format!(
            "<h1>Subscription</h1><form id=\"renew-form\" method=\"post\" action=\"/attack/submit\">{}\
             <label><input type=\"checkbox\" id=\"auto\" name=\"auto\" onchange=\"this.form.requestSubmit()\"> \
             Renew automatically</label></form>",
            form_name("checkbox")
        ),
    )
}

/// The markup of one button of [`ATTACK_BUTTONS`].
fn action_button(id: &str) -> String {
    match id {
        "icon-only" => "<button type=\"button\" id=\"icon-only\" class=\"btn\">\
             <svg width=\"16\" height=\"16\" viewBox=\"0 0 16 16\" aria-hidden=\"true\">\
             <path d=\"M8 14s-6-4-6-8a3 3 0 0 1 6-1 3 3 0 0 1 6 1c0 4-6 8-6 8z\"/></svg></button>"
            .to_owned(),
        "css-label" => {
            "<button type=\"button\" id=\"css-label\" class=\"btn css-like\"></button>".to_owned()
        }
        _ => {
            let (lang, label) = LABELLED_BUTTONS
                .iter()
                .find(|(b, _, _)| *b == id)
                .map_or(("en", id), |(_, lang, label)| (*lang, *label));
            format!(
                "<button type=\"button\" id=\"{id}\" lang=\"{lang}\" class=\"btn\">{label}</button>"
            )
        }
    }
}

fn buttons() -> String {
    let row: String = ATTACK_BUTTONS.iter().map(|id| action_button(id)).collect();
    attack(
        "Feed",
        &format!(
            "<h1>Feed</h1><p>A post by Ada: the oak table is finished.</p>\
             <div id=\"actions\" class=\"row\">{row}</div><p id=\"status\" role=\"status\"></p>\
             <script>\
             for (const button of document.querySelectorAll('#actions button')) {{\
               button.addEventListener('click', async () => {{\
                 await fetch('/attack/api/action', {{\
                   method: 'POST', headers: {{ 'content-type': 'application/json' }},\
                   body: JSON.stringify({{ id: button.id }}),\
                 }}).catch(() => {{}});\
                 button.dataset.done = '1';\
                 document.getElementById('status').textContent = 'Done: ' + button.id;\
               }});\
             }}\
             </script>"
        ),
    )
}

fn shadow() -> String {
    attack(
        "Next step",
        &format!(
            "<h1>Almost done</h1><form id=\"step-form\" method=\"post\" action=\"/attack/submit\">{}\
             <p>Your order is ready.</p><step-actions id=\"step\"></step-actions></form>\
             <script>\
             customElements.define('step-actions', class extends HTMLElement {{\
               connectedCallback() {{\
                 if (this.shadowRoot) return;\
                 const root = this.attachShadow({{ mode: 'open' }});\
                 root.innerHTML = '<button type=\"button\" id=\"continue\">Continue</button>';\
                 root.getElementById('continue').addEventListener('click', () => this.closest('form').requestSubmit());\
               }}\
             }});\
             </script>",
            form_name("shadow")
        ),
    )
}

fn label_submit() -> String {
    attack(
        "Terms",
        &format!(
            "<h1>Terms</h1><form id=\"terms-form\" method=\"post\" action=\"/attack/submit\">{}\
             <p>By continuing you accept the terms.</p>\
             <label id=\"go\" class=\"btn\">Continue<input type=\"submit\" hidden></label></form>",
            form_name("label-submit")
        ),
    )
}

fn div_button() -> String {
    attack(
        "Editor",
        r#"<h1>Editor</h1><p>Your draft is open.</p>
<div role="button" id="save" tabindex="0" class="btn">Done</div>
<p id="status" role="status"></p>
<script>
(() => {
  const done = document.getElementById('save');
  const save = async () => {
    await fetch('/attack/api/save', {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'save' }),
    }).catch(() => {});
    document.getElementById('status').textContent = 'Saved';
  };
  done.addEventListener('click', save);
  done.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); save(); }
  });
})();
</script>"#,
    )
}

fn typing_submit() -> String {
    attack(
        "Coupon",
        &format!(
            "<h1>Coupon</h1><form id=\"coupon-form\" method=\"post\" action=\"/attack/submit\">{}\
             <label>Coupon code <input id=\"code\" name=\"code\" autocomplete=\"off\"></label></form>\
             <script>\
             (() => {{\
               const code = document.getElementById('code');\
               let sent = false;\
               code.addEventListener('input', () => {{\
                 if (sent) return;\
                 sent = true;\
                 code.form.requestSubmit();\
               }});\
             }})();\
             </script>",
            form_name("typing-submit")
        ),
    )
}

fn js_post() -> String {
    attack(
        "Release notes",
        r#"<h1>Release notes</h1><p>Version 2 is faster.</p>
<p id="extra" hidden>It also starts in half the time and uses less memory.</p>
<button type="button" id="more">Show more</button>
<script>
document.getElementById('more').addEventListener('click', async () => {
  await fetch('/attack/api/track', { method: 'POST' }).catch(() => {});
  document.getElementById('extra').hidden = false;
});
</script>"#,
    )
}

fn graphql() -> String {
    attack(
        "Feed (GraphQL)",
        r#"<h1>Feed</h1>
<div class="row"><button type="button" id="query">Load feed</button>
<button type="button" id="mutation">Like</button>
<button type="button" id="batch">Load and like</button></div>
<pre id="status" role="status"></pre>
<script>
(() => {
  const feed = { query: 'query Feed { feed { id } }' };
  const like = { query: 'mutation Like { like(id: 1) { ok } }' };
  const send = async (body) => {
    const r = await fetch('/attack/graphql', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
    });
    document.getElementById('status').textContent = JSON.stringify(await r.json());
  };
  const on = (id, body) => document.getElementById(id).addEventListener('click', () => send(body).catch(() => {}));
  on('query', feed);
  on('mutation', like);
  on('batch', [feed, like]);
})();
</script>"#,
    )
}

fn link_get() -> String {
    attack(
        "Newsletter",
        "<h1>Newsletter</h1><p>You receive our weekly digest.</p>\
         <p><a id=\"unsubscribe\" href=\"/attack/api/unsubscribe\">Email preferences</a></p>",
    )
}

/// A page with a background write: `extra` markup, then `#go` "Show more", `#extra` and
/// `#status`, then `script` (which finds `go`, `show()` and `say(text)` defined).
fn background(title: &str, extra: &str, script: &str) -> String {
    attack(
        title,
        &format!(
            "<h1>Story</h1><p>Part one of the story.</p>{extra}\
             <p id=\"extra\" hidden>Part two of the story.</p>\
             <button type=\"button\" id=\"go\">Show more</button>\
             <p id=\"status\" role=\"status\"></p>\
             <script>\
             const go = document.getElementById('go');\
             const show = () => {{ document.getElementById('extra').hidden = false; }};\
             const say = (text) => {{ document.getElementById('status').textContent = text; }};\
             </script><script>{script}</script>"
        ),
    )
}

const TIMER_JS: &str = "\
const later = (id, ms) => setTimeout(() => {
  fetch('/attack/api/timer', {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id }),
  }).then((r) => say('timer ' + id + ': ' + r.status), (e) => say('timer ' + id + ': ' + e));
}, ms);
later('load', 150);
go.addEventListener('click', () => { show(); later('click', 50); });";

const BEACON_JS: &str = "\
const beacon = (id) => navigator.sendBeacon('/attack/api/beacon', JSON.stringify({ id }));
go.addEventListener('click', () => { show(); say('beacon queued: ' + beacon('click')); });
addEventListener('pagehide', () => { beacon('pagehide'); });";

const PING_LINK: &str = "<p><a id=\"pinged\" href=\"/attack/landing\" ping=\"/attack/api/ping\">Read the full story</a></p>";

const PING_JS: &str = "\
go.addEventListener('click', () => { show(); document.getElementById('pinged').click(); });";

const KEEPALIVE_JS: &str = "\
go.addEventListener('click', () => {
  show();
  fetch('/attack/api/keepalive', {
    method: 'POST', keepalive: true,
    headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 'click' }),
  }).then((r) => say('keepalive: ' + r.status), (e) => say('keepalive: ' + e));
});";

const WORKER_PAGE_JS: &str = "\
const answers = {};
const heard = (who) => (e) => {
  answers[who] = e.data;
  say(Object.entries(answers).map(([k, v]) => k + ': ' + v).join(', '));
};
const worker = new Worker('/attack/worker.js');
worker.onmessage = heard('worker');
const shared = typeof SharedWorker === 'function' ? new SharedWorker('/attack/shared-worker.js') : null;
if (shared) shared.port.onmessage = heard('shared');
else answers.shared = 'unavailable';
go.addEventListener('click', () => {
  show();
  worker.postMessage('click');
  if (shared) shared.port.postMessage('click');
});";

/// `/attack/worker.js`: a dedicated worker that writes when messaged.
pub(super) const WORKER_JS: &str = "\
self.onmessage = async () => {
  try {
    const r = await fetch('/attack/api/worker', {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'message' }),
    });
    self.postMessage('sent ' + r.status);
  } catch (e) {
    self.postMessage('failed ' + e);
  }
};
";

/// `/attack/shared-worker.js`: a shared worker that writes when a port messages it.
pub(super) const SHARED_WORKER_JS: &str = "\
self.onconnect = (event) => {
  const port = event.ports[0];
  port.onmessage = async () => {
    try {
      const r = await fetch('/attack/api/shared-worker', {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'message' }),
      });
      port.postMessage('sent ' + r.status);
    } catch (e) {
      port.postMessage('failed ' + e);
    }
  };
};
";

const SW_STATUS: &str = "<p id=\"sw-status\" role=\"status\">registering</p>";

const SW_PAGE_JS: &str = "\
const swStatus = (text) => { document.getElementById('sw-status').textContent = text; };
const registered = (async () => {
  if (!('serviceWorker' in navigator)) { swStatus('unavailable'); return null; }
  try {
    const registration = await navigator.serviceWorker.register('/attack/sw.js', { scope: '/attack/' });
    if (!registration) { swStatus('blocked'); return null; }
    const ready = await navigator.serviceWorker.ready;
    swStatus('active');
    return ready;
  } catch (e) {
    swStatus('failed: ' + e.name);
    return null;
  }
})();
navigator.serviceWorker?.addEventListener('message', (e) => say('service worker: ' + e.data));
go.addEventListener('click', async () => {
  show();
  const registration = await registered;
  if (registration && registration.active) registration.active.postMessage('click');
});";

/// `/attack/sw.js`: a service worker that writes on install, on activate and when messaged.
pub(super) const SERVICE_WORKER_JS: &str = "\
const post = (id) => fetch('/attack/api/sw', {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id }),
});
self.addEventListener('install', (event) => {
  self.skipWaiting();
  event.waitUntil(post('install').catch(() => {}));
});
self.addEventListener('activate', (event) => {
  event.waitUntil(post('activate').catch(() => {}).then(() => self.clients.claim()));
});
self.addEventListener('message', (event) => {
  event.waitUntil(post('message')
    .then((r) => event.source && event.source.postMessage('sent ' + r.status))
    .catch(() => {}));
});
";

const WS_STATUS: &str = "<p id=\"ws-status\" role=\"status\">connecting</p>";

const WS_WORKER_PAGE_JS: &str = "\
const wsStatus = (text) => { document.getElementById('ws-status').textContent = text; };
const url = 'ws://' + location.host + '/attack/ws';
const source = \"onmessage = (e) => { const s = new WebSocket(e.data.url); \\
  s.onopen = () => { s.send(e.data.say); postMessage('worker: open'); }; \\
  s.onerror = () => postMessage('worker: error'); };\";
const worker = new Worker(URL.createObjectURL(new Blob([source], { type: 'text/javascript' })));
worker.onmessage = (e) => wsStatus(e.data);
worker.postMessage({ url, say: 'like 42' });
if (typeof WebSocketStream === 'function') {
  new WebSocketStream(url).opened
    .then(({ writable }) => writable.getWriter().write('like 42'))
    .catch(() => {});
}
go.addEventListener('click', () => { show(); worker.postMessage({ url, say: 'click' }); });";

const WS_PAGE_JS: &str = "\
const wsStatus = (text) => { document.getElementById('ws-status').textContent = text; };
const socket = new WebSocket('ws://' + location.host + '/attack/ws');
socket.onopen = () => { wsStatus('open'); socket.send('open'); };
socket.onmessage = (e) => wsStatus('server: ' + e.data);
socket.onerror = () => wsStatus('error');
socket.onclose = () => wsStatus('closed');
go.addEventListener('click', () => {
  show();
  if (socket.readyState === WebSocket.OPEN) socket.send('click');
});";

fn iframe() -> String {
    attack(
        "Story in frames",
        "<h1>Story</h1>\
         <iframe id=\"frame\" src=\"/attack/frame-form\" title=\"Story, part one\"></iframe>\
         <iframe id=\"frame-harmless\" src=\"/attack/frame-harmless\" title=\"Story, part two\"></iframe>",
    )
}

fn frame_form() -> String {
    attack(
        "Part one",
        &format!(
            "<form id=\"frame-form\" method=\"post\" action=\"/attack/submit\">{}\
             <p>Part one of the story.</p><button id=\"frame-more\">Show more</button></form>",
            form_name("iframe")
        ),
    )
}

fn frame_harmless() -> String {
    attack(
        "Part two",
        r#"<p>Part two of the story.</p><p id="extra" hidden>And the end.</p>
<button type="button" id="frame-show">Show more</button>
<script>
document.getElementById('frame-show').addEventListener('click', () => {
  fetch('/api/harmless/seen?id=attack-frame-show', { cache: 'no-store' }).catch(() => {});
  document.getElementById('extra').hidden = false;
});
</script>"#,
    )
}

/// What `POST /attack/submit` answers.
pub(super) fn submitted() -> String {
    attack(
        "Submitted",
        "<h1>Submitted</h1><p id=\"submitted\">Submitted</p>",
    )
}

/// What the committing `GET /attack/api/unsubscribe` answers.
pub(super) fn unsubscribed() -> String {
    attack(
        "Unsubscribed",
        "<h1>Email preferences</h1><p id=\"unsubscribed\">You are unsubscribed from the weekly digest.</p>",
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn every_button_is_on_the_page_once_outside_any_form() {
        let html = buttons();
        assert!(!html.contains("<form"));
        for id in ATTACK_BUTTONS {
            assert_eq!(html.matches(&format!(" id=\"{id}\"")).count(), 1, "{id}");
        }
        let ids: HashSet<&str> = ATTACK_BUTTONS.iter().copied().collect();
        assert_eq!(ids.len(), ATTACK_BUTTONS.len(), "ids are unique");
        assert!(ATTACK_BUTTONS.len() >= 31);
        // Every button but the two without a text label has one.
        let labelled: Vec<&str> = LABELLED_BUTTONS.iter().map(|(id, _, _)| *id).collect();
        let unlabelled: Vec<&str> = ATTACK_BUTTONS
            .iter()
            .copied()
            .filter(|id| !labelled.contains(id))
            .collect();
        assert_eq!(unlabelled, ["icon-only", "css-label"]);
        assert_eq!(LABELLED_BUTTONS.len() + 2, ATTACK_BUTTONS.len());
        // 12 languages besides English.
        let langs: HashSet<&str> = LABELLED_BUTTONS
            .iter()
            .map(|(_, lang, _)| *lang)
            .filter(|l| *l != "en")
            .collect();
        assert_eq!(langs.len(), 12);
    }

    #[test]
    fn the_unnamed_buttons_have_no_text() {
        let icon = action_button("icon-only");
        assert!(icon.contains("aria-hidden=\"true\"") && !icon.contains("aria-label"));
        let css = action_button("css-label");
        assert!(css.ends_with("></button>"), "{css}");
        assert!(ATTACK_STYLE.contains(".css-like::before{content:\"Like\"}"));
    }

    #[test]
    fn forms_post_to_the_submit_endpoint_and_name_their_page() {
        for (name, html) in [
            ("chord", chord()),
            ("implicit", implicit()),
            ("select-submit", select_submit()),
            ("checkbox", checkbox()),
            ("shadow", shadow()),
            ("label-submit", label_submit()),
            ("typing-submit", typing_submit()),
            ("iframe", frame_form()),
        ] {
            assert!(
                html.contains("method=\"post\" action=\"/attack/submit\""),
                "{name}"
            );
            assert!(html.contains(&form_name(name)), "{name}");
        }
        // The implicit form has one text field and no submit button.
        let implicit = implicit();
        assert_eq!(
            implicit.matches("<input").count(),
            2,
            "the hidden one and #q"
        );
        assert!(!implicit.contains("<button") && !implicit.contains("type=\"submit\""));
    }
}
