//! Spark's own executors on a sparkwire worker: the Java command line Spark's worker builds for a
//! `LaunchExecutor` (Spark's `ExecutorRunner`, `CommandUtils` and `WorkerCommandBuilder`), under
//! the worker's launch policy (SPEC §14.5).
//!
//! Spark's worker runs whatever an application's `Command` names. A sparkwire worker given a
//! Spark installation ([`SparkExecutors`]) runs only the main classes its operator allows
//! (by default Spark's `CoarseGrainedExecutorBackend`), with arguments of that class's shape, JVM
//! options of the shapes that cannot load code, and class path entries only under directories the
//! operator allows. The command is then what Spark 4.0.1's worker runs:
//!
//! ```text
//! <java> -cp <class path entries>:<conf dir>/:<jars>/slf4j-api-*.jar:<jars>/* -Xmx<memory>M
//!        <javaOpts, {{APP_ID}} and {{EXECUTOR_ID}} filled in, the auth secret dropped>
//!        <main class> <arguments, each whole {{VAR}} argument replaced>
//! ```
//!
//! ```
//! use std::path::PathBuf;
//! use sparkwire::messages::Command;
//! use sparkwire::node::worker::spark::SparkExecutors;
//!
//! let spark = SparkExecutors::new(
//!     PathBuf::from("/opt/spark"),
//!     PathBuf::from("/usr/lib/jvm/java-17/bin/java"),
//!     vec!["slf4j-api-2.0.16.jar".into()],
//! );
//! let command = Command::new(
//!     "org.apache.spark.executor.CoarseGrainedExecutorBackend".into(),
//!     ["--driver-url", "spark://CoarseGrainedScheduler@127.0.0.1:7078",
//!      "--executor-id", "{{EXECUTOR_ID}}", "--hostname", "{{HOSTNAME}}",
//!      "--cores", "{{CORES}}", "--app-id", "{{APP_ID}}"]
//!         .map(String::from).to_vec(),
//!     Default::default(),
//!     vec![],
//!     vec![],
//!     vec!["-Dspark.driver.port=7078".into()],
//! );
//! let vars = [
//!     ("EXECUTOR_ID", "3".to_string()),
//!     ("HOSTNAME", "127.0.0.1".to_string()),
//!     ("CORES", "2".to_string()),
//!     ("APP_ID", "app-1".to_string()),
//! ];
//! let java = spark.command(&command, 512, &vars)?;
//! assert_eq!(java.program, PathBuf::from("/usr/lib/jvm/java-17/bin/java"));
//! assert_eq!(java.args[..2], ["-cp", "/opt/spark/conf/:/opt/spark/jars/slf4j-api-2.0.16.jar:/opt/spark/jars/*"]);
//! assert!(java.args.contains(&"-Xmx512M".to_string()));
//! assert!(java.args.ends_with(&["--app-id".to_string(), "app-1".to_string()]));
//! # Ok::<(), String>(())
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::messages::Command;

/// Spark's executor main class, the one a Spark installation allows by default.
pub const SPARK_EXECUTOR_CLASS: &str = "org.apache.spark.executor.CoarseGrainedExecutorBackend";

/// The Spark configuration key whose value is the shared secret; Spark's worker drops JVM
/// options setting it (they would show the secret in `ps`).
const AUTH_SECRET_OPTION: &str = "-Dspark.authenticate.secret";

/// The flags of Spark's executor a launch may give, each with the whole-argument placeholder it
/// must be (`None`: a value checked by shape).
const SPARK_EXECUTOR_FLAGS: &[(&str, Option<&str>)] = &[
    ("--driver-url", None),
    ("--executor-id", Some("{{EXECUTOR_ID}}")),
    ("--hostname", Some("{{HOSTNAME}}")),
    ("--bind-address", Some("{{HOSTNAME}}")),
    ("--cores", Some("{{CORES}}")),
    ("--app-id", Some("{{APP_ID}}")),
    ("--worker-url", Some("{{WORKER_URL}}")),
    ("--resourceProfileId", None),
];

