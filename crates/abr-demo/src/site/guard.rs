//! The guard corpus: `GET /guard`, one page of controls, each marked with the verdict ABR's
//! commit guard should give a click on it, and two ledgers that prove what reached the page.
//!
//! # HTTP contract
//! - `GET /guard`: every control of [`GUARD_CORPUS`], in that order, each with
//!   `id` and `data-guard` set to its id and `data-commits="true|false"` (the expected
//!   verdict for a click). The two search boxes also carry `data-enter-commits` (the
//!   verdict for typing with Enter). No control needs scrolling inside a container, and
//!   nothing covers them.
//! - Activating a committing control (its click, its form's `submit` event, a file input's
//!   `change`, the first input into a card field, Enter in a field of a form) posts its id to
//!   `POST /api/guard/writes`. Forms never navigate: the page handles `submit` with
//!   `preventDefault`, and links with ids never navigate either.
//! - Clicking a non-committing control records its id with a `GET`
//!   (`fetch('/api/guard/seen?id=…', {cache: 'no-store'})`: a harmless click never writes,
//!   so the site's write ledger stays empty), sets `data-seen` (a count) on it and writes its
//!   id into `#guard-status`; some also change the page (`#more`, `#details-text`, the tab
//!   panel, `#search-js-results`). Enter in `#search-js` (outside any form) runs a harmless
//!   script search, recorded as seen.
//! - `GET /api/guard/writes`, `GET /api/guard/seen`: JSON arrays of ids, in arrival order.
//!   `POST /api/guard/writes` takes `{"id": "..."}` and `GET /api/guard/seen?id=...`
//!   records `id` (answering `204`, `no-store`); an id is 1 to 64 ASCII letters, digits,
//!   `-` or `_`, at most [`MAX_LEDGER`] entries per ledger, else 400.
//! - `POST /api/guard/reset`: clears both ledgers.

use axum::Router;
use axum::body::Bytes;
use axum::extract::RawQuery;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, extract::State};
use serde::Deserialize;

use super::html::document;
use super::{
    Shared, form_value, is_plain_id, json_error, lock, no_store_json, no_store_no_content, page,
};

/// Most entries a guard ledger keeps; later records are refused.
pub const MAX_LEDGER: usize = 1000;

/// One control of the guard corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GuardControl {
    /// Its `id` and `data-guard`: unique on the page.
    pub id: &'static str,
    /// `data-commits`: whether ABR's commit guard counts a click on it as committing (in a
    /// read-write run).
    pub commits: bool,
    /// `data-read-only-commits` (else `data-commits`): whether a read-only run refuses a
    /// click on it (the strict rule: a choice that may submit, a button with no harmless
    /// meaning).
    pub read_only_commits: bool,
    /// `data-enter-commits`, on the text fields it is set on: whether typing into it with
    /// Enter commits.
    pub enter_commits: Option<bool>,
    /// What it is, and why it has that verdict.
    pub what: &'static str,
}

const fn commits(id: &'static str, what: &'static str) -> GuardControl {
    GuardControl {
        id,
        commits: true,
        read_only_commits: true,
        enter_commits: None,
        what,
    }
}

const fn harmless(id: &'static str, what: &'static str) -> GuardControl {
    GuardControl {
        id,
        commits: false,
        read_only_commits: false,
        enter_commits: None,
        what,
    }
}

/// Harmless in a read-write run, refused in a read-only one (a choice outside any form may
/// save at once: the strict rule cannot tell).
const fn strict_only(id: &'static str, what: &'static str) -> GuardControl {
    GuardControl {
        id,
        commits: false,
        read_only_commits: true,
        enter_commits: None,
        what,
    }
}

