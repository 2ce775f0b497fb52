//! The page as a brain reads it ([`Snapshot`]), how a caller pages through it and sets its
//! budget ([`SnapshotQuery`]), and its compact text form ([`Snapshot::to_text`]), the one a
//! language model reads.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Elements listed per snapshot unless the caller sets `limit`.
pub const DEFAULT_SNAPSHOT_ELEMENTS: usize = 300;

/// The most elements a caller may ask for in one snapshot.
pub const MAX_SNAPSHOT_ELEMENTS: usize = 2000;

/// Characters of the page's text a snapshot carries unless the caller sets `maxText`.
pub const DEFAULT_SNAPSHOT_TEXT: usize = 3000;

/// The most characters of text a caller may ask for in one snapshot.
pub const MAX_SNAPSHOT_TEXT: usize = 50_000;

/// The page as a brain reads it: the elements one can act on, by reference, in document
/// order, with the headings and landmarks they sit under, and the page's text that is not
/// already in them. Form values are never included.
///
/// A large page is paged: `page` says which elements this answer lists out of how many, and
/// where the next page starts; every element has its reference whichever page lists it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// The page's URL.
    pub url: String,
    /// The page's title.
    pub title: String,
    /// The visible elements one can act on, in document order (this page of them).
    pub elements: Vec<SnapshotElement>,
    /// The page's visible text outside the elements and headings (repeated blocks once),
    /// cut to the budget.
    pub text: String,
    /// Elements or text were left out (more pages, or the text was cut: see `page`).
    pub truncated: bool,
    /// The headings among this page's elements, each placed before the element it precedes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headings: Vec<SnapshotHeading>,
    /// Which elements this answer lists, and what was left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<SnapshotPage>,
}

/// One element of a [`Snapshot`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotElement {
    /// The reference actions name (`e12`); stable while the element stays on the page.
    #[serde(rename = "ref")]
    pub reference: String,
    /// Its role (`button`, `link`, `textbox`, `checkbox`, `combobox`, ...).
    pub role: String,
    /// Its accessible name (label, text, `aria-label`, placeholder), shortened.
    pub name: String,
    /// `[redacted]` when the field holds a value; the value itself is never given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Whether a checkbox or radio button is checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<bool>,
    /// The element is disabled.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
    /// A link's target, when asked for (`hrefs`): relative to the page when it is on the
    /// page's origin (`/docs/x.html`, `#section`), else absolute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub href: Option<String>,
    /// A list box's option labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// The landmark it is in (`navigation`, `main`, `banner`, `contentinfo`,
    /// `complementary`, `search`, `form`, `dialog`, `region`), when any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landmark: Option<String>,
}

/// A heading of a [`Snapshot`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotHeading {
    /// 1 to 6.
    pub level: u8,
    /// Its text, shortened.
    pub text: String,
    /// The position (from 1, over the whole page) of the first element after it; past the
    /// last element when none follows.
    pub at: usize,
}

/// Which elements a [`Snapshot`] lists, and what it left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotPage {
    /// The position (from 1) of the first element listed.
    pub from: usize,
    /// How many are listed.
    pub count: usize,
    /// How many visible elements one can act on the page has.
    pub total: usize,
    /// Where the next page starts (`from`), when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<usize>,
    /// Characters of text (outside elements and headings) the page shows; `text` carries
    /// the first of them, up to the budget.
    pub text_total: usize,
}

/// `GET /v1/browse/{browseId}/snapshot?…` (and the MCP tool's arguments): which page of
/// elements and how much of the page's text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SnapshotQuery {
    /// The position (from 1) of the first element to list (a previous answer's
    /// `page.next`); default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<usize>,
    /// Elements to list, 1 to [`MAX_SNAPSHOT_ELEMENTS`]; default
    /// [`DEFAULT_SNAPSHOT_ELEMENTS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Characters of text, 0 to [`MAX_SNAPSHOT_TEXT`]; default [`DEFAULT_SNAPSHOT_TEXT`] on
    /// the first page, none on later ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_text: Option<usize>,
    /// Give links' targets (`href`); default no.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hrefs: Option<bool>,
}

