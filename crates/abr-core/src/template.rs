//! [`Template`]: the one template engine of step plans and platform files.
//!
//! A template is text with placeholders: `{{name}}` (spaces allowed around the name; a name
//! is 1 to 64 of letters, digits, `_`, `-` and `.`), and, where the caller allows them,
//! sections `{{#name}}…{{/name}}` whose inside is kept only when `name` is not empty (not
//! nested). A plan's placeholders name the task's inputs; a platform file's name its
//! load-time variables (`{{base}}`, `{{base.host}}`) and the post's content (`{{text}}`,
//! `{{link}}`, `{{post}}`). What a name may be, and where, is the caller's; the syntax is
//! this module's.

/// Longest placeholder name, in bytes.
pub const MAX_NAME: usize = 64;

/// A piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Text kept as it is.
    Text(String),
    /// `{{name}}`.
    Name(String),
    /// `{{#name}}…{{/name}}`: the inside, kept only when `name` is not empty.
    Section(String, Vec<Piece>),
}

/// What is wrong with a template's syntax (never the template's text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateError {
    /// A `{{` without its `}}`.
    #[error("a `{{{{` is not closed by `}}}}`")]
    Unclosed,
    /// A placeholder whose name is not 1 to 64 of letters, digits, `_`, `-` or `.`.
    #[error(
        "a placeholder is written {{{{name}}}} with a name of letters, digits, `_`, `-` or `.` \
         (at most 64)"
    )]
    BadName,
    /// A section where none is allowed.
    #[error("sections (`{{{{#name}}}}…{{{{/name}}}}`) are not allowed here")]
    SectionNotAllowed,
    /// A section inside a section.
    #[error("sections cannot be nested")]
    NestedSection,
    /// `{{/name}}` closing no open section.
    #[error("`{{{{/{0}}}}}` closes no open section")]
    UnmatchedClose(String),
    /// `{{#name}}` never closed.
    #[error("`{{{{#{0}}}}}` is not closed")]
    UnclosedSection(String),
}

/// Whether `name` can be a placeholder's name.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template(Vec<Piece>);

impl Template {
    /// Parses `source`; sections only when `sections` allows them.
    ///
    /// # Errors
    /// The first [`TemplateError`].
    pub fn parse(source: &str, sections: bool) -> Result<Self, TemplateError> {
        let mut top: Vec<Piece> = Vec::new();
        let mut open: Option<(String, Vec<Piece>)> = None;
        let mut rest = source;
        while let Some(start) = rest.find("{{") {
            let target = match open.as_mut() {
                Some((_, inside)) => inside,
                None => &mut top,
            };
            if start > 0 {
                target.push(Piece::Text(rest[..start].to_owned()));
            }
            let after = &rest[start + 2..];
            let end = after.find("}}").ok_or(TemplateError::Unclosed)?;
            let inner = after[..end].trim();
            rest = &after[end + 2..];
            if let Some(name) = inner.strip_prefix('#') {
                let name = name.trim();
                if !sections {
                    return Err(TemplateError::SectionNotAllowed);
                }
                if !valid_name(name) {
                    return Err(TemplateError::BadName);
                }
                if open.is_some() {
                    return Err(TemplateError::NestedSection);
                }
                open = Some((name.to_owned(), Vec::new()));
            } else if let Some(name) = inner.strip_prefix('/') {
                let name = name.trim();
                if !sections {
                    return Err(TemplateError::SectionNotAllowed);
                }
                match open.take() {
                    Some((opened, inside)) if opened == name => {
                        top.push(Piece::Section(opened, inside));
                    }
                    _ => return Err(TemplateError::UnmatchedClose(name.to_owned())),
                }
            } else if valid_name(inner) {
                target.push(Piece::Name(inner.to_owned()));
            } else {
                return Err(TemplateError::BadName);
            }
        }
        if let Some((name, _)) = open {
            return Err(TemplateError::UnclosedSection(name));
        }
        if !rest.is_empty() {
            top.push(Piece::Text(rest.to_owned()));
        }
        Ok(Self(top))
    }

    /// The pieces.
    pub fn pieces(&self) -> &[Piece] {
        &self.0
    }

    /// Whether the template has no placeholder and no section.
    pub fn is_literal(&self) -> bool {
        self.0.iter().all(|p| matches!(p, Piece::Text(_)))
    }

