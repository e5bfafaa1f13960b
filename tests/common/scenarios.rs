//! Scenarios: conversations of the validator's `Scenario` builder that several tests play.

use sparkwire::messages::DriverState;
use sparkwire::validate::scenario::{msg, Link, Scenario};
use sparkwire::validate::Endpoint;
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Reply;

/// A driver client submits driver `id` (1 core, 1 GiB) and the master accepts it: the client's
/// link.
pub fn submitted(s: &mut Scenario, id: &str) -> Link {
    let client = s.open(
        Endpoint::new(Role::DriverClient, "submit-1"),
        s.master.clone(),
    );
    let ask = s.ask_up(&client, msg::request_submit_driver(1, 1024, false));
    s.reply_down(
        &client,
        ask,
        Reply::Message(msg::submit_driver_response(true, Some(id))),
    );
    client
}

/// Driver `id`, submitted on `client`, is launched on worker `w` (named `worker`), asked about
/// while it runs, and killed: the worker reports it KILLED.
pub fn launched_asked_about_and_killed(
    s: &mut Scenario,
    client: &Link,
    w: &Link,
    worker: &str,
    id: &str,
) {
    s.down(w, msg::launch_driver(id, 1, 1024, false));
    let ask = s.ask_up(client, msg::request_driver_status(id));
    let status = msg::driver_status_response(true, Some(DriverState::Running), Some(worker));
    s.reply_down(client, ask, Reply::Message(status));
    let ask = s.ask_up(client, msg::request_kill_driver(id));
    s.down(w, msg::kill_driver(id));
    s.reply_down(
        client,
        ask,
        Reply::Message(msg::kill_driver_response(id, true)),
    );
    s.up(w, msg::driver_state_changed(id, DriverState::Killed));
}
