//! The harmless corpus: `GET /harmless`, a shop page of common controls that only read
//! (search, pagination, filters, sort, tabs, accordions, Cancel, menus, Close, in several
//! languages). Activating any of them records its id with a `GET` and never sends a request
//! with another method, so the write ledger stays empty however it is driven: the figure a
//! read-only guard must not refuse.
//!
//! # HTTP contract
//! - `GET /harmless`: every control of [`HARMLESS_CORPUS`], in that order, each with `id`
//!   and `data-harmless` set to its id and `data-harmless-action` to how it is exercised
//!   ([`HarmlessAction`]: `click`; `enter`: type a word into it, then press Enter;
//!   `press-page`: focus it, inside its iframe, and press Enter on the page; `select`:
//!   choose the option `data-harmless-option`). Controls that leave the page (a GET
//!   navigation: links, GET form submissions) also carry `data-harmless-navigates`; come back
//!   with `GET /harmless`. `#menu-settings` and `#menu-help` are shown once `#menu-button`
//!   opened the menu (it stays open; Escape closes it). Nothing covers a control.
//! - A control that stays on the page records itself with
//!   `fetch('/api/harmless/seen?id=…', {cache: 'no-store'})` and writes its id into
//!   `#harmless-status`; some also change the page (more items, a panel, a tab).
//! - A control that navigates lands on `GET /harmless/results?via=<id>&…` (its link's
//!   `href`, or its GET form with the hidden `via` field), which records `via` (when it is a
//!   plain id) and answers a page `#results` with the link `#back-to-shop` to `/harmless`. The search
//!   form's `via` says whether Enter in `#search-q` or a click on `#search-submit` sent it.
//! - `GET /harmless/frame`: the iframe `#harmless-frame`'s document, whose
//!   `#frame-show-more` "Show more" (with `autofocus`; focus it explicitly to be sure)
//!   records itself like the page's controls.
//! - `GET /api/harmless/seen`: the ids recorded, a JSON array in arrival order;
//!   `GET /api/harmless/seen?id=…` records `id` (1 to 64 ASCII letters, digits, `-` or `_`;
//!   at most [`MAX_LEDGER`](super::MAX_LEDGER) ids), answering `204`, else 400. Both
//!   `no-store`. Clearing it is Rust only:
//!   [`DemoSite::reset_harmless`](super::DemoSite::reset_harmless).

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;

use super::guard::MAX_LEDGER;
use super::html::document;
use super::{
    Shared, form_value, is_plain_id, json_error, lock, no_store_json, no_store_no_content, page,
};

/// How a test exercises a control of the harmless corpus (`data-harmless-action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HarmlessAction {
    /// `click`: click it.
    Click,
    /// `enter`: type a word into it, then press Enter in it.
    Enter,
    /// `press-page`: focus it (inside its iframe), then press Enter on the page.
    PressPage,
    /// `select`: choose this option (`value`) of the `<select>`.
    Select(&'static str),
}

impl HarmlessAction {
    /// The `data-harmless-action` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Click => "click",
            Self::Enter => "enter",
            Self::PressPage => "press-page",
            Self::Select(_) => "select",
        }
    }
}

/// One control of the harmless corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HarmlessControl {
    /// Its `id` and `data-harmless`: unique in the corpus.
    pub id: &'static str,
    /// How it is exercised.
    pub action: HarmlessAction,
    /// Whether activating it leaves `/harmless` (a GET navigation to `/harmless/results`).
    pub navigates: bool,
    /// The id of the iframe whose document holds it, if it is not on the page itself.
    pub frame: Option<&'static str>,
    /// A control to activate first on the same page load (it makes this one visible).
    pub needs: Option<&'static str>,
    /// What it is.
    pub what: &'static str,
}

const fn click(id: &'static str, what: &'static str) -> HarmlessControl {
    HarmlessControl {
        id,
        action: HarmlessAction::Click,
        navigates: false,
        frame: None,
        needs: None,
        what,
    }
}

