//! Prometheus metrics: calls, results by severity, and latency, per XR kind.
//! Served in the text exposition format at `/metrics`.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Request, Response, server::conn::http1, service::service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::{counter::Counter, family::Family, histogram::Histogram};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use crate::function::Call;
use crate::proto::wire::Severity;

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
    pub fn record(&self, call: &Call, elapsed: Duration) {
        let kind = KindLabels {
            kind: call.subject.kind.to_string(),
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
                    kind: call.subject.kind.to_string(),
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

/// Serves `/metrics` over HTTP/1.1 until the process exits.
pub async fn serve(listener: TcpListener, metrics: Metrics) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                let metrics = metrics.clone();
                async move {
                    let response = if req.uri().path() == "/metrics" {
                        Response::builder()
                            .header("content-type", "text/plain; version=0.0.4; charset=utf-8")
                            .body(Full::new(Bytes::from(metrics.encode())))
                    } else {
                        Response::builder()
                            .status(404)
                            .body(Full::new(Bytes::from_static(b"see /metrics\n")))
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
