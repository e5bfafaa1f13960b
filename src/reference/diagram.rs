//! A Mermaid sequence diagram of traced events: who sent what to whom, in order, for the first
//! messages of a run (the registrations and the first tasks).

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::messages::{CoarseMessage, DeployMessage, Family, TaskState};
use crate::validate::{AnyEnvelope, Endpoint, Event, EventBody};
use crate::wire::{Envelope, Reply};

/// The diagram of `events`, at most `max_messages` arrows.
pub fn mermaid(events: &[Event], max_messages: usize) -> String {
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    let mut alias = |e: &Endpoint, order: &mut Vec<(String, String)>| -> String {
        let key = e.to_string();
        if let Some(a) = names.get(&key) {
            return a.clone();
        }
        let a = format!("p{}", names.len());
        names.insert(key.clone(), a.clone());
        order.push((a.clone(), key));
        a
    };
    let mut body = String::new();
    let mut arrows = 0;
    for event in events {
        if arrows >= max_messages {
            break;
        }
        match &event.body {
            EventBody::Open { client, server, .. } => {
                let c = alias(client, &mut order);
                let s = alias(server, &mut order);
                let _ = writeln!(body, "    {c}-){s}: connects");
                arrows += 1;
            }
            EventBody::Close | EventBody::Outside { .. } => {}
            EventBody::Message {
                from, to, envelope, ..
            } => {
                let f = alias(from, &mut order);
                let t = alias(to, &mut order);
                let (arrow, label) = describe(envelope);
                let _ = writeln!(body, "    {f}{arrow}{t}: {label}");
                arrows += 1;
            }
        }
    }
    let mut out = String::from("sequenceDiagram\n");
    for (a, name) in &order {
        let _ = writeln!(
            out,
            "    participant {a} as {}",
            name.replace([':', ';', '#'], " ")
        );
    }
    out.push_str(&body);
    out
}

fn describe(envelope: &AnyEnvelope) -> (&'static str, String) {
    match envelope {
        AnyEnvelope::Deploy(e) => envelope_label::<DeployMessage>(e, |_| String::new()),
        AnyEnvelope::Coarse(e) => envelope_label::<CoarseMessage>(e, coarse_detail),
    }
}

fn envelope_label<F: Family>(
    e: &Envelope<F>,
    detail: impl Fn(&F) -> String,
) -> (&'static str, String) {
    match e {
        Envelope::Send(m) => ("->>", format!("{}{}", m.name(), detail(m))),
        Envelope::Ask { id, message } => (
            "->>",
            format!("{}{} (ask {id})", message.name(), detail(message)),
        ),
        Envelope::Reply { id, reply } => {
            let what = match reply {
                Reply::Bool(b) => b.to_string(),
                Reply::Int(i) => i.to_string(),
                Reply::Message(m) => m.name().to_string(),
                other => other.tag().to_string(),
            };
            ("-->>", format!("reply {id}: {what}"))
        }
        Envelope::Failure { id, error } => (
            "--x",
            format!(
                "failure {id}: {}",
                error.message.replace([':', ';', '#'], " ")
            ),
        ),
        Envelope::Close(reason) => (
            "--x",
            format!(
                "close: {} {}",
                reason.kind,
                reason.message.replace([':', ';', '#'], " ")
            ),
        ),
    }
}

fn coarse_detail(m: &CoarseMessage) -> String {
    match m {
        CoarseMessage::StatusUpdate(s) => format!(
            " {} task {}",
            match s.state {
                TaskState::Running => "RUNNING",
                TaskState::Finished => "FINISHED",
                TaskState::Failed => "FAILED",
                TaskState::Killed => "KILLED",
                TaskState::Lost => "LOST",
                TaskState::Launching => "LAUNCHING",
            },
            s.task_id
        ),
        CoarseMessage::LaunchTask(l) => format!(" ({} bytes)", l.data.len()),
        CoarseMessage::KillTask(k) => format!(" task {}", k.task_id),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::coarse::LaunchedExecutor;
    use crate::messages::Version;
    use crate::wire::handshake::Role;

    #[test]
    fn a_diagram_names_participants_and_draws_one_arrow_per_message() {
        let d = Endpoint::new(Role::Driver, "driver");
        let e = Endpoint::new(Role::Executor, "app/1");
        let events = vec![
            Event::open(0, 1, e.clone(), d.clone(), Version::V2),
            Event::message(
                1,
                1,
                e.clone(),
                d.clone(),
                Version::V2,
                Envelope::Send(CoarseMessage::LaunchedExecutor(LaunchedExecutor {
                    executor_id: "1".into(),
                })),
            ),
            Event::message(
                2,
                1,
                d.clone(),
                e.clone(),
                Version::V2,
                Envelope::<CoarseMessage>::Reply {
                    id: 4,
                    reply: Reply::Bool(true),
                },
            ),
            Event::close(3, 1),
        ];
        let text = mermaid(&events, 10);
        assert_eq!(
            text,
            "sequenceDiagram\n    participant p0 as executor app/1\n    participant p1 as \
             driver driver\n    p0-)p1: connects\n    p0->>p1: LaunchedExecutor\n    \
             p1-->>p0: reply 4: true\n"
        );
        assert_eq!(mermaid(&events, 1).lines().count(), 4);
    }
}
