//! TLS for connections (feature `tls`): rustls with the `ring` provider, TLS 1.2 and 1.3.
//!
//! A side that listens needs a certificate chain and its private key (`--tls-cert`,
//! `--tls-key`); a side that dials needs the certificate authorities it trusts (`--tls-ca`) and
//! checks that the server's certificate names the host it dialled. Client certificates are not
//! asked for: peers prove who they are with the shared secret in the handshake.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::wire::handshake::HandshakeError;

/// Why TLS settings cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A file cannot be read.
    #[error("cannot read {path}: {message}")]
    Unreadable {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// A PEM input holds no certificate, no key, or something rustls refuses.
    #[error("TLS {what}: {message}")]
    Invalid {
        /// Which input.
        what: &'static str,
        /// Why.
        message: String,
    },
}

/// TLS settings: the server side (certificate and key), the client side (trusted authorities),
/// or both.
#[derive(Clone)]
pub struct TlsSettings {
    server: Option<TlsAcceptor>,
    client: Option<TlsConnector>,
    /// The name the server's certificate must carry when this side dials; `None`: the host
    /// dialled.
    pub server_name: Option<String>,
}

impl fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsSettings")
            .field("server", &self.server.is_some())
            .field("client", &self.client.is_some())
            .field("server_name", &self.server_name)
            .finish()
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn invalid(what: &'static str) -> impl Fn(String) -> TlsError {
    move |message| TlsError::Invalid { what, message }
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::Unreadable {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

fn certs(pem: &[u8], what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(what)(e.to_string()))?;
    if certs.is_empty() {
        return Err(invalid(what)("no PEM certificate found".into()));
    }
    Ok(certs)
}

impl TlsSettings {
    /// Settings from PEM text: `cert` and `key` make the server side (both or neither), `ca`
    /// the client side. At least one side must be given.
    pub fn from_pem(
        cert: Option<&[u8]>,
        key: Option<&[u8]>,
        ca: Option<&[u8]>,
    ) -> Result<TlsSettings, TlsError> {
        let server = match (cert, key) {
            (Some(cert), Some(key)) => {
                let chain = certs(cert, "certificate")?;
                let key = PrivateKeyDer::from_pem_slice(key)
                    .map_err(|e| invalid("private key")(e.to_string()))?;
                let config = rustls::ServerConfig::builder_with_provider(provider())
                    .with_safe_default_protocol_versions()
                    .map_err(|e| invalid("server")(e.to_string()))?
                    .with_no_client_auth()
                    .with_single_cert(chain, key)
                    .map_err(|e| invalid("certificate and key")(e.to_string()))?;
                Some(TlsAcceptor::from(Arc::new(config)))
            }
            (None, None) => None,
            _ => {
                return Err(invalid("server")(
                    "a certificate needs its private key, and a key its certificate".into(),
                ))
            }
        };
        let client = match ca {
            Some(ca) => {
                let mut roots = rustls::RootCertStore::empty();
                for cert in certs(ca, "certificate authorities")? {
                    roots
                        .add(cert)
                        .map_err(|e| invalid("certificate authorities")(e.to_string()))?;
                }
                let config = rustls::ClientConfig::builder_with_provider(provider())
                    .with_safe_default_protocol_versions()
                    .map_err(|e| invalid("client")(e.to_string()))?
                    .with_root_certificates(roots)
                    .with_no_client_auth();
                Some(TlsConnector::from(Arc::new(config)))
            }
            None => None,
        };
        if server.is_none() && client.is_none() {
            return Err(invalid("settings")(
                "give a certificate and key, or certificate authorities, or both".into(),
            ));
        }
        Ok(TlsSettings {
            server,
            client,
            server_name: None,
        })
    }

    /// Settings from PEM files, as [`from_pem`](Self::from_pem).
    pub fn from_files(
        cert: Option<&Path>,
        key: Option<&Path>,
        ca: Option<&Path>,
    ) -> Result<TlsSettings, TlsError> {
        let cert = cert.map(read).transpose()?;
        let key = key.map(read).transpose()?;
        let ca = ca.map(read).transpose()?;
        TlsSettings::from_pem(cert.as_deref(), key.as_deref(), ca.as_deref())
    }

    /// True when this side can accept TLS connections (it has a certificate and key).
    pub fn serves(&self) -> bool {
        self.server.is_some()
    }

    /// True when this side can dial TLS connections (it has certificate authorities).
    pub fn dials(&self) -> bool {
        self.client.is_some()
    }

    pub(crate) async fn connect<IO>(
        &self,
        io: IO,
        host: &str,
    ) -> Result<tokio_rustls::client::TlsStream<IO>, HandshakeError>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        let Some(connector) = &self.client else {
            return Err(HandshakeError::Tls(
                "this side has no certificate authorities to check the server with (--tls-ca)"
                    .into(),
            ));
        };
        let name = self.server_name.as_deref().unwrap_or(host);
        let name = ServerName::try_from(name.to_string())
            .map_err(|e| HandshakeError::Tls(format!("server name {name:?}: {e}")))?;
        connector
            .connect(name, io)
            .await
            .map_err(|e| HandshakeError::Tls(e.to_string()))
    }

    pub(crate) async fn accept<IO>(
        &self,
        io: IO,
    ) -> Result<tokio_rustls::server::TlsStream<IO>, HandshakeError>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        let Some(acceptor) = &self.server else {
            return Err(HandshakeError::Tls(
                "this side has no certificate to accept TLS with (--tls-cert, --tls-key)".into(),
            ));
        };
        acceptor
            .accept(io)
            .await
            .map_err(|e| HandshakeError::Tls(e.to_string()))
    }
}