/// A control whose activation is a GET navigation.
const fn leaves(mut control: HarmlessControl) -> HarmlessControl {
    control.navigates = true;
    control
}

const fn in_menu(mut control: HarmlessControl) -> HarmlessControl {
    control.needs = Some("menu-button");
    control
}

/// Every control of `GET /harmless`, in page order: the tests' oracle.
pub const HARMLESS_CORPUS: &[HarmlessControl] = &[
    // Search.
    leaves(HarmlessControl {
        action: HarmlessAction::Enter,
        ..click(
            "search-q",
            "search field of a GET form (role=search): Enter submits it",
        )
    }),
    leaves(click(
        "search-submit",
        "button \"Search\" submitting the GET search form",
    )),
    HarmlessControl {
        action: HarmlessAction::Enter,
        ..click(
            "find-q",
            "search box outside any form, Enter handled by script",
        )
    },
    // Pagination.
    leaves(click("previous", "link \"Previous\" (rel=prev)")),
    leaves(click("page-2", "numbered page link \"2\"")),
    leaves(click("page-3", "numbered page link \"3\"")),
    leaves(click("next", "link \"Next\" (rel=next)")),
    click("load-more", "button \"Load more\": appends items"),
    click("show-more", "button \"Show more\": shows more text"),
    // Filters and sort.
    click(
        "filter",
        "button \"Filter\" (aria-expanded): the filter panel",
    ),
    click(
        "filters",
        "button \"Filters\" (aria-expanded): the filter panel",
    ),
    click("sort-date", "button \"Sort by date\": sorts the list"),
    click("newest", "button \"Newest\": sorts the list"),
    leaves(HarmlessControl {
        action: HarmlessAction::Select("price"),
        ..click(
            "sort-select",
            "<select> \"Sort\" in a GET form, submitting it on change",
        )
    }),
    leaves(click(
        "filter-in-stock",
        "checkbox \"In stock\" in a GET form, submitting it on change",
    )),
    leaves(click(
        "filter-free-shipping",
        "checkbox \"Free shipping\" in a GET form, submitting it on change",
    )),
    // Tabs and accordions.
    click("tab-overview", "button role=tab \"Overview\""),
    click("tab-reviews", "button role=tab \"Reviews\""),
    click("faq-shipping", "<summary> \"Shipping\" of a <details>"),
    click(
        "details",
        "button \"Details\" (aria-expanded): shows the details",
    ),
    // Cancel.
    click("cancel", "button \"Cancel\" outside any form"),
    click(
        "cancel-in-form",
        "button type=button \"Cancel\" inside a POST form (it clears the note)",
    ),
    // A menu.
    click(
        "menu-button",
        "button \"Menu\" (aria-haspopup=menu): opens the menu",
    ),
    in_menu(click("menu-settings", "role=menuitem \"Settings\"")),
    in_menu(click("menu-help", "role=menuitem \"Help\"")),
    // Other common controls.
    click("close", "icon button \"×\" with aria-label \"Close\""),
    click("open", "button \"Open\": shows a panel"),
    leaves(click("view-details", "link \"View details\"")),
    click("expand", "button \"Expand\""),
    click("collapse", "button \"Collapse\""),
    click("more", "button \"More\""),
    leaves(click("back", "link \"Back\"")),
    leaves(click("home", "link \"Home\"")),
    leaves(click("read-more", "link \"Read more\"")),
    click("copy-link", "button \"Copy link\""),
    click("zoom-in", "button \"Zoom in\": enlarges the photo"),
    // Next, in other languages.
    leaves(click("weiter", "link \"Weiter\" (German, next)")),
    click("suivant", "button \"Suivant\" (French, next)"),
    leaves(click("siguiente", "link \"Siguiente\" (Spanish, next)")),
    click("tsugi", "button \"次へ\" (Japanese, next)"),
    // Search, in other languages: submit buttons of GET search forms.
    leaves(click(
        "suchen",
        "button \"Suchen\" (German) submitting a GET search form",
    )),
    leaves(click(
        "rechercher",
        "button \"Rechercher\" (French) submitting a GET search form",
    )),
    leaves(click(
        "buscar",
        "button \"Buscar\" (Spanish) submitting a GET search form",
    )),
    leaves(click(
        "kensaku",
        "button \"検索\" (Japanese) submitting a GET search form",
    )),
    // Show more, in other languages.
    click("mehr-anzeigen", "button \"Mehr anzeigen\" (German)"),
    click("afficher-plus", "button \"Afficher plus\" (French)"),
    click("ver-mas", "button \"Ver más\" (Spanish)"),
    click("motto-miru", "button \"もっと見る\" (Japanese)"),
    // Cancel, in other languages.
    click("abbrechen", "button \"Abbrechen\" (German)"),
    click("annuler", "button \"Annuler\" (French)"),
    click("cancelar", "button \"Cancelar\" (Spanish)"),
    click("kyanseru", "button \"キャンセル\" (Japanese)"),
    // Close, in other languages.
    click("schliessen", "button \"Schließen\" (German)"),
    click("fermer", "button \"Fermer\" (French)"),
    click("cerrar", "button \"Cerrar\" (Spanish)"),
    click("tojiru", "button \"閉じる\" (Japanese)"),
    // In a same-origin iframe.
    HarmlessControl {
        action: HarmlessAction::PressPage,
        frame: Some("harmless-frame"),
        ..click(
            "frame-show-more",
            "button \"Show more\" in a same-origin iframe, reached with Enter on the page",
        )
    },
];

