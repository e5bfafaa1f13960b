//! Executor and driver processes (Spark's ExecutorRunner and DriverRunner), as the worker's core
//! decided them ([`Launch`]): the working directory with `stdout` and `stderr` files and the
//! secret file, killing, and the exit status. A supervised driver that fails is started again, waiting 1 s, then twice
//! as long each time (reset after a run of over 5 s), as Spark's DriverRunner does.

use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tokio::process::Command;
use tokio::sync::{mpsc, oneshot};

use super::events::{Own, WEvent};
use crate::node::worker::{Ended, Launch};

/// A running process: dropping it (or [`kill`](Running::kill)) kills it.
#[derive(Debug)]
pub(crate) struct Running {
    kill: Option<oneshot::Sender<()>>,
}

impl Running {
    /// Asks the process to be killed; its end is reported as usual.
    pub(crate) fn kill(&mut self) {
        if let Some(k) = self.kill.take() {
            let _ = k.send(());
        }
    }
}

/// The exit code of `status`: its code, or 128 + the signal that ended it.
fn exit_code(status: ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return 128 + signal;
        }
    }
    -1
}

/// The environment variable Spark's worker hands its executors the secret in
/// (`SecurityManager.ENV_AUTH_SECRET`).
pub(crate) const SPARK_AUTH_SECRET_ENV: &str = "_SPARK_AUTH_SECRET";

/// The secret a Spark executor of `launch` is handed: the worker's, as the text Spark's
/// `spark.authenticate.secret` is.
fn spark_secret(
    launch: &Launch,
    security: &crate::connection::Security,
) -> Result<Option<String>, String> {
    if !launch.spark_secret {
        return Ok(None);
    }
    let secret = security
        .secret
        .as_ref()
        .ok_or("a Spark executor is to be handed the secret, but the worker has none")?;
    String::from_utf8(secret.expose().to_vec())
        .map(Some)
        .map_err(|_| {
            "the worker's secret is not UTF-8 text, as Spark's spark.authenticate.secret must be"
                .to_string()
        })
}

fn command(launch: &Launch, spark_secret: Option<&str>) -> Result<Command, String> {
    let open = |name: &str| -> Result<std::fs::File, String> {
        let path = launch.dir.join(name);
        std::fs::File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))
    };
    let stderr = open("stderr")?;
    if let Some(header) = &launch.stderr_header {
        use std::io::Write;
        (&stderr).write_all(header.as_bytes()).map_err(|e| {
            format!(
                "cannot write to {}: {e}",
                launch.dir.join("stderr").display()
            )
        })?;
    }
    let mut cmd = Command::new(&launch.program);
    // Only the environment the launch policy built: never the worker's own.
    cmd.args(&launch.args)
        .env_clear()
        .envs(&launch.env)
        .current_dir(&launch.dir)
        .stdin(Stdio::null())
        .stdout(open("stdout")?)
        .stderr(stderr)
        .kill_on_drop(true);
    if let Some(secret) = spark_secret {
        cmd.env(SPARK_AUTH_SECRET_ENV, secret);
    }
    Ok(cmd)
}

/// Creates the process's directory, writes the worker's secret there when the launch says so,
/// and starts it; its end comes to `events` as [`Own::Ended`]. On failure to start, nothing
/// is sent and the reason is returned.
pub(crate) fn start(
    launch: Launch,
    security: &crate::connection::Security,
    events: mpsc::UnboundedSender<WEvent>,
) -> Result<Running, String> {
    std::fs::create_dir_all(&launch.dir)
        .map_err(|e| format!("cannot create {}: {e}", launch.dir.display()))?;
    if launch.write_secret {
        super::credentials::write_launch_secret(security, &launch.dir)?;
    }
    let spark_secret = spark_secret(&launch, security)?;
    let mut child = command(&launch, spark_secret.as_deref())?
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", launch.program.display()))?;
    let (kill_tx, mut kill_rx) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let mut wait = Duration::from_secs(1);
        let ended = loop {
            let started = Instant::now();
            let (status, killed) = tokio::select! {
                status = child.wait() => (status, false),
                _ = &mut kill_rx => {
                    let _ = child.start_kill();
                    (child.wait().await, true)
                }
            };
            let code = match status {
                Ok(s) => exit_code(s),
                Err(e) => break Ended::Failed(format!("cannot wait for the process: {e}")),
            };
            if killed || code == 0 || !launch.supervise {
                let last_line = if killed || code == 0 {
                    None
                } else {
                    last_line(&launch.dir.join("stderr"))
                };
                break Ended::Exited {
                    code,
                    killed,
                    last_line,
                };
            }
            if started.elapsed() > Duration::from_secs(5) {
                wait = Duration::from_secs(1);
            }
            tracing::info!(
                "{} exited with code {code}, re-launching after {} s",
                launch.key,
                wait.as_secs_f64()
            );
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = &mut kill_rx => break Ended::Exited { code, killed: true, last_line: None },
            }
            wait = (wait * 2).min(Duration::from_secs(60));
            match command(&launch, spark_secret.as_deref()).and_then(|mut c| {
                c.spawn()
                    .map_err(|e| format!("cannot run {}: {e}", launch.program.display()))
            }) {
                Ok(c) => child = c,
                Err(e) => break Ended::Failed(e),
            }
        };
        let _ = events.send(WEvent::Own(Own::Ended(launch.key, ended)));
    });
    Ok(Running {
        kill: Some(kill_tx),
    })
}