/// Every control of `GET /guard`, in page order: the tests' oracle.
pub const GUARD_CORPUS: &[GuardControl] = &[
    // Outside any form: committing by their names.
    commits("post", "button \"Post\" outside forms: verb post"),
    commits("delete", "button \"Delete\" outside forms: verb delete"),
    commits(
        "apply-filter",
        "button \"Apply filter\" outside forms: verb apply (refusing it is intended)",
    ),
    commits(
        "sign-up",
        "button \"Sign up\" outside forms: phrase sign up",
    ),
    commits(
        "send-message",
        "button \"Send message\" outside forms: verb send",
    ),
    commits(
        "remove",
        "icon button \"×\" with aria-label \"Remove\", outside forms: verb remove",
    ),
    commits("upload", "button \"Upload\" outside forms: verb upload"),
    commits("share", "div role=button \"Share\": verb share"),
    commits("buy-now", "link styled as a button, \"Buy now\": verb buy"),
    commits("jetzt-kaufen", "button \"Jetzt kaufen\" (German): kaufen"),
    commits("envoyer", "button \"Envoyer\" (French): envoyer"),
    commits("supprimer", "button \"Supprimer\" (French): supprimer"),
    commits("toukou", "button \"投稿する\" (Japanese): 投稿"),
    commits("gyeolje", "button \"결제\" (Korean): 결제"),
    // Outside any form: harmless names.
    harmless("weiter", "button \"Weiter\" (German, next) outside forms"),
    harmless(
        "suivant",
        "link styled as a button, \"Suivant\" (French, next)",
    ),
    harmless("tsugi", "button \"次へ\" (Japanese, next) outside forms"),
    harmless("next-page", "link styled as a button, \"Next page\""),
    harmless("show-more", "button \"Show more\" outside forms"),
    harmless("details", "button \"Details\" outside forms"),
    strict_only(
        "remember-filters",
        "checkbox \"Remember filters\" outside forms: a read-only run refuses a choice that may save",
    ),
    harmless("tab-overview", "button role=tab \"Overview\" outside forms"),
    harmless(
        "tab-specs",
        "button role=tab \"Specifications\" outside forms",
    ),
    GuardControl {
        id: "search-js",
        commits: false,
        read_only_commits: false,
        enter_commits: Some(false),
        what: "search box outside any form, Enter handled by script",
    },
    commits("avatar-file", "file input \"Profile photo\" outside forms"),
    // The search form (it has a submit button).
    GuardControl {
        id: "search-in-form",
        commits: false,
        read_only_commits: false,
        enter_commits: Some(false),
        what: "search box in a GET form with a submit button: Enter submits it, a navigation",
    },
    harmless("in-stock", "checkbox \"In stock only\" inside a GET form"),
    harmless(
        "search-submit",
        "button \"Search\" without a type inside a GET form: its submission is a navigation",
    ),
    // The comment form.
    harmless("comment-text", "textarea \"Comment\" inside a form"),
    commits(
        "preview",
        "button type=button \"Preview\" inside a form: any button in a form",
    ),
    commits(
        "submit-input",
        "input type=submit \"Submit\": submit control",
    ),
    commits(
        "unlabeled-submit",
        "button type=submit without a name, inside a form: submit control",
    ),
    // The checkout form.
    commits(
        "card-number",
        "text input autocomplete=cc-number name=cardnumber: card field",
    ),
    commits(
        "card-cvc",
        "text input autocomplete=cc-csc name=cvc: card field",
    ),
    harmless("checkout-terms", "link \"Terms\" inside a form"),
    commits("pay", "button type=submit \"Pay\": submit control"),
];

/// The two ledgers of the guard corpus.
#[derive(Debug, Default)]
pub(super) struct GuardLedger {
    /// Ids of committing controls that were activated, in order.
    pub(super) writes: Vec<String>,
    /// Ids of harmless controls that were clicked, in order.
    pub(super) seen: Vec<String>,
}

/// The corpus routes.
pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route("/guard", get(corpus))
        .route("/api/guard/writes", get(writes).post(record_write))
        .route("/api/guard/seen", get(seen))
        .route("/api/guard/reset", post(reset))
}

async fn corpus() -> Response {
    page(StatusCode::OK, corpus_page())
}

async fn writes(State(state): State<Shared>) -> Response {
    Json(lock(&state).guard.writes.clone()).into_response()
}

/// `GET /api/guard/seen`: the list; with `?id=`, records that harmless click.
async fn seen(State(state): State<Shared>, RawQuery(query): RawQuery) -> Response {
    let Some(query) = query else {
        return no_store_json(serde_json::json!(lock(&state).guard.seen));
    };
    let Some(id) = form_value(query.as_bytes(), "id").filter(|id| is_plain_id(id)) else {
        return json_error(
            StatusCode::BAD_REQUEST,
            "expected ?id=... (1 to 64 letters, digits, - or _)",
        );
    };
    let mut s = lock(&state);
    if s.guard.seen.len() >= MAX_LEDGER {
        return json_error(StatusCode::BAD_REQUEST, "the ledger is full; reset it");
    }
    s.guard.seen.push(id);
    drop(s);
    no_store_no_content()
}

async fn reset(State(state): State<Shared>) -> Response {
    lock(&state).guard = GuardLedger::default();
    StatusCode::NO_CONTENT.into_response()
}

