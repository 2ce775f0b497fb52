//! [`ElementFacts`]: what the commit guard knows about an element, read from the page
//! before anything is done to it.

/// Facts about one element, read without touching it. Never its value: only its kind, its
/// accessible name and where it sits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ElementFacts {
    /// Lower-case tag name (`button`, `input`, `a`, `div`).
    pub tag: String,
    /// Lower-case `type` attribute of an `input` or `button`, if any.
    pub input_type: Option<String>,
    /// Lower-case ARIA role, if any.
    pub role: Option<String>,
    /// The accessible name: `aria-label`, the labelling text, the text content, the
    /// button's value, `title` or `alt`, trimmed and at most 200 characters. For a text
    /// field it is its label, never its value.
    pub name: String,
    /// Whether the element is inside a `<form>` (or names one with `form=`, or sits in a
    /// shadow tree whose host is inside one).
    pub in_form: bool,
    /// Whether that form has a submit control (a `<button>` without a type or with
    /// `type=submit`, an `<input type=submit|image>`).
    pub form_has_submit: bool,
    /// Whether that form has a required field with no value (`validity.valueMissing`).
    pub form_missing_required: bool,
    /// How activating the element submits its form: the submitter's `formmethod`, else the
    /// form's `method` (`get`, `post`, `dialog`), lower-case; `None` outside a form or when
    /// it could not be read (then a submission counts as a post).
    pub form_method: Option<String>,
    /// How many fields of that form block HTML's implicit submission (text, search, url,
    /// tel, email, password, number and date inputs): with no submit control, Enter in the
    /// only one submits the form.
    pub form_blocking_fields: u32,
    /// An editable region (`contenteditable`, or a document in design mode).
    pub editable: bool,
    /// Search semantics: `type=search`, `role=searchbox`, or inside a `role=search`
    /// landmark or a `<search>` element.
    pub search: bool,
    /// A disclosure or a menu opener: `aria-expanded` or `aria-haspopup`, or a `<summary>`.
    pub disclosure: bool,
    /// Lower-case `autocomplete` attribute, if any.
    pub autocomplete: Option<String>,
    /// Lower-case `name`, `id` and `data-*` hints that may name a card field.
    pub field_hints: Vec<String>,
}

impl ElementFacts {
    fn input_type(&self) -> Option<&str> {
        self.input_type.as_deref()
    }

    /// Its role as assistive technology presents it: the explicit ARIA role, else the one
    /// HTML implies for its tag and type (HTML-AAM: `button`, `link`, `textbox`,
    /// `searchbox`, `checkbox`, `radio`, `combobox`, `slider`, `spinbutton`); none for an
    /// element HTML gives no role.
    pub fn role_shown(&self) -> Option<&str> {
        if let Some(role) = self.role.as_deref().filter(|r| !r.is_empty()) {
            return Some(role);
        }
        let implied = match self.tag.as_str() {
            "button" | "summary" => "button",
            "a" | "area" => "link",
            "textarea" => "textbox",
            "select" => "combobox",
            "input" => match self.input_type().unwrap_or("text") {
                "button" | "submit" | "reset" | "image" => "button",
                "checkbox" => "checkbox",
                "radio" => "radio",
                "range" => "slider",
                "number" => "spinbutton",
                "search" => "searchbox",
                "text" | "" | "email" | "tel" | "url" | "password" => "textbox",
                _ => return None,
            },
            _ => return None,
        };
        Some(implied)
    }

    /// An `<input type=file>`.
    pub fn is_file_input(&self) -> bool {
        self.tag == "input" && self.input_type() == Some("file")
    }

