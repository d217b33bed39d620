//! Refuses requests that are not gRPC in protobuf with HTTP 415, as the gRPC
//! over HTTP/2 specification asks ("If Content-Type does not begin with
//! application/grpc, gRPC servers SHOULD respond with HTTP status of 415")
//! and grpc-go does. The specification names the codec in the content type
//! (`application/grpc+json`); we speak protobuf only, and refuse the others
//! the same way. tonic decodes any body as protobuf whatever its type.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::codegen::http::{HeaderValue, Request, Response, StatusCode, header};

/// The layer; see the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct GrpcContentTypeLayer;

impl<S> tower::Layer<S> for GrpcContentTypeLayer {
    type Service = GrpcContentType<S>;
    fn layer(&self, inner: S) -> Self::Service {
        GrpcContentType { inner }
    }
}

/// The service the layer makes.
#[derive(Clone, Debug)]
pub(crate) struct GrpcContentType<S> {
    inner: S,
}

/// Whether `request` says it carries gRPC in protobuf: `application/grpc`
/// or `application/grpc+proto`, either with `;parameters` or without.
fn is_grpc<B>(request: &Request<B>) -> bool {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let media_type = v.split(';').next().unwrap_or_default().trim();
            media_type.eq_ignore_ascii_case("application/grpc")
                || media_type.eq_ignore_ascii_case("application/grpc+proto")
        })
}

impl<S, ReqBody> tower::Service<Request<ReqBody>> for GrpcContentType<S>
where
    S: tower::Service<Request<ReqBody>, Response = Response<Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        if is_grpc(&request) {
            return Box::pin(self.inner.call(request));
        }
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::UNSUPPORTED_MEDIA_TYPE;
        response
            .headers_mut()
            .insert(header::ACCEPT, HeaderValue::from_static("application/grpc"));
        Box::pin(std::future::ready(Ok(response)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(content_type: Option<&str>) -> bool {
        let mut r = Request::new(());
        if let Some(t) = content_type {
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_str(t).unwrap());
        }
        is_grpc(&r)
    }

    #[test]
    fn only_grpc_content_types_are_grpc() {
        for ok in [
            "application/grpc",
            "application/grpc+proto",
            "application/GRPC;charset=utf-8",
            "application/grpc+proto; charset=utf-8",
        ] {
            assert!(with(Some(ok)), "{ok}");
        }
        for refused in [
            "application/json",
            "application/grpcx",
            "application/grpc+json",
            "application/grpc+thrift",
            "text/plain",
            "",
        ] {
            assert!(!with(Some(refused)), "{refused}");
        }
        assert!(!with(None));
    }
}
