//! A sparkwire worker runs Spark's executors with the command line Spark's own worker builds: the
//! `LaunchExecutor`s of a real Spark 4.0.1 cluster (`../shared/spark-captures/A.pcap`), decoded
//! by sparkwire, give exactly the "Launch command:" lines that cluster's worker logged
//! (`logs/worker_capA.log`).
#![cfg(all(feature = "spark", feature = "node"))]

use std::fs::File;
use std::path::PathBuf;

use sparkwire::messages::deploy::LaunchExecutor;
use sparkwire::messages::DeployMessage;
use sparkwire::node::worker::spark::SparkExecutors;
use sparkwire::spark::decode_capture;
use sparkwire::validate::{AnyEnvelope, EventBody};
use sparkwire::wire::Envelope;

/// The captures' directory; missing captures fail under CI (`CI=true`), as in spark_captures.rs.
fn captures() -> Option<PathBuf> {
    let candidates = [
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/spark-captures"),
        PathBuf::from("/work/shared/spark-captures"),
    ];
    if let Some(dir) = candidates.iter().find(|d| d.join("A.pcap").is_file()) {
        return Some(dir.clone());
    }
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "the Spark captures are missing: looked in {candidates:?}"
    );
    eprintln!("skipped: no Spark captures in {candidates:?}");
    None
}

/// The quoted words of a worker's `Launch command: "a" "b" …` line.
fn quoted_words(line: &str) -> Vec<String> {
    let (_, command) = line.split_once("Launch command: ").expect("a launch line");
    command
        .trim()
        .strip_prefix('"')
        .and_then(|c| c.strip_suffix('"'))
        .expect("quoted words")
        .split("\" \"")
        .map(str::to_string)
        .collect()
}

#[test]
fn the_captured_launches_give_the_command_lines_spark_4_0_1s_worker_ran() {
    let Some(dir) = captures() else { return };
    let decoded = decode_capture(
        File::open(dir.join("A.pcap")).expect("capture opens"),
        Vec::new(),
        None,
    )
    .expect("capture decodes");
    let launches: Vec<LaunchExecutor> = decoded
        .events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::Message {
                envelope: AnyEnvelope::Deploy(Envelope::Send(DeployMessage::LaunchExecutor(l))),
                ..
            } => Some(l.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(launches.len(), 2, "A.pcap launches two executors");

    let log = std::fs::read_to_string(dir.join("logs/worker_capA.log")).expect("worker log");
    let logged: Vec<Vec<String>> = log
        .lines()
        .filter(|l| l.contains("ExecutorRunner: Launch command: "))
        .map(quoted_words)
        .collect();
    assert_eq!(logged.len(), 2, "the worker logged two launches");

    // The installation of that run, as its log names it.
    let home = PathBuf::from("$SPARKREF/venv/lib/python3.11/site-packages/pyspark");
    let spark = SparkExecutors::new(
        home,
        PathBuf::from("/usr/lib/jvm/java-17-openjdk-amd64/bin/java"),
        vec!["slf4j-api-2.0.16.jar".to_string()],
    )
    .with_conf_dir(PathBuf::from("research/side-by-side/conf"));
    for launch in &launches {
        let vars = [
            ("EXECUTOR_ID", launch.exec_id.to_string()),
            ("HOSTNAME", "127.0.0.1".to_string()),
            ("CORES", launch.cores.to_string()),
            ("APP_ID", launch.app_id.clone()),
            ("WORKER_URL", "spark://Worker@127.0.0.1:17078".to_string()),
            ("RESOURCE_PROFILE_ID", launch.rp_id.to_string()),
        ];
        let java = spark
            .command(&launch.app_desc.command, launch.memory, &vars)
            .expect("Spark's own executor launch is allowed");
        let mut built = vec![java.program.to_string_lossy().into_owned()];
        built.extend(java.args);
        let id = launch.exec_id.to_string();
        let same_executor = logged
            .iter()
            .find(|words| {
                words
                    .windows(2)
                    .any(|w| w[0] == "--executor-id" && w[1] == id)
            })
            .expect("the worker logged this executor's launch");
        assert_eq!(&built, same_executor, "executor {id}");
    }
}