/// The flags every Spark executor command gives.
const REQUIRED_FLAGS: &[&str] = &["--driver-url", "--executor-id", "--cores", "--app-id"];

/// JVM options (by prefix) that load code, run commands or replace the class path: never taken
/// from an application.
const FORBIDDEN_JAVA_OPTS: &[&str] = &[
    "-javaagent",
    "-agentlib",
    "-agentpath",
    "-Xbootclasspath",
    "-XX:OnError",
    "-XX:OnOutOfMemoryError",
    "-XX:Flags",
    "-XX:VMOptionsFile",
    "-XX:+UnlockDiagnosticVMOptions",
    "-XX:CRaC",
    "-Djava.system.class.loader",
    "-Djava.security.manager",
    "-Djava.security.policy",
    "-Djava.library.path",
    "-Djava.class.path",
    "-Djava.ext.dirs",
    "-Djava.endorsed.dirs",
    "-Djdk.module.",
    "-Djava.home",
    "-Dsun.boot.",
];

/// JVM option shapes an application may give (by prefix), beyond the forbidden ones above.
const ALLOWED_JAVA_OPTS: &[&str] = &[
    "-D",
    "-XX:",
    "--add-opens=",
    "--add-exports=",
    "--add-modules=",
    "--add-reads=",
    "--enable-native-access=",
    // Spark 4.3's module options (`JavaModuleOptions`) set how `sun.misc.Unsafe` may be used.
    "--sun-misc-unsafe-memory-access=",
    "-Xss",
    "-Xms",
    "-Xmx",
    "-Xmn",
    "-Xlog:",
    "-verbose:",
    "-ea",
    "-da",
    "-esa",
    "-dsa",
    "-server",
];

/// A text safe to show in a refusal: at most 40 printable ASCII characters of the part before
/// any `=` or `:` value.
fn shown(arg: &str) -> String {
    let name = arg.split(['=', ':']).next().unwrap_or_default();
    let mut s: String = name
        .chars()
        .filter(|c| c.is_ascii_graphic())
        .take(40)
        .collect();
    if name.len() > s.len() {
        s.push('…');
    }
    s
}

/// A Spark installation a worker runs executors from, and what its operator allows of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SparkExecutors {
    home: PathBuf,
    conf_dir: PathBuf,
    java: PathBuf,
    /// `slf4j-api-*.jar` files of `<home>/jars`, which Spark puts ahead of the other jars.
    logging_jars: Vec<String>,
    main_classes: Vec<String>,
    class_path_dirs: Vec<PathBuf>,
    extra_java_opts: Vec<String>,
    /// The Spark release of the installation, announced in `RegisterWorker.sparkRelease`.
    release: Option<String>,
}

/// The Java process to start for a Spark executor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JavaCommand {
    /// The `java` program.
    pub program: PathBuf,
    /// Its arguments: JVM options, the main class, the executor's arguments.
    pub args: Vec<String>,
    /// Variables Spark's worker sets for an executor (`SPARK_HOME`, `SPARK_LAUNCH_WITH_SCALA`).
    pub env: BTreeMap<String, String>,
}

impl JavaCommand {
    /// What Spark's `ExecutorRunner` writes at the start of an executor's `stderr`: "Spark
    /// Executor Command: " and the command, each word in double quotes, values of secret-looking
    /// `-Dkey=value` options redacted (Spark's `spark.redaction.regex` default), a line of 40
    /// `=`, and a blank line.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use sparkwire::node::worker::spark::JavaCommand;
    ///
    /// let c = JavaCommand {
    ///     program: "/usr/bin/java".into(),
    ///     args: vec!["-Xmx512M".into(), "-Dspark.authenticate.secret=s3".into()],
    ///     env: BTreeMap::new(),
    /// };
    /// assert_eq!(
    ///     c.stderr_header(),
    ///     format!(
    ///         "Spark Executor Command: \"/usr/bin/java\" \"-Xmx512M\" \
    ///          \"-Dspark.authenticate.secret=*********(redacted)\"\n{}\n\n",
    ///         "=".repeat(40)
    ///     )
    /// );
    /// ```
    pub fn stderr_header(&self) -> String {
        let redactor = crate::node::redact::Redactor::default();
        let words: Vec<String> = std::iter::once(self.program.to_string_lossy().into_owned())
            .chain(self.args.iter().map(|a| redactor.argument(a)))
            .map(|w| format!("\"{w}\""))
            .collect();
        format!(
            "Spark Executor Command: {}\n{}\n\n",
            words.join(" "),
            "=".repeat(40)
        )
    }
}

