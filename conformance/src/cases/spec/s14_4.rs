//! `spec/14.4/…`: SPEC §14.4 (protocol/SPEC.md).

use crate::harness::case::run;
use crate::harness::case::Case;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::verdict::check;
use crate::harness::verdict::fail;
use crate::harness::verdict::Level;
use crate::harness::verdict::Outcome;
use crate::kit::master::app;
use crate::kit::master::app_desc;
use crate::kit::master::state;
use crate::kit::support::authorization::*;
use sparkwire::messages::Version;
use std::collections::BTreeMap;
use std::time::Duration;

/// The cases of this section, each naming its targets.
pub fn cases(cs: &mut Vec<Case>) {
    cs.push(Case {
        id: "spec/14.4/redaction".into(),
        level: Level::Must,
        targets: vec![Target::Master],
        timeout: Duration::from_secs(10),
        quote: "SPEC §14.4, \"every value whose key or own text matches the redaction pattern is \
            replaced by `*********(redacted)`\""
            .into(),
        requirement: "MasterStateResponse redacts the env value, javaOpt and argument whose key \
            matches; others as sent"
            .into(),
        body: run(redaction),
        ..Case::default()
    });
}

async fn redaction(ctx: Ctx) -> Outcome {
    const SECRET: &str = "conformance-s3cr3t-value";
    let mut desc = app_desc(Some(1), 64, Some(0));
    let mut env = BTreeMap::new();
    env.insert("SPARK_AUTH_TOKEN".to_string(), SECRET.to_string());
    env.insert("SPARK_PLAIN".to_string(), "shown-as-sent".to_string());
    desc.command.environment = env;
    desc.command.java_opts = vec![
        format!("-Dspark.ssl.keyPassword={SECRET}"),
        "-Dspark.app.plain=shown-as-sent".into(),
    ];
    desc.command.arguments = vec![format!("-Dspark.my.secret.key={SECRET}")];
    let (_c, id) = app(&ctx, "app", desc, Version::V2).await?;
    let s = state(&ctx).await?;
    let a = s
        .active_apps
        .iter()
        .find(|a| a.id == id)
        .ok_or_else(|| fail(format!("{id} in the master's state"), "absent"))?;
    let cmd = &a.desc.command;
    let want = format!(
    "SPARK_AUTH_TOKEN, -Dspark.ssl.keyPassword and -Dspark.my.secret.key read {REDACTED}; SPARK_PLAIN and \
        -Dspark.app.plain as sent"
);
    let ok = cmd.environment.get("SPARK_AUTH_TOKEN").map(String::as_str) == Some(REDACTED)
        && cmd.environment.get("SPARK_PLAIN").map(String::as_str) == Some("shown-as-sent")
        && cmd
            .java_opts
            .contains(&format!("-Dspark.ssl.keyPassword={REDACTED}"))
        && cmd
            .java_opts
            .contains(&"-Dspark.app.plain=shown-as-sent".to_string())
        && cmd
            .arguments
            .contains(&format!("-Dspark.my.secret.key={REDACTED}"));
    check(
        ok,
        want,
        format!(
            "environment {:?}, javaOpts {:?}, arguments {:?}",
            cmd.environment, cmd.java_opts, cmd.arguments
        ),
    )
}
