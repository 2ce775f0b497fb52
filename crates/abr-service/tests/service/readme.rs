//! The docs say what the code does. README.md is the front door (at most 250 lines); the
//! error table of `docs/http-api.md` is `abr_protocol::codes`, and the platform file
//! `docs/platforms.md` shows is a valid one.

#![allow(clippy::unwrap_used, clippy::panic, reason = "test code")]

const README: &str = include_str!("../../../../README.md");
const HTTP_API: &str = include_str!("../../../../docs/http-api.md");
const PLATFORMS: &str = include_str!("../../../../docs/platforms.md");

/// The text of `doc` between `<!-- {name}:begin -->` and `<!-- {name}:end -->`.
fn marked<'a>(doc: &'a str, name: &str) -> &'a str {
    let begin = format!("<!-- {name}:begin -->\n");
    let end = format!("<!-- {name}:end -->");
    let start = doc
        .find(&begin)
        .unwrap_or_else(|| panic!("no {begin:?} marker"))
        + begin.len();
    let stop = doc
        .find(&end)
        .unwrap_or_else(|| panic!("no {end:?} marker"));
    &doc[start..stop]
}

#[test]
fn the_readme_is_a_front_door() {
    let lines = README.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines: it is the front door (at most 250); the reference \
         belongs in docs/"
    );
}

#[test]
fn the_error_table_is_the_code_table() {
    let expected = abr_protocol::codes::markdown_table();
    assert!(
        marked(HTTP_API, "error-codes") == expected,
        "docs/http-api.md's error table differs from abr_protocol::codes; paste this between \
         the markers:\n\n{expected}"
    );
}

/// The platform file shown under "Platforms as data" is a valid platform file.
#[test]
fn the_platform_file_is_valid() {
    let toml = PLATFORMS
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/platforms.md shows a TOML platform file");
    let vars =
        std::collections::BTreeMap::from([("base".to_owned(), "http://127.0.0.1:8788".to_owned())]);
    let parsed = abr_engine::declared::DeclaredStrategy::parse_toml(toml, &vars);
    assert!(parsed.is_ok(), "{:?}", parsed.err());
}