/// The Spark release of an installation whose `jars` directory holds the files named
/// `jar_names`: the version of its `spark-core_SCALA-VERSION.jar` (SPEC §15.5), as Spark's
/// build names it (`spark-core_2.12-3.5.9.jar` → `3.5.9`); `None` when there is no such jar, or
/// several of different versions (an installation whose release cannot be told).
///
/// ```
/// use sparkwire::node::worker::spark::release_of_jars;
///
/// let jars = ["slf4j-api-2.0.16.jar", "spark-core_2.13-4.3.0.jar", "spark-core-tests.jar"];
/// assert_eq!(release_of_jars(jars).as_deref(), Some("4.3.0"));
/// assert_eq!(release_of_jars(["scala-library-2.12.15.jar"]), None);
/// ```
pub fn release_of_jars<'a>(jar_names: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut found: Option<String> = None;
    for name in jar_names {
        let Some(rest) = name
            .strip_prefix("spark-core_")
            .and_then(|r| r.strip_suffix(".jar"))
        else {
            continue;
        };
        // `2.12-3.5.9`: the Scala version, then Spark's, each of digits and dots (Spark's own
        // may have a suffix such as `-preview2`).
        let Some((scala, version)) = rest.split_once('-') else {
            continue;
        };
        let plain = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.');
        let suffix_ok = version.split_once('-').is_none_or(|(_, tail)| {
            !tail.is_empty() && tail.chars().all(|c| c.is_ascii_alphanumeric())
        });
        let base = version.split('-').next().unwrap_or_default();
        if !plain(scala)
            || !plain(base)
            || !base.starts_with(|c: char| c.is_ascii_digit())
            || !suffix_ok
        {
            continue;
        }
        match &found {
            Some(f) if f != version => return None,
            _ => found = Some(version.to_string()),
        }
    }
    found
}

impl SparkExecutors {
    /// The Spark installation at `home` (its `conf` directory, its `jars`), run with `java`;
    /// `logging_jars` are the names of the `slf4j-api-*.jar` files in `<home>/jars` (a runtime
    /// lists the directory once at start). Only [`SPARK_EXECUTOR_CLASS`] runs, with no
    /// application class path.
    pub fn new(home: PathBuf, java: PathBuf, logging_jars: Vec<String>) -> SparkExecutors {
        SparkExecutors {
            conf_dir: home.join("conf"),
            home,
            java,
            logging_jars,
            main_classes: vec![SPARK_EXECUTOR_CLASS.to_string()],
            class_path_dirs: Vec::new(),
            extra_java_opts: Vec::new(),
            release: None,
        }
    }

    /// The installation's Spark release (such as `3.5.9`), which the worker announces when it
    /// registers (`RegisterWorker.sparkRelease`, SPEC §15.5): its executors speak Java
    /// serialization to their driver, so a master places on it only applications of a
    /// compatible release. See [`release_of_jars`].
    pub fn with_release(mut self, release: Option<String>) -> SparkExecutors {
        self.release = release;
        self
    }

    /// The installation's Spark release, if known.
    pub fn release(&self) -> Option<&str> {
        self.release.as_deref()
    }

    /// Spark's configuration directory (`SPARK_CONF_DIR`; default `<home>/conf`).
    pub fn with_conf_dir(mut self, dir: PathBuf) -> SparkExecutors {
        self.conf_dir = dir;
        self
    }

    /// Application class path entries allowed: those under one of `dirs` (canonical paths; an
    /// entry with `..` is never allowed).
    pub fn with_class_path_dirs(mut self, dirs: Vec<PathBuf>) -> SparkExecutors {
        self.class_path_dirs = dirs;
        self
    }