#[derive(Debug, Deserialize)]
struct Record {
    id: String,
}

/// `body` (`{"id": "..."}`) as a ledger id.
fn ledger_id(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<Record>(body)
        .ok()
        .map(|r| r.id)
        .filter(|id| is_plain_id(id))
}

/// Records the id in `body` on the ledger `pick` chooses.
fn record(state: &Shared, body: &[u8], pick: fn(&mut GuardLedger) -> &mut Vec<String>) -> Response {
    let Some(id) = ledger_id(body) else {
        return json_error(
            StatusCode::BAD_REQUEST,
            "expected a JSON body {\"id\": \"...\"} (1 to 64 letters, digits, - or _)",
        );
    };
    let mut s = lock(state);
    let ledger = pick(&mut s.guard);
    if ledger.len() >= MAX_LEDGER {
        return json_error(StatusCode::BAD_REQUEST, "the ledger is full; reset it");
    }
    ledger.push(id);
    StatusCode::NO_CONTENT.into_response()
}

async fn record_write(State(state): State<Shared>, body: Bytes) -> Response {
    record(&state, &body, |g| &mut g.writes)
}

const CORPUS_STYLE: &str = "body{max-width:60rem}.row{display:flex;flex-wrap:wrap;align-items:center;gap:.4rem;margin:.5rem 0}\
form{border:1px solid #ccc;border-radius:4px;padding:.25rem .5rem;margin:.5rem 0}\
.btn{display:inline-block;padding:.15rem .6rem;border:1px solid #777;border-radius:4px;background:#eef;color:#000;text-decoration:none;cursor:pointer}\
.icon{min-width:2rem;min-height:1.6rem}[data-seen]{outline:2px solid #06c}#guard-status{min-height:1.5rem}";

