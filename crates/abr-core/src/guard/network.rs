//! The network rule: what a run's browser may send, decided below the page.
//!
//! HTTP's safe methods (GET, HEAD and OPTIONS, RFC 9110 §9.2.1) do not change anything on
//! the server by the protocol's own definition; every other method may. The rule sorts each
//! request the browser is about to send:
//!
//! - a safe method, or a write the platform declared a read ([`NetworkRules`]: an
//!   endpoint's search that posts its query, GraphQL `query` operations) is a **read**;
//! - any other request to a site the run acts on ([`OwnSites`]: the start page's site, the
//!   scope's domains, the sites the plan opens) **commits**, unless the platform declared the
//!   endpoint telemetry;
//! - any other request elsewhere (a third party's analytics) is **background**.
//!
//! A read-only or dry run refuses everything that is not a read; a read-write run counts
//! every request that commits as a committing step, whatever the element looked like. The
//! provider enforces it below the page ([`RequestGate`]): a refused request never leaves the
//! browser.

use std::collections::BTreeSet;

use abr_protocol::{GraphqlOperation, NetworkPolicySpec, ReadEndpointSpec};
use async_trait::async_trait;

/// Whether `method` is one of HTTP's safe methods: GET, HEAD, OPTIONS (any case).
pub fn is_safe_method(method: &str) -> bool {
    ["GET", "HEAD", "OPTIONS"]
        .iter()
        .any(|m| m.eq_ignore_ascii_case(method.trim()))
}

/// Most bytes of a body the GraphQL check parses; a larger one is a write.
pub const MAX_GRAPHQL_BODY: usize = 256 * 1024;

/// A request the browser is about to send, as the provider sees it. The body is read only
/// for a declared GraphQL read, and never logged.
#[derive(Clone, Copy)]
pub struct OutgoingRequest<'a> {
    /// The method, as the browser sends it.
    pub method: &'a str,
    /// The URL.
    pub url: &'a str,
    /// The browser's resource type (`document`, `xhr`, `fetch`, `ping`, ...).
    pub resource_type: &'a str,
    /// The `content-type` header, when there is one.
    pub content_type: Option<&'a str>,
    /// The body, when the browser has it.
    pub body: Option<&'a [u8]>,
}

impl std::fmt::Debug for OutgoingRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutgoingRequest")
            .field("method", &self.method)
            .field("host", &host_of(self.url))
            .field("resource_type", &self.resource_type)
            .field("body_bytes", &self.body.map(<[u8]>::len))
            .finish_non_exhaustive()
    }
}

impl OutgoingRequest<'_> {
    /// The request's host, lower-case (empty when it has none).
    pub fn host(&self) -> String {
        host_of(self.url)
    }
}

/// The host of `url`, lower-case, without a trailing dot (empty when it has none).
pub fn host_of(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|u| {
            u.host_str()
                .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
        })
        .unwrap_or_default()
}

/// A platform's network declaration that is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NetworkRuleError {
    /// An endpoint URL is not an http(s) URL with a host, or has credentials, a query or a
    /// fragment, or a `*` anywhere but at the end of its path.
    #[error(
        "{field}: an endpoint is `https://host[:port]/path`, optionally ending in `*`, with no credentials, query or fragment"
    )]
    BadEndpoint {
        /// Which declaration (`network.reads[0].url`).
        field: String,
    },
    /// A read endpoint names a safe method or one that is not a method.
    #[error(
        "{field}: methods are upper-case HTTP methods other than GET, HEAD and OPTIONS (those are always reads)"
    )]
    BadMethod {
        /// Which declaration.
        field: String,
    },
    /// Too many declarations.
    #[error("network: at most {max} reads and {max} telemetry endpoints")]
    TooMany {
        /// The bound.
        max: usize,
    },
}

/// Most endpoints of each kind a platform declares.
pub const MAX_ENDPOINTS: usize = 64;

/// An endpoint: scheme, host and port exactly, and a path exactly or as a prefix (a
/// declaration ending in `*`). The query is never looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    scheme: String,
    host: String,
    port: u16,
    path: String,
    prefix: bool,
}

