//! Redaction of secrets in what endpoints show (Spark's `spark.redaction.regex`): the master's
//! state answer shows every application's and driver's command, whose environment and Spark
//! properties (`-Dkey=value`) may hold passwords and keys.
//!
//! As Spark's `Utils.redact`, a value is replaced by [`REDACTED`] when its key **or** the value
//! itself matches the pattern ([`DEFAULT_REDACTION_REGEX`] by default).
//!
//! ```
//! use sparkwire::node::redact::{Redactor, REDACTED};
//!
//! let r = Redactor::default();
//! assert_eq!(r.value("AWS_SECRET_ACCESS_KEY", "abc"), REDACTED);
//! assert_eq!(r.value("SPARK_HOME", "/opt/spark"), "/opt/spark");
//! assert_eq!(
//!     r.argument("-Dspark.ssl.keyPassword=hunter2"),
//!     format!("-Dspark.ssl.keyPassword={REDACTED}")
//! );
//! ```

use std::collections::BTreeMap;

use regex_lite::Regex;

use crate::messages::deploy::MasterStateResponse;
use crate::messages::Command;

/// Spark's default `spark.redaction.regex`.
pub const DEFAULT_REDACTION_REGEX: &str = "(?i)secret|password|token|access[.]?key";

/// What a redacted value reads, as in Spark.
pub const REDACTED: &str = "*********(redacted)";

/// The pattern given is not a regular expression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid redaction pattern {pattern:?}: {message}")]
pub struct RedactionPatternError {
    /// The pattern.
    pub pattern: String,
    /// Why.
    pub message: String,
}

/// Replaces secret values by [`REDACTED`].
#[derive(Debug, Clone)]
pub struct Redactor {
    regex: Regex,
}

impl Default for Redactor {
    fn default() -> Self {
        match Redactor::new(DEFAULT_REDACTION_REGEX) {
            Ok(r) => r,
            // The default pattern is a constant checked by this module's tests.
            Err(e) => panic!("{e}"),
        }
    }
}

impl Redactor {
    /// A redactor for `pattern` (regular-expression syntax of the `regex-lite` crate, which
    /// takes Spark's default pattern and inline flags such as `(?i)`).
    pub fn new(pattern: &str) -> Result<Self, RedactionPatternError> {
        Regex::new(pattern)
            .map(|regex| Redactor { regex })
            .map_err(|e| RedactionPatternError {
                pattern: pattern.to_string(),
                message: e.to_string(),
            })
    }

    /// The pattern.
    pub fn pattern(&self) -> &str {
        self.regex.as_str()
    }

    /// Whether `key`'s value is to be hidden: the key or the value matches.
    pub fn hides(&self, key: &str, value: &str) -> bool {
        self.regex.is_match(key) || self.regex.is_match(value)
    }

    /// `value`, or [`REDACTED`] when it is to be hidden.
    pub fn value<'a>(&self, key: &str, value: &'a str) -> &'a str {
        if self.hides(key, value) {
            REDACTED
        } else {
            value
        }
    }

    /// A command-line argument with the value of a `-Dkey=value` property redacted.
    pub fn argument(&self, arg: &str) -> String {
        if let Some((key, value)) = arg.strip_prefix("-D").and_then(|p| p.split_once('=')) {
            if self.hides(key, value) {
                return format!("-D{key}={REDACTED}");
            }
        }
        arg.to_string()
    }

    /// Redacts an environment in place.
    pub fn environment(&self, env: &mut BTreeMap<String, String>) {
        for (key, value) in env.iter_mut() {
            if self.hides(key, value) {
                *value = REDACTED.to_string();
            }
        }
    }

    /// Redacts a command in place: its environment, and `-Dkey=value` in its Java options and
    /// arguments.
    pub fn command(&self, command: &mut Command) {
        self.environment(&mut command.environment);
        for arg in command
            .java_opts
            .iter_mut()
            .chain(command.arguments.iter_mut())
        {
            *arg = self.argument(arg);
        }
    }

    /// Redacts the master's state answer in place: every application's and driver's command.
    pub fn master_state(&self, state: &mut MasterStateResponse) {
        for app in state
            .active_apps
            .iter_mut()
            .chain(state.completed_apps.iter_mut())
        {
            self.command(&mut app.desc.command);
        }
        for driver in state
            .active_drivers
            .iter_mut()
            .chain(state.completed_drivers.iter_mut())
        {
            self.command(&mut driver.desc.command);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_pattern_is_sparks_and_matches_case_insensitively() {
        let r = Redactor::default();
        assert_eq!(r.pattern(), DEFAULT_REDACTION_REGEX);
        for key in [
            "AWS_SECRET_ACCESS_KEY",
            "spark.ssl.keyPassword",
            "GITHUB_TOKEN",
            "fs.s3a.access.key",
            "AWS_ACCESSKEY",
        ] {
            assert!(r.hides(key, "v"), "{key}");
        }
        assert!(!r.hides("SPARK_HOME", "/opt/spark"));
        // A value that looks like a secret is hidden whatever its key.
        assert!(r.hides("CONF", "password=x"));
    }

    #[test]
    fn commands_lose_secret_environment_values_and_properties() {
        let r = Redactor::default();
        let mut c = Command {
            main_class: "x".into(),
            arguments: vec!["-Dspark.authenticate.secret=s3".into(), "--cores".into()],
            environment: [
                ("AWS_SECRET_ACCESS_KEY".to_string(), "abc".to_string()),
                ("SPARK_HOME".to_string(), "/opt".to_string()),
            ]
            .into(),
            class_path_entries: vec![],
            library_path_entries: vec![],
            java_opts: vec!["-Dspark.app.name=pi".into(), "-Dmy.token=t".into()],
        };
        r.command(&mut c);
        assert_eq!(c.environment["AWS_SECRET_ACCESS_KEY"], REDACTED);
        assert_eq!(c.environment["SPARK_HOME"], "/opt");
        assert_eq!(
            c.java_opts,
            vec![
                "-Dspark.app.name=pi".to_string(),
                format!("-Dmy.token={REDACTED}")
            ]
        );
        assert_eq!(
            c.arguments[0],
            format!("-Dspark.authenticate.secret={REDACTED}")
        );
        assert_eq!(c.arguments[1], "--cores");
    }

    #[test]
    fn a_custom_pattern_replaces_the_default_and_a_bad_one_is_an_error() {
        let r = Redactor::new("(?i)^MY_").expect("valid");
        assert!(r.hides("my_thing", "v"));
        assert!(!r.hides("AWS_SECRET_ACCESS_KEY", "v"));
        assert!(Redactor::new("(").is_err());
    }
}
