//! `sparkwire worker --spark-home` runs Spark's own executors (issue 26 item 3), checked without
//! a JVM: a stand-in `java` records the command line and environment it was started with, and
//! the test plays a Spark executor's `WorkerWatcher` on the worker's Spark-wire port.
//!
//! - a LaunchExecutor for Spark's `CoarseGrainedExecutorBackend` starts `java` with the command
//!   line Spark's worker builds (class path, heap, options, placeholders, `--worker-url` naming
//!   the watcher port), reports RUNNING, and KillExecutors kills its process;
//! - the watcher port answers `CheckExistence("Worker")` true and `("Master")` false;
//! - a launch whose JVM options load code (`-javaagent:`) is refused, and the application is
//!   told why (FAILED), without the option's value.
#![cfg(all(feature = "reference", feature = "spark"))]

use common::cluster;
mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use cluster::*;
use common::files::temp_dir;
use sparkwire::messages::deploy::KillExecutors;
use sparkwire::messages::{DeployMessage, ExecutorState, Version};
use sparkwire::reference::worker::SparkSettings;
use sparkwire::spark::{
    check_existence_stream, parse_stream, reply_value, Frame, FrameDecoder, ReplyValue,
    RequestMessage,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A Spark installation with only what the worker reads (`jars/slf4j-api-*.jar`, `conf/`), and a
/// stand-in `java` that writes its arguments and environment to its working directory and then
/// waits to be killed.
fn fake_spark(dir: &Path) -> (PathBuf, PathBuf) {
    let home = dir.join("spark");
    std::fs::create_dir_all(home.join("jars")).expect("jars");
    std::fs::create_dir_all(home.join("conf")).expect("conf");
    std::fs::write(home.join("jars/slf4j-api-2.0.16.jar"), b"").expect("jar");
    std::fs::write(home.join("jars/spark-core_2.13-4.0.1.jar"), b"").expect("jar");
    let java = dir.join("java");
    std::fs::write(
        &java,
        "#!/bin/sh\necho $$ > pid\nprintf '%s\\n' \"$@\" > args\nenv > env\nexec sleep 60\n",
    )
    .expect("java");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&java, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    (home, java)
}

/// An application whose executors are Spark's, with `java_opts`.
fn spark_app(name: &str, java_opts: &[&str]) -> sparkwire::messages::ApplicationDescription {
    let mut desc = app_desc(name, "unused", Some(1), 300);
    desc.command.main_class = "org.apache.spark.executor.CoarseGrainedExecutorBackend".into();
    desc.command.arguments = [
        "--driver-url",
        "spark://CoarseGrainedScheduler@127.0.0.1:17090",
        "--executor-id",
        "{{EXECUTOR_ID}}",
        "--hostname",
        "{{HOSTNAME}}",
        "--cores",
        "{{CORES}}",
        "--app-id",
        "{{APP_ID}}",
        "--worker-url",
        "{{WORKER_URL}}",
        "--resourceProfileId",
        "{{RESOURCE_PROFILE_ID}}",
    ]
    .map(String::from)
    .to_vec();
    desc.command.java_opts = java_opts.iter().map(|s| s.to_string()).collect();
    desc.command
        .environment
        .insert("SPARK_USER".into(), "tester".into());
    desc
}

/// Asks `CheckExistence(name)` of `endpoint-verifier` at `addr`, on Spark's wire.
async fn check_existence(stream: &mut tokio::net::TcpStream, id: i64, name: &str) -> bool {
    let header = RequestMessage {
        sender: None,
        receiver: Some(("127.0.0.1".into(), 1)),
        endpoint: "endpoint-verifier".into(),
        stream: check_existence_stream(name, Version::V2)
            .expect("stream")
            .into(),
    };
    let ask = Frame::RpcRequest {
        request_id: id,
        body: header.encode().expect("header").into(),
    }
    .encode()
    .expect("frame");
    stream.write_all(&ask).await.expect("write");
    let mut decoder = FrameDecoder::default();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(item) = decoder.next_item() {
            let Ok(Frame::RpcResponse { request_id, body }) = item.frame else {
                panic!("a response, got {:?}", item.frame);
            };
            assert_eq!(request_id, id);
            let graph = parse_stream(&body).expect("a Java stream");
            match reply_value(graph.root_node()).expect("a reply") {
                ReplyValue::Bool(b) => return b,
                other => panic!("a Boolean, got {other:?}"),
            }
        }
        let n = tokio::time::timeout(PATIENCE, stream.read(&mut buf))
            .await
            .expect("an answer in time")
            .expect("read");
        assert!(n > 0, "the watcher port closed the connection");
        decoder.push(&buf[..n]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spark_executor_runs_with_sparks_command_line_answers_its_watcher_and_is_killed() {
    let work = temp_dir("spark-exec");
    let (home, java) = fake_spark(&work);
    let obs = observer(WORKER_TIMEOUT);
    let master = start_master(&obs, |c| c.observer = None).await;
    let m = addr_of(&master);
    let worker = start_worker_with(&obs, vec![m.clone()], 2, 2048, &work.join("w"), |c| {
        c.observer = None;
        c.spark = Some(SparkSettings {
            home: home.clone(),
            java: Some(java.clone()),
            ..SparkSettings::default()
        });
    })
    .await;
    let watcher = worker.spark_addr().expect("a Spark-wire port");

    let app = TestApp::register(
        std::slice::from_ref(&m),
        spark_app(
            "spark-exec",
            &[
                "-Dspark.driver.port=17090",
                "-Dspark.log.dir=/logs/{{APP_ID}}",
            ],
        ),
    )
    .await;
    let app_id = app.app_id().await;
    app.wait("executor 0 RUNNING", |l| {
        l.iter().any(|m| {
            matches!(m, DeployMessage::ExecutorUpdated(u) if u.id == 0 && u.state == ExecutorState::Running)
        })
    })
    .await;
    let dir = work.join("w").join(&app_id).join("0");
    eventually("the stand-in java wrote its arguments", || {
        std::fs::read_to_string(dir.join("env")).is_ok_and(|e| e.contains("SPARK_HOME"))
    })
    .await;
    let args: Vec<String> = std::fs::read_to_string(dir.join("args"))
        .expect("args")
        .lines()
        .map(str::to_string)
        .collect();
    let jars = home.join("jars");
    let expected = vec![
        "-cp".to_string(),
        format!(
            "{}/:{}:{}",
            home.join("conf").display(),
            jars.join("slf4j-api-2.0.16.jar").display(),
            jars.join("*").display()
        ),
        "-Xmx300M".into(),
        "-Dspark.driver.port=17090".into(),
        format!("-Dspark.log.dir=/logs/{app_id}"),
        "org.apache.spark.executor.CoarseGrainedExecutorBackend".into(),
        "--driver-url".into(),
        "spark://CoarseGrainedScheduler@127.0.0.1:17090".into(),
        "--executor-id".into(),
        "0".into(),
        "--hostname".into(),
        "127.0.0.1".into(),
        "--cores".into(),
        "1".into(),
        "--app-id".into(),
        app_id.clone(),
        "--worker-url".into(),
        format!("spark://Worker@127.0.0.1:{}", watcher.port()),
        "--resourceProfileId".into(),
        "0".into(),
    ];
    assert_eq!(args, expected);
    // As Spark's ExecutorRunner, the command heads the executor's stderr.
    let stderr = std::fs::read_to_string(dir.join("stderr")).expect("stderr");
    let quoted: Vec<String> = std::iter::once(java.display().to_string())
        .chain(expected.iter().cloned())
        .map(|w| format!("\"{w}\""))
        .collect();
    assert_eq!(
        stderr,
        format!(
            "Spark Executor Command: {}\n{}\n\n",
            quoted.join(" "),
            "=".repeat(40)
        )
    );
    let env = std::fs::read_to_string(dir.join("env")).expect("env");
    assert!(
        env.contains(&format!("SPARK_HOME={}", home.display())),
        "{env}"
    );
    assert!(env.contains("SPARK_USER=tester"), "{env}");
    assert!(env.contains("SPARK_LAUNCH_WITH_SCALA=0"), "{env}");

    // The executor's WorkerWatcher, played here: the worker's endpoint exists, no other.
    let mut conn = tokio::net::TcpStream::connect(watcher)
        .await
        .expect("watcher port");
    assert!(check_existence(&mut conn, 1, "Worker").await);
    assert!(!check_existence(&mut conn, 2, "Master").await);

    app.send(KillExecutors::new(app_id.clone(), vec!["0".into()]))
        .await;
    // Spark's master answers an application's kill without an ExecutorUpdated; the process
    // goes.
    let pid = std::fs::read_to_string(dir.join("pid")).expect("pid");
    let proc_dir = PathBuf::from(format!("/proc/{}", pid.trim()));
    eventually("the killed executor's process is gone", || {
        !proc_dir.exists()
    })
    .await;
    app.close().await;
    drop(worker);
    // The worker stopped: its watcher connections close, so Spark's executors exit.
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(10), conn.read(&mut buf))
        .await
        .expect("the watcher connection closes when the worker stops");
    assert!(matches!(n, Ok(0) | Err(_)), "{n:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spark_executor_whose_jvm_options_load_code_is_refused_and_the_application_told() {
    let work = temp_dir("spark-exec-agent");
    let (home, java) = fake_spark(&work);
    let obs = observer(WORKER_TIMEOUT);
    let master = start_master(&obs, |c| c.observer = None).await;
    let m = addr_of(&master);
    let _worker = start_worker_with(&obs, vec![m.clone()], 2, 2048, &work.join("w"), |c| {
        c.observer = None;
        c.spark = Some(SparkSettings {
            home,
            java: Some(java),
            ..SparkSettings::default()
        });
    })
    .await;
    let app = TestApp::register(
        std::slice::from_ref(&m),
        spark_app("agent", &["-javaagent:/tmp/secret-agent.jar"]),
    )
    .await;
    let log = app
        .wait("executor 0 FAILED", |l| {
            l.iter().any(|m| {
                matches!(m, DeployMessage::ExecutorUpdated(u) if u.id == 0 && u.state == ExecutorState::Failed)
            })
        })
        .await;
    let why = find(&log, |m| match m {
        DeployMessage::ExecutorUpdated(u) if u.state == ExecutorState::Failed => u.message.clone(),
        _ => None,
    })
    .expect("a reason");
    assert!(
        why.contains("-javaagent") && why.contains("load code"),
        "{why}"
    );
    assert!(!why.contains("secret-agent"), "{why}");
    app.close().await;
}
