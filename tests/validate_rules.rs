//! One legal and one illegal sequence per rule: the legal one passes without any violation, the
//! illegal one is caught with that rule's id. A last test checks every rule has its case.

use sparkwire::messages::{
    CoarseMessage, DeployMessage, DriverState, ExecutorState, TaskState, Version,
};
mod common;

use common::scenarios::submitted;
use sparkwire::validate::scenario::{msg, Link, Scenario};
use sparkwire::validate::sparkwire_task_decoder;
use sparkwire::validate::{Config, Endpoint, Event, Rule, Validator};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::{Envelope, Reply};

type Build = fn(&mut Scenario);

struct Case {
    rule: Rule,
    /// Run with a task decoder.
    decoder: bool,
    strict: bool,
    legal: Build,
    illegal: Build,
}

const fn case(rule: Rule, legal: Build, illegal: Build) -> Case {
    Case {
        rule,
        decoder: false,
        strict: false,
        legal,
        illegal,
    }
}

const fn with_decoder(rule: Rule, legal: Build, illegal: Build) -> Case {
    Case {
        rule,
        decoder: true,
        strict: false,
        legal,
        illegal,
    }
}

fn driver() -> Endpoint {
    Endpoint::new(Role::Driver, "app-1")
}

fn bool_down(s: &mut Scenario, link: &Link, id: u64) {
    s.reply_down(link, id, Reply::<DeployMessage>::Bool(true));
}

/// worker-1 (4 cores, 4096 MiB) and app-1, registered.
fn cluster(s: &mut Scenario) -> (Link, Link) {
    let w = s.worker("worker-1", "10.0.0.1", 4, 4096);
    let app = s.app("app-1");
    (w, app)
}

/// The cluster with executor app-1/0 (2 cores) running and registered with its driver as "0".
fn running(s: &mut Scenario) -> (Link, Link, Link) {
    let (w, app) = cluster(s);
    s.launch_executor(&app, &w, 0, 2, 1024);
    let e = s.executor(&driver(), "0", 2);
    (w, app, e)
}

/// An executor connection where "0" is registered but has not sent LaunchedExecutor.
fn registering(s: &mut Scenario) -> Link {
    let e = s.open(Endpoint::new(Role::Executor, "exec-0"), driver());
    let ask = s.ask_up(&e, msg::register_executor("0", 2));
    s.reply_down(&e, ask, Reply::<CoarseMessage>::Bool(true));
    e
}

/// ExecutorStateChanged of app-1/`exec` from the worker on `w`, answered true.
fn esc(s: &mut Scenario, w: &Link, exec: i32, state: ExecutorState) {
    let a = s.ask_up(w, msg::executor_state_changed("app-1", exec, state));
    bool_down(s, w, a);
}

fn raw<F: sparkwire::validate::ValidatedFamily>(
    s: &mut Scenario,
    conn: u64,
    from: &Endpoint,
    to: &Endpoint,
    v: Version,
    env: Envelope<F>,
) {
    let t = s.now();
    s.advance(1);
    s.push(Event::message(t, conn, from.clone(), to.clone(), v, env));
}

