//! Traces: OpenTelemetry spans exported over OTLP (HTTP, protobuf) when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; off
//! otherwise, with nothing on the hot path but the request's and the job's spans the logs
//! already carry (the phases' spans are `debug`: disabled unless a layer wants them).
//!
//! What a trace holds: a `request` span per HTTP call (`POST /v1/tasks`: its route
//! template, never a path with ids or a query), the caller's tenant, its status; a
//! `task.run` span per task's run, child of the call that released it, with the task id and
//! tenant; their phases as children (`acquire`, each `step` by index and action, `verify`,
//! `release`, the session's `write_back`), and each call on the store (`store`, by
//! operation). Every span of a process carries the replica (`service.instance.id`, its
//! node id) and the version as resource attributes. Never a secret, a typed value, a URL
//! or a selector: only the spans under [`TARGET`] are exported, and their fields are the
//! ones above; log events are not.
//!
//! Across processes, W3C Trace Context (`propagate`): a caller's `traceparent` is
//! continued, a relayed call carries the hub's to the runner (one trace from hub to runner
//! and back), and a replica's forwarding hop carries its own to the owner.

mod export;
pub(crate) mod propagate;

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use secrecy::{ExposeSecret as _, SecretString};
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;
use url::Url;

/// The target of every span a trace exports (`RUST_LOG=abr::trace=off` keeps them out of
/// the logs too).
pub const TARGET: &str = abr_engine::TRACE_TARGET;

/// How long an export may take, unless `OTEL_EXPORTER_OTLP_TIMEOUT` says (milliseconds).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and how traces are exported, from the standard OpenTelemetry variables.
#[derive(Clone)]
pub struct TraceSettings {
    /// The URL spans are posted to (`…/v1/traces`).
    pub endpoint: Url,
    /// Headers of every export (`OTEL_EXPORTER_OTLP_HEADERS`): a collector's key, a secret.
    headers: Vec<(String, SecretString)>,
    /// `service.name` (`OTEL_SERVICE_NAME`, default `abr`).
    pub service_name: String,
    /// The deadline of one export.
    pub timeout: Duration,
}

impl std::fmt::Debug for TraceSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("TraceSettings")
            .field("endpoint", &self.endpoint.as_str())
            .field("headers", &names)
            .field("service_name", &self.service_name)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// A trace setting that cannot be used: the variable, and why (never its value).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {reason}")]
pub struct SettingRefused {
    /// The environment variable.
    pub key: String,
    /// What is wrong.
    pub reason: String,
}

fn invalid(key: &str, reason: impl Into<String>) -> SettingRefused {
    SettingRefused {
        key: key.to_owned(),
        reason: reason.into(),
    }
}

