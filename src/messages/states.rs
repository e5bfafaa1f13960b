//! Spark's enumerations, each sent on the wire as its Spark name (a MessagePack `str`).
//!
//! Every one is `#[non_exhaustive]`: a new protocol version may add a value (SPEC §7), as Spark
//! added `DECOMMISSIONED`. A `match` outside sparkwire needs a wildcard arm; [`ExecutorState::ALL`]
//! and its siblings list the values this release knows.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! spark_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
        #[non_exhaustive]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in Spark's declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The Spark name, as sent on the wire.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// Parses a Spark name; `None` for anything else.
            pub fn from_name(text: &str) -> Option<Self> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, "one of {}", [$($text),+].join(", "))
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$name, E> {
                        $name::from_name(v).ok_or_else(|| {
                            E::custom(format!(
                                "unknown {} {:?}, expected one of {}",
                                stringify!($name), v, [$($text),+].join(", ")
                            ))
                        })
                    }
                }
                d.deserialize_str(V)
            }
        }
    };
}

spark_enum! {
    /// The state of an executor process, as its worker reports it.
    ExecutorState {
        /// Being started by the worker.
        Launching = "LAUNCHING",
        /// The process runs.
        Running = "RUNNING",
        /// Killed on request (finished).
        Killed = "KILLED",
        /// Failed to start or crashed (finished).
        Failed = "FAILED",
        /// Lost with its worker (finished).
        Lost = "LOST",
        /// The process exited by itself (finished).
        Exited = "EXITED",
        /// Being decommissioned; not a finished state.
        Decommissioned = "DECOMMISSIONED",
    }
}

impl ExecutorState {
    /// Spark's `ExecutorState.isFinished`: KILLED, FAILED, LOST and EXITED.
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            ExecutorState::Killed
                | ExecutorState::Failed
                | ExecutorState::Lost
                | ExecutorState::Exited
        )
    }
}

spark_enum! {
    /// The state of a task attempt, as its executor reports it.
    TaskState {
        /// Handed to the executor.
        Launching = "LAUNCHING",
        /// Running.
        Running = "RUNNING",
        /// Finished with a result (finished).
        Finished = "FINISHED",
        /// Failed with an error (finished).
        Failed = "FAILED",
        /// Killed on request (finished).
        Killed = "KILLED",
        /// Lost with its executor (finished).
        Lost = "LOST",
    }
}

impl TaskState {
    /// Spark's `TaskState.isFinished`: FINISHED, FAILED, KILLED and LOST.
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            TaskState::Finished | TaskState::Failed | TaskState::Killed | TaskState::Lost
        )
    }
}

spark_enum! {
    /// The state of a driver submitted in cluster deploy mode.
    DriverState {
        /// Accepted by the master, not yet launched.
        Submitted = "SUBMITTED",
        /// Running on a worker.
        Running = "RUNNING",
        /// Exited with status 0.
        Finished = "FINISHED",
        /// Being relaunched after its worker was lost (supervised drivers).
        Relaunching = "RELAUNCHING",
        /// The master does not know.
        Unknown = "UNKNOWN",
        /// Killed on request.
        Killed = "KILLED",
        /// Exited with a non-zero status.
        Failed = "FAILED",
        /// Could not be started.
        Error = "ERROR",
    }
}

spark_enum! {
    /// The state of an application, as the master tracks it.
    ApplicationState {
        /// Registered, waiting for executors.
        Waiting = "WAITING",
        /// Has executors.
        Running = "RUNNING",
        /// Finished normally.
        Finished = "FINISHED",
        /// Removed after too many executor failures.
        Failed = "FAILED",
        /// Killed.
        Killed = "KILLED",
        /// Not known.
        Unknown = "UNKNOWN",
    }
}

spark_enum! {
    /// The state of a worker, as the master tracks it.
    WorkerState {
        /// Registered and heartbeating.
        Alive = "ALIVE",
        /// Timed out or disconnected.
        Dead = "DEAD",
        /// Being decommissioned: no new executors.
        Decommissioned = "DECOMMISSIONED",
        /// Not known (during recovery).
        Unknown = "UNKNOWN",
    }
}

spark_enum! {
    /// The recovery state of a master.
    RecoveryState {
        /// Not the active master.
        Standby = "STANDBY",
        /// The active master.
        Alive = "ALIVE",
        /// Recovering persisted state, waiting for workers and applications to answer.
        Recovering = "RECOVERING",
        /// Dropping the workers and applications that did not answer.
        CompletingRecovery = "COMPLETING_RECOVERY",
    }
}