/// The corpus routes.
pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route("/harmless", get(corpus))
        .route("/harmless/results", get(results))
        .route("/harmless/frame", get(frame))
        .route("/api/harmless/seen", get(seen))
}

async fn corpus() -> Response {
    page(
        StatusCode::OK,
        document(
            "Shop",
            CORPUS_STYLE,
            &format!("{CORPUS_BODY}{CORPUS_SCRIPT}"),
        ),
    )
}

async fn frame() -> Response {
    page(StatusCode::OK, document("Reviews", "", FRAME_BODY))
}

/// Records `id` as reached; `false` when the record is full.
fn remember(state: &Shared, id: String) -> bool {
    let mut s = lock(state);
    if s.harmless.len() >= MAX_LEDGER {
        return false;
    }
    s.harmless.push(id);
    true
}

/// `GET /harmless/results`: where the navigating controls land; records `via`.
async fn results(State(state): State<Shared>, RawQuery(query): RawQuery) -> Response {
    let via = query
        .as_deref()
        .and_then(|q| form_value(q.as_bytes(), "via"))
        .filter(|id| is_plain_id(id));
    if let Some(via) = via {
        remember(&state, via);
    }
    page(StatusCode::OK, document("Results", "", RESULTS_BODY))
}

/// `GET /api/harmless/seen`: the list; with `?id=`, records that id.
async fn seen(State(state): State<Shared>, RawQuery(query): RawQuery) -> Response {
    let Some(query) = query else {
        return no_store_json(serde_json::json!(lock(&state).harmless));
    };
    let Some(id) = form_value(query.as_bytes(), "id").filter(|id| is_plain_id(id)) else {
        return json_error(
            StatusCode::BAD_REQUEST,
            "expected ?id=... (1 to 64 letters, digits, - or _)",
        );
    };
    if remember(&state, id) {
        no_store_no_content()
    } else {
        json_error(StatusCode::BAD_REQUEST, "the record is full; reset it")
    }
}

