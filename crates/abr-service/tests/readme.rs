//! The README says what the code does: its error table is `abr_protocol::codes`.

#![allow(clippy::unwrap_used, clippy::panic, reason = "test code")]

const README: &str = include_str!("../../../README.md");

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
