//! Where a driver and a master listen and what they announce, on loopback (no root needed):
//! `127.0.0.0/8` is all this host's, so an address other than 127.0.0.1 shows whether a process
//! listens where it was told, not just announces it.

use std::time::Duration;

mod common;

use common::files::temp_dir;
use common::processes::{command, Proc, BIN};

const PATIENCE: Duration = Duration::from_secs(120);

/// Starts `sparkwire ARGS` with `env`; its output read line by line.
fn start(args: &[&str], env: &[(&str, &str)]) -> Proc {
    let mut c = command(args);
    c.env_remove("SPARK_LOCAL_IP")
        .env_remove("SPARK_LOCAL_HOSTNAME")
        .env_remove("SPARK_MASTER_HOST")
        .env_remove("SPARKWIRE_SECRET_FILE")
        .envs(env.iter().copied())
        .stderr(std::process::Stdio::null());
    Proc::spawn(c)
}

/// A master (with `env`) and a worker on loopback: the master's first line and URL.
fn cluster(env: &[(&str, &str)], work: &str) -> (Proc, Proc, String) {
    let master = start(&["master", "--port", "0", "--webui-port", "0"], env);
    let line = master.line_within(PATIENCE);
    let url = line
        .strip_prefix("sparkwire master listening on ")
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    let worker = start(
        &[
            "worker",
            &url,
            "--port",
            "0",
            "--webui-port",
            "0",
            "--cores",
            "1",
            "--memory",
            "1024",
            "--work-dir",
            work,
            "--allow-exec-any",
            BIN,
        ],
        &[],
    );
    let _ = worker.line_within(PATIENCE);
    (master, worker, url)
}

#[test]
fn spark_local_ip_and_spark_master_host_set_where_a_master_listens_and_what_it_announces() {
    for (env, expected) in [
        (vec![("SPARK_LOCAL_IP", "127.0.0.3")], "127.0.0.3"),
        (vec![("SPARK_LOCAL_HOSTNAME", "127.0.0.4")], "127.0.0.4"),
        (
            vec![
                ("SPARK_LOCAL_IP", "127.0.0.3"),
                ("SPARK_MASTER_HOST", "127.0.0.5"),
            ],
            "127.0.0.5",
        ),
        (vec![], "127.0.0.1"),
    ] {
        let master = start(&["master", "--port", "0", "--webui-port", "0"], &env);
        let line = master.line_within(PATIENCE);
        let url = line
            .strip_prefix("sparkwire master listening on sparkwire://")
            .unwrap_or_else(|| panic!("{env:?}: {line}"));
        assert!(url.starts_with(&format!("{expected}:")), "{env:?}: {line}");
        // It listens there: a TCP connection to the announced address is accepted.
        std::net::TcpStream::connect(url).unwrap_or_else(|e| panic!("{env:?}: {url}: {e}"));
    }
}

#[test]
fn a_driver_listens_on_its_driver_host_and_on_its_bind_address_when_given_one() {
    let dir = temp_dir("driver-addresses");
    let work = dir.join("work");
    let (_master, _worker, url) = cluster(&[], work.to_str().expect("utf-8"));
    // --driver-host alone: announced and listened on (it listened on 127.0.0.1 before, and
    // the executor, told 127.0.0.2, was refused). Then --driver-bind-address apart from it,
    // and SPARK_LOCAL_IP standing for both.
    for (flags, env) in [
        (vec!["--driver-host", "127.0.0.2"], vec![]),
        (
            vec![
                "--driver-host",
                "127.0.0.2",
                "--driver-bind-address",
                "0.0.0.0",
                "--insecure",
            ],
            vec![],
        ),
        (vec![], vec![("SPARK_LOCAL_IP", "127.0.0.6")]),
    ] {
        let mut args = vec![
            "submit",
            "--master",
            &url,
            "--job",
            "pi",
            "--executor-timeout",
            "30",
        ];
        args.extend(&flags);
        let mut c = command(&args);
        c.env_remove("SPARK_LOCAL_IP")
            .env_remove("SPARK_LOCAL_HOSTNAME")
            .envs(env.iter().copied());
        let out = c.output().expect("submit runs");
        let text = common::processes::text(&out);
        assert_eq!(out.status.code(), Some(0), "{flags:?} {env:?}: {text}");
        assert!(
            text.contains("Pi is roughly 3.1"),
            "{flags:?} {env:?}: {text}"
        );
    }
    // A bind address the announced one does not reach: the executor is refused, and submit
    // says so and gives up.
    let out = command(&[
        "submit",
        "--master",
        &url,
        "--job",
        "pi",
        "--executor-timeout",
        "25",
        "--driver-host",
        "127.0.0.2",
        "--driver-bind-address",
        "127.0.0.7",
    ])
    .output()
    .expect("submit runs");
    let text = common::processes::text(&out);
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("cannot connect to the driver at") && text.contains("127.0.0.2"),
        "{text}"
    );
    // Off loopback without a secret: refused before anything starts.
    let out = command(&[
        "submit",
        "--master",
        &url,
        "--job",
        "pi",
        "--driver-bind-address",
        "0.0.0.0",
    ])
    .env_remove("SPARKWIRE_SECRET_FILE")
    .output()
    .expect("submit runs");
    let text = common::processes::text(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("not a loopback address") && text.contains("--insecure"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
