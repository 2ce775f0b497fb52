//! The README says what the code does: its error table is `abr_protocol::codes`.

#![allow(clippy::unwrap_used, clippy::panic, reason = "test code")]

const README: &str = include_str!("../../../../README.md");

#[test]
fn the_readme_error_table_is_the_code_table() {
    let begin = "<!-- error-codes:begin -->\n";
    let end = "<!-- error-codes:end -->";
    let start = README.find(begin).unwrap() + begin.len();
    let stop = README.find(end).unwrap();
    let expected = abr_protocol::codes::markdown_table();
    assert!(
        README[start..stop] == expected,
        "the README's error table differs from abr_protocol::codes; paste this between the \
         markers:\n\n{expected}"
    );
}

/// The platform file shown under "Platforms as data" is a valid platform file.
#[test]
fn the_readme_platform_file_is_valid() {
    let section = README
        .split("## Platforms as data")
        .nth(1)
        .expect("the README has a Platforms as data section");
    let toml = section
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the section shows a TOML platform file");
    let vars =
        std::collections::BTreeMap::from([("base".to_owned(), "http://127.0.0.1:8788".to_owned())]);
    let parsed = abr_engine::declared::DeclaredStrategy::parse_toml(toml, &vars);
    assert!(parsed.is_ok(), "{:?}", parsed.err());
}