    /// A submit control: `<input type=submit|image>`, or a `<button>` with `type=submit`
    /// or, inside a form, without a type.
    pub fn is_submit_control(&self) -> bool {
        match self.tag.as_str() {
            "input" => matches!(self.input_type(), Some("submit" | "image")),
            "button" => match self.input_type() {
                Some("submit") => true,
                None | Some("") => self.in_form,
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether activating it submits its form with GET (a navigation with the form's
    /// fields in the query).
    pub fn submits_with_get(&self) -> bool {
        self.in_form && self.form_method.as_deref() == Some("get")
    }

    /// Whether Enter in this field submits its form: the form has a submit control, or
    /// exactly one field that blocks implicit submission.
    pub fn enter_submits_form(&self) -> bool {
        self.in_form && (self.form_has_submit || self.form_blocking_fields == 1)
    }

    /// A choice: a `<select>`, a checkbox or radio input, or an element with the role of a
    /// switch, checkbox, radio button, option or checkable menu item.
    pub fn is_choice(&self) -> bool {
        self.tag == "select"
            || (self.tag == "input" && matches!(self.input_type(), Some("checkbox" | "radio")))
            || matches!(
                self.role.as_deref(),
                Some(
                    "switch"
                        | "checkbox"
                        | "radio"
                        | "option"
                        | "menuitemcheckbox"
                        | "menuitemradio"
                )
            )
    }

    /// A field one types into: a text-like input, a `<textarea>`, an editable region, or
    /// an element with the role of a textbox, search box or combo box.
    pub fn is_text_entry(&self) -> bool {
        match self.tag.as_str() {
            "textarea" => true,
            "input" => !matches!(
                self.input_type(),
                Some(
                    "submit"
                        | "image"
                        | "button"
                        | "reset"
                        | "checkbox"
                        | "radio"
                        | "file"
                        | "hidden"
                        | "range"
                        | "color"
                )
            ),
            _ => {
                self.editable
                    || matches!(
                        self.role.as_deref(),
                        Some("textbox" | "searchbox" | "combobox")
                    )
            }
        }
    }

    /// A link: `<a>` or `role=link`.
    pub fn is_link(&self) -> bool {
        self.tag == "a" || self.role.as_deref() == Some("link")
    }

    /// Whether Enter or Space activates it as a click would (a button, a link, a choice, a
    /// tab, a menu item, a `<summary>`).
    pub fn activates(&self) -> bool {
        self.is_button()
            || self.is_submit_control()
            || self.is_link()
            || self.is_choice()
            || self.tag == "summary"
            || matches!(self.role.as_deref(), Some("tab" | "menuitem" | "treeitem"))
    }

    /// A button of any kind (`<button>`, `<input type=button|reset>`, `role=button`).
    pub fn is_button(&self) -> bool {
        self.tag == "button"
            || (self.tag == "input"
                && matches!(
                    self.input_type(),
                    Some("button" | "reset" | "submit" | "image")
                ))
            || self.role.as_deref() == Some("button")
    }

    /// A payment card field: `autocomplete=cc-*`, or a name or id that says card number,
    /// expiry or security code.
    pub fn is_card_field(&self) -> bool {
        if self
            .autocomplete
            .as_deref()
            .is_some_and(|a| a.split_whitespace().any(|t| t.starts_with("cc-")))
        {
            return true;
        }
        self.field_hints.iter().any(|hint| {
            let squashed: String = hint.chars().filter(|c| c.is_alphanumeric()).collect();
            CARD_HINTS.iter().any(|h| squashed.contains(h))
        })
    }
}

/// Squashed (letters and digits only) fragments of card field names and ids.
const CARD_HINTS: &[&str] = &[
    "cardnumber",
    "ccnumber",
    "ccnum",
    "creditcard",
    "cardnum",
    "cardno",
    "cvc",
    "cvv",
    "csc",
    "securitycode",
    "cardexp",
    "ccexp",
    "cardholder",
    "ccname",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(tag: &str, input_type: Option<&str>, role: Option<&str>) -> ElementFacts {
        ElementFacts {
            tag: tag.into(),
            input_type: input_type.map(str::to_owned),
            role: role.map(str::to_owned),
            ..ElementFacts::default()
        }
    }

    #[test]
    fn the_role_shown_is_the_explicit_one_else_the_one_html_implies() {
        for (tag, input_type, role, shown) in [
            ("button", None, None, Some("button")),
            ("div", None, Some("button"), Some("button")),
            ("button", None, Some("switch"), Some("switch")),
            ("a", None, None, Some("link")),
            ("input", None, None, Some("textbox")),
            ("input", Some("email"), None, Some("textbox")),
            ("input", Some("search"), None, Some("searchbox")),
            ("input", Some("submit"), None, Some("button")),
            ("input", Some("checkbox"), None, Some("checkbox")),
            ("input", Some("file"), None, None),
            ("select", None, None, Some("combobox")),
            ("textarea", None, None, Some("textbox")),
            ("div", None, None, None),
            ("div", None, Some(""), None),
        ] {
            assert_eq!(
                facts(tag, input_type, role).role_shown(),
                shown,
                "{tag} {input_type:?} {role:?}"
            );
        }
    }
}
