//! What a worker runs, command and all (SPEC §14.5): the program, the shape of its arguments,
//! and the environment it gets.
//!
//! - A program on the executor allow-list (the reference worker's `--allow-exec`) runs only as
//!   sparkwire's `executor` subcommand with its flags ([`executor_arguments`]), for executors;
//!   one on the other list (`--allow-exec-any`) runs with any arguments, for executors and
//!   drivers.
//! - The launched process's environment is built in one place ([`Policy`]'s `environment`):
//!   PATH and HOME of the worker, the worker's variables the operator lists (`--pass-env`), and
//!   the application's variables the operator allows (`--allow-env`, default `SPARK_*`). Variables that change how programs are
//!   loaded or interpreted ([`FORBIDDEN_ENV`], [`FORBIDDEN_ENV_PREFIXES`]) never pass: a
//!   command naming one is refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::messages::Command;

/// Prefixes of variables no launched process gets from an application: the dynamic loaders'
/// (`LD_PRELOAD`, `DYLD_INSERT_LIBRARIES`, …) and exported shell functions.
pub const FORBIDDEN_ENV_PREFIXES: &[&str] = &["LD_", "DYLD_", "_RLD", "BASH_FUNC_"];

/// Variables no launched process gets from an application: they choose what runs, or load code
/// into shells, JVMs and interpreters.
pub const FORBIDDEN_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "IFS",
    "ENV",
    "BASH_ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "CDPATH",
    "LIBPATH",
    "SHLIB_PATH",
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "LOCPATH",
    "NLSPATH",
    "HOSTALIASES",
    "RES_OPTIONS",
    "MALLOC_CONF",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "CLASSPATH",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PERL5LIB",
    "PERL5OPT",
    "PERLLIB",
    "RUBYLIB",
    "RUBYOPT",
    "NODE_OPTIONS",
    "NODE_PATH",
];

/// The flags of `sparkwire executor` a launch may give, each with the value it must have: a
/// Spark placeholder the worker fills in, or (`None`) a value checked by [`executor_arguments`].
const EXECUTOR_FLAGS: &[(&str, Option<&str>)] = &[
    ("--driver-url", None),
    ("--executor-id", Some("{{EXECUTOR_ID}}")),
    ("--hostname", Some("{{HOSTNAME}}")),
    ("--cores", Some("{{CORES}}")),
    ("--app-id", Some("{{APP_ID}}")),
    ("--worker-url", Some("{{WORKER_URL}}")),
    ("--resourceProfileId", None),
];

/// The flags every executor command gives.
const REQUIRED_EXECUTOR_FLAGS: &[&str] = &["--driver-url", "--executor-id", "--cores", "--app-id"];

/// What is launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LaunchKind {
    /// An application's executor (LaunchExecutor).
    Executor,
    /// A driver (LaunchDriver).
    Driver,
}

/// How a program named in a launch is resolved to its canonical path (the worker's loop gives
/// [`std::fs::canonicalize`]; tests give a table).
pub type Resolve = fn(&str) -> std::io::Result<PathBuf>;

/// A worker's launch policy, with canonical program paths and the worker's own variables a
/// launched process inherits, both read once when the worker starts: deciding a launch reads
/// nothing but the resolver.
#[derive(Debug, Clone)]
pub struct Policy {
    executor_programs: Vec<PathBuf>,
    any_programs: Vec<PathBuf>,
    allow_env: Vec<String>,
    /// PATH, HOME and the `pass_env` variables of the worker, as they were when it started.
    inherited: Vec<(String, String)>,
    resolve: Resolve,
    /// Spark's executors, and the `spark://Worker@…` URL of the worker's watcher port.
    spark: Option<(super::spark::SparkExecutors, String)>,
}