    /// JVM options allowed beyond the built-in shapes: each an exact option, or a prefix ending
    /// in `*`. They are checked before the forbidden list, so an operator can allow, say,
    /// `-javaagent:/opt/agents/metrics.jar` exactly.
    pub fn with_java_opts(mut self, opts: Vec<String>) -> SparkExecutors {
        self.extra_java_opts = opts;
        self
    }

    /// Spark's installation directory.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Whether `command` asks for a Spark class this installation runs.
    pub fn runs(&self, command: &Command) -> bool {
        self.main_classes.contains(&command.main_class)
    }

    /// Whether the operator allowed JVM option `opt` exactly or by prefix.
    fn operator_allows(&self, opt: &str) -> bool {
        self.extra_java_opts
            .iter()
            .any(|p| match p.strip_suffix('*') {
                Some(prefix) => opt.starts_with(prefix),
                None => p == opt,
            })
    }

    /// Whether JVM option `opt` may come from an application, or why not.
    fn check_java_opt(&self, opt: &str) -> Result<(), String> {
        if self.operator_allows(opt) {
            return Ok(());
        }
        if opt.contains('\0') {
            return Err("a JVM option holds a NUL byte".to_string());
        }
        if FORBIDDEN_JAVA_OPTS.iter().any(|p| opt.starts_with(p)) {
            return Err(format!(
                "the JVM option {} can load code or run commands",
                shown(opt)
            ));
        }
        if !ALLOWED_JAVA_OPTS.iter().any(|p| opt.starts_with(p)) {
            return Err(format!(
                "the JVM option {} is not of a shape the worker allows (-D…, -XX:…, --add-opens=…, \
                 --add-exports=…, --add-modules=…, -Xss/-Xms/-Xmx…, -verbose:…)",
                shown(opt)
            ));
        }
        Ok(())
    }

    /// Whether class path entry `entry` is under an allowed directory.
    fn check_class_path(&self, entry: &str) -> Result<(), String> {
        let path = Path::new(entry);
        let plain = path.is_absolute()
            && !path
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir));
        if plain && self.class_path_dirs.iter().any(|d| path.starts_with(d)) {
            Ok(())
        } else {
            Err(format!(
                "its class path entry {} is not under a directory the worker allows \
                 (--spark-class-path)",
                shown(entry)
            ))
        }
    }

    /// The Java command Spark's worker runs for executor command `command` with `memory_mb` of
    /// heap, the `{{VAR}}` values of `vars` (`EXECUTOR_ID`, `HOSTNAME`, `CORES`, `APP_ID`,
    /// `WORKER_URL`, `RESOURCE_PROFILE_ID`), if the policy allows it; otherwise why not (the
    /// text never shows a value).
    pub fn command(
        &self,
        command: &Command,
        memory_mb: i32,
        vars: &[(&str, String)],
    ) -> Result<JavaCommand, String> {
        if !self.runs(command) {
            return Err(format!(
                "Refusing to run the Spark class {}: the worker runs only {}",
                shown(&command.main_class),
                self.main_classes.join(", ")
            ));
        }
        let refuse = |why: String| format!("Refusing to run {}: {why}", command.main_class);
        check_executor_arguments(&command.arguments).map_err(refuse)?;
        if !command.library_path_entries.is_empty() {
            return Err(refuse(
                "it sets library path entries, which load native code; the worker takes none"
                    .to_string(),
            ));
        }
        if memory_mb <= 0 {
            return Err(refuse(format!(
                "its memory, {memory_mb} MB, is not positive"
            )));
        }
        for entry in &command.class_path_entries {
            self.check_class_path(entry).map_err(refuse)?;
        }
        let var = |name: &str| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
        };
        let app_id = var("APP_ID").unwrap_or_default();
        let exec_id = var("EXECUTOR_ID").unwrap_or_default();
        let mut java_opts = Vec::new();
        for opt in &command.java_opts {
            if opt.starts_with(AUTH_SECRET_OPTION) {
                continue;
            }
            self.check_java_opt(opt).map_err(refuse)?;
            java_opts.push(
                opt.replace("{{APP_ID}}", &app_id)
                    .replace("{{EXECUTOR_ID}}", &exec_id),
            );
        }
        let mut args = vec![
            "-cp".to_string(),
            self.class_path(&command.class_path_entries),
        ];
        args.push(format!("-Xmx{memory_mb}M"));
        args.extend(java_opts);
        args.push(command.main_class.clone());
        for a in &command.arguments {
            // Spark replaces only whole arguments (`ExecutorRunner.substituteVariables`).
            let replaced = a
                .strip_prefix("{{")
                .and_then(|rest| rest.strip_suffix("}}"))
                .and_then(var);
            args.push(replaced.unwrap_or_else(|| a.clone()));
        }
        let mut env = BTreeMap::new();
        env.insert(
            "SPARK_HOME".to_string(),
            self.home.to_string_lossy().into_owned(),
        );
        env.insert("SPARK_LAUNCH_WITH_SCALA".to_string(), "0".to_string());
        Ok(JavaCommand {
            program: self.java.clone(),
            args,
            env,
        })
    }

    /// Spark's class path: the application's entries, the configuration directory (a directory
    /// entry ends in `/`), the logging API jars, then every jar of `<home>/jars`; each entry
    /// once.
    fn class_path(&self, app: &[String]) -> String {
        let jars = self.home.join("jars");
        let mut conf = self.conf_dir.to_string_lossy().into_owned();
        if !conf.ends_with('/') {
            conf.push('/');
        }
        let mut cp: Vec<String> = Vec::new();
        let entries = app
            .iter()
            .filter(|e| !e.is_empty())
            .cloned()
            .chain(std::iter::once(conf))
            .chain(
                self.logging_jars
                    .iter()
                    .map(|j| jars.join(j).to_string_lossy().into_owned()),
            )
            .chain(std::iter::once(
                jars.join("*").to_string_lossy().into_owned(),
            ));
        for e in entries {
            if !cp.contains(&e) {
                cp.push(e);
            }
        }
        cp.join(":")
    }
}