impl Endpoint {
    /// Parses a declaration (`https://api.example.com/graphql`, `https://example.com/s/*`).
    ///
    /// # Errors
    /// [`NetworkRuleError::BadEndpoint`] naming `field`.
    pub fn parse(declared: &str, field: &str) -> Result<Self, NetworkRuleError> {
        let bad = || NetworkRuleError::BadEndpoint {
            field: field.to_owned(),
        };
        let (text, prefix) = match declared.strip_suffix('*') {
            Some(rest) => (rest, true),
            None => (declared, false),
        };
        if text.contains('*') || text.contains('?') || text.contains('#') {
            return Err(bad());
        }
        let url = url::Url::parse(text).map_err(|_| bad())?;
        if !matches!(url.scheme(), "http" | "https")
            || !url.username().is_empty()
            || url.password().is_some()
        {
            return Err(bad());
        }
        let host = url
            .host_str()
            .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .ok_or_else(bad)?;
        let port = url.port_or_known_default().ok_or_else(bad)?;
        Ok(Self {
            scheme: url.scheme().to_owned(),
            host,
            port,
            path: url.path().to_owned(),
            prefix,
        })
    }

    /// Whether `url` is this endpoint (its query ignored).
    pub fn matches(&self, url: &url::Url) -> bool {
        let host = url
            .host_str()
            .map(|h| h.trim_end_matches('.').to_ascii_lowercase());
        url.scheme() == self.scheme
            && host.as_deref() == Some(self.host.as_str())
            && url.port_or_known_default() == Some(self.port)
            && if self.prefix {
                url.path().starts_with(&self.path)
            } else {
                url.path() == self.path
            }
    }

    /// The declaration it was parsed from.
    pub fn to_declaration(&self) -> String {
        let default = match self.scheme.as_str() {
            "https" => 443,
            _ => 80,
        };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let port = if self.port == default {
            String::new()
        } else {
            format!(":{}", self.port)
        };
        let star = if self.prefix { "*" } else { "" };
        format!("{}://{host}{port}{}{star}", self.scheme, self.path)
    }
}

/// An endpoint whose writes are reads.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ReadEndpoint {
    endpoint: Endpoint,
    /// Upper-case methods.
    methods: Vec<String>,
    graphql: Option<GraphqlOperation>,
}

/// A platform's network rules, validated ([`NetworkPolicySpec`] on the wire). The default
/// declares nothing: every write is a write, no WebSocket in read-only runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkRules {
    reads: Vec<ReadEndpoint>,
    telemetry: Vec<Endpoint>,
    websockets: bool,
}

impl NetworkRules {
    /// Validates a platform's declaration.
    ///
    /// # Errors
    /// A [`NetworkRuleError`] naming the declaration.
    pub fn from_spec(spec: &NetworkPolicySpec) -> Result<Self, NetworkRuleError> {
        if spec.reads.len() > MAX_ENDPOINTS || spec.telemetry.len() > MAX_ENDPOINTS {
            return Err(NetworkRuleError::TooMany { max: MAX_ENDPOINTS });
        }
        let reads = spec
            .reads
            .iter()
            .enumerate()
            .map(|(i, r)| read_endpoint(r, i))
            .collect::<Result<_, _>>()?;
        let telemetry = spec
            .telemetry
            .iter()
            .enumerate()
            .map(|(i, t)| Endpoint::parse(t, &format!("network.telemetry[{i}]")))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            reads,
            telemetry,
            websockets: spec.websockets,
        })
    }

    /// The wire form.
    pub fn to_spec(&self) -> NetworkPolicySpec {
        NetworkPolicySpec {
            reads: self
                .reads
                .iter()
                .map(|r| ReadEndpointSpec {
                    url: r.endpoint.to_declaration(),
                    methods: r.methods.clone(),
                    graphql: r.graphql,
                })
                .collect(),
            telemetry: self
                .telemetry
                .iter()
                .map(Endpoint::to_declaration)
                .collect(),
            websockets: self.websockets,
        }
    }

    /// Whether the platform declared nothing.
    pub fn is_empty(&self) -> bool {
        self.reads.is_empty() && self.telemetry.is_empty() && !self.websockets
    }

    /// Whether read-only runs may open WebSockets.
    pub fn allows_websockets(&self) -> bool {
        self.websockets
    }

    /// Whether `request` (with a method that is not safe) is one the platform declared a
    /// read: its endpoint and method match and, for a GraphQL endpoint, every operation of
    /// its body parses as a query.
    pub fn is_declared_read(&self, request: &OutgoingRequest<'_>) -> bool {
        let Ok(url) = url::Url::parse(request.url) else {
            return false;
        };
        let method = request.method.trim().to_ascii_uppercase();
        self.reads.iter().any(|r| {
            r.endpoint.matches(&url)
                && r.methods.contains(&method)
                && match r.graphql {
                    None => true,
                    Some(GraphqlOperation::Query) => request
                        .body
                        .is_some_and(|body| graphql_queries_only(body, request.content_type)),
                }
        })
    }

    /// Whether `url` is a declared telemetry endpoint.
    pub fn is_telemetry(&self, url: &str) -> bool {
        url::Url::parse(url).is_ok_and(|url| self.telemetry.iter().any(|t| t.matches(&url)))
    }
}