impl SnapshotQuery {
    /// Checks the bounds; the message names the field.
    ///
    /// # Errors
    /// A value out of its bounds, in words.
    pub fn check(&self) -> Result<(), String> {
        if self.from == Some(0) {
            return Err("from counts from 1".to_owned());
        }
        if let Some(limit) = self.limit
            && !(1..=MAX_SNAPSHOT_ELEMENTS).contains(&limit)
        {
            return Err(format!("limit must be 1 to {MAX_SNAPSHOT_ELEMENTS}"));
        }
        if let Some(max_text) = self.max_text
            && max_text > MAX_SNAPSHOT_TEXT
        {
            return Err(format!("maxText must be at most {MAX_SNAPSHOT_TEXT}"));
        }
        Ok(())
    }

    /// The first position listed.
    pub fn from(&self) -> usize {
        self.from.unwrap_or(1).max(1)
    }

    /// Elements listed.
    pub fn limit(&self) -> usize {
        self.limit
            .unwrap_or(DEFAULT_SNAPSHOT_ELEMENTS)
            .clamp(1, MAX_SNAPSHOT_ELEMENTS)
    }

    /// Characters of text: as asked, else [`DEFAULT_SNAPSHOT_TEXT`] on the first page and
    /// none on a later one (the text is the page's, the same on every page of it).
    pub fn max_text(&self) -> usize {
        let default = if self.from() == 1 {
            DEFAULT_SNAPSHOT_TEXT
        } else {
            0
        };
        self.max_text.unwrap_or(default).min(MAX_SNAPSHOT_TEXT)
    }

    /// Whether links' targets are given.
    pub fn hrefs(&self) -> bool {
        self.hrefs.unwrap_or(false)
    }
}

impl Snapshot {
    /// The snapshot as a language model reads it: one line per element (`e12 link Pricing`,
    /// then `=[redacted]`, `[checked]`, `[disabled]`, `-> href`, `options: a | b`), the
    /// headings (`## Title`) and landmarks (`[navigation]`) where they fall among them, what
    /// was left out, and the text. It says nothing the JSON form does not.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", one_line(&self.title));
        let _ = writeln!(out, "{}", one_line(&self.url));
        let (from, last_page) = match &self.page {
            Some(page) => {
                let shown_to = page.from + page.count.saturating_sub(1);
                if page.count == 0 {
                    let _ = writeln!(out, "no elements of {} listed", page.total);
                } else if page.from == 1 && page.next.is_none() {
                    let plural = if page.total == 1 { "" } else { "s" };
                    let _ = writeln!(out, "{} element{plural}", page.total);
                } else {
                    let _ = write!(out, "elements {}-{shown_to} of {}", page.from, page.total);
                    match page.next {
                        Some(next) => {
                            let _ = writeln!(out, "; more with from={next}");
                        }
                        None => out.push('\n'),
                    }
                }
                (page.from, page.next.is_none())
            }
            None => (1, true),
        };
        let mut headings = self.headings.iter().peekable();
        let mut landmark: Option<&str> = None;
        for (i, element) in self.elements.iter().enumerate() {
            let position = from + i;
            while let Some(heading) = headings.next_if(|h| h.at <= position) {
                write_heading(&mut out, heading);
            }
            let here = element.landmark.as_deref();
            if here != landmark {
                let _ = writeln!(out, "[{}]", here.unwrap_or("page"));
                landmark = here;
            }
            write_element(&mut out, element);
        }
        if last_page {
            for heading in headings {
                write_heading(&mut out, heading);
            }
        }
        if !self.text.is_empty() {
            match &self.page {
                Some(page) if page.text_total > self.text.chars().count() => {
                    let _ = writeln!(
                        out,
                        "text (first {} of {} chars; more with maxText):",
                        self.text.chars().count(),
                        page.text_total
                    );
                }
                _ => out.push_str("text:\n"),
            }
            out.push_str(self.text.trim_end());
            out.push('\n');
        }
        out
    }
}

/// `s` on one line (a name or title never carries a line break into the listing).
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn write_heading(out: &mut String, heading: &SnapshotHeading) {
    let level = usize::from(heading.level.clamp(1, 6));
    let _ = writeln!(out, "{} {}", "#".repeat(level), one_line(&heading.text));
}

