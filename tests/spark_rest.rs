//! Spark's REST submission protocol on a sparkwire master (`spark::start_rest`, `sparkwire
//! master --spark-rest-port`): what `spark-submit --kill ID` and `--status ID` ask, answered
//! with Spark's JSON, the master deciding (SPEC §14.2 Z4). `scripts/spark/master.sh` runs real
//! `spark-submit` against it.

mod common;

use std::time::Duration;

use serde_json::Value;
use sparkwire::connection::{connect_tcp, Connection, ConnectionConfig};
use sparkwire::messages::deploy::{RequestSubmitDriver, SubmitDriverResponse};
use sparkwire::messages::{Command, DeployMessage, DriverDescription};
use sparkwire::reference::master::{Master, MasterConfig, MasterHandle};
use sparkwire::spark::{start_rest, RestConfig, ServerHandle, UNKNOWN_PROTOCOL_VERSION};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Reply;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use common::files::temp_dir;
use common::processes::run;

async fn cluster() -> (MasterHandle, ServerHandle) {
    let master = Master::start(MasterConfig {
        port: 0,
        ..MasterConfig::default()
    })
    .await
    .expect("the master starts");
    let rest = start_rest(RestConfig::new("127.0.0.1", 0, master.addr()))
        .await
        .expect("the REST server starts");
    (master, rest)
}

/// A driver client connected to the master.
async fn client(master: &MasterHandle) -> Connection<DeployMessage> {
    let a = master.addr();
    let stream = connect_tcp(&a.ip().to_string(), a.port(), Duration::from_secs(5))
        .await
        .expect("connects");
    Connection::connect(
        stream,
        Role::DriverClient,
        "client",
        ConnectionConfig::default(),
    )
    .await
    .expect("handshake")
}

/// Submits a driver (no worker: it waits, SUBMITTED) over `c`; its id.
async fn submit(c: &Connection<DeployMessage>) -> String {
    let command = Command::new(
        "org.apache.spark.deploy.worker.DriverWrapper".into(),
        vec![],
        Default::default(),
        vec![],
        vec![],
        vec![],
    );
    let desc = DriverDescription::new("file:/tmp/app.jar".into(), 256, 1, false, command, vec![]);
    match c.ask(RequestSubmitDriver::new(desc).into()).await {
        Ok(Reply::Message(DeployMessage::SubmitDriverResponse(SubmitDriverResponse {
            success: true,
            driver_id: Some(id),
            ..
        }))) => id,
        other => panic!("expected a submitted driver, got {other:?}"),
    }
}

/// One HTTP/1.1 request: the status code and the JSON body.
async fn http(rest: &ServerHandle, method: &str, path: &str) -> (u16, Value) {
    let mut s = TcpStream::connect(rest.addr()).await.expect("connects");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    s.write_all(request.as_bytes()).await.expect("writes");
    let mut text = String::new();
    tokio::time::timeout(Duration::from_secs(20), s.read_to_string(&mut text))
        .await
        .expect("answered in time")
        .expect("reads");
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    let status: u16 = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status code");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    (status, serde_json::from_str(body).expect("JSON"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_kill_answer_with_sparks_json_and_the_master_decides() {
    let (master, rest) = cluster().await;
    let owner = client(&master).await;
    let id = submit(&owner).await;

    // Status: Spark's SubmissionStatusResponse, success = found.
    let (code, s) = http(&rest, "GET", &format!("/v1/submissions/status/{id}")).await;
    assert_eq!(code, 200);
    assert_eq!(s["action"], "SubmissionStatusResponse");
    assert_eq!(s["serverSparkVersion"], "4.0.1");
    assert_eq!(s["submissionId"], id.as_str());
    assert_eq!(s["success"], true);
    assert_eq!(s["driverState"], "SUBMITTED");

    // While its submitter is connected, a kill from elsewhere is not taken (SPEC §14.2 Z4).
    let (code, k) = http(&rest, "POST", &format!("/v1/submissions/kill/{id}")).await;
    assert_eq!(code, 200);
    assert_eq!(k["action"], "KillSubmissionResponse");
    assert_eq!(k["success"], false, "{k}");
    assert!(
        k["message"]
            .as_str()
            .is_some_and(|m| m.contains("java.lang.SecurityException")),
        "{k}"
    );

    // Once it has gone, the kill is taken: the waiting driver ends KILLED.
    owner.close().await;
    let mut killed = Value::Null;
    for _ in 0..100 {
        let (_, k) = http(&rest, "POST", &format!("/v1/submissions/kill/{id}")).await;
        killed = k;
        if killed["success"] == true {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(killed["success"], true, "{killed}");
    assert_eq!(
        killed["message"],
        format!("Kill request for {id} submitted").as_str()
    );
    let (_, s) = http(&rest, "GET", &format!("/v1/submissions/status/{id}")).await;
    assert_eq!(s["driverState"], "KILLED", "{s}");

    // Unknown drivers, as Spark's master answers them.
    let (_, s) = http(&rest, "GET", "/v1/submissions/status/driver-nope").await;
    assert_eq!(s["success"], false);
    assert!(s.get("driverState").is_none(), "{s}");
    let (_, k) = http(&rest, "POST", "/v1/submissions/kill/driver-nope").await;
    assert_eq!(k["success"], false);
    assert_eq!(
        k["message"],
        "Driver driver-nope has already finished or does not exist"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_it_does_not_serve_get_sparks_error_response() {
    let (_master, rest) = cluster().await;
    let (code, e) = http(&rest, "GET", "/v2/submissions/status/driver-1").await;
    assert_eq!(code, UNKNOWN_PROTOCOL_VERSION);
    assert_eq!(e["action"], "ErrorResponse");
    assert_eq!(e["highestProtocolVersion"], "v1");
    let (code, e) = http(&rest, "POST", "/v1/submissions/create").await;
    assert_eq!(code, 400);
    assert_eq!(e["action"], "ErrorResponse");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("kill and status only")),
        "{e}"
    );
    let (code, e) = http(&rest, "POST", "/v1/submissions/kill/").await;
    assert_eq!(code, 400);
    assert_eq!(e["message"], "Submission ID is missing in kill request.");
    let (code, _) = http(&rest, "GET", "/v1/submissions/kill/driver-1").await;
    assert_eq!(code, 405);
}

/// Spark's REST protocol has no authentication: a master holding a secret does not serve it.
/// (Without the refusal this master would start, then exit 0 as its standard input is closed.)
#[test]
fn a_master_with_a_secret_refuses_to_serve_spark_rest() {
    let dir = temp_dir("spark-rest-secret");
    let secret = dir.join("secret");
    std::fs::write(&secret, "rest-secret\n").expect("secret");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let secret = secret.to_string_lossy().into_owned();
    let (code, out) = run(&[
        "master",
        "--port",
        "0",
        "--webui-port",
        "0",
        "--spark-rest-port",
        "0",
        "--secret-file",
        &secret,
        "--exit-with-stdin",
    ]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("--spark-rest-port: Spark's REST submission protocol has no authentication"),
        "{out}"
    );
}