fn read_endpoint(spec: &ReadEndpointSpec, i: usize) -> Result<ReadEndpoint, NetworkRuleError> {
    let endpoint = Endpoint::parse(&spec.url, &format!("network.reads[{i}].url"))?;
    let methods = if spec.methods.is_empty() {
        vec!["POST".to_owned()]
    } else {
        spec.methods.clone()
    };
    let valid = |m: &String| {
        !m.is_empty()
            && m.len() <= 16
            && m.bytes().all(|b| b.is_ascii_uppercase())
            && !is_safe_method(m)
    };
    if !methods.iter().all(valid) {
        return Err(NetworkRuleError::BadMethod {
            field: format!("network.reads[{i}].methods"),
        });
    }
    Ok(ReadEndpoint {
        endpoint,
        methods,
        graphql: spec.graphql,
    })
}

/// Whether a GraphQL request body holds only queries: `application/graphql` (the document
/// itself) or JSON (`{"query": …}`, or a batch: an array of them), every document parsing
/// without error and every operation in it a `query` (or the `{ … }` shorthand). A
/// persisted query (no `query` text), a mutation, a subscription, a body over
/// [`MAX_GRAPHQL_BODY`] or one that does not parse is not.
pub fn graphql_queries_only(body: &[u8], content_type: Option<&str>) -> bool {
    if body.len() > MAX_GRAPHQL_BODY {
        return false;
    }
    let media = content_type
        .and_then(|c| c.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase());
    if media.as_deref() == Some("application/graphql") {
        return std::str::from_utf8(body).is_ok_and(document_has_only_queries);
    }
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return false;
    };
    let query_of = |v: &serde_json::Value| {
        v.get("query")
            .and_then(serde_json::Value::as_str)
            .is_some_and(document_has_only_queries)
    };
    match &value {
        serde_json::Value::Array(batch) => !batch.is_empty() && batch.iter().all(query_of),
        serde_json::Value::Object(_) => query_of(&value),
        _ => false,
    }
}

/// Whether a GraphQL document parses and every operation in it is a query (fragments may
/// come with them; anything else, such as a schema definition, is not a request).
fn document_has_only_queries(document: &str) -> bool {
    use apollo_parser::cst::Definition;

    let tree = apollo_parser::Parser::new(document)
        .recursion_limit(64)
        .token_limit(50_000)
        .parse();
    if tree.errors().next().is_some() {
        return false;
    }
    let mut operations = 0;
    for definition in tree.document().definitions() {
        match definition {
            Definition::OperationDefinition(operation) => {
                operations += 1;
                let query = operation
                    .operation_type()
                    .is_none_or(|t| t.query_token().is_some());
                if !query {
                    return false;
                }
            }
            Definition::FragmentDefinition(_) => {}
            _ => return false,
        }
    }
    operations > 0
}

/// The sites a run acts on, by registrable domain (`example.com` covers
/// `api.example.com`, `tool.internal` covers `api.tool.internal`); hosts without one
/// (`localhost`, an IP address) only as themselves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnSites {
    sites: BTreeSet<String>,
}

