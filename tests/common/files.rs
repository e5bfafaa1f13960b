//! Files: a fresh directory of its own for each test, under the system's temporary directory.

use std::path::PathBuf;

/// A fresh, empty directory named after `name`, this process and the time, so that tests and
/// test binaries running at once never share one.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "sparkwire-test-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}
