//! How a connection is secured: the shared secret the handshake proves (protocol/handshake.md
//! §10), the admin secret, and TLS (feature `tls`). [`Security`] runs TLS and then the handshake
//! over a byte stream; [`Stream`] is that byte stream, plain or encrypted.
//!
//! A shared secret authenticates both sides but does not encrypt: the envelopes that follow the
//! handshake (LaunchExecutor carries an application's command line and environment) cross the
//! wire in clear unless TLS is on too.

use std::io;
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::wire::handshake::{
    client_handshake, server_handshake, Established, HandshakeError, Identity, Role, Secret,
};

#[cfg(feature = "tls")]
pub use super::tls::{TlsError, TlsSettings};

/// The most bytes a secret file may hold.
pub const MAX_SECRET_FILE: u64 = 64 * 1024;

/// A connection's security settings. The default is none: no secret, no TLS.
#[derive(Debug, Clone, Default)]
pub struct Security {
    /// The shared secret. With one, this side exchanges envelopes only with peers that proved it.
    pub secret: Option<Secret>,
    /// The admin secret: a server verifies it, a client proves it (state-changing UI actions).
    pub admin_secret: Option<Secret>,
    /// TLS on the connection, if any.
    #[cfg(feature = "tls")]
    pub tls: Option<TlsSettings>,
}

impl Security {
    /// Authenticates with `secret`, no admin secret and no TLS.
    pub fn with_secret(secret: Secret) -> Self {
        Security {
            secret: Some(secret),
            ..Security::default()
        }
    }

    /// True when a shared secret is configured.
    pub fn authenticates(&self) -> bool {
        self.secret.is_some()
    }

    /// True when TLS is configured.
    pub fn encrypts(&self) -> bool {
        #[cfg(feature = "tls")]
        {
            self.tls.is_some()
        }
        #[cfg(not(feature = "tls"))]
        {
            false
        }
    }

    /// `local` with this side's secrets.
    pub fn identity(&self, local: &Identity) -> Identity {
        local
            .clone()
            .with_secret(self.secret.clone())
            .with_admin_secret(self.admin_secret.clone())
    }

    /// The client's side: TLS first when configured (the server's certificate must name
    /// `host`, or the TLS settings' server name), then the handshake as `local` with this side's
    /// secrets. Takes no time limit itself: wrap it in `tokio::time::timeout`.
    pub async fn client_handshake<IO>(
        &self,
        io: IO,
        local: &Identity,
        host: &str,
    ) -> Result<Established<Stream<IO>>, HandshakeError>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        let stream = self.client_stream(io, host).await?;
        client_handshake(stream, &self.identity(local)).await
    }

    /// The server's side: TLS first when configured, then the handshake as `local` with this
    /// side's secrets, taking the client roles `accept` allows.
    pub async fn server_handshake<IO>(
        &self,
        io: IO,
        local: &Identity,
        accept: impl Fn(Role) -> bool,
    ) -> Result<Established<Stream<IO>>, HandshakeError>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        let stream = self.server_stream(io).await?;
        server_handshake(stream, &self.identity(local), accept).await
    }

    /// `io`, with TLS as a client when configured.
    pub async fn client_stream<IO>(&self, io: IO, host: &str) -> Result<Stream<IO>, HandshakeError>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.tls {
            return tls
                .connect(io, host)
                .await
                .map(|s| Stream::Client(Box::new(s)));
        }
        let _ = host;
        Ok(Stream::Plain(io))
    }

    /// `io`, with TLS as a server when configured.
    pub async fn server_stream<IO>(&self, io: IO) -> Result<Stream<IO>, HandshakeError>
    where
        IO: AsyncRead + AsyncWrite + Unpin,
    {
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.tls {
            return tls.accept(io).await.map(|s| Stream::Server(Box::new(s)));
        }
        Ok(Stream::Plain(io))
    }
}