const CORPUS_STYLE: &str = "body{max-width:60rem}.row{display:flex;flex-wrap:wrap;align-items:center;gap:.4rem;margin:.5rem 0}\
form{margin:.25rem 0}[role=menu]{list-style:none;padding:.25rem;border:1px solid #ccc;display:inline-block}\
[role=menuitem]{padding:.1rem .5rem;cursor:pointer}#photo{width:4rem;height:3rem;transition:none}\
#photo.zoomed{width:8rem;height:6rem}#long-text.collapsed{max-height:1.5rem;overflow:hidden}\
iframe{width:100%;height:5rem;border:1px solid #ccc}#harmless-status{min-height:1.5rem}";

/// The corpus markup. Every control's attributes match [`HARMLESS_CORPUS`] (a unit test
/// checks it).
const CORPUS_BODY: &str = r##"<main>
<h1>Shop</h1>
<p id="harmless-status" role="status">Nothing yet.</p>
<form id="search-form" role="search" class="row" method="get" action="/harmless/results">
<input type="hidden" name="via" value="search-submit">
<label>Search products <input type="search" id="search-q" name="q" data-harmless="search-q" data-harmless-action="enter" data-harmless-navigates autocomplete="off"></label>
<button id="search-submit" data-harmless="search-submit" data-harmless-action="click" data-harmless-navigates>Search</button>
</form>
<p class="row"><label>Find on this page <input type="search" id="find-q" data-harmless="find-q" data-harmless-action="enter" autocomplete="off"></label> <span id="find-results" role="status"></span></p>
<ul id="items"><li>Oak table</li><li>Pine chair</li></ul>
<nav class="row" aria-label="Pages">
<a id="previous" data-harmless="previous" data-harmless-action="click" data-harmless-navigates rel="prev" href="/harmless/results?via=previous&amp;page=1">Previous</a>
<a id="page-2" data-harmless="page-2" data-harmless-action="click" data-harmless-navigates href="/harmless/results?via=page-2&amp;page=2">2</a>
<a id="page-3" data-harmless="page-3" data-harmless-action="click" data-harmless-navigates href="/harmless/results?via=page-3&amp;page=3">3</a>
<a id="next" data-harmless="next" data-harmless-action="click" data-harmless-navigates rel="next" href="/harmless/results?via=next&amp;page=2">Next</a>
</nav>
<div class="row">
<button type="button" id="load-more" data-harmless="load-more" data-harmless-action="click">Load more</button>
<button type="button" id="show-more" data-harmless="show-more" data-harmless-action="click">Show more</button>
</div>
<p id="more-text" hidden>Three more items: a lamp, a rug, a shelf.</p>
<div class="row" aria-label="Filter and sort">
<button type="button" id="filter" data-harmless="filter" data-harmless-action="click" aria-expanded="false" aria-controls="filter-panel">Filter</button>
<button type="button" id="filters" data-harmless="filters" data-harmless-action="click" aria-expanded="false" aria-controls="filter-panel">Filters</button>
<button type="button" id="sort-date" data-harmless="sort-date" data-harmless-action="click">Sort by date</button>
<button type="button" id="newest" data-harmless="newest" data-harmless-action="click">Newest</button>
</div>
<p id="filter-panel" hidden>Filter by material: oak, pine.</p>
<form id="filter-form" class="row" method="get" action="/harmless/results">
<input type="hidden" name="via" value="">
<label>Sort <select id="sort-select" name="sort" data-harmless="sort-select" data-harmless-action="select" data-harmless-option="price" data-harmless-navigates>
<option value="relevance" selected>Relevance</option><option value="price">Price</option><option value="date">Date</option></select></label>
<label><input type="checkbox" id="filter-in-stock" name="stock" value="1" data-harmless="filter-in-stock" data-harmless-action="click" data-harmless-navigates> In stock</label>
<label><input type="checkbox" id="filter-free-shipping" name="shipping" value="free" data-harmless="filter-free-shipping" data-harmless-action="click" data-harmless-navigates> Free shipping</label>
</form>
<div role="tablist" aria-label="Product" class="row">
<button type="button" role="tab" id="tab-overview" data-harmless="tab-overview" data-harmless-action="click" aria-selected="true" aria-controls="tab-panel">Overview</button>
<button type="button" role="tab" id="tab-reviews" data-harmless="tab-reviews" data-harmless-action="click" aria-selected="false" aria-controls="tab-panel">Reviews</button>
</div>
<p id="tab-panel" role="tabpanel">Overview: a sturdy oak table.</p>
<details id="faq"><summary id="faq-shipping" data-harmless="faq-shipping" data-harmless-action="click">Shipping</summary><p>Ships in two days.</p></details>
<p class="row"><button type="button" id="details" data-harmless="details" data-harmless-action="click" aria-expanded="false" aria-controls="details-text">Details</button></p>
<p id="details-text" hidden>Made of oak, 160 × 90 cm.</p>
<p class="row"><button type="button" id="cancel" data-harmless="cancel" data-harmless-action="click">Cancel</button></p>
<form id="note-form" class="row" method="post" action="/harmless/note">
<label>Note <textarea id="note" name="note" rows="1"></textarea></label>
<button type="button" id="cancel-in-form" data-harmless="cancel-in-form" data-harmless-action="click">Cancel</button>
</form>
<div class="row">
<button type="button" id="menu-button" data-harmless="menu-button" data-harmless-action="click" aria-haspopup="menu" aria-expanded="false" aria-controls="menu">Menu</button>
<ul role="menu" id="menu" hidden>
<li role="menuitem" tabindex="-1" id="menu-settings" data-harmless="menu-settings" data-harmless-action="click">Settings</li>
<li role="menuitem" tabindex="-1" id="menu-help" data-harmless="menu-help" data-harmless-action="click">Help</li>
</ul>
<span id="menu-panel" role="status"></span>
</div>
<p class="row"><span id="promo">Free returns for 30 days.</span>
<button type="button" id="close" data-harmless="close" data-harmless-action="click" aria-label="Close">×</button></p>
<div class="row">
<button type="button" id="open" data-harmless="open" data-harmless-action="click">Open</button>
<a id="view-details" data-harmless="view-details" data-harmless-action="click" data-harmless-navigates href="/harmless/results?via=view-details&amp;item=oak-table">View details</a>
<button type="button" id="expand" data-harmless="expand" data-harmless-action="click">Expand</button>
<button type="button" id="collapse" data-harmless="collapse" data-harmless-action="click">Collapse</button>
<button type="button" id="more" data-harmless="more" data-harmless-action="click">More</button>
<a id="back" data-harmless="back" data-harmless-action="click" data-harmless-navigates href="/harmless/results?via=back">Back</a>
<a id="home" data-harmless="home" data-harmless-action="click" data-harmless-navigates href="/harmless/results?via=home">Home</a>
<a id="read-more" data-harmless="read-more" data-harmless-action="click" data-harmless-navigates href="/harmless/results?via=read-more&amp;item=oak-table">Read more</a>
<button type="button" id="copy-link" data-harmless="copy-link" data-harmless-action="click">Copy link</button>
<button type="button" id="zoom-in" data-harmless="zoom-in" data-harmless-action="click">Zoom in</button>
</div>
<p id="open-panel" hidden>The oak table, opened.</p>
<p id="long-text">Long description of the oak table: solid wood, oiled, made to last.</p>
<svg id="photo" viewBox="0 0 4 3" role="img" aria-label="Photo of the table"><rect width="4" height="3" fill="#c96"/></svg>
<div class="row" aria-label="Next, in other languages">
<a lang="de" id="weiter" data-harmless="weiter" data-harmless-action="click" data-harmless-navigates href="/harmless/results?via=weiter&amp;page=2">Weiter</a>
<button type="button" lang="fr" id="suivant" data-harmless="suivant" data-harmless-action="click">Suivant</button>
<a lang="es" id="siguiente" data-harmless="siguiente" data-harmless-action="click" data-harmless-navigates href="/harmless/results?via=siguiente&amp;page=2">Siguiente</a>
<button type="button" lang="ja" id="tsugi" data-harmless="tsugi" data-harmless-action="click">次へ</button>
</div>
<div class="row" aria-label="Search, in other languages">
<form role="search" lang="de" method="get" action="/harmless/results"><input type="search" name="q" aria-label="Suche"> <button id="suchen" name="via" value="suchen" data-harmless="suchen" data-harmless-action="click" data-harmless-navigates>Suchen</button></form>
<form role="search" lang="fr" method="get" action="/harmless/results"><input type="search" name="q" aria-label="Recherche"> <button id="rechercher" name="via" value="rechercher" data-harmless="rechercher" data-harmless-action="click" data-harmless-navigates>Rechercher</button></form>
<form role="search" lang="es" method="get" action="/harmless/results"><input type="search" name="q" aria-label="Búsqueda"> <button id="buscar" name="via" value="buscar" data-harmless="buscar" data-harmless-action="click" data-harmless-navigates>Buscar</button></form>
<form role="search" lang="ja" method="get" action="/harmless/results"><input type="search" name="q" aria-label="検索語"> <button id="kensaku" name="via" value="kensaku" data-harmless="kensaku" data-harmless-action="click" data-harmless-navigates>検索</button></form>
</div>
<div class="row" aria-label="Show more, in other languages">
<button type="button" lang="de" id="mehr-anzeigen" data-harmless="mehr-anzeigen" data-harmless-action="click">Mehr anzeigen</button>
<button type="button" lang="fr" id="afficher-plus" data-harmless="afficher-plus" data-harmless-action="click">Afficher plus</button>
<button type="button" lang="es" id="ver-mas" data-harmless="ver-mas" data-harmless-action="click">Ver más</button>
<button type="button" lang="ja" id="motto-miru" data-harmless="motto-miru" data-harmless-action="click">もっと見る</button>
</div>
<div class="row" aria-label="Cancel, in other languages">
<button type="button" lang="de" id="abbrechen" data-harmless="abbrechen" data-harmless-action="click">Abbrechen</button>
<button type="button" lang="fr" id="annuler" data-harmless="annuler" data-harmless-action="click">Annuler</button>
<button type="button" lang="es" id="cancelar" data-harmless="cancelar" data-harmless-action="click">Cancelar</button>
<button type="button" lang="ja" id="kyanseru" data-harmless="kyanseru" data-harmless-action="click">キャンセル</button>
</div>
<div class="row" aria-label="Close, in other languages">
<button type="button" lang="de" id="schliessen" data-harmless="schliessen" data-harmless-action="click">Schließen</button>
<button type="button" lang="fr" id="fermer" data-harmless="fermer" data-harmless-action="click">Fermer</button>
<button type="button" lang="es" id="cerrar" data-harmless="cerrar" data-harmless-action="click">Cerrar</button>
<button type="button" lang="ja" id="tojiru" data-harmless="tojiru" data-harmless-action="click">閉じる</button>
</div>
<iframe id="harmless-frame" src="/harmless/frame" title="Reviews"></iframe>
</main>
"##;