impl OwnSites {
    /// Most sites a run keeps (a browse session adds the sites it navigates to).
    pub const MAX: usize = 256;

    /// Adds the site of `host` (a host name or an IP address, any case).
    pub fn add_host(&mut self, host: &str) {
        let site = site_of(host);
        if !site.is_empty() && self.sites.len() < Self::MAX {
            self.sites.insert(site);
        }
    }

    /// Adds the site of `url`'s host.
    pub fn add_url(&mut self, url: &str) {
        self.add_host(&host_of(url));
    }

    /// Whether `host` belongs to one of the sites.
    pub fn contains(&self, host: &str) -> bool {
        let site = site_of(host);
        !site.is_empty() && self.sites.contains(&site)
    }

    /// How many sites.
    pub fn len(&self) -> usize {
        self.sites.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.sites.is_empty()
    }
}

/// The registrable domain of `host` (lower-case), or the host itself when it has none.
pub(crate) fn site_of(host: &str) -> String {
    let host = host
        .trim()
        .trim_start_matches('.')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    if host.is_empty() || host.parse::<std::net::IpAddr>().is_ok() {
        return host;
    }
    // As browsers tell sites apart: a name under an unknown suffix counts its last label as
    // the suffix (`api.tool.internal` is of `tool.internal`).
    match psl::domain(host.as_bytes()) {
        Some(domain) => String::from_utf8_lossy(domain.as_bytes()).into_owned(),
        None => host,
    }
}

/// What the network rule makes of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// A safe method, or a write the platform declared a read: it goes in every run.
    Read,
    /// A write to a site the run acts on: refused in a read-only or dry run, committing in a
    /// read-write one.
    Commits,
    /// A write to another site, or to the platform's declared telemetry: refused in a
    /// read-only or dry run, not counted in a read-write one.
    Background,
}

/// Sorts `request` by the rule (see the module docs).
pub fn classify(
    rules: &NetworkRules,
    own: &OwnSites,
    request: &OutgoingRequest<'_>,
) -> RequestKind {
    if is_safe_method(request.method) || rules.is_declared_read(request) {
        RequestKind::Read
    } else if own.contains(&request.host()) && !rules.is_telemetry(request.url) {
        RequestKind::Commits
    } else {
        RequestKind::Background
    }
}