impl TraceSettings {
    /// Exporting to `endpoint` (the full URL of the traces), with no headers.
    pub fn to(endpoint: Url) -> Self {
        Self {
            endpoint,
            headers: Vec::new(),
            service_name: "abr".to_owned(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The settings the environment gives: `None` when no OTLP endpoint is set, or
    /// `OTEL_SDK_DISABLED=true`, or `OTEL_TRACES_EXPORTER=none`.
    ///
    /// # Errors
    /// [`SettingRefused`] naming the variable: an endpoint that is not an `http(s)`
    /// URL or carries credentials, a protocol other than `http/protobuf`, an exporter other
    /// than `otlp`, a header entry that is not `name=value` (its value never shown), a
    /// timeout that is not a number of milliseconds.
    pub fn from_env(env: &HashMap<String, String>) -> Result<Option<Self>, SettingRefused> {
        let get = |key: &str| env.get(key).map(|v| v.trim()).filter(|v| !v.is_empty());
        if get("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        match get("OTEL_TRACES_EXPORTER") {
            None | Some("otlp") => {}
            Some("none") => return Ok(None),
            Some(_) => {
                return Err(invalid(
                    "OTEL_TRACES_EXPORTER",
                    "ABR exports traces over OTLP only: `otlp` or `none`",
                ));
            }
        }
        let (key, endpoint) = if let Some(url) = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url.to_owned())
        } else if let Some(base) = get("OTEL_EXPORTER_OTLP_ENDPOINT") {
            // The base of every signal: traces go to its `v1/traces`.
            let base = base.trim_end_matches('/');
            ("OTEL_EXPORTER_OTLP_ENDPOINT", format!("{base}/v1/traces"))
        } else {
            return Ok(None);
        };
        let endpoint = Url::parse(&endpoint).map_err(|e| invalid(key, e.to_string()))?;
        if !matches!(endpoint.scheme(), "http" | "https") {
            return Err(invalid(
                key,
                "an OTLP endpoint is an http:// or https:// URL",
            ));
        }
        if !endpoint.username().is_empty() || endpoint.password().is_some() {
            return Err(invalid(
                key,
                "credentials go in OTEL_EXPORTER_OTLP_HEADERS, not in the URL",
            ));
        }
        for key in [
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ] {
            if get(key).is_some_and(|p| p != "http/protobuf") {
                return Err(invalid(
                    key,
                    "ABR exports OTLP over HTTP with protobuf: `http/protobuf`",
                ));
            }
        }
        let mut headers: Vec<(String, SecretString)> = Vec::new();
        for key in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ] {
            for (name, value) in parse_headers(key, get(key).unwrap_or_default())? {
                headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
                headers.push((name, value));
            }
        }
        let timeout = match get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
            .map(|v| ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", v))
            .or_else(|| {
                get("OTEL_EXPORTER_OTLP_TIMEOUT").map(|v| ("OTEL_EXPORTER_OTLP_TIMEOUT", v))
            }) {
            None => DEFAULT_TIMEOUT,
            Some((key, ms)) => match ms.parse::<u64>() {
                Ok(ms) if ms > 0 => Duration::from_millis(ms),
                _ => return Err(invalid(key, "a positive number of milliseconds")),
            },
        };
        Ok(Some(Self {
            endpoint,
            headers,
            service_name: get("OTEL_SERVICE_NAME").unwrap_or("abr").to_owned(),
            timeout,
        }))
    }
}

/// `name=value` entries separated by commas, the values percent-decoded (the W3C Baggage
/// form the OpenTelemetry specification gives these variables).
fn parse_headers(key: &str, list: &str) -> Result<Vec<(String, SecretString)>, SettingRefused> {
    let mut out = Vec::new();
    for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, value) = entry
            .split_once('=')
            .map(|(n, v)| (n.trim(), v.trim()))
            .filter(|(n, _)| axum::http::HeaderName::from_bytes(n.as_bytes()).is_ok())
            .ok_or_else(|| invalid(key, "each entry is name=value, the name a header name"))?;
        let value = percent_encoding::percent_decode_str(value)
            .decode_utf8()
            .ok()
            .filter(|v| axum::http::HeaderValue::from_str(v).is_ok())
            .ok_or_else(|| invalid(key, format!("the value of `{name}` is not a header value")))?;
        out.push((name.to_owned(), SecretString::from(value.into_owned())));
    }
    Ok(out)
}

/// The exporter could not be built.
#[derive(Debug, thiserror::Error)]
#[error("the OTLP exporter cannot be built: {0}")]
pub struct TraceStartError(String);

/// A process's trace pipeline: spans batched on the SDK's own thread and posted to the
/// collector. [`Self::layer`] feeds it from `tracing`.
#[derive(Debug, Clone)]
pub struct Traces {
    provider: SdkTracerProvider,
}

impl Traces {
    /// Exports as `settings` say, every span marked as this replica's (`instance`, its node
    /// id) and this version's.
    ///
    /// # Errors
    /// [`TraceStartError`] when the exporter refuses its settings.
    pub fn start(settings: &TraceSettings, instance: &str) -> Result<Self, TraceStartError> {
        let headers = settings
            .headers
            .iter()
            .map(|(n, v)| (n.clone(), v.expose_secret().to_owned()))
            .collect();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(settings.endpoint.as_str())
            .with_timeout(settings.timeout)
            .with_headers(headers)
            .with_http_client(export::BlockingExport::new(settings.timeout))
            .build()
            .map_err(|e| TraceStartError(e.to_string()))?;
        let resource = Resource::builder()
            .with_service_name(settings.service_name.clone())
            .with_attributes([
                KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
                KeyValue::new("service.instance.id", instance.to_owned()),
            ])
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        Ok(Self { provider })
    }