/// The corpus markup. Every control's attributes match [`GUARD_CORPUS`] (a unit test
/// checks it).
const CORPUS_BODY: &str = r##"<main>
<h1>Guard corpus</h1>
<p>Controls for the commit guard. Each one says, in <code>data-commits</code>, whether a click on it counts as committing.</p>
<p id="guard-status" role="status">Nothing clicked yet.</p>
<div class="row" aria-label="Actions">
<button type="button" id="post" data-guard="post" data-commits="true">Post</button>
<button type="button" id="delete" data-guard="delete" data-commits="true">Delete</button>
<button type="button" id="apply-filter" data-guard="apply-filter" data-commits="true">Apply filter</button>
<button type="button" id="sign-up" data-guard="sign-up" data-commits="true">Sign up</button>
<button type="button" id="send-message" data-guard="send-message" data-commits="true">Send message</button>
<button type="button" id="remove" data-guard="remove" data-commits="true" aria-label="Remove" class="icon">×</button>
<button type="button" id="upload" data-guard="upload" data-commits="true">Upload</button>
<div role="button" tabindex="0" id="share" data-guard="share" data-commits="true" class="btn">Share</div>
<a href="/guard?buy=1" id="buy-now" data-guard="buy-now" data-commits="true" class="btn">Buy now</a>
</div>
<div class="row" aria-label="Other languages">
<button type="button" lang="de" id="jetzt-kaufen" data-guard="jetzt-kaufen" data-commits="true">Jetzt kaufen</button>
<button type="button" lang="fr" id="envoyer" data-guard="envoyer" data-commits="true">Envoyer</button>
<button type="button" lang="fr" id="supprimer" data-guard="supprimer" data-commits="true">Supprimer</button>
<button type="button" lang="ja" id="toukou" data-guard="toukou" data-commits="true">投稿する</button>
<button type="button" lang="ko" id="gyeolje" data-guard="gyeolje" data-commits="true">결제</button>
<button type="button" lang="de" id="weiter" data-guard="weiter" data-commits="false">Weiter</button>
<a href="/guard?page=2" lang="fr" id="suivant" data-guard="suivant" data-commits="false" class="btn">Suivant</a>
<button type="button" lang="ja" id="tsugi" data-guard="tsugi" data-commits="false">次へ</button>
</div>
<div class="row" aria-label="Browsing">
<a href="/guard?page=2" id="next-page" data-guard="next-page" data-commits="false" class="btn">Next page</a>
<button type="button" id="show-more" data-guard="show-more" data-commits="false">Show more</button>
<button type="button" id="details" data-guard="details" data-commits="false" aria-expanded="false" aria-controls="details-text">Details</button>
<label><input type="checkbox" id="remember-filters" data-guard="remember-filters" data-commits="false" data-read-only-commits="true"> Remember filters</label>
<span role="tablist" aria-label="Sections">
<button type="button" role="tab" aria-selected="true" aria-controls="tab-panel" id="tab-overview" data-guard="tab-overview" data-commits="false">Overview</button>
<button type="button" role="tab" aria-selected="false" aria-controls="tab-panel" id="tab-specs" data-guard="tab-specs" data-commits="false">Specifications</button>
</span>
<label>Find on page <input type="search" id="search-js" data-guard="search-js" data-commits="false" data-enter-commits="false" autocomplete="off"></label>
<label>Profile photo <input type="file" id="avatar-file" data-guard="avatar-file" data-commits="true"></label>
</div>
<p id="more" hidden>Three more items: a lamp, a chair, a rug.</p>
<p id="details-text" hidden>Made of oak. Ships in two days.</p>
<p id="tab-panel" role="tabpanel">Overview: a sturdy oak table.</p>
<p id="search-js-results" role="status"></p>
<form id="search-form" role="search" class="row" action="/guard" method="get">
<label>Search <input type="search" id="search-in-form" name="q" data-guard="search-in-form" data-commits="false" data-enter-commits="false" autocomplete="off"></label>
<label><input type="checkbox" id="in-stock" name="stock" data-guard="in-stock" data-commits="false"> In stock only</label>
<button id="search-submit" data-guard="search-submit" data-commits="false">Search</button>
</form>
<form id="comment-form" class="row" action="/guard" method="post">
<label>Comment <textarea id="comment-text" name="comment" rows="1" data-guard="comment-text" data-commits="false"></textarea></label>
<button type="button" id="preview" data-guard="preview" data-commits="true">Preview</button>
<input type="submit" id="submit-input" value="Submit" data-guard="submit-input" data-commits="true">
<button type="submit" id="unlabeled-submit" data-guard="unlabeled-submit" data-commits="true" class="icon"></button>
</form>
<form id="checkout-form" class="row" action="/guard" method="post">
<label>Card number <input id="card-number" name="cardnumber" autocomplete="cc-number" inputmode="numeric" size="19" data-guard="card-number" data-commits="true"></label>
<label>Security code <input id="card-cvc" name="cvc" autocomplete="cc-csc" inputmode="numeric" size="4" data-guard="card-cvc" data-commits="true"></label>
<a href="/guard?terms=1" id="checkout-terms" data-guard="checkout-terms" data-commits="false">Terms</a>
<button type="submit" id="pay" data-guard="pay" data-commits="true">Pay</button>
</form>
</main>
<script>
(() => {
  const status = document.getElementById('guard-status');
  // A committing control writes (POST); a harmless one only reads (GET).
  const wrote = (id) => {
    fetch('/api/guard/writes', {
      method: 'POST', keepalive: true, credentials: 'same-origin',
      headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id }),
    }).catch(() => {});
    status.textContent = 'Committed: ' + id;
  };
  const saw = (el) => {
    fetch('/api/guard/seen?id=' + encodeURIComponent(el.dataset.guard), { cache: 'no-store' }).catch(() => {});
    el.dataset.seen = String(Number(el.dataset.seen || 0) + 1);
    status.textContent = 'Harmless: ' + el.dataset.guard;
  };
  const guarded = (t) => (t && t.closest ? t.closest('[data-guard]') : null);
  // A submit control is recorded by its form's submit event, not by its click.
  const isSubmit = (el) => !!el.form && (el.tagName === 'BUTTON' || el.tagName === 'INPUT')
    && (el.type === 'submit' || el.type === 'image');
  const tab = (selected, text) => {
    for (const t of document.querySelectorAll('[role=tab]')) t.setAttribute('aria-selected', String(t === selected));
    document.getElementById('tab-panel').textContent = text;
  };
  const reactions = {
    'show-more': () => { document.getElementById('more').hidden = false; },
    'details': (el) => {
      const d = document.getElementById('details-text');
      d.hidden = !d.hidden;
      el.setAttribute('aria-expanded', String(!d.hidden));
    },
    'tab-overview': (el) => tab(el, 'Overview: a sturdy oak table.'),
    'tab-specs': (el) => tab(el, 'Specifications: 160 × 90 cm, 32 kg.'),
  };
  // Enter in a field of a form: the submit event that follows is the field's.
  let entered = null;
  document.addEventListener('pointerdown', () => { entered = null; }, true);
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Enter') { entered = null; return; }
    const el = guarded(e.target);
    if (!el) return;
    if (el.id === 'search-js') {
      e.preventDefault();
      document.getElementById('search-js-results').textContent = 'No results for "' + el.value + '" on this page.';
      saw(el);
      return;
    }
    if (el.form && el.tagName === 'INPUT') entered = el;
  }, true);
  document.addEventListener('click', (e) => {
    const el = guarded(e.target);
    if (!el) return;
    if (el.tagName === 'A') e.preventDefault();
    if (el.dataset.commits === 'true') {
      if (!isSubmit(el)) wrote(el.dataset.guard);
      return;
    }
    saw(el);
    const react = reactions[el.dataset.guard];
    if (react) react(el);
  });
  const typed = new Set();
  document.addEventListener('input', (e) => {
    const el = guarded(e.target);
    if (!el || el.dataset.commits !== 'true' || el.type === 'file' || typed.has(el.dataset.guard)) return;
    typed.add(el.dataset.guard);
    wrote(el.dataset.guard);
  });
  document.addEventListener('change', (e) => {
    const el = guarded(e.target);
    if (el && el.type === 'file') wrote(el.dataset.guard);
  });
  document.addEventListener('submit', (e) => {
    e.preventDefault();
    const form = e.target;
    const by = entered && form.contains(entered) ? entered : e.submitter;
    entered = null;
    // A GET form's submission only reads (a search).
    if (form.method === 'get') {
      if (by && by.dataset.guard) saw(by);
      return;
    }
    wrote(by && by.dataset.guard ? by.dataset.guard : form.id);
  });
})();
</script>"##;