/// The corpus's script: records the controls that stay on the page, and gives each its
/// harmless reaction.
const CORPUS_SCRIPT: &str = r##"<script>
(() => {
  const byId = (id) => document.getElementById(id);
  const status = byId('harmless-status');
  const seen = (id) => {
    fetch('/api/harmless/seen?id=' + encodeURIComponent(id), { cache: 'no-store' }).catch(() => {});
    status.textContent = 'Seen: ' + id;
  };
  const show = (id) => { byId(id).hidden = false; };
  const toggle = (button, id) => {
    const panel = byId(id);
    panel.hidden = !panel.hidden;
    button.setAttribute('aria-expanded', String(!panel.hidden));
  };
  const tab = (selected, text) => {
    for (const t of document.querySelectorAll('[role=tab]')) t.setAttribute('aria-selected', String(t === selected));
    byId('tab-panel').textContent = text;
  };
  const sortItems = () => {
    const list = byId('items');
    [...list.children].reverse().forEach((li) => list.append(li));
  };
  const reactions = {
    'load-more': () => { const li = document.createElement('li'); li.textContent = 'Birch stool'; byId('items').append(li); },
    'show-more': () => show('more-text'),
    'filter': (el) => toggle(el, 'filter-panel'),
    'filters': (el) => toggle(el, 'filter-panel'),
    'sort-date': sortItems,
    'newest': sortItems,
    'tab-overview': (el) => tab(el, 'Overview: a sturdy oak table.'),
    'tab-reviews': (el) => tab(el, 'Reviews: 4.5 of 5.'),
    'details': (el) => toggle(el, 'details-text'),
    'cancel-in-form': () => { byId('note').value = ''; },
    'menu-button': (el) => { byId('menu').hidden = false; el.setAttribute('aria-expanded', 'true'); },
    'menu-settings': () => { byId('menu-panel').textContent = 'Settings: language, currency.'; },
    'menu-help': () => { byId('menu-panel').textContent = 'Help: write to us.'; },
    'close': () => { byId('promo').hidden = true; },
    'open': () => show('open-panel'),
    'expand': () => byId('long-text').classList.remove('collapsed'),
    'collapse': () => byId('long-text').classList.add('collapsed'),
    'more': () => show('more-text'),
    'copy-link': () => { try { navigator.clipboard.writeText(location.href).catch(() => {}); } catch (e) {} },
    'zoom-in': () => byId('photo').classList.add('zoomed'),
    'mehr-anzeigen': () => show('more-text'),
    'afficher-plus': () => show('more-text'),
    'ver-mas': () => show('more-text'),
    'motto-miru': () => show('more-text'),
  };
  // Clicks on the controls that stay on the page (the others are recorded where they land).
  document.addEventListener('click', (e) => {
    const el = e.target && e.target.closest ? e.target.closest('[data-harmless]') : null;
    if (!el || el.hasAttribute('data-harmless-navigates') || el.dataset.harmlessAction !== 'click') return;
    seen(el.dataset.harmless);
    const react = reactions[el.dataset.harmless];
    if (react) react(el);
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') { byId('menu').hidden = true; byId('menu-button').setAttribute('aria-expanded', 'false'); }
  });
  // Enter in the find box: a script search on this page.
  byId('find-q').addEventListener('keydown', (e) => {
    if (e.key !== 'Enter') return;
    e.preventDefault();
    byId('find-results').textContent = 'No match for "' + e.target.value + '" on this page.';
    seen('find-q');
  });
  // The search form says how it was sent: Enter in the field, or the Search button.
  const search = byId('search-form');
  byId('search-q').addEventListener('keydown', (e) => { if (e.key === 'Enter') search.elements.via.value = 'search-q'; });
  byId('search-submit').addEventListener('pointerdown', () => { search.elements.via.value = 'search-submit'; });
  addEventListener('pageshow', () => { search.elements.via.value = 'search-submit'; });
  // The sort select and the filter checkboxes submit their GET form on change.
  const filters = byId('filter-form');
  for (const el of filters.querySelectorAll('[data-harmless]')) {
    el.addEventListener('change', () => { filters.elements.via.value = el.id; filters.submit(); });
  }
})();
</script>"##;

