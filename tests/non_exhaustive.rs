//! Messages can grow without breaking users (SPEC §7): outside sparkwire, every message and every
//! struct a message carries is built through its public `new`, setters or `Default`, struct
//! patterns end in `..`, and a `match` over the families, the versions and Spark's states needs a
//! wildcard arm; so does one over the validator's rules and the handshake's refusals, which grow
//! with the protocol. This file is an outside crate, so it can only do what a user can.

use std::path::{Path, PathBuf};
use std::process::Command;

use bytes::Bytes;

mod common;
use common::files::temp_dir;
use sparkwire::messages::deploy::{ExecutorStateChanged, RegisterWorker, RequestMasterState};
use sparkwire::messages::to_hex;
use sparkwire::messages::{
    Addr, DeployMessage, EndpointRef, ExecutorLossReason, ExecutorState, Family,
    ResourceInformation, Resources, Version,
};
use sparkwire::wire::{decode_frame, encode_frame, Envelope};

/// The vector of `family/name` for `case` in version 2: (body hex, frame hex).
fn vector(family: &str, name: &str, case: &str) -> (String, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("protocol/vectors")
        .join(family)
        .join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file: serde_json::Value = serde_json::from_str(&text).expect("vector file is JSON");
    let v = file["vectors"]
        .as_array()
        .expect("vectors")
        .iter()
        .find(|v| v["case"] == case && v["version"] == 2)
        .unwrap_or_else(|| panic!("{name} has a {case} vector for version 2"));
    let field = |k: &str| v[k].as_str().expect("a hex string").to_string();
    (field("body_hex"), field("frame_hex"))
}

/// Encodes `msg` and checks it against the golden vector both ways: the body sparkwire writes is
/// the vector's, and the vector's frame decodes to `msg`.
fn assert_is_vector(msg: DeployMessage, name: &str, case: &str) {
    let (body, frame) = vector("deploy", name, case);
    let ours = encode_frame(&Envelope::Send(msg.clone()), Version::V2).expect("encodes");
    assert!(
        to_hex(&ours).ends_with(&body),
        "{name} ({case}) built with constructors encodes to another body than the vector's"
    );
    let bytes = sparkwire::messages::from_hex(&frame).expect("frame hex");
    let decoded: Envelope<DeployMessage> =
        decode_frame(&Bytes::from(bytes), Version::V2).expect("vector decodes");
    let message = match decoded {
        Envelope::Send(m) | Envelope::Ask { message: m, .. } => m,
        other => panic!("the {name} vector is not a send or an ask: {other:?}"),
    };
    assert_eq!(message, msg, "{name} ({case})");
}

fn full_register_worker() -> RegisterWorker {
    let mut resources = Resources::new();
    resources.insert(
        "resourcesKey-1".to_string(),
        ResourceInformation::new("name-1".to_string(), vec!["addresses-1".to_string()]),
    );
    RegisterWorker::new(
        "id-1".to_string(),
        "host-1".to_string(),
        7,
        EndpointRef::new("name-1".to_string()).with_address(Some(Addr::new("host-1", 7))),
        7,
        7,
        "workerWebUiUrl-1".to_string(),
        Addr::new("host-1", 7),
        resources,
    )
}

#[test]
fn messages_built_with_constructors_and_setters_are_the_golden_vectors() {
    // `new` leaves the optional `sparkRelease` `None`; its setter fills it as the full vector has it.
    let full = full_register_worker().with_spark_release(Some("sparkRelease-1".to_string()));
    assert_is_vector(full.into(), "RegisterWorker", "full");
    let minimal = full_register_worker()
        .with_port(0)
        .with_worker(EndpointRef::client("name-1"))
        .with_cores(0)
        .with_memory(0)
        .with_master_address(Addr::new("host-1", 0))
        .with_resources(Resources::new());
    assert_is_vector(minimal.into(), "RegisterWorker", "minimal");

    // `new` leaves the optional fields `None`: that is the minimal vector.
    let changed = ExecutorStateChanged::new("appId-1".to_string(), 0, ExecutorState::Launching);
    assert_eq!((&changed.message, changed.exit_status), (&None, None));
    assert_is_vector(changed.clone().into(), "ExecutorStateChanged", "minimal");
    let full = changed
        .with_exec_id(7)
        .with_state(ExecutorState::Running)
        .with_message(Some("message-1".to_string()))
        .with_exit_status(Some(7));
    assert_is_vector(full.into(), "ExecutorStateChanged", "full");

    // A message without fields: `Default` and `new()` are the same value.
    assert_eq!(RequestMasterState::default(), RequestMasterState::new());
    assert_is_vector(
        RequestMasterState::default().into(),
        "RequestMasterState",
        "full",
    );
}