    /// Every name used (placeholders and sections), in order, repeated as used.
    pub fn names(&self) -> Vec<&str> {
        fn walk<'a>(pieces: &'a [Piece], out: &mut Vec<&'a str>) {
            for piece in pieces {
                match piece {
                    Piece::Text(_) => {}
                    Piece::Name(name) => out.push(name),
                    Piece::Section(name, inside) => {
                        out.push(name);
                        walk(inside, out);
                    }
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.0, &mut out);
        out
    }

    /// The template with the names `value` knows filled (a section's name known: its inside
    /// kept or dropped now), the others kept as placeholders.
    #[must_use]
    pub fn resolve(&self, value: &dyn Fn(&str) -> Option<String>) -> Self {
        fn walk(pieces: &[Piece], value: &dyn Fn(&str) -> Option<String>) -> Vec<Piece> {
            let mut out: Vec<Piece> = Vec::new();
            let push = |piece: Piece, out: &mut Vec<Piece>| match (out.last_mut(), piece) {
                (Some(Piece::Text(last)), Piece::Text(text)) => last.push_str(&text),
                (_, piece) => out.push(piece),
            };
            for piece in pieces {
                match piece {
                    Piece::Text(text) => push(Piece::Text(text.clone()), &mut out),
                    Piece::Name(name) => match value(name) {
                        Some(v) => push(Piece::Text(v), &mut out),
                        None => push(Piece::Name(name.clone()), &mut out),
                    },
                    Piece::Section(name, inside) => match value(name) {
                        Some(v) if v.is_empty() => {}
                        Some(_) => {
                            for p in walk(inside, value) {
                                push(p, &mut out);
                            }
                        }
                        None => push(Piece::Section(name.clone(), walk(inside, value)), &mut out),
                    },
                }
            }
            out
        }
        Self(walk(&self.0, value))
    }

    /// The text, every name filled by `value` (a section kept when its name's value is not
    /// empty).
    ///
    /// # Errors
    /// The first name `value` does not know.
    pub fn render(&self, value: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
        fn walk(
            pieces: &[Piece],
            value: &dyn Fn(&str) -> Option<String>,
            out: &mut String,
        ) -> Result<(), String> {
            for piece in pieces {
                match piece {
                    Piece::Text(text) => out.push_str(text),
                    Piece::Name(name) => out.push_str(&value(name).ok_or_else(|| name.clone())?),
                    Piece::Section(name, inside) => {
                        if !value(name).ok_or_else(|| name.clone())?.is_empty() {
                            walk(inside, value, out)?;
                        }
                    }
                }
            }
            Ok(())
        }
        let mut out = String::new();
        walk(&self.0, value, &mut out)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(name: &str) -> Option<String> {
        match name {
            "user" => Some("ada".into()),
            "empty" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn placeholders_and_sections_parse_and_render() {
        let t = Template::parse(
            "hi {{ user }}{{#empty}} gone{{/empty}}{{#user}}!{{/user}}",
            true,
        )
        .unwrap();
        assert_eq!(t.names(), ["user", "empty", "user"]);
        assert_eq!(t.render(&vars).unwrap(), "hi ada!");
        assert_eq!(
            Template::parse("{{nope}}", false).unwrap().render(&vars),
            Err("nope".to_owned())
        );
    }

    #[test]
    fn resolving_keeps_what_is_not_known_yet() {
        let t = Template::parse("{{user}}/{{text}}{{#link}} {{link}}{{/link}}", true).unwrap();
        let partial = t.resolve(&vars);
        assert_eq!(partial.names(), ["text", "link", "link"]);
        let content = |n: &str| match n {
            "text" => Some("t".to_owned()),
            "link" => Some(String::new()),
            _ => None,
        };
        assert_eq!(partial.render(&content).unwrap(), "ada/t");
    }

    #[test]
    fn malformed_templates_are_refused() {
        for (source, sections, error) in [
            ("{{user", true, TemplateError::Unclosed),
            ("{{}}", true, TemplateError::BadName),
            ("{{a b}}", true, TemplateError::BadName),
            ("{{#a}}x{{/a}}", false, TemplateError::SectionNotAllowed),
            (
                "{{#a}}{{#b}}{{/b}}{{/a}}",
                true,
                TemplateError::NestedSection,
            ),
            ("{{/a}}", true, TemplateError::UnmatchedClose("a".into())),
            ("{{#a}}x", true, TemplateError::UnclosedSection("a".into())),
        ] {
            assert_eq!(Template::parse(source, sections), Err(error), "{source}");
        }
        let long = format!("{{{{{}}}}}", "a".repeat(MAX_NAME + 1));
        assert_eq!(Template::parse(&long, false), Err(TemplateError::BadName));
    }
}
