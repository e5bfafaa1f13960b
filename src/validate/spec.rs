//! The definition's routes, kinds and reply types, indexed by message name for quick look-up.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::definition::{Definition, MessageKind};
use crate::messages::Family;
use crate::wire::handshake::Role;
use crate::wire::Reply;

/// The reply an ask expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplyType {
    Bool,
    Int,
    Bytes,
    ThreadDump,
    LossReason,
    Message(&'static str),
}

impl ReplyType {
    fn parse(family: &str, text: &'static str, def: &'static Definition) -> Option<ReplyType> {
        Some(match text {
            "bool" => ReplyType::Bool,
            "i32" => ReplyType::Int,
            "bytes" => ReplyType::Bytes,
            "option<ThreadStackTrace>" => ReplyType::ThreadDump,
            "ExecutorLossReason" => ReplyType::LossReason,
            name => {
                def.message(family, name)?;
                ReplyType::Message(name)
            }
        })
    }

    /// Whether `reply` is of this type.
    pub(crate) fn accepts<F: Family>(self, reply: &Reply<F>) -> bool {
        match (self, reply) {
            (ReplyType::Bool, Reply::Bool(_))
            | (ReplyType::Int, Reply::Int(_))
            | (ReplyType::Bytes, Reply::Bytes(_))
            | (ReplyType::ThreadDump, Reply::ThreadDump(_))
            | (ReplyType::LossReason, Reply::LossReason(_)) => true,
            (ReplyType::Message(name), Reply::Message(m)) => m.name() == name,
            _ => false,
        }
    }

    /// The type's name, as the definition writes it.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            ReplyType::Bool => "a bool",
            ReplyType::Int => "an i32",
            ReplyType::Bytes => "bytes",
            ReplyType::ThreadDump => "a thread dump (or none)",
            ReplyType::LossReason => "an ExecutorLossReason",
            ReplyType::Message(name) => name,
        }
    }
}

/// What the definition says of one message.
#[derive(Debug, Clone)]
pub(crate) struct MessageSpec {
    pub(crate) from: Vec<Role>,
    pub(crate) to: Vec<Role>,
    pub(crate) kind: MessageKind,
    pub(crate) kind_v1: Option<MessageKind>,
    pub(crate) reply: Option<ReplyType>,
}

impl MessageSpec {
    /// How `version` uses the message.
    pub(crate) fn kind_in(&self, version: crate::messages::Version) -> MessageKind {
        match (version, self.kind_v1) {
            (crate::messages::Version::V1, Some(k)) => k,
            _ => self.kind,
        }
    }
}

/// Message specs of both families.
#[derive(Debug)]
pub(crate) struct Specs {
    deploy: HashMap<&'static str, MessageSpec>,
    coarse: HashMap<&'static str, MessageSpec>,
}

impl Specs {
    /// The specs of the built-in definition.
    pub(crate) fn builtin() -> &'static Specs {
        static SPECS: OnceLock<Specs> = OnceLock::new();
        SPECS.get_or_init(|| Specs::of(Definition::builtin()))
    }

    fn of(def: &'static Definition) -> Specs {
        let mut specs = Specs {
            deploy: HashMap::new(),
            coarse: HashMap::new(),
        };
        for m in &def.messages {
            let roles = |names: &[String]| -> Vec<Role> {
                names.iter().filter_map(|n| Role::from_name(n)).collect()
            };
            let spec = MessageSpec {
                from: roles(&m.from),
                to: roles(&m.to),
                kind: m.kind,
                kind_v1: m.kind_v1,
                reply: m
                    .reply
                    .as_deref()
                    .and_then(|r| ReplyType::parse(&m.family, r, def)),
            };
            let table = if m.family == "deploy" {
                &mut specs.deploy
            } else {
                &mut specs.coarse
            };
            table.insert(m.name.as_str(), spec);
        }
        specs
    }

    /// The spec of message `name` of `family`.
    pub(crate) fn get(&self, family: &str, name: &str) -> Option<&MessageSpec> {
        if family == "deploy" {
            self.deploy.get(name)
        } else {
            self.coarse.get(name)
        }
    }
}
