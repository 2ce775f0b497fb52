//! [`PageRedaction`]: what a platform adds to the redaction of every image a run keeps.
//!
//! The built-in rule is the provider's and holds for every frame whatever is passed here:
//! every form field blurred, and the text a page shows masked where it is an email address,
//! a phone number, a payment card number (Luhn-checked), an IBAN (mod-97-checked), an
//! internal IP address or host name, or a long token. A platform adds patterns of its own
//! (an account number format) and selectors of elements to blur whole.

use abr_protocol::RedactionSpec;

/// Most patterns, and most selectors, a platform may add.
pub const MAX_REDACTION_RULES: usize = 32;
/// Longest pattern or selector, in bytes.
pub const MAX_REDACTION_RULE_LEN: usize = 512;

/// Why a platform's redaction declaration is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RedactionError {
    /// More patterns or selectors than [`MAX_REDACTION_RULES`].
    #[error("redaction: at most {MAX_REDACTION_RULES} {0} are allowed")]
    TooMany(&'static str),
    /// An empty rule, one over [`MAX_REDACTION_RULE_LEN`] bytes, or one with a control
    /// character.
    #[error(
        "redaction: {kind} {index} must be 1 to {MAX_REDACTION_RULE_LEN} bytes without \
         control characters"
    )]
    Invalid {
        /// `pattern` or `selector`.
        kind: &'static str,
        /// Its place in the list, from 1.
        index: usize,
    },
}

/// A platform's validated additions to the redaction of its runs' images. The default adds
/// nothing: the built-in rule alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageRedaction {
    patterns: Vec<String>,
    selectors: Vec<String>,
}

impl PageRedaction {
    /// Validates a wire declaration. Whether a pattern compiles as a JavaScript regular
    /// expression only the page can tell: one that does not has no frame kept, with a
    /// reason that names it.
    ///
    /// # Errors
    /// A [`RedactionError`].
    pub fn from_spec(spec: &RedactionSpec) -> Result<Self, RedactionError> {
        Ok(Self {
            patterns: checked(&spec.patterns, "patterns", "pattern")?,
            selectors: checked(&spec.selectors, "selectors", "selector")?,
        })
    }

    /// The wire form (`None` when it adds nothing).
    pub fn to_spec(&self) -> Option<RedactionSpec> {
        (!self.is_empty()).then(|| RedactionSpec {
            patterns: self.patterns.clone(),
            selectors: self.selectors.clone(),
        })
    }

    /// Whether it adds nothing to the built-in rule.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty() && self.selectors.is_empty()
    }

    /// The platform's patterns (JavaScript regular expressions).
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// The platform's selectors of elements to blur whole.
    pub fn selectors(&self) -> &[String] {
        &self.selectors
    }

    /// Both: every pattern and selector of this one and of `other`, once each.
    #[must_use]
    pub fn union(&self, other: &PageRedaction) -> PageRedaction {
        let join = |a: &[String], b: &[String]| {
            let mut out = a.to_vec();
            out.extend(b.iter().filter(|r| !a.contains(r)).cloned());
            out
        };
        PageRedaction {
            patterns: join(&self.patterns, &other.patterns),
            selectors: join(&self.selectors, &other.selectors),
        }
    }
}

fn checked(
    rules: &[String],
    many: &'static str,
    kind: &'static str,
) -> Result<Vec<String>, RedactionError> {
    if rules.len() > MAX_REDACTION_RULES {
        return Err(RedactionError::TooMany(many));
    }
    for (i, rule) in rules.iter().enumerate() {
        if rule.trim().is_empty()
            || rule.len() > MAX_REDACTION_RULE_LEN
            || rule.chars().any(char::is_control)
        {
            return Err(RedactionError::Invalid { kind, index: i + 1 });
        }
    }
    Ok(rules.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(patterns: &[&str], selectors: &[&str]) -> RedactionSpec {
        RedactionSpec {
            patterns: patterns.iter().map(|s| (*s).to_owned()).collect(),
            selectors: selectors.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn a_declaration_round_trips_and_empty_adds_nothing() {
        let r = PageRedaction::from_spec(&spec(&[r"ACCT-\d{6}"], &[".balance"])).unwrap();
        assert_eq!(r.patterns(), [r"ACCT-\d{6}"]);
        assert_eq!(r.selectors(), [".balance"]);
        assert_eq!(r.to_spec(), Some(spec(&[r"ACCT-\d{6}"], &[".balance"])));
        let none = PageRedaction::from_spec(&spec(&[], &[])).unwrap();
        assert!(none.is_empty());
        assert_eq!(none.to_spec(), None);
    }

    #[test]
    fn bad_rules_are_refused_by_place() {
        let blank = PageRedaction::from_spec(&spec(&["a", " "], &[])).unwrap_err();
        assert_eq!(
            blank,
            RedactionError::Invalid {
                kind: "pattern",
                index: 2
            }
        );
        let control = PageRedaction::from_spec(&spec(&[], &["a\u{0}"])).unwrap_err();
        assert_eq!(
            control,
            RedactionError::Invalid {
                kind: "selector",
                index: 1
            }
        );
        let long = "x".repeat(MAX_REDACTION_RULE_LEN + 1);
        assert!(PageRedaction::from_spec(&spec(&[&long], &[])).is_err());
        let many = vec!["a"; MAX_REDACTION_RULES + 1];
        assert_eq!(
            PageRedaction::from_spec(&spec(&many, &[])).unwrap_err(),
            RedactionError::TooMany("patterns")
        );
    }
}
