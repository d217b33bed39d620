//! Mutual TLS as Crossplane's function spec requires: the server presents
//! tls.crt/tls.key and accepts only clients whose certificate is signed by
//! ca.crt. rustls speaks TLS 1.2 and 1.3 only.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use tonic::transport::{Certificate, Identity, ServerTlsConfig};

/// How long a client may take to complete the TLS handshake. Handshakes run
/// concurrently, so a client that connects and never finishes (or never
/// speaks) delays no one; the timeout makes sure it also costs nothing for long.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads `tls.crt`, `tls.key` and `ca.crt` from `dir`.
pub fn server_config(dir: &Path) -> anyhow::Result<ServerTlsConfig> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read(&path).with_context(|| {
            format!(
                "cannot read {} (--tls-certs-dir needs tls.crt, tls.key and ca.crt)",
                path.display()
            )
        })
    };
    let identity = Identity::from_pem(read("tls.crt")?, read("tls.key")?);
    let ca = Certificate::from_pem(read("ca.crt")?);
    Ok(ServerTlsConfig::new()
        .identity(identity)
        .client_ca_root(ca)
        .client_auth_optional(false)
        .timeout(HANDSHAKE_TIMEOUT))
}