/// A text safe to show in a refusal: at most 40 characters, printable ASCII only, and never a
/// value (the part after `=`).
fn shown(arg: &str) -> String {
    let name = arg.split('=').next().unwrap_or_default();
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

/// Whether `args` are sparkwire's `executor` subcommand and its flags: `executor`, then flag and
/// value pairs, each flag at most once, `--driver-url` a `spark://` URL, `--resourceProfileId`
/// a number or `{{RESOURCE_PROFILE_ID}}`, and `--executor-id`, `--hostname`, `--cores`, `--app-id`, `--worker-url` exactly
/// Spark's placeholders `{{EXECUTOR_ID}}`, `{{HOSTNAME}}`, `{{CORES}}`, `{{APP_ID}}`,
/// `{{WORKER_URL}}`. The error says why not, without showing any value.
pub fn executor_arguments(args: &[String]) -> Result<(), String> {
    let usage = "only as `executor --driver-url spark://… --executor-id {{EXECUTOR_ID}} \
                 --hostname {{HOSTNAME}} --cores {{CORES}} --app-id {{APP_ID}} \
                 [--worker-url {{WORKER_URL}}] [--resourceProfileId N|{{RESOURCE_PROFILE_ID}}]`";
    match args.first() {
        Some(first) if first == "executor" => {}
        Some(first) => {
            return Err(format!(
                "its first argument is `{}`, and it may run {usage}",
                shown(first)
            ))
        }
        None => return Err(format!("it has no arguments, and it may run {usage}")),
    }
    check_flags(&args[1..], EXECUTOR_FLAGS, REQUIRED_EXECUTOR_FLAGS, usage)
}

/// Whether `args` are pairs of flags of `flags` and their values, each flag at most once and
/// every one of `required` given: a flag with a placeholder must have exactly it; `--driver-url`
/// a `spark://` URL; any other a number or `{{RESOURCE_PROFILE_ID}}`. The error says why not,
/// without showing a value, followed by `; it may run {usage}` where the shape is wrong.
pub(crate) fn check_flags(
    args: &[String],
    flags: &[(&str, Option<&str>)],
    required: &[&str],
    usage: &str,
) -> Result<(), String> {
    let mut seen: Vec<&str> = Vec::new();
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let Some((name, fixed)) = flags.iter().find(|(f, _)| f == flag) else {
            return Err(format!(
                "`{}` is not a flag it may take; it may run {usage}",
                shown(flag)
            ));
        };
        if seen.contains(name) {
            return Err(format!("{name} is given twice"));
        }
        seen.push(name);
        let Some(value) = rest.next() else {
            return Err(format!("{name} has no value"));
        };
        let ok = match (fixed, *name) {
            (Some(placeholder), _) => value == placeholder,
            (None, "--driver-url") => {
                value.starts_with("spark://")
                    && !value.contains("{{")
                    && value.chars().all(|c| c.is_ascii_graphic())
            }
            (None, _) => {
                value == "{{RESOURCE_PROFILE_ID}}"
                    || (!value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()))
            }
        };
        if !ok {
            let wanted = match fixed {
                Some(p) => format!("the placeholder {p}"),
                None if *name == "--driver-url" => "a spark:// URL".to_string(),
                None => "a number or {{RESOURCE_PROFILE_ID}}".to_string(),
            };
            return Err(format!("the value of {name} is not {wanted}"));
        }
    }
    for required in required {
        if !seen.contains(required) {
            return Err(format!("{required} is missing; it may run {usage}"));
        }
    }
    Ok(())
}

/// Whether variable `name` matches `pattern`: the name itself, or a prefix followed by `*`.
fn env_matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// Whether no application may set variable `name`.
pub fn forbidden_env(name: &str) -> bool {
    FORBIDDEN_ENV.contains(&name) || FORBIDDEN_ENV_PREFIXES.iter().any(|p| name.starts_with(p))
}

impl Policy {
    /// A policy from its parts: the canonical paths of the programs allowed as executors only
    /// and with any arguments, the application variables allowed (names, or prefixes ending in
    /// `*`), the worker's own variables a launched process inherits, and how a program named in
    /// a launch is resolved to its canonical path (a runtime gives [`std::fs::canonicalize`]).
    pub fn from_parts(
        executor_programs: Vec<PathBuf>,
        any_programs: Vec<PathBuf>,
        allow_env: Vec<String>,
        inherited: Vec<(String, String)>,
        resolve: Resolve,
    ) -> Policy {
        Policy {
            executor_programs,
            any_programs,
            allow_env,
            inherited,
            resolve,
            spark: None,
        }
    }

    /// Also runs Spark's own executors from `executors`, telling them `worker_url` (the
    /// worker's Spark-wire watcher port, `spark://Worker@HOST:PORT`) as `{{WORKER_URL}}`.
    pub fn with_spark(
        mut self,
        executors: super::spark::SparkExecutors,
        worker_url: String,
    ) -> Policy {
        self.spark = Some((executors, worker_url));
        self
    }

