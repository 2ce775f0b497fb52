//! The site's pages. Every piece of user data goes through [`esc`].

use super::{Post, USER_CREATED_MESSAGE, USER_ROLES, User};

/// HTML-escapes `s` for text and double- or single-quoted attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}\
nav a{margin-right:1rem}.error,.error-banner{color:#a00;background:#fee;padding:.5rem;border-radius:4px}\
.toast-success,.success-message{color:#060;background:#efe;padding:.5rem;border-radius:4px}\
.media-ok{color:#060}.media-error{color:#a00}.post-text{white-space:pre-wrap}\
textarea{width:100%;min-height:6rem}li.post{margin-bottom:1rem}\
table#users{border-collapse:collapse;margin:1rem 0}#users th,#users td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left}";

fn layout(title: &str, user: Option<&str>, body: &str) -> String {
    let nav = match user {
        Some(user) => format!(
            "<nav><a href=\"/compose\">Compose</a><a href=\"/feed\">My posts</a><a href=\"/admin/users\">Users</a>\
             <span class=\"whoami\">Signed in as {}</span> <a href=\"/logout\">Sign out</a></nav>",
            esc(user)
        ),
        None => "<nav><a href=\"/login\">Sign in</a></nav>".to_owned(),
    };
    document(title, "", &format!("{nav}<main>{body}</main>"))
}

/// A whole page: `title` (escaped), the site's style followed by `extra_style`, and `body`
/// as given (markup, not escaped), without the navigation of the social site.
pub(crate) fn document(title: &str, extra_style: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{} · ABR demo</title><style>{STYLE}{extra_style}</style></head><body>{body}</body></html>",
        esc(title)
    )
}

pub(crate) fn index(user: Option<&str>) -> String {
    layout(
        "Home",
        user,
        "<h1>ABR demo site</h1><p>A small social site for exercising the Agent Browser Runtime: \
         <a href=\"/login\">sign in</a> (any username, password <code>demo-password</code>), \
         <a href=\"/compose\">compose</a>, <a href=\"/feed\">read your feed</a>, \
         <a href=\"/admin/users\">manage users</a>. \
         Ground truth: <a href=\"/api/posts\">/api/posts</a>, <a href=\"/api/users\">/api/users</a>.</p>",
    )
}

pub(crate) fn login(error: Option<&str>, username: &str) -> String {
    let error = error
        .map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>", esc(e)))
        .unwrap_or_default();
    layout(
        "Sign in",
        None,
        &format!(
            "<h1>Sign in</h1>{error}\
             <form id=\"login\" method=\"post\" action=\"/login\">\
             <p><label>Username <input id=\"username\" name=\"username\" autocomplete=\"username\" value=\"{}\" required autofocus></label></p>\
             <p><label>Password <input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"current-password\" required></label></p>\
             <p><button id=\"sign-in\" type=\"submit\">Sign in</button></p></form>\
             <p class=\"hint\">Any username works with the password <code>demo-password</code>.</p>",
            esc(username)
        ),
    )
}

/// The composer. Choosing files uploads them at once (`POST /api/upload`); their ids go
/// into the hidden `media_ids` field submitted with the post. The page also stores the
/// `demo_prefs` localStorage key, so captured sessions carry localStorage too.
pub(crate) fn compose(user: &str) -> String {
    layout(
        "Compose",
        Some(user),
        r#"<h1>New post</h1>
<form id="composer" method="post" action="/compose">
<p><label for="post-text">What's happening?</label><br><textarea id="post-text" name="text" maxlength="5000"></textarea></p>
<p><label>Media <input id="media" type="file" multiple accept="image/*,video/*"></label></p>
<input id="media-ids" type="hidden" name="media_ids" value="">
<p id="media-status" role="status" aria-live="polite"></p>
<p><button id="submit" type="submit">Post</button></p>
</form>
<script>
(() => {
  if (!localStorage.getItem('demo_prefs')) localStorage.setItem('demo_prefs', JSON.stringify({ theme: 'light' }));
  const media = document.getElementById('media');
  const ids = document.getElementById('media-ids');
  const status = document.getElementById('media-status');
  const submit = document.getElementById('submit');
  const show = (cls, msg) => { status.className = cls; status.textContent = msg; };
  media.addEventListener('change', async () => {
    ids.value = '';
    if (!media.files.length) { show('', ''); submit.disabled = false; return; }
    show('media-pending', 'Uploading…');
    submit.disabled = true;
    const body = new FormData();
    for (const f of media.files) body.append('file', f, f.name);
    try {
      const r = await fetch('/api/upload', { method: 'POST', body, credentials: 'same-origin' });
      const data = await r.json().catch(() => ({}));
      if (r.ok && Array.isArray(data.ids)) {
        ids.value = data.ids.join(',');
        show('media-ok', data.ids.length + (data.ids.length === 1 ? ' file' : ' files') + ' ready');
      } else {
        media.value = '';
        show('media-error', data.error || ('Upload failed (HTTP ' + r.status + ')'));
      }
    } catch (e) {
      media.value = '';
      show('media-error', 'Upload failed: network error');
    }
    submit.disabled = false;
  });
})();
</script>"#,
    )
}

fn toast_markup(id: &str) -> String {
    format!(
        "<div class=\"toast-success\" role=\"status\">Your post is live. \
         <a href=\"/p/{id}\">View post</a></div>",
        id = esc(id)
    )
}

/// The confirmation page, with the toast in the markup.
pub(crate) fn posted(user: &str, post: &Post) -> String {
    layout(
        "Posted",
        Some(user),
        &format!(
            "<div id=\"toasts\">{}</div><h1>Thanks!</h1><p><a href=\"/compose\">Write another</a></p>",
            toast_markup(&post.id)
        ),
    )
}

/// The confirmation page whose toast appears 3 s after load (built by script, so the
/// markup holds no toast).
pub(crate) fn posted_slowly(user: &str, post: &Post) -> String {
    // Post ids are hex, so they are safe inside the script's string literal.
    let id = esc(&post.id);
    layout(
        "Posted",
        Some(user),
        &format!(
            "<div id=\"toasts\"></div><h1>Thanks!</h1><p><a href=\"/compose\">Write another</a></p>\
             <script>setTimeout(() => {{\
               const t = document.createElement('div'); t.className = 'toast-success'; t.setAttribute('role', 'status');\
               t.append('Your post is live. ');\
               const a = document.createElement('a'); a.href = '/p/{id}'; a.textContent = 'View post'; t.append(a);\
               document.getElementById('toasts').append(t);\
             }}, 3000);</script>"
        ),
    )
}

/// A page that says [`SLOW_READY`](super::SLOW_READY) `ms` milliseconds after it loaded (a
/// slow page a plan waits on before it acts); with `email`, the admin form that adds that
/// user (its Submit button) appears then too, so that a plan's committing click waits on
/// it.
pub(crate) fn slow(ms: u64, email: Option<&str>) -> String {
    let form = email.map_or_else(String::new, |email| {
        format!(
            "<form method=\"post\" action=\"/admin/users\">\
             <input type=\"hidden\" name=\"email\" value=\"{}\">\
             <input type=\"hidden\" name=\"role\" value=\"viewer\">\
             <button type=\"submit\">Submit</button></form>",
            esc(email)
        )
    });
    layout(
        "Loading",
        None,
        &format!(
            "<h1>Loading</h1><p id=\"later\"></p><template id=\"form\">{form}</template>\
             <script>setTimeout(() => {{\
               document.getElementById('later').textContent = '{}';\
               document.body.append(document.getElementById('form').content.cloneNode(true));\
             }}, {ms});</script>",
            super::SLOW_READY
        ),
    )
}

/// A plain page: no confirmation, no error.
pub(crate) fn plain(user: &str) -> String {
    layout(
        "Compose",
        Some(user),
        "<h1>Thanks!</h1><p><a href=\"/compose\">Write another</a></p>",
    )
}

pub(crate) fn error_banner(user: Option<&str>, message: &str) -> String {
    layout(
        "Error",
        user,
        &format!(
            "<div class=\"error-banner\" role=\"alert\">{}</div><p><a href=\"/compose\">Back to the composer</a></p>",
            esc(message)
        ),
    )
}

pub(crate) fn permalink(user: Option<&str>, post: &Post) -> String {
    layout(
        "Post",
        user,
        &format!(
            "<article class=\"post\" data-id=\"{id}\" data-media-count=\"{n}\">\
             <p class=\"author\">by <span class=\"author-name\">{author}</span></p>\
             <p class=\"post-text\">{text}</p>\
             <p class=\"media-count\">{n} media</p>\
             <p><time datetime=\"{at}\">{at}</time></p></article>",
            id = esc(&post.id),
            n = post.media_count,
            author = esc(&post.author),
            text = esc(&post.text),
            at = esc(&post.created_at),
        ),
    )
}

pub(crate) fn feed<'a>(user: &str, posts: impl Iterator<Item = &'a Post>) -> String {
    let items: String = posts
        .map(|p| {
            format!(
                "<li class=\"post\" data-id=\"{id}\"><p class=\"post-text\">{text}</p>\
                 <a class=\"permalink\" href=\"/p/{id}\">{n} media · <time datetime=\"{at}\">{at}</time></a></li>",
                id = esc(&p.id),
                text = esc(&p.text),
                n = p.media_count,
                at = esc(&p.created_at),
            )
        })
        .collect();
    layout(
        "My posts",
        Some(user),
        &format!("<h1>My posts</h1><ul id=\"feed\">{items}</ul>"),
    )
}

/// What the admin page says above the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AdminNotice<'a> {
    /// `.success-message`, in the markup.
    Created,
    /// `.success-message`, added by script 3 s after load (the markup holds none).
    CreatedSlowly,
    /// `.error-banner` with this message.
    Error(&'a str),
}

/// The users table and the "Add user" form. The form is hidden until `#add-user-btn` is
/// clicked, unless `form` (the values just submitted, after an error) is given.
pub(crate) fn admin_users(
    user: &str,
    users: &[User],
    notice: Option<AdminNotice<'_>>,
    form: Option<(&str, &str)>,
) -> String {
    let notice = match notice {
        Some(AdminNotice::Created) => {
            format!("<div class=\"success-message\" role=\"status\">{USER_CREATED_MESSAGE}</div>")
        }
        Some(AdminNotice::CreatedSlowly) => format!(
            "<script>setTimeout(() => {{\
               const m = document.createElement('div'); m.className = 'success-message'; m.setAttribute('role', 'status');\
               m.textContent = '{USER_CREATED_MESSAGE}';\
               document.getElementById('notices').append(m);\
             }}, 3000);</script>"
        ),
        Some(AdminNotice::Error(message)) => format!(
            "<div class=\"error-banner\" role=\"alert\">{}</div>",
            esc(message)
        ),
        None => String::new(),
    };
    let rows: String = users
        .iter()
        .map(|u| {
            format!(
                "<tr><td class=\"email\">{}</td><td class=\"role\">{}</td></tr>",
                esc(&u.email),
                esc(&u.role)
            )
        })
        .collect();
    let (email, role, hidden) = match form {
        Some((email, role)) => (email, role, ""),
        None => ("", USER_ROLES[0], " hidden"),
    };
    let options: String = USER_ROLES
        .iter()
        .map(|r| {
            let label = match *r {
                "viewer" => "Viewer",
                "editor" => "Editor",
                _ => "Admin",
            };
            let selected = if *r == role { " selected" } else { "" };
            format!("<option value=\"{r}\"{selected}>{label}</option>")
        })
        .collect();
    layout(
        "Users",
        Some(user),
        &format!(
            "<h1>Users</h1><div id=\"notices\">{notice}</div>\
             <table id=\"users\"><thead><tr><th>Email</th><th>Role</th></tr></thead><tbody>{rows}</tbody></table>\
             <p><button id=\"add-user-btn\" type=\"button\" aria-controls=\"add-user\">Add user</button></p>\
             <form id=\"add-user\" method=\"post\" action=\"/admin/users\" novalidate{hidden}>\
             <p><label for=\"email-input\">Email</label> <input id=\"email-input\" name=\"email\" type=\"email\" autocomplete=\"off\" value=\"{email}\"></p>\
             <p><label for=\"role-dropdown\">Role</label> <select id=\"role-dropdown\" name=\"role\">{options}</select></p>\
             <p><button id=\"submit-user\" type=\"submit\">Submit</button></p></form>\
             <script>(() => {{\
               const button = document.getElementById('add-user-btn');\
               const form = document.getElementById('add-user');\
               button.addEventListener('click', () => {{ form.hidden = false; document.getElementById('email-input').focus(); }});\
             }})();</script>",
            email = esc(email),
        ),
    )
}

pub(crate) fn not_found(user: Option<&str>) -> String {
    layout(
        "Not found",
        user,
        "<h1>Not found</h1><p>There is nothing here.</p>",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(esc("plain text ✓"), "plain text ✓");
    }

    #[test]
    fn user_text_never_reaches_pages_unescaped() {
        let post = Post {
            id: "abc123".into(),
            author: "<i>eve</i>".into(),
            text: "<script>alert(1)</script>".into(),
            media_count: 0,
            created_at: "2025-01-01T00:00:00Z".into(),
        };
        for page in [
            permalink(Some("<i>eve</i>"), &post),
            feed("<i>eve</i>", std::iter::once(&post)),
        ] {
            assert!(!page.contains("<script>alert"), "{page}");
            assert!(!page.contains("<i>eve"), "{page}");
            assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        }
    }

    #[test]
    fn the_users_table_escapes_and_the_form_opens_after_an_error() {
        let users = [User {
            email: "<b>x</b>@evil.example".into(),
            role: "admin".into(),
            created_by: "a".into(),
            created_at: String::new(),
        }];
        let listed = admin_users("a", &users, None, None);
        assert!(listed.contains("&lt;b&gt;x&lt;/b&gt;@evil.example"));
        assert!(!listed.contains("<b>x</b>"));
        assert!(
            listed.contains("novalidate hidden>"),
            "the form waits for Add user"
        );
        assert!(!listed.contains("class=\"success-message\""));

        let refused = admin_users(
            "a",
            &[],
            Some(AdminNotice::Error("Enter a valid email address.")),
            Some(("not-an\"email", "editor")),
        );
        assert!(refused.contains("class=\"error-banner\""));
        assert!(refused.contains("value=\"not-an&quot;email\""));
        assert!(refused.contains("<option value=\"editor\" selected>"));
        assert!(!refused.contains("novalidate hidden"));

        let created = admin_users("a", &users, Some(AdminNotice::Created), None);
        assert!(created.contains("class=\"success-message\""));
        let slow = admin_users("a", &users, Some(AdminNotice::CreatedSlowly), None);
        assert!(!slow.contains("class=\"success-message\""));
        assert!(slow.contains("3000"));
    }

    #[test]
    fn the_slow_toast_page_holds_no_toast_markup() {
        let post = Post {
            id: "abc123".into(),
            author: "a".into(),
            text: "t".into(),
            media_count: 0,
            created_at: String::new(),
        };
        let slow = posted_slowly("a", &post);
        assert!(!slow.contains("class=\"toast-success\""));
        assert!(slow.contains("3000"));
        assert!(posted("a", &post).contains("class=\"toast-success\""));
    }
}