/// Whether `args` are Spark's executor flags: flag and value pairs, each flag at most once,
/// `--driver-url` a `spark://` URL, `--resourceProfileId` a number or its placeholder, and the
/// others exactly Spark's placeholders. The error says why not, without showing a value.
pub fn check_executor_arguments(args: &[String]) -> Result<(), String> {
    let usage = "Spark's executor only with the flags Spark's worker fills in \
                 (--driver-url spark://… --executor-id {{EXECUTOR_ID}} --hostname {{HOSTNAME}} \
                 --cores {{CORES}} --app-id {{APP_ID}} [--worker-url {{WORKER_URL}}] \
                 [--resourceProfileId N])";
    super::policy::check_flags(args, SPARK_EXECUTOR_FLAGS, REQUIRED_FLAGS, usage)
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_installations_release_is_the_version_of_its_spark_core_jar_and_none_when_that_is_unclear()
    {
        use super::release_of_jars;
        // As pyspark's wheels and Spark's distributions name the jar, Scala 2.12 and 2.13.
        let with = |core: &str| {
            release_of_jars([
                "slf4j-api-1.7.32.jar",
                "spark-core-tests.jar",
                core,
                "spark-sql_2.12-3.3.4.jar",
                "scala-library-2.12.15.jar",
            ])
        };
        assert_eq!(with("spark-core_2.12-3.3.4.jar").as_deref(), Some("3.3.4"));
        assert_eq!(with("spark-core_2.13-4.3.0.jar").as_deref(), Some("4.3.0"));
        assert_eq!(
            with("spark-core_2.13-4.0.0-preview2.jar").as_deref(),
            Some("4.0.0-preview2")
        );
        // No core jar, one not named by Spark's build, or two of different releases: unknown.
        assert_eq!(with("spark-sql_2.13-4.3.0.jar"), None);
        assert_eq!(with("spark-core_2.13-latest.jar"), None);
        assert_eq!(with("spark-core_2.13-4.3.0-.jar"), None);
        assert_eq!(
            release_of_jars(["spark-core_2.12-3.5.9.jar", "spark-core_2.13-4.1.4.jar"]),
            None
        );
        assert_eq!(
            release_of_jars(["spark-core_2.12-3.5.9.jar", "spark-core_2.12-3.5.9.jar"]).as_deref(),
            Some("3.5.9")
        );
    }
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// The `LaunchExecutor` command a real PySpark 4.0.1 application sent
    /// (../shared/spark-captures/A.pcap, decoded by `sparkwire spark decode`).
    fn captured_command() -> Command {
        Command::new(
            SPARK_EXECUTOR_CLASS.into(),
            strings(&[
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
            ]),
            BTreeMap::new(),
            vec![],
            vec![],
            strings(&[
                "-Dspark.blockManager.port=17100",
                "-Dspark.driver.blockManager.port=17091",
                "-Dspark.ui.port=14040",
                "-Dspark.driver.port=17090",
                "-Djava.net.preferIPv6Addresses=false",
                "-XX:+IgnoreUnrecognizedVMOptions",
                "--add-modules=jdk.incubator.vector",
                "--add-opens=java.base/java.lang=ALL-UNNAMED",
                "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
                "--add-opens=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
                "-Djdk.reflect.useDirectMethodHandle=false",
                "-Dio.netty.tryReflectionSetAccessible=true",
            ]),
        )
    }

    fn vars() -> Vec<(&'static str, String)> {
        vec![
            ("EXECUTOR_ID", "1".into()),
            ("HOSTNAME", "127.0.0.1".into()),
            ("CORES", "1".into()),
            ("APP_ID", "app-20261201080720-0000".into()),
            ("WORKER_URL", "spark://Worker@127.0.0.1:17078".into()),
            ("RESOURCE_PROFILE_ID", "0".into()),
        ]
    }

    fn spark() -> SparkExecutors {
        SparkExecutors::new(
            PathBuf::from("/spark"),
            PathBuf::from("/usr/lib/jvm/java-17-openjdk-amd64/bin/java"),
            vec!["slf4j-api-2.0.16.jar".into()],
        )
        .with_conf_dir(PathBuf::from("research/side-by-side/conf"))
    }

    #[test]
    fn builds_the_command_line_spark_4_0_1s_worker_logged_for_the_same_launch() {
        // The worker's "Launch command:" line for this launch (worker_capA.log), with the
        // installation's jars directory written /spark/jars and the options shortened as above.
        let expected = strings(&[
            "-cp",
            "research/side-by-side/conf/:/spark/jars/slf4j-api-2.0.16.jar:/spark/jars/*",
            "-Xmx512M",
            "-Dspark.blockManager.port=17100",
            "-Dspark.driver.blockManager.port=17091",
            "-Dspark.ui.port=14040",
            "-Dspark.driver.port=17090",
            "-Djava.net.preferIPv6Addresses=false",
            "-XX:+IgnoreUnrecognizedVMOptions",
            "--add-modules=jdk.incubator.vector",
            "--add-opens=java.base/java.lang=ALL-UNNAMED",
            "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
            "--add-opens=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
            "-Djdk.reflect.useDirectMethodHandle=false",
            "-Dio.netty.tryReflectionSetAccessible=true",
            "org.apache.spark.executor.CoarseGrainedExecutorBackend",
            "--driver-url",
            "spark://CoarseGrainedScheduler@127.0.0.1:17090",
            "--executor-id",
            "1",
            "--hostname",
            "127.0.0.1",
            "--cores",
            "1",
            "--app-id",
            "app-20261201080720-0000",
            "--worker-url",
            "spark://Worker@127.0.0.1:17078",
            "--resourceProfileId",
            "0",
        ]);
        let java = spark()
            .command(&captured_command(), 512, &vars())
            .expect("the captured launch is allowed");
        assert_eq!(
            java.program,
            PathBuf::from("/usr/lib/jvm/java-17-openjdk-amd64/bin/java")
        );
        assert_eq!(java.args, expected);
        assert_eq!(java.env["SPARK_HOME"], "/spark");
        assert_eq!(java.env["SPARK_LAUNCH_WITH_SCALA"], "0");
    }

    #[test]
    fn fills_app_and_executor_ids_inside_java_options_and_drops_the_secret() {
        let command = captured_command().with_java_opts(strings(&[
            "-Dspark.log=/logs/{{APP_ID}}/{{EXECUTOR_ID}}.log",
            "-Dspark.authenticate.secret=hunter2",
        ]));
        let java = spark().command(&command, 1024, &vars()).expect("allowed");
        assert!(java
            .args
            .contains(&"-Dspark.log=/logs/app-20261201080720-0000/1.log".to_string()));
        assert!(!java.args.iter().any(|a| a.contains("hunter2")));
        assert!(java.args.contains(&"-Xmx1024M".to_string()));
    }

    #[test]
    fn application_class_path_entries_come_first_only_under_allowed_directories() {
        let command = captured_command().with_class_path_entries(strings(&["/apps/lib/udf.jar"]));
        let refused = spark().command(&command, 512, &vars()).unwrap_err();
        assert!(refused.contains("not under a directory"), "{refused}");
        let allowed = spark().with_class_path_dirs(vec![PathBuf::from("/apps")]);
        let java = allowed.command(&command, 512, &vars()).expect("allowed");
        assert!(java.args[1].starts_with("/apps/lib/udf.jar:research/"));
        let escaping =
            captured_command().with_class_path_entries(strings(&["/apps/../etc/evil.jar"]));
        assert!(allowed.command(&escaping, 512, &vars()).is_err());
    }

    #[test]
    fn refuses_jvm_options_that_load_code_without_showing_their_values() {
        for opt in [
            "-javaagent:/tmp/evil.jar",
            "-agentpath:/tmp/evil.so",
            "-XX:OnError=sh -c 'rm -rf /'",
            "-XX:OnOutOfMemoryError=curl evil",
            "-Djava.system.class.loader=Evil",
            "-Xbootclasspath/a:/tmp/evil.jar",
            "@/tmp/argfile",
            "-cp",
            "-jar",
        ] {
            let command = captured_command().with_java_opts(vec![opt.to_string()]);
            let why = spark().command(&command, 512, &vars()).unwrap_err();
            assert!(why.starts_with("Refusing to run"), "{opt}: {why}");
            assert!(!why.contains("evil") && !why.contains("rm -rf"), "{why}");
        }
        let exact = spark().with_java_opts(vec!["-javaagent:/opt/agents/metrics.jar".into()]);
        let command =
            captured_command().with_java_opts(vec!["-javaagent:/opt/agents/metrics.jar".into()]);
        assert!(exact.command(&command, 512, &vars()).is_ok());
    }

    #[test]
    fn refuses_other_classes_argument_shapes_and_library_paths() {
        let other = captured_command().with_main_class("com.example.Miner".into());
        assert!(!spark().runs(&other));
        assert!(spark().command(&other, 512, &vars()).is_err());
        for args in [
            &[
                "--driver-url",
                "spark://d@h:1",
                "--executor-id",
                "7",
                "--cores",
                "{{CORES}}",
                "--app-id",
                "{{APP_ID}}",
            ][..],
            &[
                "--driver-url",
                "http://d",
                "--executor-id",
                "{{EXECUTOR_ID}}",
                "--cores",
                "{{CORES}}",
                "--app-id",
                "{{APP_ID}}",
            ],
            &[
                "--driver-url",
                "spark://d@h:1",
                "--executor-id",
                "{{EXECUTOR_ID}}",
                "--cores",
                "{{CORES}}",
            ],
            &[
                "--driver-url",
                "spark://d@h:1",
                "--user-class-path",
                "file:/x.jar",
                "--executor-id",
                "{{EXECUTOR_ID}}",
                "--cores",
                "{{CORES}}",
                "--app-id",
                "{{APP_ID}}",
            ],
        ] {
            let command = captured_command().with_arguments(strings(args));
            assert!(spark().command(&command, 512, &vars()).is_err(), "{args:?}");
        }
        let native = captured_command().with_library_path_entries(strings(&["/tmp/native"]));
        assert!(spark().command(&native, 512, &vars()).is_err());
        assert!(spark().command(&captured_command(), 0, &vars()).is_err());
    }
}