    /// The layer that turns ABR's spans ([`TARGET`]) into OpenTelemetry spans; every other
    /// span and every log event stays out.
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("abr"))
            .with_location(false)
            .with_threads(false)
            .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
                meta.is_span() && meta.target() == TARGET
            }))
    }

    /// Sends what is batched now (blocking: not on a runtime's thread).
    pub fn flush(&self) {
        if let Err(e) = self.provider.force_flush() {
            tracing::warn!(error = %e, "traces could not be flushed");
        }
    }

    /// Sends what is batched and stops exporting (blocking: not on a runtime's thread).
    pub fn shutdown(&self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "the trace exporter did not stop cleanly");
        }
    }
}

/// The pipeline of this process's `abr` command, stopped when it exits ([`shutdown`]).
static PROCESS: OnceLock<Traces> = OnceLock::new();

/// Keeps `traces` as this process's, for [`shutdown`].
pub(crate) fn keep(traces: Traces) {
    let _ = PROCESS.set(traces);
}

/// Sends what this process's pipeline holds and stops it (the command's last step).
pub(crate) fn shutdown() {
    if let Some(traces) = PROCESS.get() {
        traces.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::env_of as env;

    #[test]
    fn traces_are_off_unless_an_endpoint_is_set() {
        assert!(TraceSettings::from_env(&env(&[])).unwrap().is_none());
        let on = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")];
        let settings = TraceSettings::from_env(&env(&on)).unwrap().unwrap();
        assert_eq!(
            settings.endpoint.as_str(),
            "http://collector:4318/v1/traces"
        );
        assert_eq!(settings.service_name, "abr");
        assert_eq!(settings.timeout, DEFAULT_TIMEOUT);
        for off in [
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ] {
            assert!(
                TraceSettings::from_env(&env(&[on[0], off]))
                    .unwrap()
                    .is_none()
            );
        }
        let own = env(&[
            on[0],
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://c.example/x"),
            ("OTEL_SERVICE_NAME", "abr-eu"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
        ]);
        let settings = TraceSettings::from_env(&own).unwrap().unwrap();
        assert_eq!(settings.endpoint.as_str(), "https://c.example/x");
        assert_eq!(settings.service_name, "abr-eu");
        assert_eq!(settings.timeout, Duration::from_millis(2500));
    }

    #[test]
    fn bad_settings_are_refused_by_name_and_never_show_a_header_value() {
        let base = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
        for (pair, key) in [
            (
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://c"),
                "OTEL_EXPORTER_OTLP_ENDPOINT",
            ),
            (
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://u:SECRET-pw@c"),
                "OTEL_EXPORTER_OTLP_ENDPOINT",
            ),
            (
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                "OTEL_EXPORTER_OTLP_PROTOCOL",
            ),
            (("OTEL_TRACES_EXPORTER", "zipkin"), "OTEL_TRACES_EXPORTER"),
            (
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "soon"),
                "OTEL_EXPORTER_OTLP_TIMEOUT",
            ),
            (
                ("OTEL_EXPORTER_OTLP_HEADERS", "SECRET-no-equals"),
                "OTEL_EXPORTER_OTLP_HEADERS",
            ),
            (
                ("OTEL_EXPORTER_OTLP_HEADERS", "x-key=SECRET%0Aline"),
                "OTEL_EXPORTER_OTLP_HEADERS",
            ),
        ] {
            let vars = if pair.0 == base.0 {
                env(&[pair])
            } else {
                env(&[base, pair])
            };
            let refused = TraceSettings::from_env(&vars).unwrap_err();
            let text = refused.to_string();
            assert!(text.starts_with(key), "{text}");
            assert!(!text.contains("SECRET"), "{text}");
        }
    }

    #[test]
    fn headers_are_decoded_the_traces_own_win_and_debug_shows_no_value() {
        let vars = env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "x-api-key=SECRET%20one, x-team=a",
            ),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X-Api-Key=SECRET-two"),
        ]);
        let settings = TraceSettings::from_env(&vars).unwrap().unwrap();
        let headers: Vec<(&str, &str)> = settings
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.expose_secret()))
            .collect();
        assert_eq!(headers, [("x-team", "a"), ("X-Api-Key", "SECRET-two")]);
        let debug = format!("{settings:?}");
        assert!(!debug.contains("SECRET"), "{debug}");
        assert!(debug.contains("X-Api-Key"), "{debug}");
    }
}