/// Most bytes of a process's standard error read for its last line.
const LAST_LINE_BYTES: u64 = 4096;

/// Longest last line carried (in characters); longer ones are cut.
const LAST_LINE_CHARS: usize = 512;

/// The last non-empty line of the file at `path` (read from its last 4 KiB), cut at 512
/// characters; `None` when there is none or it cannot be read.
pub(crate) fn last_line(path: &std::path::Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(LAST_LINE_BYTES)))
        .ok()?;
    let mut tail = Vec::new();
    file.take(LAST_LINE_BYTES).read_to_end(&mut tail).ok()?;
    let text = String::from_utf8_lossy(&tail);
    let line = text.lines().map(str::trim).rfind(|l| !l.is_empty())?;
    Some(line.chars().take(LAST_LINE_CHARS).collect())
}

#[cfg(test)]
mod last_line_tests {
    use super::last_line;

    #[test]
    fn the_last_non_empty_line_of_a_processs_stderr_is_read_from_its_tail() {
        let dir = std::env::temp_dir().join(format!("sparkwire-last-line-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("stderr");
        assert_eq!(last_line(&path), None, "no file");
        std::fs::write(&path, "").expect("write");
        assert_eq!(last_line(&path), None, "empty");
        let mut text = "x".repeat(10_000);
        text.push_str("\nsparkwire executor 0: cannot connect to the driver\n\n  \n");
        std::fs::write(&path, &text).expect("write");
        assert_eq!(
            last_line(&path).as_deref(),
            Some("sparkwire executor 0: cannot connect to the driver")
        );
        std::fs::write(&path, "y".repeat(3000)).expect("write");
        assert_eq!(last_line(&path).map(|l| l.len()), Some(512));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::Security;
    use crate::node::worker::RunKey;
    use crate::wire::handshake::Secret;

    fn launch(dir: &std::path::Path, spark_secret: bool) -> Launch {
        Launch {
            key: RunKey::Executor("app-1".into(), 0),
            program: "/bin/true".into(),
            args: vec!["--executor-id".into(), "0".into()],
            env: [("SPARK_HOME".to_string(), "/opt/spark".to_string())].into(),
            dir: dir.to_path_buf(),
            write_secret: false,
            spark_secret,
            supervise: false,
            stderr_header: None,
        }
    }

    fn env_of(cmd: &Command) -> Vec<(String, String)> {
        cmd.as_std()
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_str()?.to_string(), v?.to_str()?.to_string())))
            .collect()
    }

    #[test]
    fn a_spark_executor_gets_the_secret_in_its_environment_only() {
        let dir = std::env::temp_dir().join(format!("sparkwire-runner-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let security = Security::with_secret(Secret::new(b"spark-s3cret".to_vec()).expect("s"));
        let l = launch(&dir, true);
        let secret = spark_secret(&l, &security).expect("UTF-8");
        let cmd = command(&l, secret.as_deref()).expect("command");
        let env = env_of(&cmd);
        assert!(env.contains(&(SPARK_AUTH_SECRET_ENV.into(), "spark-s3cret".into())));
        assert!(env.contains(&("SPARK_HOME".into(), "/opt/spark".into())));
        assert!(
            !cmd.as_std()
                .get_args()
                .any(|a| a.to_string_lossy().contains("spark-s3cret")),
            "never on the command line"
        );
        assert!(
            !l.env.values().any(|v| v.contains("spark-s3cret")),
            "nor in the launch"
        );

        // Not a Spark executor of a worker with a secret: no variable.
        let plain = launch(&dir, false);
        let cmd = command(
            &plain,
            spark_secret(&plain, &security).expect("none").as_deref(),
        )
        .expect("command");
        assert!(!env_of(&cmd).iter().any(|(k, _)| k == SPARK_AUTH_SECRET_ENV));
        // A worker without a secret cannot hand one: a typed refusal, not an empty variable.
        assert!(spark_secret(&l, &Security::default()).is_err());
        let binary = Security::with_secret(Secret::new(vec![0xff, 0xfe, 0x01]).expect("s"));
        assert!(spark_secret(&l, &binary).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