    /// The Spark release of the installation whose executors the worker runs, if it runs
    /// Spark's executors and their release is known (announced in `RegisterWorker`, SPEC §15.5).
    pub(crate) fn spark_release(&self) -> Option<String> {
        self.spark
            .as_ref()
            .and_then(|(s, _)| s.release().map(str::to_string))
    }

    /// The Spark installation that runs `command` as an executor, with the worker URL its
    /// executors get, if there is one and it runs that class.
    pub(crate) fn spark_for(
        &self,
        kind: LaunchKind,
        command: &Command,
    ) -> Option<(&super::spark::SparkExecutors, &str)> {
        match (&self.spark, kind) {
            (Some((s, url)), LaunchKind::Executor) if s.runs(command) => Some((s, url.as_str())),
            _ => None,
        }
    }

    /// The program to run for `command`, if the policy allows the command as a `kind` launch;
    /// otherwise why not.
    pub(crate) fn program(&self, kind: LaunchKind, command: &Command) -> Result<PathBuf, String> {
        let program = &command.main_class;
        let mut allowed = self.any_programs.clone();
        allowed.extend(self.executor_programs.iter().cloned());
        let canonical = check_allowed(program, &allowed, self.resolve)?;
        if self.any_programs.contains(&canonical) {
            return Ok(canonical);
        }
        match kind {
            LaunchKind::Executor => executor_arguments(&command.arguments)
                .map(|()| canonical.clone())
                .map_err(|why| {
                    format!(
                        "Refusing to run {} ({}): {why} (--allow-exec allows it only as an executor)",
                        shown(program),
                        canonical.display()
                    )
                }),
            LaunchKind::Driver => Err(format!(
                "Refusing to run {} ({}) as a driver: the worker runs it only as an executor \
                 (--allow-exec); drivers need a program allowed with --allow-exec-any",
                shown(program),
                canonical.display()
            )),
        }
    }