#[test]
fn each_setter_sets_its_own_field_and_leaves_the_others() {
    let base = full_register_worker();
    let mut want = base.clone();
    want.cores = 64;
    assert_eq!(base.clone().with_cores(64), want);
    let mut want = base.clone();
    want.worker_web_ui_url = "http://w:8081".to_string();
    assert_eq!(
        base.clone()
            .with_worker_web_ui_url(want.worker_web_ui_url.clone()),
        want
    );
    let mut want = base.clone();
    want.master_address = Addr::new("m", 7077).with_port(7078);
    assert_eq!(want.master_address.port, 7078);
    assert_eq!(base.clone().with_master_address(Addr::new("m", 7078)), want);
}

#[test]
fn loss_reasons_are_built_with_one_constructor_per_variant() {
    let exited = ExecutorLossReason::executor_exited(137, true, "Command exited".to_string());
    assert!(matches!(
        &exited,
        ExecutorLossReason::ExecutorExited { exit_code: 137, exit_caused_by_app: true, reason, .. }
            if reason == "Command exited"
    ));
    let lost = ExecutorLossReason::executor_process_lost(
        "worker lost".to_string(),
        Some("10.0.0.7".to_string()),
        false,
    );
    let host = match &lost {
        ExecutorLossReason::ExecutorProcessLost { worker_host, .. } => worker_host.as_deref(),
        _ => None,
    };
    assert_eq!(host, Some("10.0.0.7"));
    let all = [
        exited,
        lost,
        ExecutorLossReason::executor_killed(),
        ExecutorLossReason::loss_reason_pending(),
        ExecutorLossReason::executor_decommission(None, "decommissioned".to_string()),
        ExecutorLossReason::other("gone".to_string()),
    ];
    let names: Vec<&str> = all
        .iter()
        .map(|r| match r {
            ExecutorLossReason::ExecutorExited { .. } => "exited",
            ExecutorLossReason::ExecutorProcessLost { .. } => "lost",
            ExecutorLossReason::ExecutorKilled { .. } => "killed",
            ExecutorLossReason::LossReasonPending { .. } => "pending",
            ExecutorLossReason::ExecutorDecommission { .. } => "decommission",
            ExecutorLossReason::Other { .. } => "other",
            _ => "a reason of a newer release",
        })
        .collect();
    assert_eq!(
        names,
        [
            "exited",
            "lost",
            "killed",
            "pending",
            "decommission",
            "other"
        ]
    );
}

// --- What the compiler refuses outside sparkwire -------------------------------------------------

/// The sparkwire library this test was linked with: of the `libsparkwire-*.rlib` beside the test
/// binary, the newest that is not newer than the binary (which was linked after it), and that
/// directory (where its dependencies are).
fn library() -> (PathBuf, PathBuf) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("target/<profile>/deps").to_path_buf();
    let modified = |p: &Path| p.metadata().and_then(|m| m.modified()).ok();
    let linked = modified(&exe);
    let rlib = std::fs::read_dir(&deps)
        .expect("the deps directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with("libsparkwire-") && name.ends_with(".rlib") && modified(p) <= linked
        })
        .max_by_key(|p| modified(p))
        .expect("libsparkwire-*.rlib beside the test binary");
    (rlib, deps)
}

/// Compiles `code` as a crate using sparkwire; the error codes rustc reports (empty when it
/// compiles).
fn compile(label: &str, code: &str) -> Vec<String> {
    let (rlib, deps) = library();
    let dir = temp_dir(&format!("non-exhaustive-{label}"));
    let src = dir.join("user.rs");
    std::fs::write(&src, code).expect("writes the snippet");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let out = Command::new(rustc)
        .args([
            "--edition",
            "2021",
            "--crate-type",
            "lib",
            "--emit",
            "metadata",
        ])
        .args(["--error-format", "json", "--crate-name", "user"])
        .arg("--extern")
        .arg(format!("sparkwire={}", rlib.display()))
        .arg("-L")
        .arg(format!("dependency={}", deps.display()))
        .arg("--out-dir")
        .arg(&dir)
        .arg(&src)
        .output()
        .expect("runs rustc");
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let codes: Vec<String> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|d| d["level"] == "error")
        .filter_map(|d| d["code"]["code"].as_str().map(str::to_string))
        .collect();
    assert!(
        out.status.success() || !codes.is_empty(),
        "rustc failed on {label} without an error code:\n{stderr}"
    );
    codes
}