const FRAME_BODY: &str = r##"<p>4.5 of 5 from 12 reviews.</p><p id="frame-more-text" hidden>"Sturdy and beautiful."</p>
<button type="button" id="frame-show-more" data-harmless="frame-show-more" data-harmless-action="press-page" autofocus>Show more</button>
<script>
document.getElementById('frame-show-more').addEventListener('click', () => {
  fetch('/api/harmless/seen?id=frame-show-more', { cache: 'no-store' }).catch(() => {});
  document.getElementById('frame-more-text').hidden = false;
});
</script>"##;

const RESULTS_BODY: &str = r#"<main><h1>Results</h1><p id="results">2 products: an oak table, a pine chair.</p>
<p><a id="back-to-shop" href="/harmless">Back to the shop</a></p></main>"#;

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// `(data-harmless, data-harmless-action, navigates, data-harmless-option)` of every
    /// control in `markup`, in order.
    fn marked(markup: &str) -> Vec<(String, String, bool, Option<String>)> {
        let attr = |tag: &str, name: &str| {
            let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
            let len = tag.get(start..)?.find('"')?;
            tag.get(start..start + len).map(str::to_owned)
        };
        markup
            .split('<')
            .filter(|tag| tag.contains(" data-harmless=\""))
            .map(|tag| {
                let tag = tag.split('>').next().unwrap_or_default();
                let id = attr(tag, "data-harmless").unwrap_or_default();
                assert_eq!(attr(tag, "id").as_deref(), Some(id.as_str()), "{tag}");
                (
                    id,
                    attr(tag, "data-harmless-action").unwrap_or_default(),
                    tag.contains(" data-harmless-navigates"),
                    attr(tag, "data-harmless-option"),
                )
            })
            .collect()
    }

    #[test]
    fn the_markup_carries_the_corpus_table() {
        let in_page: Vec<&HarmlessControl> = HARMLESS_CORPUS
            .iter()
            .filter(|c| c.frame.is_none())
            .collect();
        let in_frame: Vec<&HarmlessControl> = HARMLESS_CORPUS
            .iter()
            .filter(|c| c.frame.is_some())
            .collect();
        let expect =
            |controls: &[&HarmlessControl]| -> Vec<(String, String, bool, Option<String>)> {
                controls
                    .iter()
                    .map(|c| {
                        let option = match c.action {
                            HarmlessAction::Select(option) => Some(option.to_owned()),
                            _ => None,
                        };
                        (
                            c.id.to_owned(),
                            c.action.as_str().to_owned(),
                            c.navigates,
                            option,
                        )
                    })
                    .collect()
            };
        assert_eq!(marked(CORPUS_BODY), expect(&in_page));
        assert_eq!(marked(FRAME_BODY), expect(&in_frame));
        assert!(CORPUS_BODY.contains("<iframe id=\"harmless-frame\""));
        let ids: HashSet<&str> = HARMLESS_CORPUS.iter().map(|c| c.id).collect();
        assert_eq!(ids.len(), HARMLESS_CORPUS.len(), "ids are unique");
        assert!(HARMLESS_CORPUS.len() >= 45);
        for control in HARMLESS_CORPUS {
            if let Some(first) = control.needs {
                assert!(ids.contains(first), "{}", control.id);
            }
        }
    }

    #[test]
    fn nothing_on_the_page_writes() {
        // The one POST form has no submit control; every other form is a GET form.
        let page = format!("{CORPUS_BODY}{CORPUS_SCRIPT}{FRAME_BODY}");
        assert_eq!(page.matches("method=\"post\"").count(), 1);
        let note_form = page
            .split("<form id=\"note-form\"")
            .nth(1)
            .and_then(|rest| rest.split("</form>").next())
            .unwrap_or_default();
        assert!(!note_form.is_empty());
        assert!(!note_form.contains("type=\"submit\"") && !note_form.contains("<input"));
        assert_eq!(
            note_form.matches("<button").count(),
            note_form.matches("<button type=\"button\"").count()
        );
        for write in ["method:", "sendBeacon", "keepalive", "WebSocket", "ping="] {
            assert!(!page.contains(write), "{write}");
        }
    }
}
