//! Executor and driver processes (Spark's ExecutorRunner and DriverRunner): the allow-list, the
//! working directory with `stdout` and `stderr` files, Spark's `{{…}}` substitutions, killing,
//! and the exit status. A supervised driver that fails is started again, waiting 1 s, then twice
//! as long each time (reset after a run of over 5 s), as Spark's DriverRunner does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tokio::process::Command;
use tokio::sync::{mpsc, oneshot};

use super::actor::WEvent;

/// What a process runs for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum RunKey {
    /// An application's executor.
    Executor(String, i32),
    /// A driver.
    Driver(String),
}

impl std::fmt::Display for RunKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunKey::Executor(app, id) => write!(f, "executor {app}/{id}"),
            RunKey::Driver(id) => write!(f, "driver {id}"),
        }
    }
}

/// How a process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ended {
    /// It exited (or was killed) with this status.
    Exited {
        /// Exit code; 128 + the signal for a process ended by a signal, as the JVM reports it.
        code: i32,
        /// Killed on the worker's request.
        killed: bool,
    },
    /// It could not be started.
    Failed(String),
}

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

/// The canonical allow-list: paths that cannot be canonicalized are left out with a warning.
pub(crate) fn canonical_allow_list(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths
        .iter()
        .filter_map(|p| match std::fs::canonicalize(p) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::warn!(path = %p.display(), error = %e, "allow-list entry not found; ignored");
                None
            }
        })
        .collect()
}

/// The program to run for `program` when it is on `allowed` (canonical paths), or why not.
pub(crate) fn check_allowed(program: &str, allowed: &[PathBuf]) -> Result<PathBuf, String> {
    let canonical = std::fs::canonicalize(program).map_err(|e| {
        format!("Refusing to run {program:?}: it cannot be resolved ({e}); the worker runs only executables on its allow-list (--allow-exec, --allow-exec-any)")
    })?;
    if allowed.contains(&canonical) {
        Ok(canonical)
    } else {
        Err(format!(
            "Refusing to run {program:?} ({}): not on the worker's allow-list (--allow-exec, --allow-exec-any)",
            canonical.display()
        ))
    }
}

/// Whether `s` is safe as one component of a path under the work directory.
pub(crate) fn safe_component(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.len() <= 255
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Replaces every `{{NAME}}` of `vars` in `text`.
pub(crate) fn substitute(text: &str, vars: &[(&str, String)]) -> String {
    let mut out = text.to_string();
    for (name, value) in vars {
        out = out.replace(&format!("{{{{{name}}}}}"), value);
    }
    out
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

/// What to run.
pub(crate) struct Launch {
    pub(crate) key: RunKey,
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<String>,
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) dir: PathBuf,
    pub(crate) supervise: bool,
}

fn command(launch: &Launch) -> Result<Command, String> {
    let open = |name: &str| -> Result<std::fs::File, String> {
        let path = launch.dir.join(name);
        std::fs::File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))
    };
    let mut cmd = Command::new(&launch.program);
    // Only the environment the launch policy built: never the worker's own.
    cmd.args(&launch.args)
        .env_clear()
        .envs(&launch.env)
        .current_dir(&launch.dir)
        .stdin(Stdio::null())
        .stdout(open("stdout")?)
        .stderr(open("stderr")?)
        .kill_on_drop(true);
    Ok(cmd)
}

/// Creates the process's directory and starts it; its end comes to `events` as
/// [`WEvent::Ended`]. On failure to start, nothing is sent and the reason is returned.
pub(crate) fn start(
    launch: Launch,
    events: mpsc::UnboundedSender<WEvent>,
) -> Result<Running, String> {
    std::fs::create_dir_all(&launch.dir)
        .map_err(|e| format!("cannot create {}: {e}", launch.dir.display()))?;
    let mut child = command(&launch)?
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
                break Ended::Exited { code, killed };
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
                _ = &mut kill_rx => break Ended::Exited { code, killed: true },
            }
            wait = (wait * 2).min(Duration::from_secs(60));
            match command(&launch).and_then(|mut c| {
                c.spawn()
                    .map_err(|e| format!("cannot run {}: {e}", launch.program.display()))
            }) {
                Ok(c) => child = c,
                Err(e) => break Ended::Failed(e),
            }
        };
        let _ = events.send(WEvent::Ended(launch.key, ended));
    });
    Ok(Running {
        kill: Some(kill_tx),
    })
}

/// `<work_dir>/<part>/…`, refusing components that could leave the work directory.
pub(crate) fn dir_under(work_dir: &Path, parts: &[&str]) -> Result<PathBuf, String> {
    let mut dir = work_dir.to_path_buf();
    for p in parts {
        if !safe_component(p) {
            return Err(format!("refusing the unsafe directory name {p:?}"));
        }
        dir.push(p);
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_every_placeholder_and_leaves_other_text() {
        let vars = [
            ("EXECUTOR_ID", "3".to_string()),
            ("APP_ID", "app-1".to_string()),
        ];
        assert_eq!(
            substitute("--id={{EXECUTOR_ID}} {{APP_ID}} {{OTHER}}", &vars),
            "--id=3 app-1 {{OTHER}}"
        );
    }

    #[test]
    fn refuses_directory_names_that_leave_the_work_dir() {
        let root = Path::new("/w");
        assert!(dir_under(root, &["app-1", "0"]).is_ok());
        for bad in ["..", ".", "", "a/b", "a\\b", "x\0"] {
            assert!(dir_under(root, &[bad]).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn refuses_programs_off_the_allow_list() {
        let allowed = canonical_allow_list(&[PathBuf::from("/bin/true")]);
        assert!(check_allowed("/bin/true", &allowed).is_ok());
        let err = check_allowed("/bin/false", &allowed).unwrap_err();
        assert!(err.contains("not on the worker's allow-list"), "{err}");
        assert!(check_allowed("/no/such/program", &allowed).is_err());
    }
}
