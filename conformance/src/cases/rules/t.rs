//! `rules/t/…`: protocol/rules.md, the rules T1, T2, ….

/// The cases about driver.
pub mod driver {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::Level;
    use crate::kit::driver::*;
    use sparkwire::messages::CoarseMessage;
    use sparkwire::messages::Version;
    use sparkwire::wire::Envelope;
    use std::time::Duration;

    type C = CoarseMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "rules/T5/task-description".into(),
            level: Level::Must,
            targets: vec![Target::Driver],
            requirement: "LaunchTask's data is a TaskDescription naming the executor, cpus 1, \
                attempt 0, partition = index"
                .into(),
            body: run(|ctx: Ctx| async move {
                let d = registered(&ctx, SMALL).await?;
                let mut e = executor(&ctx, &d, "1", 2, Version::V2).await?;
                e.launched().await?;
                let t = e.task(&ctx).await?;
                check(
                    t.executor_id == "1"
                        && t.cpus == 1
                        && t.attempt_number == 0
                        && t.partition_id == t.index,
                    "executor 1, 1 cpu, attempt 0, partition = \
                        index",
                    format!(
                        "executor {} cpus {} attempt {} partition {} index \
                            {}",
                        t.executor_id, t.cpus, t.attempt_number, t.partition_id, t.index
                    ),
                )
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "rules/T1/slots".into(),
            level: Level::Must,
            targets: vec![Target::Driver],
            requirement:
                "the driver launches at most 2 tasks on an executor of 2 cores while none \
                has finished (rule T1)"
                    .into(),
            body: run(|ctx: Ctx| async move {
                let d = registered(&ctx, SMALL).await?;
                let mut e = executor(&ctx, &d, "1", 2, Version::V2).await?;
                e.launched().await?;
                e.task(&ctx).await?;
                e.task(&ctx).await?;
                e.conn
                    .expect_none::<C>(
                        Duration::from_millis(1200),
                        "no third LaunchTask while 2 \
                    run",
                        |e| matches!(e, Envelope::Send(C::LaunchTask(_))),
                    )
                    .await
            }),
            ..Case::default()
        });
    }
}

/// The cases about executor.
pub mod executor {
    use crate::harness::case::run;
    use crate::harness::case::Case;
    use crate::harness::case::Target;
    use crate::harness::env::Ctx;
    use crate::harness::verdict::check;
    use crate::harness::verdict::fail;
    use crate::harness::verdict::Level;
    use crate::kit::common::wait;
    use crate::kit::executor::*;
    use sparkwire::messages::coarse::*;
    use sparkwire::messages::CoarseMessage;
    use sparkwire::messages::Version;
    use sparkwire::wire::Envelope;

    type C = CoarseMessage;

    /// The cases of this section, each naming its targets.
    pub fn cases(cs: &mut Vec<Case>) {
        cs.push(Case {
            id: "rules/T6/task-cpus".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            requirement:
                "a version 2 StatusUpdate's taskCpus is the cpus the task was launched with (rule T6)"
                    .into(),
            body: run(|ctx: Ctx| async move {
                let mut e = registered(&ctx, &[Version::V2], 128).await?;
                launched(&ctx, &mut e).await?;
                launch(&mut e, &task(3, "sum-squares", &[0, 10], 2)).await?;
                let s = update(&ctx, &mut e, 3, "StatusUpdate", |_| true).await?;
                check(s.task_cpus == 2, "taskCpus 2", s.task_cpus.to_string())
            }),
            ..Case::default()
        });
        cs.push(Case {
            id: "rules/T1/concurrent-tasks".into(),
            level: Level::Must,
            targets: vec![Target::Executor],
            requirement:
                "an executor with 2 cores runs 2 one-cpu tasks at once: both RUNNING before either ends"
                    .into(),
            body: run(|ctx: Ctx| async move {
                let mut e = registered(&ctx, &[Version::V2], 128).await?;
                launched(&ctx, &mut e).await?;
                launch(&mut e, &task(5, "sleep", &[1500], 1)).await?;
                launch(&mut e, &task(6, "sleep", &[1500], 1)).await?;
                let mut running = std::collections::BTreeSet::new();
                while running.len() < 2 {
                    let s = e
                        .conn
                        .expect::<C, StatusUpdate>(
                            wait(&ctx),
                            "StatusUpdate RUNNING of tasks 5 and 6",
                            |x| match x {
                                Envelope::Send(C::StatusUpdate(s)) => Some(s.clone()),
                                _ => None,
                            },
                        )
                        .await?;
                    if s.state.is_finished() {
                        return Err(fail(
                            "both tasks RUNNING before either ends",
                            format!("task {} {} first", s.task_id, s.state),
                        ));
                    }
                    running.insert(s.task_id);
                }
                Ok(())
            }),
            ..Case::default()
        });
    }
}