/// What a run's browser asks before a request leaves, below the page.
///
/// # Contract (for providers)
/// - [`admit`](Self::admit) is awaited for every HTTP request the browser is about to send
///   whose method is not safe ([`is_safe_method`]): documents (form posts, in every frame
///   and window), fetch and XHR, beacons and pings, requests of workers. Safe methods are
///   not asked about (the hot path). Until it answers, the request is held; `false` means it
///   never leaves the browser (a document is answered `204 No Content`, so the page stays
///   where it was; anything else is aborted).
/// - When [`websockets_guarded`](Self::websockets_guarded) (read once, when the gate is
///   installed), no WebSocket of the context connects: not from a document (any page,
///   frame or popup, `WebSocket` or `WebSocketStream`), not from a dedicated worker at any
///   depth, not from any other context the browser runs for the page. A socket a document
///   opens through the provider's per-socket route is asked about with
///   [`admit_websocket`](Self::admit_websocket) before it connects; every other socket is
///   refused below the page without asking.
/// - Every WebSocket the context's documents and workers open is told to
///   [`socket_opened`](Self::socket_opened) as the browser creates it, refused or not: a
///   gate that refuses records it, a read-write one counts a socket to the run's own sites
///   as a write that left.
/// - The gate holds for the lease's whole life, from the call that installs it, also for
///   the writes of a document being left (a `pagehide` beacon), which the browser sends
///   after its document is gone.
#[async_trait]
pub trait RequestGate: Send + Sync + std::fmt::Debug + 'static {
    /// Whether `request` may leave the browser.
    async fn admit(&self, request: &OutgoingRequest<'_>) -> bool;

    /// Whether every write is refused now (a read-only or dry run): a write the provider
    /// cannot attribute to a context is refused while any gate of its browser says so.
    fn refuses_writes(&self) -> bool;

    /// Whether WebSockets must be asked about at all.
    fn websockets_guarded(&self) -> bool;

    /// Whether a WebSocket to `url` may connect.
    fn admit_websocket(&self, url: &str) -> bool;

    /// A document or worker of the context opened a WebSocket to `url` (see the contract).
    async fn socket_opened(&self, url: &str);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(method: &'a str, url: &'a str) -> OutgoingRequest<'a> {
        OutgoingRequest {
            method,
            url,
            resource_type: "fetch",
            content_type: Some("application/json"),
            body: None,
        }
    }

    #[test]
    fn only_get_head_and_options_are_safe() {
        for m in ["GET", "get", "HEAD", "OPTIONS", " Options "] {
            assert!(is_safe_method(m), "{m}");
        }
        for m in [
            "POST", "PUT", "PATCH", "DELETE", "PROPFIND", "TRACE", "", "GETS",
        ] {
            assert!(!is_safe_method(m), "{m}");
        }
    }

    #[test]
    fn endpoints_match_exactly_or_by_prefix_and_ignore_the_query() {
        let e = Endpoint::parse("https://api.example.com/graphql", "f").unwrap();
        let u = |s: &str| url::Url::parse(s).unwrap();
        assert!(e.matches(&u("https://API.example.com/graphql?op=Feed")));
        assert!(e.matches(&u("https://api.example.com:443/graphql")));
        assert!(!e.matches(&u("https://api.example.com/graphql/x")));
        assert!(!e.matches(&u("http://api.example.com/graphql")));
        assert!(!e.matches(&u("https://api.example.com:8443/graphql")));
        assert!(!e.matches(&u("https://evil.example.com/graphql")));
        let p = Endpoint::parse("http://127.0.0.1:8788/search/*", "f").unwrap();
        assert!(p.matches(&u("http://127.0.0.1:8788/search/users?q=a")));
        assert!(!p.matches(&u("http://127.0.0.1:8788/searching")));
        assert_eq!(p.to_declaration(), "http://127.0.0.1:8788/search/*");
        assert_eq!(e.to_declaration(), "https://api.example.com/graphql");
        for bad in [
            "ftp://x.example/",
            "https://u:p@x.example/",
            "https://x.example/?q=1",
            "https://x.example/#f",
            "https://x.example/*/y",
            "/relative",
            "",
        ] {
            assert!(Endpoint::parse(bad, "f").is_err(), "{bad}");
        }
    }

    #[test]
    fn graphql_reads_are_queries_and_nothing_else() {
        let json = |q: &str| serde_json::to_vec(&serde_json::json!({ "query": q })).unwrap();
        let ct = Some("application/json; charset=utf-8");
        assert!(graphql_queries_only(
            &json("query Feed { feed { id } }"),
            ct
        ));
        assert!(graphql_queries_only(&json("{ me { id } }"), ct));
        assert!(graphql_queries_only(
            &json("query A { a { ...F } } fragment F on A { id }"),
            ct
        ));
        // A comment or a string that says mutation changes nothing.
        assert!(graphql_queries_only(
            &json("# mutation\nquery A { a(s: \"mutation { x }\") { id } }"),
            ct
        ));
        assert!(!graphql_queries_only(
            &json("mutation Like { like(id: 1) { ok } }"),
            ct
        ));
        assert!(!graphql_queries_only(&json("subscription S { s }"), ct));
        assert!(!graphql_queries_only(
            &json("query A { a } mutation B { b }"),
            ct
        ));
        assert!(!graphql_queries_only(&json("query A { a "), ct));
        assert!(!graphql_queries_only(&json("type Query { a: Int }"), ct));
        assert!(!graphql_queries_only(&json(""), ct));
        // A persisted query without its text cannot be judged.
        let persisted = br#"{"extensions":{"persistedQuery":{"sha256Hash":"abc"}}}"#;
        assert!(!graphql_queries_only(persisted, ct));
        // Batches: every entry a query.
        let batch = serde_json::to_vec(&serde_json::json!([
            {"query": "query A { a }"}, {"query": "mutation B { b }"}
        ]))
        .unwrap();
        assert!(!graphql_queries_only(&batch, ct));
        let batch = serde_json::to_vec(&serde_json::json!([{"query": "{ a }"}])).unwrap();
        assert!(graphql_queries_only(&batch, ct));
        assert!(!graphql_queries_only(b"[]", ct));
        // application/graphql: the body is the document.
        assert!(graphql_queries_only(b"{ a }", Some("application/graphql")));
        assert!(!graphql_queries_only(
            b"mutation { a }",
            Some("application/graphql")
        ));
        assert!(!graphql_queries_only(&vec![b' '; MAX_GRAPHQL_BODY + 1], ct));
        assert!(!graphql_queries_only(
            b"query=%7Ba%7D",
            Some("application/x-www-form-urlencoded")
        ));
    }

    #[test]
    fn requests_are_reads_commits_or_background() {
        let spec = NetworkPolicySpec {
            reads: vec![
                ReadEndpointSpec {
                    url: "https://example.com/graphql".into(),
                    methods: vec![],
                    graphql: Some(GraphqlOperation::Query),
                },
                ReadEndpointSpec {
                    url: "https://example.com/api/search".into(),
                    methods: vec!["POST".into(), "PUT".into()],
                    graphql: None,
                },
            ],
            telemetry: vec!["https://example.com/api/metrics*".into()],
            websockets: false,
        };
        let rules = NetworkRules::from_spec(&spec).unwrap();
        assert_eq!(NetworkRules::from_spec(&rules.to_spec()).unwrap(), rules);
        let mut own = OwnSites::default();
        own.add_url("https://www.example.com/home");
        own.add_host("127.0.0.1");
        assert!(own.contains("api.example.com"));
        assert!(own.contains("EXAMPLE.com."));
        assert!(!own.contains("example.org"));
        assert!(own.contains("127.0.0.1"));
        assert!(!own.contains("127.0.0.2"));
        let mut internal = OwnSites::default();
        internal.add_host("tool.internal");
        internal.add_host("localhost");
        assert!(internal.contains("api.tool.internal"));
        assert!(!internal.contains("other.internal"));
        assert!(internal.contains("localhost") && !internal.contains("a.localhost.x"));
        let kind = |r: &OutgoingRequest<'_>| classify(&rules, &own, r);
        assert_eq!(
            kind(&request("GET", "https://example.com/x")),
            RequestKind::Read
        );
        assert_eq!(
            kind(&request("POST", "https://api.example.com/like")),
            RequestKind::Commits
        );
        assert_eq!(
            kind(&request("POST", "https://analytics.other.net/collect")),
            RequestKind::Background
        );
        assert_eq!(
            kind(&request("POST", "https://example.com/api/metrics/v2")),
            RequestKind::Background
        );
        assert_eq!(
            kind(&request("PUT", "https://example.com/api/search?q=a")),
            RequestKind::Read
        );
        assert_eq!(
            kind(&request("DELETE", "https://example.com/api/search")),
            RequestKind::Commits
        );
        let query = serde_json::to_vec(&serde_json::json!({"query": "{ feed { id } }"})).unwrap();
        let mutation =
            serde_json::to_vec(&serde_json::json!({"query": "mutation { like }"})).unwrap();
        let mut gql = request("POST", "https://example.com/graphql");
        gql.body = Some(&query);
        assert_eq!(kind(&gql), RequestKind::Read);
        gql.body = Some(&mutation);
        assert_eq!(kind(&gql), RequestKind::Commits);
        gql.body = None;
        assert_eq!(kind(&gql), RequestKind::Commits);
    }

    #[test]
    fn bad_declarations_are_refused_naming_them() {
        let spec = |url: &str, methods: &[&str]| NetworkPolicySpec {
            reads: vec![ReadEndpointSpec {
                url: url.into(),
                methods: methods.iter().map(|m| (*m).to_owned()).collect(),
                graphql: None,
            }],
            ..NetworkPolicySpec::default()
        };
        let e = NetworkRules::from_spec(&spec("nope", &[])).unwrap_err();
        assert!(e.to_string().contains("network.reads[0].url"), "{e}");
        for m in ["GET", "post", "", "P O"] {
            let e = NetworkRules::from_spec(&spec("https://x.example/a", &[m])).unwrap_err();
            assert!(e.to_string().contains("network.reads[0].methods"), "{e}");
        }
    }
}