fn cases() -> Vec<Case> {
    vec![
        case(
            Rule::ConnOpenOnce,
            |s| {
                let w = s.worker("worker-1", "h", 1, 1);
                s.close(&w);
                s.worker("worker-2", "h", 1, 1);
            },
            |s| {
                let w = s.worker("worker-1", "h", 1, 1);
                s.close(&w);
                let t = s.now();
                s.push(Event::open(
                    t,
                    w.conn,
                    w.client.clone(),
                    w.server.clone(),
                    Version::V2,
                ));
            },
        ),
        case(
            Rule::ConnOpen,
            |s| {
                let w = s.worker("worker-1", "h", 1, 1);
                s.close(&w);
            },
            |s| {
                let w = s.worker("worker-1", "h", 1, 1);
                s.close(&w);
                s.up(&w, msg::heartbeat("worker-1"));
            },
        ),
        case(
            Rule::ConnEndpoints,
            |s| {
                let w = s.worker("worker-1", "h", 1, 1);
                s.up(&w, msg::heartbeat("worker-1"));
            },
            |s| {
                let w = s.worker("worker-1", "h", 1, 1);
                let other = Endpoint::new(Role::Worker, "worker-9");
                raw(
                    s,
                    w.conn,
                    &other,
                    &w.server,
                    Version::V2,
                    Envelope::Send(msg::heartbeat("worker-1")),
                );
            },
        ),
        case(
            Rule::ConnKind,
            |s| {
                s.open(Endpoint::new(Role::Executor, "e"), driver());
            },
            |s| {
                // An executor never talks to the master (its watch of its worker is a kind).
                s.open(
                    Endpoint::new(Role::Executor, "e"),
                    Endpoint::new(Role::Master, "m"),
                );
            },
        ),
        case(
            Rule::ConnVersion,
            |s| {
                let w = s.worker("worker-1", "h", 1, 1);
                s.down(&w, msg::decommission_worker());
            },
            |s| {
                let w = s.worker("worker-1", "h", 1, 1);
                raw(
                    s,
                    w.conn,
                    &w.client,
                    &w.server,
                    Version::V1,
                    Envelope::Send(msg::heartbeat("worker-1")),
                );
            },
        ),
        case(
            Rule::RouteDefined,
            |s| {
                let w = s.worker("worker-1", "h", 1, 1);
                s.up(&w, msg::heartbeat("worker-1"));
            },
            |s| {
                let w = s.worker("worker-1", "h", 1, 1);
                s.down(&w, msg::heartbeat("worker-1"));
            },
        ),
        case(
            Rule::RouteNoLocal,
            |s| {
                let e = registering(s);
                s.up(&e, msg::launched_executor("0"));
            },
            |s| {
                let e = registering(s);
                s.down(&e, msg::shutdown());
            },
        ),
        case(
            Rule::RouteKind,
            |s| {
                let e = s.open(Endpoint::new(Role::Executor, "e"), driver());
                let ask = s.ask_up(&e, msg::register_executor("0", 1));
                s.reply_down(&e, ask, Reply::<CoarseMessage>::Bool(true));
            },
            |s| {
                let e = s.open(Endpoint::new(Role::Executor, "e"), driver());
                s.up(&e, msg::register_executor("0", 1));
            },
        ),
        case(
            Rule::AskUniqueId,
            |s| {
                let (w, app) = cluster(s);
                let _ = w;
                let a = s.ask_up(&app, msg::request_executors("app-1", 1));
                bool_down(s, &app, a);
                raw(
                    s,
                    app.conn,
                    &app.client,
                    &app.server,
                    Version::V2,
                    Envelope::Ask {
                        id: a,
                        message: msg::request_executors("app-1", 2),
                    },
                );
                bool_down(s, &app, a);
            },
            |s| {
                let (_, app) = cluster(s);
                let a = s.ask_up(&app, msg::request_executors("app-1", 1));
                raw(
                    s,
                    app.conn,
                    &app.client,
                    &app.server,
                    Version::V2,
                    Envelope::Ask {
                        id: a,
                        message: msg::request_executors("app-1", 2),
                    },
                );
                bool_down(s, &app, a);
            },
        ),
        case(
            Rule::AskReplyPending,
            |s| {
                let (_, app) = cluster(s);
                let a = s.ask_up(&app, msg::request_executors("app-1", 1));
                bool_down(s, &app, a);
            },
            |s| {
                let (_, app) = cluster(s);
                let a = s.ask_up(&app, msg::request_executors("app-1", 1));
                bool_down(s, &app, a);
                bool_down(s, &app, a);
            },
        ),
        case(
            Rule::AskReplyType,
            |s| {
                let (_, app) = cluster(s);
                let a = s.ask_up(&app, msg::request_executors("app-1", 1));
                bool_down(s, &app, a);
            },
            |s| {
                let (_, app) = cluster(s);
                let a = s.ask_up(&app, msg::request_executors("app-1", 1));
                s.reply_down(&app, a, Reply::<DeployMessage>::Int(1));
            },
        ),
        case(
            Rule::AskAnswered,
            |s| {
                let (_, app) = cluster(s);
                s.ask_up(&app, msg::request_executors("app-1", 1));
                s.close(&app);
            },
            |s| {
                let (_, app) = cluster(s);
                s.ask_up(&app, msg::request_executors("app-1", 1));
            },
        ),
        case(
            Rule::WorkerRegisterFirst,
            |s| {
                let w = s.worker("worker-1", "h", 1, 1);
                s.up(&w, msg::heartbeat("worker-1"));
            },
            |s| {
                let w = s.open(Endpoint::new(Role::Worker, "worker-1"), s.master.clone());
                s.up(&w, msg::register_worker("worker-1", "h", 1, 1));
                s.down(
                    &w,
                    msg::register_worker_failed("Attempted to re-register worker at same address"),
                );
                s.up(&w, msg::heartbeat("worker-1"));
            },
        ),
        case(
            Rule::WorkerId,
            |s| {
                let w = s.worker("worker-1", "h", 1, 1);
                s.up(&w, msg::worker_latest_state("worker-1", &[]));
            },
            |s| {
                let w = s.worker("worker-1", "h", 1, 1);
                s.up(&w, msg::heartbeat("worker-2"));
            },
        ),
        case(
            Rule::WorkerRegisterAnswer,
            |s| {
                let w = s.open(Endpoint::new(Role::Worker, "worker-1"), s.master.clone());
                s.up(&w, msg::register_worker("worker-1", "h", 1, 1));
                s.down(&w, msg::master_in_standby());
            },
            |s| {
                let w = s.worker("worker-1", "h", 1, 1);
                s.down(&w, msg::registered_worker(false));
            },
        ),
        case(
            Rule::WorkerDuplicateId,
            |s| {
                s.worker("worker-1", "h", 1, 1);
                let w = s.open(Endpoint::new(Role::Worker, "worker-1"), s.master.clone());
                s.up(&w, msg::register_worker("worker-1", "h", 1, 1));
                s.down(&w, msg::registered_worker(true));
                s.up(&w, msg::register_worker("worker-1", "h", 1, 1));
                s.down(&w, msg::register_worker_failed("Duplicate worker ID"));
            },
            |s| {
                s.worker("worker-1", "h", 1, 1);
                let w = s.open(Endpoint::new(Role::Worker, "worker-1"), s.master.clone());
                s.up(&w, msg::register_worker("worker-1", "h", 1, 1));
                s.down(&w, msg::registered_worker(false));
            },
        ),
        case(
            Rule::WorkerLaunchAlive,
            |s| {
                let (w, _) = cluster(s);
                s.down(&w, msg::launch_executor("app-1", 0, 1, 512));
                esc(s, &w, 0, ExecutorState::Running);
            },
            |s| {
                let (w, _) = cluster(s);
                s.down(&w, msg::decommission_worker());
                s.down(&w, msg::launch_executor("app-1", 0, 1, 512));
            },
        ),
        case(
            Rule::WorkerCommandsRegistered,
            |s| {
                let w = s.worker("worker-1", "h", 1, 1);
                s.down(&w, msg::kill_executor("app-1", 0));
            },
            |s| {
                let w = s.open(Endpoint::new(Role::Worker, "worker-1"), s.master.clone());
                s.down(&w, msg::kill_executor("app-1", 0));
            },
        ),
        case(
            Rule::WorkerRemovedWhenLost,
            |s| {
                let (w, app) = cluster(s);
                s.close(&w);
                s.down(&app, msg::worker_removed("worker-1", "10.0.0.1"));
            },
            |s| {
                let (w, app) = cluster(s);
                s.up(&w, msg::heartbeat("worker-1"));
                s.down(&app, msg::worker_removed("worker-1", "10.0.0.1"));
            },
        ),
        case(
            Rule::WorkerCapacity,
            |s| {
                let (w, app) = cluster(s);
                s.launch_executor(&app, &w, 0, 2, 2048);
                s.launch_executor(&app, &w, 1, 2, 2048);
            },
            |s| {
                let (w, app) = cluster(s);
                s.launch_executor(&app, &w, 0, 2, 2048);
                s.launch_executor(&app, &w, 1, 3, 1024);
            },
        ),
        case(
            Rule::FailoverAnswer,
            |s| {
                let w = s.open(Endpoint::new(Role::Worker, "worker-1"), s.master.clone());
                s.down(&w, msg::master_changed());
                s.up(
                    &w,
                    msg::worker_scheduler_state_response("worker-1", &[], &[]),
                );
            },
            |s| {
                let w = s.open(Endpoint::new(Role::Worker, "worker-1"), s.master.clone());
                s.up(
                    &w,
                    msg::worker_scheduler_state_response("worker-1", &[], &[]),
                );
            },
        ),
        case(
            Rule::AppRegisterFirst,
            |s| {
                let app = s.app("app-1");
                s.up(&app, msg::unregister_application("app-1"));
            },
            |s| {
                let app = s.open(Endpoint::new(Role::AppClient, "app-1"), s.master.clone());
                s.up(&app, msg::unregister_application("app-1"));
            },
        ),
        case(
            Rule::AppId,
            |s| {
                let app = s.app("app-1");
                let a = s.ask_up(&app, msg::kill_executors("app-1", &["1"]));
                bool_down(s, &app, a);
            },
            |s| {
                let app = s.app("app-1");
                let a = s.ask_up(&app, msg::kill_executors("app-2", &["1"]));
                bool_down(s, &app, a);
            },
        ),
        case(
            Rule::AppRegisterAnswer,
            |s| {
                s.app("app-1");
                s.app("app-2");
            },
            |s| {
                s.app("app-1");
                s.app("app-1");
            },
        ),
        case(
            Rule::AppLaunchActive,
            |s| {
                let (w, _) = cluster(s);
                s.down(&w, msg::launch_executor("app-1", 0, 1, 512));
                esc(s, &w, 0, ExecutorState::Running);
            },
            |s| {
                let (w, _) = cluster(s);
                s.down(&w, msg::launch_executor("app-7", 0, 1, 512));
            },
        ),
        case(
            Rule::AppAfterFinish,
            |s| {
                let (w, app) = cluster(s);
                s.launch_executor(&app, &w, 0, 1, 512);
                esc(s, &w, 0, ExecutorState::Exited);
                s.up(&app, msg::unregister_application("app-1"));
                // Sent before the master handled the unregistration: crossed on the wire.
                s.down(&app, msg::executor_updated(0, ExecutorState::Exited, None));
            },
            |s| {
                let (w, app) = cluster(s);
                s.launch_executor(&app, &w, 0, 1, 512);
                esc(s, &w, 0, ExecutorState::Exited);
                s.up(&app, msg::unregister_application("app-1"));
                s.advance(5_000);
                s.down(&app, msg::executor_updated(0, ExecutorState::Exited, None));
            },
        ),
        case(
            Rule::AppFinishedNotice,
            |s| {
                let (w, app) = cluster(s);
                s.up(&app, msg::unregister_application("app-1"));
                s.down(&w, msg::application_finished("app-1"));
            },
            |s| {
                let (w, _) = cluster(s);
                s.down(&w, msg::application_finished("app-1"));
            },
        ),
        case(
            Rule::ExecutorLaunchUnique,
            |s| {
                let (w, app) = cluster(s);
                s.down(&w, msg::launch_executor("app-1", 0, 1, 512));
                s.down(&w, msg::launch_executor("app-1", 1, 1, 512));
                esc(s, &w, 0, ExecutorState::Running);
                esc(s, &w, 1, ExecutorState::Running);
                let _ = app;
            },
            |s| {
                let (w, _) = cluster(s);
                s.down(&w, msg::launch_executor("app-1", 0, 1, 512));
                s.down(&w, msg::launch_executor("app-1", 0, 1, 512));
            },
        ),
        case(
            Rule::ExecutorStateFromHost,
            |s| {
                let (w, _) = cluster(s);
                s.down(&w, msg::launch_executor("app-1", 0, 1, 512));
                let a = s.ask_up(
                    &w,
                    msg::executor_state_changed("app-1", 0, ExecutorState::Running),
                );
                bool_down(s, &w, a);
            },
            |s| {
                let (w, _) = cluster(s);
                let w2 = s.worker("worker-2", "10.0.0.2", 4, 4096);
                s.down(&w, msg::launch_executor("app-1", 0, 1, 512));
                let a = s.ask_up(
                    &w2,
                    msg::executor_state_changed("app-1", 0, ExecutorState::Running),
                );
                bool_down(s, &w2, a);
            },
        ),
        case(
            Rule::ExecutorTransition,
            |s| {
                let (w, app) = cluster(s);
                s.launch_executor(&app, &w, 0, 1, 512);
                esc(s, &w, 0, ExecutorState::Exited);
                s.down(&app, msg::executor_updated(0, ExecutorState::Exited, None));
            },
            |s| {
                let (w, app) = cluster(s);
                s.launch_executor(&app, &w, 0, 1, 512);
                esc(s, &w, 0, ExecutorState::Exited);
                s.down(&app, msg::executor_updated(0, ExecutorState::Exited, None));
                esc(s, &w, 0, ExecutorState::Running);
            },
        ),
        case(
            Rule::ExecutorAddedMatches,
            |s| {
                let (w, app) = cluster(s);
                s.down(&w, msg::launch_executor("app-1", 0, 2, 512));
                s.down(&app, msg::executor_added(0, "worker-1", 2, 512));
                esc(s, &w, 0, ExecutorState::Running);
            },
            |s| {
                let (w, app) = cluster(s);
                s.down(&w, msg::launch_executor("app-1", 0, 2, 512));
                s.down(&app, msg::executor_added(0, "worker-1", 4, 512));
            },
        ),
        case(
            Rule::ExecutorUpdatedMatches,
            |s| {
                let (w, app) = cluster(s);
                s.launch_executor(&app, &w, 0, 1, 512);
            },
            |s| {
                let (w, app) = cluster(s);
                s.down(&w, msg::launch_executor("app-1", 0, 1, 512));
                s.down(&app, msg::executor_added(0, "worker-1", 1, 512));
                s.down(&app, msg::executor_updated(0, ExecutorState::Running, None));
            },
        ),
        case(
            Rule::DriverSubmitAnswer,
            |s| {
                submitted(s, "driver-1");
            },
            |s| {
                let client = s.open(Endpoint::new(Role::DriverClient, "c"), s.master.clone());
                let a = s.ask_up(&client, msg::request_submit_driver(1, 1024, false));
                s.reply_down(
                    &client,
                    a,
                    Reply::Message(msg::submit_driver_response(true, None)),
                );
            },
        ),
        case(
            Rule::DriverLaunch,
            |s| {
                let (w, _) = cluster(s);
                submitted(s, "driver-1");
                s.down(&w, msg::launch_driver("driver-1", 1, 1024, false));
            },
            |s| {
                let (w, _) = cluster(s);
                submitted(s, "driver-1");
                s.down(&w, msg::launch_driver("driver-1", 1, 1024, false));
                s.down(&w, msg::launch_driver("driver-1", 1, 1024, false));
            },
        ),
        case(
            Rule::DriverOnHost,
            |s| {
                let (w, _) = cluster(s);
                s.down(&w, msg::launch_driver("driver-1", 1, 1024, false));
                s.up(
                    &w,
                    msg::driver_state_changed("driver-1", DriverState::Finished),
                );
            },
            |s| {
                let (w, _) = cluster(s);
                let w2 = s.worker("worker-2", "10.0.0.2", 4, 4096);
                s.down(&w, msg::launch_driver("driver-1", 1, 1024, false));
                s.up(
                    &w2,
                    msg::driver_state_changed("driver-1", DriverState::Finished),
                );
            },
        ),
        case(
            Rule::DriverFinalState,
            |s| {
                let (w, _) = cluster(s);
                s.down(&w, msg::launch_driver("driver-1", 1, 1024, false));
                s.up(
                    &w,
                    msg::driver_state_changed("driver-1", DriverState::Failed),
                );
            },
            |s| {
                let (w, _) = cluster(s);
                s.down(&w, msg::launch_driver("driver-1", 1, 1024, false));
                s.up(
                    &w,
                    msg::driver_state_changed("driver-1", DriverState::Running),
                );
            },
        ),
        case(
            Rule::DriverAfterFinish,
            |s| {
                let (w, _) = cluster(s);
                s.down(&w, msg::launch_driver("driver-1", 1, 1024, false));
                s.up(
                    &w,
                    msg::driver_state_changed("driver-1", DriverState::Finished),
                );
                // The kill crossed the worker's report on the wire.
                s.down(&w, msg::kill_driver("driver-1"));
            },
            |s| {
                let (w, _) = cluster(s);
                s.down(&w, msg::launch_driver("driver-1", 1, 1024, false));
                s.up(
                    &w,
                    msg::driver_state_changed("driver-1", DriverState::Finished),
                );
                s.advance(5_000);
                s.down(&w, msg::kill_driver("driver-1"));
            },
        ),
        case(
            Rule::DriverReplyMatches,
            |s| {
                let client = submitted(s, "driver-1");
                let a = s.ask_up(&client, msg::request_driver_status("driver-1"));
                let r = msg::driver_status_response(true, Some(DriverState::Submitted), None);
                s.reply_down(&client, a, Reply::Message(r));
            },
            |s| {
                let client = submitted(s, "driver-1");
                let a = s.ask_up(&client, msg::request_kill_driver("driver-1"));
                s.reply_down(
                    &client,
                    a,
                    Reply::Message(msg::kill_driver_response("driver-2", true)),
                );
            },
        ),
        case(
            Rule::ExecutorRegisterFirst,
            |s| {
                let e = registering(s);
                s.up(&e, msg::launched_executor("0"));
            },
            |s| {
                let e = s.open(Endpoint::new(Role::Executor, "e"), driver());
                s.up(&e, msg::launched_executor("0"));
            },
        ),
        case(
            Rule::ExecutorId,
            |s| {
                let e = registering(s);
                s.up(&e, msg::launched_executor("0"));
            },
            |s| {
                let e = registering(s);
                s.up(&e, msg::launched_executor("1"));
            },
        ),
        case(
            Rule::ExecutorDuplicateId,
            |s| {
                registering(s);
                let e = s.open(Endpoint::new(Role::Executor, "e2"), driver());
                let a = s.ask_up(&e, msg::register_executor("0", 2));
                s.fail_down::<CoarseMessage>(&e, a, "Duplicate executor ID: 0");
            },
            |s| {
                registering(s);
                let e = s.open(Endpoint::new(Role::Executor, "e2"), driver());
                let a = s.ask_up(&e, msg::register_executor("0", 2));
                s.reply_down(&e, a, Reply::<CoarseMessage>::Bool(true));
            },
        ),
        case(
            Rule::ExecutorDriverTargets,
            |s| {
                let e = registering(s);
                s.up(&e, msg::launched_executor("0"));
                s.down(&e, msg::launch_task(1, 1));
                s.up(&e, msg::status_update("0", 1, TaskState::Finished, 1));
            },
            |s| {
                let e = registering(s);
                s.down(&e, msg::launch_task(1, 1));
            },
        ),
        case(
            Rule::ExecutorNoTasksAfterStop,
            |s| {
                let (_, _, e) = running(s);
                s.down(&e, msg::launch_task(1, 1));
                s.down(&e, msg::stop_executor());
            },
            |s| {
                let (_, _, e) = running(s);
                s.down(&e, msg::stop_executor());
                s.down(&e, msg::launch_task(1, 1));
            },
        ),
        case(
            Rule::TaskSlots,
            |s| {
                let (_, _, e) = running(s);
                s.down(&e, msg::launch_task(1, 1));
                s.down(&e, msg::launch_task(2, 1));
                s.up(&e, msg::status_update("0", 1, TaskState::Finished, 1));
                s.down(&e, msg::launch_task(3, 1));
                s.up(&e, msg::status_update("0", 2, TaskState::Finished, 1));
                s.up(&e, msg::status_update("0", 3, TaskState::Finished, 1));
            },
            |s| {
                let (_, _, e) = running(s);
                s.down(&e, msg::launch_task(1, 1));
                s.down(&e, msg::launch_task(2, 1));
                s.down(&e, msg::launch_task(3, 1));
            },
        ),
        with_decoder(
            Rule::TaskSlots,
            |s| {
                let (_, _, e) = running(s);
                s.down(&e, msg::launch_task(1, 2));
                s.up(&e, msg::status_update("0", 1, TaskState::Finished, 2));
                s.down(&e, msg::launch_task(2, 2));
                s.up(&e, msg::status_update("0", 2, TaskState::Finished, 2));
            },
            |s| {
                let (_, _, e) = running(s);
                s.down(&e, msg::launch_task(1, 2));
                s.down(&e, msg::launch_task(2, 1));
            },
        ),
        case(
            Rule::TaskKnown,
            |s| {
                let (_, _, e) = running(s);
                s.run_task(&e, "0", 1, 1);
            },
            |s| {
                let (_, _, e) = running(s);
                s.run_task(&e, "0", 1, 1);
                s.up(&e, msg::status_update("0", 2, TaskState::Running, 1));
            },
        ),
        with_decoder(
            Rule::TaskKnown,
            |s| {
                let (_, _, e) = running(s);
                s.down(&e, msg::launch_task(1, 1));
                s.up(&e, msg::status_update("0", 1, TaskState::Running, 1));
                s.up(&e, msg::status_update("0", 1, TaskState::Killed, 1));
            },
            |s| {
                let (_, _, e) = running(s);
                s.down(&e, msg::launch_task(1, 1));
                s.up(&e, msg::status_update("0", 2, TaskState::Running, 1));
            },
        ),
        with_decoder(
            Rule::TaskTransition,
            |s| {
                let (_, _, e) = running(s);
                s.run_task(&e, "0", 1, 1);
            },
            |s| {
                let (_, _, e) = running(s);
                s.run_task(&e, "0", 1, 1);
                s.up(&e, msg::status_update("0", 1, TaskState::Running, 1));
            },
        ),
        with_decoder(
            Rule::TaskIdUnique,
            |s| {
                let (_, _, e) = running(s);
                s.run_task(&e, "0", 1, 1);
                s.run_task(&e, "0", 2, 1);
            },
            |s| {
                let (_, _, e) = running(s);
                s.run_task(&e, "0", 1, 1);
                s.run_task(&e, "0", 1, 1);
            },
        ),
        with_decoder(
            Rule::TaskDecodable,
            |s| {
                let (_, _, e) = running(s);
                s.run_task(&e, "0", 1, 1);
            },
            |s| {
                let (_, _, e) = running(s);
                let garbage =
                    CoarseMessage::LaunchTask(sparkwire::messages::coarse::LaunchTask::new(
                        sparkwire::messages::Payload::copy_from(b"\xac\xed\x00\x05"),
                    ));
                s.down(&e, garbage);
            },
        ),
        with_decoder(
            Rule::TaskCpus,
            |s| {
                let (_, _, e) = running(s);
                s.run_task(&e, "0", 1, 2);
            },
            |s| {
                let (_, _, e) = running(s);
                s.down(&e, msg::launch_task(1, 1));
                s.up(&e, msg::status_update("0", 1, TaskState::Running, 2));
            },
        ),
        case(
            Rule::ClusterManagerRegisterFirst,
            |s| {
                let cm = s.open(Endpoint::new(Role::ClusterManager, "am"), driver());
                s.up(&cm, msg::register_cluster_manager());
                let a = s.ask_down(&cm, msg::get_executor_loss_reason("1"));
                s.reply_up(
                    &cm,
                    a,
                    Reply::<CoarseMessage>::LossReason(
                        sparkwire::messages::ExecutorLossReason::executor_killed(),
                    ),
                );
            },
            |s| {
                let cm = s.open(Endpoint::new(Role::ClusterManager, "am"), driver());
                let a = s.ask_down(&cm, msg::get_executor_loss_reason("1"));
                s.reply_up(
                    &cm,
                    a,
                    Reply::<CoarseMessage>::LossReason(
                        sparkwire::messages::ExecutorLossReason::executor_killed(),
                    ),
                );
            },
        ),
        Case {
            rule: Rule::TraceTimeOrder,
            decoder: false,
            strict: true,
            legal: |s| {
                let w = s.worker("worker-1", "h", 1, 1);
                s.up(&w, msg::heartbeat("worker-1"));
            },
            illegal: |s| {
                let w = s.worker("worker-1", "h", 1, 1);
                raw(
                    s,
                    w.conn,
                    &w.client,
                    &w.server,
                    Version::V2,
                    Envelope::Send(msg::heartbeat("worker-1")),
                );
                let mut last = s.events().last().cloned().expect("an event");
                last.time = 0;
                s.push(last);
            },
        },
        case(
            Rule::TimedExecutorState,
            |s| {
                let (w, app) = cluster(s);
                s.launch_executor(&app, &w, 0, 2, 1024);
                s.advance(30_000);
                s.up(&w, msg::heartbeat("worker-1"));
                s.advance(31_000);
                s.up(&w, msg::heartbeat("worker-1"));
            },
            |s| {
                let (w, _) = cluster(s);
                s.down(&w, msg::launch_executor("app-1", 0, 2, 1024));
                s.advance(30_000);
                s.up(&w, msg::heartbeat("worker-1"));
                s.advance(31_000);
                s.up(&w, msg::heartbeat("worker-1"));
            },
        ),
        case(
            Rule::TimedAppRegistered,
            |s| {
                let app = s.app("app-1");
                s.advance(61_000);
                s.up(&app, msg::unregister_application("app-1"));
            },
            |s| {
                let app = s.open(Endpoint::new(Role::AppClient, "app-1"), s.master.clone());
                s.up(&app, msg::register_application("app-1"));
                s.advance(61_000);
                s.close(&app);
            },
        ),
        case(
            Rule::EndExecutorAddedLaunched,
            |s| {
                // Rule E4 lets the add come first (it leaves the master on another connection).
                let (w, app) = cluster(s);
                s.down(&app, msg::executor_added(0, "worker-1", 2, 512));
                s.down(&w, msg::launch_executor("app-1", 0, 2, 512));
                esc(s, &w, 0, ExecutorState::Running);
            },
            |s| {
                // The application is told of an executor the master never launched, and the trace
                // ends within E4's crossing window.
                let (_, app) = cluster(s);
                s.down(&app, msg::executor_added(0, "worker-1", 2, 512));
            },
        ),
        with_decoder(
            Rule::EndTaskEnded,
            |s| {
                // One task ends; the other is lost with its executor's connection.
                let (_, _, e) = running(s);
                s.run_task(&e, "0", 1, 1);
                s.down(&e, msg::launch_task(2, 1));
                s.close(&e);
            },
            |s| {
                let (_, _, e) = running(s);
                s.down(&e, msg::launch_task(1, 1));
                s.up(&e, msg::status_update("0", 1, TaskState::Running, 1));
            },
        ),
        case(
            Rule::EndAppRegistered,
            |s| {
                // Answered; a standby master owes nothing; a refused registration closes its
                // connection (SPEC §14.3), which owes nothing either.
                s.app("app-1");
                let w = s.open(Endpoint::new(Role::Worker, "worker-1"), s.master.clone());
                s.up(&w, msg::register_worker("worker-1", "10.0.0.1", 4, 4096));
                s.down(&w, msg::master_in_standby());
                let standby = s.open(Endpoint::new(Role::AppClient, "app-2"), s.master.clone());
                s.up(&standby, msg::register_application("app-2"));
                let refused = s.open(Endpoint::new(Role::AppClient, "app-3"), s.master.clone());
                s.up(&refused, msg::register_application("app-3"));
                s.close(&refused);
            },
            |s| {
                let app = s.open(Endpoint::new(Role::AppClient, "app-1"), s.master.clone());
                s.up(&app, msg::register_application("app-1"));
            },
        ),
        case(
            Rule::EndExecutorState,
            |s| {
                // A refused launch is answered FAILED (SPEC §14.5).
                let (w, _) = cluster(s);
                s.down(&w, msg::launch_executor("app-1", 0, 1, 512));
                esc(s, &w, 0, ExecutorState::Failed);
            },
            |s| {
                let (w, _) = cluster(s);
                s.down(&w, msg::launch_executor("app-1", 0, 1, 512));
            },
        ),
        case(
            Rule::LinkExecutorIds,
            |s| {
                running(s);
            },
            |s| {
                let (w, app) = cluster(s);
                s.launch_executor(&app, &w, 0, 2, 1024);
                s.executor(&driver(), "1", 2);
            },
        ),
    ]
}