/// A connection's byte stream: plain, or TLS as a client or as a server.
#[derive(Debug)]
pub enum Stream<IO> {
    /// No encryption.
    Plain(IO),
    /// TLS, this side the client.
    #[cfg(feature = "tls")]
    Client(Box<tokio_rustls::client::TlsStream<IO>>),
    /// TLS, this side the server.
    #[cfg(feature = "tls")]
    Server(Box<tokio_rustls::server::TlsStream<IO>>),
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncRead for Stream<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            #[cfg(feature = "tls")]
            Stream::Client(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            #[cfg(feature = "tls")]
            Stream::Server(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Stream<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            #[cfg(feature = "tls")]
            Stream::Client(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            #[cfg(feature = "tls")]
            Stream::Server(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            #[cfg(feature = "tls")]
            Stream::Client(s) => Pin::new(s.as_mut()).poll_flush(cx),
            #[cfg(feature = "tls")]
            Stream::Server(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            #[cfg(feature = "tls")]
            Stream::Client(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            #[cfg(feature = "tls")]
            Stream::Server(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Why a secret file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SecretFileError {
    /// It cannot be read.
    #[error("cannot read the secret file {path}: {message}")]
    Unreadable {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// Others than its owner and group may read or write it.
    #[error("the secret file {path} is accessible to other users (mode {mode:o}); make it private: chmod 600 {path}")]
    NotPrivate {
        /// The file.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// It holds nothing but line ends, or more than [`MAX_SECRET_FILE`] bytes.
    #[error("the secret file {path} {why}")]
    BadContent {
        /// The file.
        path: String,
        /// What is wrong.
        why: &'static str,
    },
}

/// Reads a secret file: its bytes, less one trailing line end (`\n` or `\r\n`). The file must be
/// private (on Unix: no permission for others) and hold at least one byte besides the line end.
pub fn read_secret_file(path: &Path) -> Result<Secret, SecretFileError> {
    let shown = path.display().to_string();
    let unreadable = |e: io::Error| SecretFileError::Unreadable {
        path: shown.clone(),
        message: e.to_string(),
    };
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o007 != 0 {
            return Err(SecretFileError::NotPrivate { path: shown, mode });
        }
    }
    if meta.len() > MAX_SECRET_FILE {
        return Err(SecretFileError::BadContent {
            path: shown,
            why: "is over 64 KiB",
        });
    }
    let mut bytes = std::fs::read(path).map_err(unreadable)?;
    if bytes.last() == Some(&b'\n') {
        bytes.pop();
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
    }
    Secret::new(bytes).ok_or(SecretFileError::BadContent {
        path: shown,
        why: "is empty",
    })
}

/// A fresh random secret: 32 bytes from the operating system's random source, written as 64
/// hexadecimal digits (so that it can be put in a file and read back by [`read_secret_file`]).
pub fn generate_secret() -> Result<Secret, HandshakeError> {
    let raw = crate::wire::handshake::fresh_nonce()?;
    let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    Secret::new(hex.into_bytes())
        .ok_or_else(|| HandshakeError::Random("an empty secret".to_string()))
}

/// Writes `secret` to a new file at `path` that only its owner may read or write (mode 0600 on
/// Unix); fails if the file exists.
pub fn write_secret_file(path: &Path, secret: &Secret) -> io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(secret.expose())?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "sparkwire-secret-test-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&dir);
        dir
    }

    #[test]
    fn a_written_secret_reads_back_and_is_private() {
        let path = temp("roundtrip");
        let secret = generate_secret().expect("random");
        assert_eq!(secret.len(), 64);
        write_secret_file(&path, &secret).expect("written");
        assert_eq!(read_secret_file(&path), Ok(secret.clone()));
        assert!(
            write_secret_file(&path, &secret).is_err(),
            "never overwrites"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path)
                .expect("exists")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let _ = std::fs::remove_file(&path);
        assert_ne!(generate_secret().ok(), generate_secret().ok());
    }

    #[cfg(unix)]
    #[test]
    fn a_world_readable_or_empty_secret_file_is_refused_and_one_line_end_is_dropped() {
        use std::os::unix::fs::PermissionsExt;
        let path = temp("modes");
        std::fs::write(&path, "abc\r\n").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(matches!(
            read_secret_file(&path),
            Err(SecretFileError::NotPrivate { mode: 0o644, .. })
        ));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        assert_eq!(
            read_secret_file(&path),
            Ok(Secret::new(b"abc".to_vec()).expect("s"))
        );
        std::fs::write(&path, "\n").expect("write");
        assert!(matches!(
            read_secret_file(&path),
            Err(SecretFileError::BadContent { .. })
        ));
        let _ = std::fs::remove_file(&path);
        assert!(matches!(
            read_secret_file(&path),
            Err(SecretFileError::Unreadable { .. })
        ));
    }
}