fn corpus_page() -> String {
    document("Guard corpus", CORPUS_STYLE, CORPUS_BODY)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use abr_core::guard::{CommitRules, ElementFacts, commit_class};
    use abr_core::step_runner::BrowserAction;
    use abr_protocol::{SecretValue, Selector};

    use super::*;

    /// `(data-guard, data-commits, data-read-only-commits, data-enter-commits)` of every
    /// control, in page order.
    fn marked(markup: &str) -> Vec<(String, bool, bool, Option<bool>)> {
        let attr = |tag: &str, name: &str| {
            let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
            let len = tag.get(start..)?.find('"')?;
            tag.get(start..start + len).map(str::to_owned)
        };
        markup
            .split('<')
            .filter(|tag| tag.contains(" data-guard=\""))
            .map(|tag| {
                let tag = tag.split('>').next().unwrap_or_default();
                let id = attr(tag, "data-guard").unwrap_or_default();
                assert_eq!(attr(tag, "id").as_deref(), Some(id.as_str()), "{tag}");
                let commits = attr(tag, "data-commits").unwrap_or_default();
                assert!(commits == "true" || commits == "false", "{tag}");
                let enter = attr(tag, "data-enter-commits").map(|v| v == "true");
                let read_only =
                    attr(tag, "data-read-only-commits").map_or(commits == "true", |v| v == "true");
                (id, commits == "true", read_only, enter)
            })
            .collect()
    }

    #[test]
    fn the_markup_carries_the_corpus_table() {
        let expected: Vec<(String, bool, bool, Option<bool>)> = GUARD_CORPUS
            .iter()
            .map(|c| {
                (
                    c.id.to_owned(),
                    c.commits,
                    c.read_only_commits,
                    c.enter_commits,
                )
            })
            .collect();
        assert_eq!(marked(CORPUS_BODY), expected);
        let ids: HashSet<&str> = GUARD_CORPUS.iter().map(|c| c.id).collect();
        assert_eq!(ids.len(), GUARD_CORPUS.len(), "ids are unique");
        assert!(GUARD_CORPUS.len() >= 30);
        assert!(GUARD_CORPUS.iter().filter(|c| !c.commits).count() >= 10);
    }

    /// The facts a browser reads from each control, written out by hand from the markup.
    fn facts(id: &str) -> ElementFacts {
        let el =
            |tag: &str, input_type: Option<&str>, role: Option<&str>, name: &str| ElementFacts {
                tag: tag.to_owned(),
                input_type: input_type.map(str::to_owned),
                role: role.map(str::to_owned),
                name: name.to_owned(),
                field_hints: vec![id.to_owned()],
                ..ElementFacts::default()
            };
        let button = |name: &str| el("button", Some("button"), None, name);
        let link = |name: &str| el("a", None, None, name);
        let in_form = |mut f: ElementFacts| {
            f.in_form = true;
            f.form_has_submit = true;
            f.form_method = Some("post".to_owned());
            f
        };
        let in_search_form = |mut f: ElementFacts| {
            f.in_form = true;
            f.form_has_submit = true;
            f.form_method = Some("get".to_owned());
            f.search = true;
            f
        };
        let card = |name: &str, hint: &str, autocomplete: &str| {
            let mut f = in_form(el("input", Some("text"), None, name));
            f.autocomplete = Some(autocomplete.to_owned());
            f.field_hints = vec![id.to_owned(), hint.to_owned()];
            f
        };
        match id {
            "post" => button("Post"),
            "delete" => button("Delete"),
            "apply-filter" => button("Apply filter"),
            "sign-up" => button("Sign up"),
            "send-message" => button("Send message"),
            "remove" => button("Remove"),
            "upload" => button("Upload"),
            "share" => el("div", None, Some("button"), "Share"),
            "buy-now" => link("Buy now"),
            "jetzt-kaufen" => button("Jetzt kaufen"),
            "envoyer" => button("Envoyer"),
            "supprimer" => button("Supprimer"),
            "toukou" => button("投稿する"),
            "gyeolje" => button("결제"),
            "weiter" => button("Weiter"),
            "suivant" => link("Suivant"),
            "tsugi" => button("次へ"),
            "next-page" => link("Next page"),
            "show-more" => button("Show more"),
            "details" => button("Details"),
            "remember-filters" => el("input", Some("checkbox"), None, "Remember filters"),
            "tab-overview" => el("button", Some("button"), Some("tab"), "Overview"),
            "tab-specs" => el("button", Some("button"), Some("tab"), "Specifications"),
            "search-js" => ElementFacts {
                search: true,
                ..el("input", Some("search"), None, "Find on page")
            },
            "avatar-file" => el("input", Some("file"), None, "Profile photo"),
            "search-in-form" => in_search_form(el("input", Some("search"), None, "Search")),
            "in-stock" => in_search_form(el("input", Some("checkbox"), None, "In stock only")),
            "search-submit" => in_search_form(el("button", None, None, "Search")),
            "comment-text" => in_form(el("textarea", None, None, "Comment")),
            "preview" => in_form(button("Preview")),
            "submit-input" => in_form(el("input", Some("submit"), None, "Submit")),
            "unlabeled-submit" => in_form(el("button", Some("submit"), None, "")),
            "card-number" => card("Card number", "cardnumber", "cc-number"),
            "card-cvc" => card("Security code", "cvc", "cc-csc"),
            "checkout-terms" => in_form(link("Terms")),
            "pay" => in_form(el("button", Some("submit"), None, "Pay")),
            other => panic!("no facts for {other}"),
        }
    }

    #[test]
    fn the_expected_verdicts_are_the_commit_rule() {
        for control in GUARD_CORPUS {
            let facts = facts(control.id);
            let selector = Selector::Css(format!("#{}", control.id));
            let click = BrowserAction::Click {
                selector: selector.clone(),
            };
            for (rules, expected) in [
                (CommitRules::LENIENT, control.commits),
                (CommitRules::STRICT, control.read_only_commits),
            ] {
                assert_eq!(
                    commit_class(&click, Some(&facts), &rules).is_some(),
                    expected,
                    "click {} ({}): {}",
                    control.id,
                    if rules.strict {
                        "read-only"
                    } else {
                        "read-write"
                    },
                    control.what
                );
                if let Some(enter) = control.enter_commits {
                    let typed = BrowserAction::Type {
                        selector: selector.clone(),
                        value: SecretValue::new("oak table"),
                        submit: true,
                    };
                    assert_eq!(
                        commit_class(&typed, Some(&facts), &rules).is_some(),
                        enter,
                        "enter {}",
                        control.id
                    );
                }
            }
        }
    }

    #[test]
    fn ledger_ids_are_short_and_plain() {
        assert!(is_plain_id("card-number"));
        assert!(is_plain_id("a_b"));
        assert!(!is_plain_id(""));
        assert!(!is_plain_id("a b"));
        assert!(!is_plain_id(&"a".repeat(65)));
        assert_eq!(ledger_id(br#"{"id": "pay"}"#).as_deref(), Some("pay"));
        assert_eq!(ledger_id(br#"{"id": "<x>"}"#), None);
        assert_eq!(ledger_id(b"pay"), None);
    }
}