const USES: &str = "use sparkwire::messages::{deploy::*, *};\n";

#[test]
fn outside_the_crate_literals_full_patterns_and_exhaustive_matches_do_not_compile() {
    // The control: what a user writes compiles, so the refusals below are about the types.
    let ok = compile(
        "control",
        &format!(
            "{USES}
            pub fn build() -> DeployMessage {{
                KillDriver::new(\"driver-1\".to_string()).into()
            }}
            pub fn name(m: &DeployMessage) -> &str {{
                match m {{
                    DeployMessage::KillDriver(KillDriver {{ driver_id, .. }}) => driver_id,
                    _ => \"other\",
                }}
            }}
            pub fn finished(s: ExecutorState) -> bool {{
                match s {{
                    ExecutorState::Running | ExecutorState::Launching => false,
                    _ => true,
                }}
            }}"
        ),
    );
    assert_eq!(ok, Vec::<String>::new(), "the control compiles");

    let arms = |all: Vec<String>| all.concat();
    let messages = arms(
        DeployMessage::NAMES
            .iter()
            .map(|n| format!("DeployMessage::{n}(_) => 0,"))
            .collect(),
    );
    let states = arms(
        ExecutorState::ALL
            .iter()
            .map(|s| format!("ExecutorState::{s:?} => 0,"))
            .collect(),
    );
    let rules = arms(
        sparkwire::validate::Rule::ALL
            .iter()
            .map(|r| format!("sparkwire::validate::Rule::{r:?} => 0,"))
            .collect(),
    );
    // Every reason this release knows, `Other` included: a newer one may still add named ones.
    let refusals = [
        "BadMagic",
        "NoCommonVersion",
        "RoleNotAccepted",
        "MalformedHello",
        "FrameTooLarge",
        "AuthRequired",
        "AuthFailed",
        "AuthNotConfigured",
        "TooManyConnections",
    ]
    .iter()
    .map(|r| format!("R::{r} => 0,"))
    .collect::<String>()
        + "R::Other(_) => 1,";
    let refused = [
        (
            "a struct literal",
            "pub fn f() -> KillDriver { KillDriver { driver_id: String::new() } }".to_string(),
            "E0639",
        ),
        (
            "a struct pattern without `..`",
            "pub fn f(k: KillDriver) -> String { let KillDriver { driver_id } = k; driver_id }"
                .to_string(),
            "E0638",
        ),
        (
            "a match naming every deploy message without a wildcard",
            format!("pub fn f(m: DeployMessage) -> u8 {{ match m {{ {messages} }} }}"),
            "E0004",
        ),
        (
            "a match naming every executor state without a wildcard",
            format!("pub fn f(s: ExecutorState) -> u8 {{ match s {{ {states} }} }}"),
            "E0004",
        ),
        (
            "a match naming every validator rule without a wildcard",
            format!("pub fn f(r: sparkwire::validate::Rule) -> u8 {{ match r {{ {rules} }} }}"),
            "E0004",
        ),
        (
            "a match naming every handshake refusal without a wildcard",
            format!(
                "pub fn f(r: sparkwire::wire::handshake::RefusalReason) -> u8 {{ \
                 use sparkwire::wire::handshake::RefusalReason as R; match r {{ {refusals} }} }}"
            ),
            "E0004",
        ),
        (
            "a match naming every version without a wildcard",
            "pub fn f(v: Version) -> u8 { match v { Version::V1 => 1, Version::V2 => 2 } }"
                .to_string(),
            "E0004",
        ),
    ];
    for (i, (what, code, error)) in refused.iter().enumerate() {
        let codes = compile(&format!("refused-{i}"), &format!("{USES}{code}"));
        assert!(
            codes.iter().any(|c| c == error),
            "{what} must be refused with {error}; rustc said {codes:?}"
        );
    }
}
