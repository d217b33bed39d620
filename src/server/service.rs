//! The `RunFunction` handler: runs the core, records metrics and a debug
//! line per call, and turns a panic (a bug, never expected) into a FATAL
//! result so one bad request cannot take the server down.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use tonic::{Request, Response, Status};

use super::metrics::Metrics;
use crate::protocol::server::{self, function_runner_service_server::FunctionRunnerService};
use crate::request;
use crate::response;
use crate::run::{Call, Subject};
use crate::server::request_log::{self, escape_control};

/// What the server runs for each call: [`crate::run::run_function`], or
/// `run::noop` to measure the transport's cost (`--noop`).
pub type Core = fn(server::RunFunctionRequest) -> Call;

/// The gRPC service.
#[derive(Clone)]
pub struct Handler {
    core: Core,
    metrics: Metrics,
}

impl Handler {
    /// A handler running `core`.
    pub fn new(core: Core, metrics: Metrics) -> Self {
        Self { core, metrics }
    }

    /// The call; a panic (a bug, never expected) becomes a FATAL result,
    /// and the server keeps serving.
    fn call(&self, req: server::RunFunctionRequest) -> Call {
        let tag = req.meta.as_ref().map(|m| m.tag.clone()).unwrap_or_default();
        // Read only to say which XR a panic was about.
        let subject = match request::observed_composite(&req) {
            Ok(xr) => Subject {
                kind: xr.kind,
                name: xr.name,
                namespace: xr.namespace,
            },
            Err(_) => Subject::default(),
        };
        match catch_unwind(AssertUnwindSafe(|| (self.core)(req))) {
            Ok(call) => call,
            Err(panic) => {
                let what = panic_message(panic.as_ref());
                let Subject { kind, name, .. } = &subject;
                tracing::error!(kind = %escape_control(kind), name = %escape_control(name), panic = %escape_control(&what), "RunFunction panicked; answered with a FATAL result");
                let response = server::RunFunctionResponse {
                    meta: Some(server::ResponseMeta { tag, ttl: None }),
                    results: vec![response::fatal(
                        "InternalError",
                        format!(
                            "function-inference failed on {kind} {name:?}: {what}; this is a bug, please report it"
                        ),
                    )],
                    ..Default::default()
                };
                Call { subject, response }
            }
        }
    }
}

#[tonic::async_trait]
impl FunctionRunnerService for Handler {
    async fn run_function(
        &self,
        request: Request<server::RunFunctionRequest>,
    ) -> Result<Response<server::RunFunctionResponse>, Status> {
        let req = request.into_inner();
        if tracing::enabled!(tracing::Level::DEBUG) {
            // Identity and size only: a request carries whole objects and secrets.
            tracing::debug!(request = %request_log::summary(&req), "RunFunctionRequest");
        }
        let started = Instant::now();
        let call = self.call(req);
        let elapsed = started.elapsed();
        self.metrics.record(&call, elapsed);
        // The names come from the request: escaped, so that a newline in
        // one cannot forge a log line.
        tracing::debug!(
            kind = %escape_control(&call.subject.kind),
            name = %escape_control(&call.subject.name),
            namespace = %escape_control(&call.subject.namespace),
            results = call.response.results.len(),
            elapsed_us = elapsed.as_micros() as u64,
            "RunFunction"
        );
        Ok(Response::new(call.response))
    }
}

/// The text a panic carried, if any.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

#[cfg(test)]
mod tests {

    use serde_json::json;

    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::protocol::fnv1;

    /// A log sink the test can read back.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_newline_in_a_name_does_not_forge_a_log_line() {
        let sink = Sink::default();
        let writer = sink.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        let xr = json!({"apiVersion": "infer.dev/v1alpha1", "kind": "Model",
                        "metadata": {"name": "x\nERROR forged line", "namespace": "ns\r"}, "spec": {}});
        let req = fnv1::RunFunctionRequest {
            observed: Some(fnv1::State {
                composite: Some(fnv1::Resource {
                    resource: Some(crate::protocol::resource::json_to_struct(
                        xr.as_object().unwrap(),
                    )),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let handler = Handler::new(crate::run::run_function, Metrics::new());
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(handler.run_function(Request::new(crate::protocol::to_server(&req))))
            .unwrap();
        let log = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert!(log.contains("RunFunction"), "nothing logged:\n{log}");
        for line in log.lines().filter(|l| l.contains("forged")) {
            assert!(
                line.contains(r"x\nERROR forged line"),
                "forged line: {line:?} in\n{log}"
            );
        }
        assert!(
            !log.contains('\r'),
            "a carriage return reached the log:\n{log}"
        );
    }
}
