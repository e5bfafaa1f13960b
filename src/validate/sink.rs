//! Collects the violations one event causes, naming the event lazily (only when something is wrong).

use super::event::{ConnId, EnvelopeRef};
use super::rules::Rule;
use super::violation::{Entity, EventRef, Violation};

/// What the event carried, turned into text only when a violation names it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum What<'a> {
    Text(&'static str),
    Envelope(EnvelopeRef<'a>),
}

/// The verdicts of one event.
#[derive(Debug)]
pub(crate) struct Sink<'a> {
    pub(crate) index: Option<u64>,
    pub(crate) time: u64,
    pub(crate) conn: Option<ConnId>,
    what: What<'a>,
    pub(crate) out: Vec<Violation>,
}

impl<'a> Sink<'a> {
    pub(crate) fn new(index: Option<u64>, time: u64, conn: Option<ConnId>, what: What<'a>) -> Self {
        Sink {
            index,
            time,
            conn,
            what,
            out: Vec::new(),
        }
    }

    /// Records that `rule` is broken; `expected` says what should have happened instead.
    pub(crate) fn flag(&mut self, rule: Rule, expected: impl Into<String>, entity: Option<Entity>) {
        let what = match self.what {
            What::Text(t) => t.to_string(),
            What::Envelope(e) => e.label(),
        };
        self.out.push(Violation {
            rule,
            event: EventRef {
                index: self.index,
                time: self.time,
                conn: self.conn,
                what,
            },
            expected: expected.into(),
            entity,
        });
    }

    /// Records `rule` broken when `ok` is false.
    pub(crate) fn check(
        &mut self,
        ok: bool,
        rule: Rule,
        expected: impl FnOnce() -> String,
        entity: impl FnOnce() -> Option<Entity>,
    ) -> bool {
        if !ok {
            self.flag(rule, expected(), entity());
        }
        ok
    }
}