fn config(c: &Case) -> Config {
    let mut config = if c.decoder {
        Config::with_task_decoder(sparkwire_task_decoder)
    } else {
        Config::default()
    };
    config.strict_order = c.strict;
    config
}

fn verdicts(c: &Case, build: Build) -> Vec<sparkwire::validate::Violation> {
    let mut s = Scenario::new();
    build(&mut s);
    let mut v = Validator::new(config(c));
    let mut out: Vec<_> = s.events().iter().flat_map(|e| v.observe(e)).collect();
    out.extend(v.finish());
    out
}

#[test]
fn each_rule_passes_its_legal_sequence_and_catches_its_illegal_one() {
    let mut wrong = Vec::new();
    for c in cases() {
        let legal = verdicts(&c, c.legal);
        if !legal.is_empty() {
            wrong.push(format!("{}: legal sequence flagged: {legal:#?}", c.rule));
        }
        let illegal = verdicts(&c, c.illegal);
        let caught = illegal.first().map(|v| v.rule) == Some(c.rule);
        if !caught {
            wrong.push(format!(
                "{}: illegal sequence not caught first with this rule: {illegal:#?}",
                c.rule
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_rule_has_a_case() {
    let covered: std::collections::BTreeSet<Rule> = cases().iter().map(|c| c.rule).collect();
    let missing: Vec<&Rule> = Rule::ALL.iter().filter(|r| !covered.contains(r)).collect();
    assert!(missing.is_empty(), "rules without a case: {missing:?}");
}

#[test]
fn violations_name_the_event_the_expectation_and_the_entity() {
    let mut s = Scenario::new();
    let (w, _) = cluster(&mut s);
    s.up(&w, msg::heartbeat("worker-2"));
    let mut v = Validator::default();
    let found: Vec<_> = s.events().iter().flat_map(|e| v.observe(e)).collect();
    assert_eq!(found.len(), 1);
    let f = &found[0];
    assert_eq!(f.event.index, Some(6));
    assert_eq!(f.event.conn, Some(w.conn));
    assert_eq!(f.event.what, "Heartbeat");
    assert!(f.expected.contains("worker-1"), "{}", f.expected);
    assert_eq!(
        f.entity,
        Some(sparkwire::validate::Entity::Worker("worker-1".into()))
    );
    let text = f.to_string();
    assert!(
        text.contains("W2 worker.id") && text.contains("event 6"),
        "{text}"
    );
}

#[test]
fn a_worker_asked_to_reconnect_registers_again_as_a_new_worker() {
    // Spark's master times a silent worker out (the validator sees no sign of it when no
    // application is told), then answers its late heartbeat with ReconnectWorker: the worker's
    // next registration is a new one (duplicate = false).
    let mut s = Scenario::new();
    let (w, _) = cluster(&mut s);
    s.advance(61_000);
    s.up(&w, msg::heartbeat("worker-1"));
    s.down(&w, msg::reconnect_worker());
    s.up(&w, msg::register_worker("worker-1", "10.0.0.1", 4, 4096));
    s.down(&w, msg::registered_worker(false));
    s.up(&w, msg::heartbeat("worker-1"));
    let mut v = Validator::default();
    let found: Vec<_> = s.events().iter().flat_map(|e| v.observe(e)).collect();
    assert!(found.is_empty(), "{found:?}");
    // Without the ReconnectWorker, the worker is still registered: duplicate = false is wrong.
    let mut s = Scenario::new();
    let (w, _) = cluster(&mut s);
    s.up(&w, msg::register_worker("worker-1", "10.0.0.1", 4, 4096));
    s.down(&w, msg::registered_worker(false));
    let mut v = Validator::default();
    let found: Vec<_> = s.events().iter().flat_map(|e| v.observe(e)).collect();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].rule, Rule::WorkerDuplicateId);
}

/// Rule D3's exception (SPARK-13604): the master kills a driver that a worker's WorkerLatestState
/// lists and the master does not have on that worker; the same KillDriver without the report,
/// or a second one after a single report, is a D3 violation.
#[test]
fn kill_driver_for_a_driver_the_worker_reports_follows_spark_13604() {
    let verdict = |build: fn(&mut Scenario)| {
        let mut s = Scenario::new();
        build(&mut s);
        let mut v = Validator::new(Config::default());
        let mut out: Vec<Rule> = s
            .events()
            .iter()
            .flat_map(|e| v.observe(e))
            .map(|x| x.rule)
            .collect();
        out.extend(v.finish().into_iter().map(|x| x.rule));
        out
    };
    // Unknown to the master: killed on the reporting worker.
    assert_eq!(
        verdict(|s| {
            let (w, _) = cluster(s);
            s.up(&w, latest_with_driver("worker-1", "driver-9"));
            s.down(&w, msg::kill_driver("driver-9"));
        }),
        vec![]
    );
    // Known, but running on another worker: the reporting worker is told to kill its copy.
    assert_eq!(
        verdict(|s| {
            let (w, _) = cluster(s);
            let w2 = s.worker("worker-2", "10.0.0.2", 4, 4096);
            s.down(&w2, msg::launch_driver("driver-1", 1, 1024, false));
            s.up(&w, latest_with_driver("worker-1", "driver-1"));
            s.down(&w, msg::kill_driver("driver-1"));
        }),
        vec![]
    );
    // Finished: a worker still reporting it is told to kill it.
    assert_eq!(
        verdict(|s| {
            let (w, _) = cluster(s);
            s.down(&w, msg::launch_driver("driver-1", 1, 1024, false));
            s.up(
                &w,
                msg::driver_state_changed("driver-1", DriverState::Finished),
            );
            s.advance(5_000);
            s.up(&w, latest_with_driver("worker-1", "driver-1"));
            s.down(&w, msg::kill_driver("driver-1"));
        }),
        vec![]
    );
    // No report: D3.
    assert_eq!(
        verdict(|s| {
            let (w, _) = cluster(s);
            s.down(&w, msg::kill_driver("driver-9"));
        }),
        vec![Rule::DriverOnHost]
    );
    // Reported by another worker: D3.
    assert_eq!(
        verdict(|s| {
            let (w, _) = cluster(s);
            let w2 = s.worker("worker-2", "10.0.0.2", 4, 4096);
            s.up(&w2, latest_with_driver("worker-2", "driver-9"));
            s.down(&w, msg::kill_driver("driver-9"));
        }),
        vec![Rule::DriverOnHost]
    );
    // One report allows one kill.
    assert_eq!(
        verdict(|s| {
            let (w, _) = cluster(s);
            s.up(&w, latest_with_driver("worker-1", "driver-9"));
            s.down(&w, msg::kill_driver("driver-9"));
            s.down(&w, msg::kill_driver("driver-9"));
        }),
        vec![Rule::DriverOnHost]
    );
}

fn latest_with_driver(worker: &str, driver: &str) -> DeployMessage {
    DeployMessage::WorkerLatestState(sparkwire::messages::deploy::WorkerLatestState::new(
        worker.to_string(),
        vec![],
        vec![driver.to_string()],
    ))
}

fn rules_of(s: &Scenario, config: Config, finish: bool) -> Vec<Rule> {
    let mut v = Validator::new(config);
    let mut out: Vec<Rule> = s
        .events()
        .iter()
        .flat_map(|e| v.observe(e))
        .map(|x| x.rule)
        .collect();
    if finish {
        out.extend(v.finish().into_iter().map(|x| x.rule));
    }
    out
}

/// L1 and L2 follow the configured bounds, are reported at the end of a trace whose clock passed
/// the deadline (and not when it ends before), are discharged by a closed connection, and a
/// standby master is not expected to answer RegisterApplication.
#[test]
fn timed_obligations_follow_their_bounds_and_the_trace_clock() {
    let unanswered_launch = |s: &mut Scenario, wait: u64| {
        let (w, _) = cluster(s);
        s.down(&w, msg::launch_executor("app-1", 0, 2, 1024));
        s.advance(wait);
        s.up(&w, msg::heartbeat("worker-1"));
        w
    };
    // Within the default 60 s: not late, but still owed when the trace ends (rule N4); nothing
    // while the trace goes on.
    let mut s = Scenario::new();
    unanswered_launch(&mut s, 59_000);
    assert_eq!(
        rules_of(&s, Config::default(), true),
        vec![Rule::EndExecutorState]
    );
    assert_eq!(rules_of(&s, Config::default(), false), Vec::<Rule>::new());
    // A tighter bound catches it, at the heartbeat.
    let tight = Config {
        executor_state_within_ms: Some(5_000),
        ..Config::default()
    };
    assert_eq!(rules_of(&s, tight, false), vec![Rule::TimedExecutorState]);
    // Switched off: never.
    let off = Config {
        executor_state_within_ms: None,
        ..Config::default()
    };
    let mut s = Scenario::new();
    unanswered_launch(&mut s, 120_000);
    assert!(!rules_of(&s, off, true).contains(&Rule::TimedExecutorState));
    // The worker's connection closing discharges it.
    let mut s = Scenario::new();
    let w = unanswered_launch(&mut s, 1_000);
    s.close(&w);
    s.advance(120_000);
    let app = s.app("app-2");
    s.up(&app, msg::unregister_application("app-2"));
    assert!(!rules_of(&s, Config::default(), true).contains(&Rule::TimedExecutorState));
    // Reported once, at the end of the trace when the last event is past the deadline.
    let mut s = Scenario::new();
    let app = s.open(Endpoint::new(Role::AppClient, "app-1"), s.master.clone());
    s.up(&app, msg::register_application("app-1"));
    s.advance(61_000);
    let w = s.worker("worker-1", "10.0.0.1", 4, 4096);
    s.up(&w, msg::heartbeat("worker-1"));
    let found = rules_of(&s, Config::default(), true);
    assert_eq!(
        found
            .iter()
            .filter(|r| **r == Rule::TimedAppRegistered)
            .count(),
        1,
        "{found:?}"
    );
    // A master in standby ignores RegisterApplication, as Spark's does.
    let mut s = Scenario::new();
    let w = s.open(Endpoint::new(Role::Worker, "worker-1"), s.master.clone());
    s.up(&w, msg::register_worker("worker-1", "10.0.0.1", 4, 4096));
    s.down(&w, msg::master_in_standby());
    let app = s.open(Endpoint::new(Role::AppClient, "app-1"), s.master.clone());
    s.up(&app, msg::register_application("app-1"));
    s.advance(61_000);
    s.close(&app);
    assert!(!rules_of(&s, Config::default(), true).contains(&Rule::TimedAppRegistered));
}

/// J1 applies only when the trace holds both sides under one endpoint id: an executor of a driver
/// whose application client is not in the trace is not checked.
#[test]
fn executor_ids_are_linked_only_when_both_sides_are_in_the_trace() {
    let mut s = Scenario::new();
    let other = Endpoint::new(Role::Driver, "some-driver");
    s.executor(&other, "7", 2);
    assert_eq!(rules_of(&s, Config::default(), true), Vec::<Rule>::new());
    // An id that is not the decimal text of the master's execId ("00" for 0) is not linked.
    let mut s = Scenario::new();
    let (w, app) = cluster(&mut s);
    s.launch_executor(&app, &w, 0, 2, 1024);
    s.executor(&driver(), "00", 2);
    assert_eq!(
        rules_of(&s, Config::default(), true),
        vec![Rule::LinkExecutorIds]
    );
}

/// J1 needs the master's launches in view: a driver's own trace (its application client and its
/// executors, no worker connection) does not check it.
#[test]
fn executor_ids_are_not_linked_without_the_masters_worker_connections() {
    let mut s = Scenario::new();
    s.app("app-1");
    s.executor(&driver(), "1", 2);
    assert_eq!(rules_of(&s, Config::default(), true), Vec::<Rule>::new());
}
