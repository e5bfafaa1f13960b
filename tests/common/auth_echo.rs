//! A Spark-auth server on a free port for the auth bootstraps' tests (`spark_auth`,
//! `spark_auth_legacy`): its first connection runs the server side, then echoes what it reads
//! (decrypted) back (encrypted), and the task ends with what was negotiated.

use sparkwire::spark::auth::{server_handshake, AuthError, Negotiated, ServerAuth};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A listener whose first connection runs the server side with `auth`, then echoes what it
/// reads (decrypted) back (encrypted).
pub async fn echo_server(auth: ServerAuth) -> (u16, JoinHandle<Result<Negotiated, AuthError>>) {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = l.local_addr().expect("addr").port();
    let task = tokio::spawn(async move {
        let (tcp, _) = l.accept().await.expect("accept");
        let mut s = server_handshake(tcp, &auth).await?;
        let mut buf = [0u8; 1024];
        loop {
            let n = s.read(&mut buf).await?;
            if n == 0 {
                return Ok(s.negotiated());
            }
            s.write_all(&buf[..n]).await?;
            s.flush().await?;
        }
    });
    (port, task)
}
