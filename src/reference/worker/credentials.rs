//! How a worker hands its shared secret (and the TLS authorities it trusts) to the executors and
//! drivers it launches: never on a command line, never in the application's environment (which
//! masters and UIs see), never in a file others may read.
//!
//! The secret goes into a file `.sparkwire-secret` created afresh, mode 0600, in the process's
//! own work directory; the process learns its path from the variable `SPARKWIRE_SECRET_FILE`
//! that the worker adds to the environment it starts the process with (replacing any variable
//! of that name the application asked for). `sparkwire executor` reads it when it is given no
//! `--secret-file`. The TLS authorities' file, which is not secret, is passed the same way as
//! `SPARKWIRE_TLS_CA`.

use std::path::{Path, PathBuf};

use crate::connection::{write_secret_file, Security};
use crate::node::worker::SECRET_FILE_NAME;

/// Writes the worker's secret, if it has one, for a process about to run in `dir`: the file
/// the core names in its environment, created afresh with mode 0600.
pub(crate) fn write_launch_secret(security: &Security, dir: &Path) -> Result<(), String> {
    let Some(secret) = &security.secret else {
        return Ok(());
    };
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path: PathBuf = dir.join(SECRET_FILE_NAME);
    // A file left by an earlier run of the same process (a relaunched driver) is replaced,
    // never reused: it might not be the worker's.
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot replace {}: {e}", path.display())),
    }
    write_secret_file(&path, secret)
        .map_err(|e| format!("cannot write the secret file {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::read_secret_file;
    use crate::node::worker::{launch_variables, SECRET_FILE_ENV, TLS_CA_ENV};
    use crate::wire::handshake::Secret;

    #[test]
    fn the_secret_goes_to_a_private_file_named_by_a_variable_and_nowhere_else() {
        let dir = std::env::temp_dir().join(format!("sparkwire-cred-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let secret = Secret::new(b"0123456789abcdef".to_vec()).expect("secret");
        let security = Security::with_secret(secret.clone());
        write_launch_secret(&security, &dir).expect("written");
        let vars = launch_variables(true, Some(Path::new("/etc/ca.pem")), &dir);
        let file = dir.join(SECRET_FILE_NAME);
        assert_eq!(
            vars,
            vec![
                (
                    SECRET_FILE_ENV.to_string(),
                    file.to_string_lossy().into_owned()
                ),
                (TLS_CA_ENV.to_string(), "/etc/ca.pem".to_string()),
            ]
        );
        assert!(vars.iter().all(|(_, v)| !v.contains("0123456789abcdef")));
        assert_eq!(read_secret_file(&file), Ok(secret.clone()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).expect("file").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // Launched again (a supervised driver): the file is written afresh.
        assert!(write_launch_secret(&security, &dir).is_ok());
        assert_eq!(read_secret_file(&file), Ok(secret));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(write_launch_secret(&Security::default(), &dir), Ok(()));
        assert_eq!(launch_variables(false, None, &dir), Vec::new());
        assert!(!dir.exists(), "no secret, no file");
    }
}