fn write_element(out: &mut String, element: &SnapshotElement) {
    let _ = write!(out, "{} {}", element.reference, one_line(&element.role));
    let name = one_line(&element.name);
    if !name.is_empty() {
        let _ = write!(out, " {name}");
    }
    if let Some(value) = &element.value {
        let _ = write!(out, " ={}", one_line(value));
    }
    match element.checked {
        Some(true) => out.push_str(" [checked]"),
        Some(false) => out.push_str(" [unchecked]"),
        None => {}
    }
    if element.disabled {
        out.push_str(" [disabled]");
    }
    if let Some(href) = &element.href {
        let _ = write!(out, " -> {}", one_line(href));
    }
    if !element.options.is_empty() {
        let options: Vec<String> = element.options.iter().map(|o| one_line(o)).collect();
        let _ = write!(out, " options: {}", options.join(" | "));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn element(reference: &str, role: &str, name: &str, landmark: Option<&str>) -> SnapshotElement {
        SnapshotElement {
            reference: reference.to_owned(),
            role: role.to_owned(),
            name: name.to_owned(),
            landmark: landmark.map(str::to_owned),
            ..SnapshotElement::default()
        }
    }

    #[test]
    fn the_text_form_places_headings_and_landmarks_among_the_elements_and_says_what_is_left_out() {
        let snapshot = Snapshot {
            url: "http://site.test/docs".to_owned(),
            title: "Docs\nhome".to_owned(),
            elements: vec![
                element("e4", "link", "Guide", Some("navigation")),
                SnapshotElement {
                    value: Some("[redacted]".to_owned()),
                    ..element("e5", "textbox", "Email", Some("main"))
                },
                SnapshotElement {
                    checked: Some(false),
                    disabled: true,
                    ..element("e6", "checkbox", "Agree", Some("main"))
                },
                SnapshotElement {
                    href: Some("/docs/next".to_owned()),
                    ..element("e7", "link", "Next", None)
                },
            ],
            text: "Welcome.\n".to_owned(),
            truncated: true,
            headings: vec![
                SnapshotHeading {
                    level: 2,
                    text: "Sign up".to_owned(),
                    at: 5,
                },
                SnapshotHeading {
                    level: 3,
                    text: "Footer".to_owned(),
                    at: 9,
                },
            ],
            page: Some(SnapshotPage {
                from: 4,
                count: 4,
                total: 20,
                next: Some(8),
                text_total: 500,
            }),
        };
        assert_eq!(
            snapshot.to_text(),
            "Docs home\nhttp://site.test/docs\nelements 4-7 of 20; more with from=8\n\
             [navigation]\ne4 link Guide\n## Sign up\n[main]\ne5 textbox Email =[redacted]\n\
             e6 checkbox Agree [unchecked] [disabled]\n[page]\ne7 link Next -> /docs/next\n\
             text (first 9 of 500 chars; more with maxText):\nWelcome.\n",
            "the heading of a later page is not shown on this one"
        );
    }

    #[test]
    fn a_whole_page_says_how_many_elements_and_ends_with_its_trailing_headings() {
        let snapshot = Snapshot {
            title: "T".to_owned(),
            url: "u".to_owned(),
            elements: vec![element("e1", "button", "", None)],
            headings: vec![SnapshotHeading {
                level: 9,
                text: "End".to_owned(),
                at: 2,
            }],
            page: Some(SnapshotPage {
                from: 1,
                count: 1,
                total: 1,
                next: None,
                text_total: 0,
            }),
            ..Snapshot::default()
        };
        assert_eq!(
            snapshot.to_text(),
            "T\nu\n1 element\ne1 button\n###### End\n"
        );
    }

    #[test]
    fn a_query_out_of_bounds_is_refused_by_name() {
        let over = SnapshotQuery {
            limit: Some(MAX_SNAPSHOT_ELEMENTS + 1),
            ..SnapshotQuery::default()
        };
        assert!(over.check().unwrap_err().contains("limit"));
        let zero = SnapshotQuery {
            from: Some(0),
            ..SnapshotQuery::default()
        };
        assert!(zero.check().unwrap_err().contains("from"));
        let text = SnapshotQuery {
            max_text: Some(MAX_SNAPSHOT_TEXT + 1),
            ..SnapshotQuery::default()
        };
        assert!(text.check().unwrap_err().contains("maxText"));
        assert!(SnapshotQuery::default().check().is_ok());
        let later = SnapshotQuery {
            from: Some(301),
            ..SnapshotQuery::default()
        };
        assert_eq!(later.max_text(), 0, "a later page does not repeat the text");
        assert_eq!(SnapshotQuery::default().max_text(), DEFAULT_SNAPSHOT_TEXT);
        assert!(
            serde_json::from_str::<SnapshotQuery>(r#"{"form": 2}"#).is_err(),
            "an unknown field is refused"
        );
    }
}