    /// The whole environment of a launched process: the worker's PATH and HOME, the worker's
    /// variables named by `pass_env`, and the variables of `app_env` that `allow_env` allows,
    /// with Spark's `{{…}}` placeholders of `vars` filled in. Other application variables are
    /// dropped (and logged, by name); one that is never allowed refuses the launch.
    pub(crate) fn environment(
        &self,
        app_env: &BTreeMap<String, String>,
        vars: &[(&str, String)],
    ) -> Result<BTreeMap<String, String>, String> {
        let forbidden: Vec<&str> = app_env
            .keys()
            .filter(|k| forbidden_env(k))
            .map(String::as_str)
            .collect();
        if !forbidden.is_empty() {
            return Err(format!(
                "Refusing the launch: its environment sets {}, which no launched process gets",
                forbidden
                    .iter()
                    .map(|k| shown(k))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let mut env = BTreeMap::new();
        let mut dropped = Vec::new();
        for (key, value) in app_env {
            let valid = !key.is_empty() && !key.contains(['=', '\0']) && !value.contains('\0');
            if valid && self.allow_env.iter().any(|p| env_matches(p, key)) {
                env.insert(key.clone(), substitute(value, vars));
            } else {
                dropped.push(shown(key));
            }
        }
        if !dropped.is_empty() {
            tracing::warn!(
                "Not passing the application's environment variables {} (not allowed by --allow-env)",
                dropped.join(", ")
            );
        }
        for (name, value) in &self.inherited {
            env.insert(name.clone(), value.clone());
        }
        env.entry("PATH".to_string())
            .or_insert_with(|| "/usr/bin:/bin".to_string());
        Ok(env)
    }
}

/// The program to run for `program` when it is on `allowed` (canonical paths), or why not;
/// `resolve` gives its canonical path.
pub(crate) fn check_allowed(
    program: &str,
    allowed: &[PathBuf],
    resolve: Resolve,
) -> Result<PathBuf, String> {
    let canonical = resolve(program).map_err(|e| {
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

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    /// The executor command the reference driver registers (placeholders unfilled).
    #[cfg(feature = "reference")]
    fn executor_command() -> Vec<String> {
        crate::reference::driver::DriverConfig::new("t")
            .app_description("spark://CoarseGrainedScheduler@127.0.0.1:4040")
            .command
            .arguments
    }

    #[test]
    #[cfg(feature = "reference")]
    fn the_executor_subcommand_with_its_flags_is_the_only_shape() {
        assert_eq!(executor_arguments(&executor_command()), Ok(()));
        let mut with_profile = executor_command();
        with_profile.extend(strings(&["--resourceProfileId", "0"]));
        assert_eq!(executor_arguments(&with_profile), Ok(()));
        let mut placeholder = executor_command();
        placeholder.extend(strings(&["--resourceProfileId", "{{RESOURCE_PROFILE_ID}}"]));
        assert_eq!(executor_arguments(&placeholder), Ok(()));

        let worker = strings(&[
            "worker",
            "sparkwire://127.0.0.1:1",
            "--allow-exec",
            "/bin/sh",
        ]);
        let why = executor_arguments(&worker).unwrap_err();
        assert!(why.contains("first argument is `worker`"), "{why}");

        let mut extra = executor_command();
        extra.extend(strings(&["--allow-exec", "/bin/sh"]));
        assert!(executor_arguments(&extra)
            .unwrap_err()
            .contains("`--allow-exec`"));

        let mut fixed_id = executor_command();
        fixed_id[4] = "7".into();
        assert!(executor_arguments(&fixed_id)
            .unwrap_err()
            .contains("--executor-id is not the placeholder {{EXECUTOR_ID}}"));

        let mut twice = executor_command();
        twice.extend(strings(&["--cores", "{{CORES}}"]));
        assert!(executor_arguments(&twice).unwrap_err().contains("twice"));

        let missing = strings(&["executor", "--driver-url", "spark://d@h:1"]);
        assert!(executor_arguments(&missing)
            .unwrap_err()
            .contains("missing"));
        assert!(executor_arguments(&[]).is_err());
    }

    #[test]
    fn refusals_never_show_values() {
        let args = strings(&["executor", "--password=hunter2"]);
        let why = executor_arguments(&args).unwrap_err();
        assert!(!why.contains("hunter2"), "{why}");
    }

    /// A policy inheriting PATH, HOME and `pass_env` from this process, as a runtime builds it.
    fn policy(allow_env: &[&str], pass_env: &[&str]) -> Policy {
        let inherited = ["PATH", "HOME"]
            .iter()
            .chain(pass_env)
            .filter_map(|n| Some((n.to_string(), std::env::var(n).ok()?)))
            .collect();
        Policy::from_parts(Vec::new(), Vec::new(), strings(allow_env), inherited, |p| {
            std::fs::canonicalize(p)
        })
    }

    #[test]
    fn the_environment_is_minimal_filtered_and_never_loads_code() {
        let p = policy(&["SPARK_*", "MY_VAR"], &[]);
        let app: BTreeMap<String, String> = [
            ("SPARK_EXECUTOR_ID", "{{EXECUTOR_ID}}"),
            ("MY_VAR", "1"),
            ("OTHER", "2"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let env = p
            .environment(&app, &[("EXECUTOR_ID", "3".to_string())])
            .expect("allowed");
        assert_eq!(env["SPARK_EXECUTOR_ID"], "3");
        assert_eq!(env["MY_VAR"], "1");
        assert!(!env.contains_key("OTHER"));
        assert!(env.contains_key("PATH"));
        let expected: Vec<&str> = ["HOME", "MY_VAR", "PATH", "SPARK_EXECUTOR_ID"]
            .into_iter()
            .filter(|k| *k != "HOME" || std::env::var_os("HOME").is_some())
            .collect();
        assert_eq!(env.keys().map(String::as_str).collect::<Vec<_>>(), expected);

        // Even an operator allowing everything never passes the loader's variables.
        let open = policy(&["*"], &[]);
        for bad in [
            "LD_PRELOAD",
            "DYLD_INSERT_LIBRARIES",
            "PATH",
            "JAVA_TOOL_OPTIONS",
        ] {
            let app: BTreeMap<String, String> = [(bad.to_string(), "/tmp/x.so".to_string())].into();
            let why = open.environment(&app, &[]).unwrap_err();
            assert!(why.contains(bad), "{why}");
        }
    }

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
        let allowed = vec![std::fs::canonicalize("/bin/true").expect("/bin/true")];
        let resolve: Resolve = |p| std::fs::canonicalize(p);
        assert!(check_allowed("/bin/true", &allowed, resolve).is_ok());
        let err = check_allowed("/bin/false", &allowed, resolve).unwrap_err();
        assert!(err.contains("not on the worker's allow-list"), "{err}");
        assert!(check_allowed("/no/such/program", &allowed, resolve).is_err());
    }
}
