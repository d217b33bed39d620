//! Prometheus metrics: calls, results by severity, and latency, per XR kind.
//! Served in the text exposition format at `/metrics`.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Method, Request, Response, server::conn::http1, service::service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::{counter::Counter, family::Family, histogram::Histogram};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use super::connections::{Connections, IdleLimits};
use crate::protocol::server::Severity;
use crate::run::Call;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    kind: String,
    severity: String,
}

/// The function's metrics; cheap to clone.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    calls: Family<KindLabels, Counter>,
    results: Family<ResultLabels, Counter>,
    latency: Family<KindLabels, Histogram>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("function_inference");
        let calls = Family::<KindLabels, Counter>::default();
        let results = Family::<ResultLabels, Counter>::default();
        // 50 µs to ~1.6 s: the function itself takes well under a millisecond.
        let latency = Family::<KindLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
                0.00005, 2.0, 16,
            ))
        });
        registry.register(
            "run_function_calls",
            "RunFunction calls by XR kind",
            calls.clone(),
        );
        registry.register(
            "run_function_results",
            "Results returned, by XR kind and severity",
            results.clone(),
        );
        registry.register(
            "run_function_duration_seconds",
            "Time spent in RunFunction, by XR kind",
            latency.clone(),
        );
        Self {
            inner: Arc::new(Inner {
                registry,
                calls,
                results,
                latency,
            }),
        }
    }

    /// Records one call.
    pub(crate) fn record(&self, call: &Call, elapsed: Duration) {
        let kind = KindLabels {
            kind: kind_label(&call.subject.kind).into(),
        };
        self.inner.calls.get_or_create(&kind).inc();
        self.inner
            .latency
            .get_or_create(&kind)
            .observe(elapsed.as_secs_f64());
        for r in &call.response.results {
            let severity = Severity::try_from(r.severity).map_or("unspecified", |s| match s {
                Severity::Fatal => "fatal",
                Severity::Warning => "warning",
                Severity::Normal => "normal",
                Severity::Unspecified => "unspecified",
            });
            self.inner
                .results
                .get_or_create(&ResultLabels {
                    kind: kind.kind.clone(),
                    severity: severity.into(),
                })
                .inc();
        }
    }

    /// The metrics in Prometheus' text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.inner.registry);
        out
    }
}

/// The `kind` label for an XR kind. Callers choose the kind, so it is kept
/// only when the function composes it: every other kind shares one series,
/// which keeps the number of series, and the page, bounded whatever callers send.
fn kind_label(kind: &str) -> &'static str {
    match crate::compose::KINDS.iter().find(|k| **k == kind) {
        Some(known) => known,
        // A call refused before its XR was read.
        None if kind.is_empty() => "",
        None => OTHER_KIND,
    }
}

/// The `kind` label of calls whose XR kind the function does not compose.
pub(crate) const OTHER_KIND: &str = "other";

/// Most connections open at once on the metrics port: a Prometheus server
/// or two, and probes.
const MAX_CONNECTIONS: usize = 64;

/// How long a metrics connection may stay without a request: Prometheus
/// scrapes every 15 to 60 s and keeps its connection between scrapes.
const IDLE_LIMITS: IdleLimits = IdleLimits {
    unused: Duration::from_secs(10),
    idle: Duration::from_secs(120),
};

/// Serves `/metrics` over HTTP/1.1 until the process exits, with the gRPC
/// port's bound on connections (see connections.rs).
pub(crate) async fn serve(listener: TcpListener, metrics: Metrics) {
    let connections = Connections::new(MAX_CONNECTIONS, IDLE_LIMITS, "metrics");
    let mut backoff = super::accept::Backoff::default();
    loop {
        let stream = super::accept::accept(&listener, &mut backoff, "metrics").await;
        let stream = connections.admit(stream).await;
        let connection = stream.connection().clone();
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                let metrics = metrics.clone();
                let call = connection.call_started();
                async move {
                    let _call = call;
                    let response = if req.uri().path() != "/metrics" {
                        Response::builder()
                            .status(404)
                            .body(Full::new(Bytes::from_static(b"see /metrics\n")))
                    } else if !matches!(*req.method(), Method::GET | Method::HEAD) {
                        // Only reading is offered; RFC 9110 asks 405 to list what is.
                        Response::builder()
                            .status(405)
                            .header("allow", "GET, HEAD")
                            .body(Full::new(Bytes::from_static(b"use GET\n")))
                    } else {
                        // hyper sends no body in answer to HEAD.
                        Response::builder()
                            .header("content-type", "text/plain; version=0.0.4; charset=utf-8")
                            .body(Full::new(Bytes::from(metrics.encode())))
                    };
                    response.map_err(|e| e.to_string())
                }
            });
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(Duration::from_secs(10))
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::server;
    use crate::run::Subject;

    fn call(kind: &str) -> Call {
        Call {
            subject: Subject {
                kind: kind.into(),
                ..Default::default()
            },
            response: server::RunFunctionResponse {
                results: vec![server::Result {
                    severity: Severity::Fatal as i32,
                    ..Default::default()
                }],
                ..Default::default()
            },
        }
    }

    #[test]
    fn kind_labels_come_from_a_bounded_set() {
        let metrics = Metrics::new();
        for kind in ["LLMInference", "Model", "AgentPool", ""] {
            metrics.record(&call(kind), Duration::from_millis(1));
        }
        let small = metrics.encode().len();
        // Callers choose kinds: 2,000 distinct ones and one of 1 MiB.
        for i in 0..2_000 {
            metrics.record(&call(&format!("Kind{i}")), Duration::from_millis(1));
        }
        metrics.record(&call(&"K".repeat(1024 * 1024)), Duration::from_millis(1));
        let text = metrics.encode();
        for want in [
            r#"function_inference_run_function_calls_total{kind="LLMInference"} 1"#,
            r#"function_inference_run_function_calls_total{kind="Model"} 1"#,
            r#"function_inference_run_function_calls_total{kind="AgentPool"} 1"#,
            r#"function_inference_run_function_calls_total{kind=""} 1"#,
            r#"function_inference_run_function_calls_total{kind="other"} 2001"#,
            r#"function_inference_run_function_results_total{kind="other",severity="fatal"} 2001"#,
        ] {
            assert!(
                text.lines().any(|l| l == want),
                "missing {want:?} in:\n{text}"
            );
        }
        assert!(!text.contains("Kind1"), "an unknown kind became a label");
        // One more series per metric (other), nothing per caller's kind.
        assert!(text.len() < 2 * small, "{} bytes, was {small}", text.len());
    }
}
