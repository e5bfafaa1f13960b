//! Faults the suite can put between itself and the endpoint under test, to prove that every case
//! can fail: a man-in-the-middle proxy that breaks a correct endpoint's behaviour in one named way.
//! `--fault NAME` (hidden from `--help`) turns one on; the suite's own tests run every target
//! under every fault and check that each case fails under at least one.
//!
//! Each fault is one entry of [`FAULTS`]: its name, what it breaks, which targets' self-test it
//! serves, and its behaviour, a `Behaviour` whose hooks the proxy calls at each point of a
//! connection (the hellos, the answer, every frame after the handshake, the closes). A hook a
//! fault does not override passes things through unchanged, so a new fault is one entry and the
//! hooks it needs.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex as StdMutex};

use bytes::{Buf, Bytes, BytesMut};
use sparkwire::messages::{DeployMessage, Version};
use sparkwire::wire::handshake::{
    client_proof, decode_answer, decode_hello, decode_proof, encode_answer, encode_challenge,
    encode_hello, encode_proof, frame_bytes, fresh_nonce, read_hello, read_server_frame,
    server_proof, Accepted, Answer, Challenge, ClientNext, Hello, Identity, Nonce, Proof, Refusal,
    RefusalReason, Role, Secret, ServerHello,
};
use sparkwire::wire::{decode_envelope, encode_envelope, error_kind, Envelope, Error, Reply};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;

use crate::harness::verdict::Target;

mod closes;
mod decoder;
mod launch;
mod points;

type D = DeployMessage;

mod limits;
mod releases;
mod waiting;
use limits::{AdminInverted, AdminProofDropped, LimitClosesAll, RegisteredCutOff, SettingsIgnored};
mod judge;

/// Which targets' self-test a fault serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Any endpoint, listening or connecting.
    Any,
    /// An endpoint holding a shared secret (the suite is given it with `--secret-file`): the
    /// fault breaks its authentication.
    Auth,
    /// A master: the fault breaks only what the master target checks (ownership, redaction,
    /// SPARK-13604, ReconnectWorker, its decoder and handshake); the other targets' cases of the
    /// same kinds fail under the generic faults (`mute`, `keep-open`, `accept-any-hello`).
    Master,
    /// An endpoint that connects to the suite (a worker, a driver, an executor): the fault
    /// breaks only what the client targets check.
    Clients,
    /// These targets only: the fault breaks only what their cases check.
    Only(&'static [Target]),
    /// A server the suite starts itself (`--spawn-server`): the fault breaks its limits, its
    /// admin secret or its TLS, which only the cases that start one check.
    Server,
    /// Caught only by the cases' judge (`crate::harness::env::Judge`), in these targets: the fault breaks
    /// a rule no case's own checks look at (or an end-of-trace obligation), so it makes no case
    /// fail in the self-test, which runs with the judge off; the judge's own test
    /// (`the_judge_catches_each_of_its_faults`) runs it with the judge on.
    Judge(&'static [crate::harness::verdict::Target]),
}

/// One way to break an endpoint: an entry of [`FAULTS`].
pub struct FaultSpec {
    /// Its name (`--fault NAME`).
    pub name: &'static str,
    /// What it breaks, and how the proxy does it.
    pub doc: &'static str,
    /// Which targets' self-test it serves.
    pub scope: Scope,
    behaviour: &'static dyn Behaviour,
}

/// Every fault, in the order the self-test runs them.
pub static FAULTS: &[FaultSpec] = &[
    FaultSpec {
        name: "accept-any-hello",
        doc: "The endpoint accepts every hello, whatever it holds (at version 2).",
        scope: Scope::Any,
        behaviour: &AcceptAnyHello,
    },
    FaultSpec {
        name: "lowest-version",
        doc: "The endpoint chooses the lowest version offered, not the highest; as a client, it \
              offers only its lowest version but takes any.",
        scope: Scope::Any,
        behaviour: &LowestVersion,
    },
    FaultSpec {
        name: "refuse-single-version",
        doc: "The endpoint refuses a peer that offers a single version, claiming it speaks 1 and \
              2; as a client, it offers only its highest version but takes any.",
        scope: Scope::Any,
        behaviour: &RefuseSingleVersion,
    },
    FaultSpec {
        name: "wrong-role",
        doc: "The endpoint declares the wrong role in its handshake frame.",
        scope: Scope::Any,
        behaviour: &WrongRole,
    },
    FaultSpec {
        name: "pedantic",
        doc: "The endpoint takes only hellos encoded exactly as sparkwire encodes them, in one \
              segment, with an id, under 64 KiB; as a client, it writes its hello's keys in \
              reverse order.",
        scope: Scope::Any,
        behaviour: &Pedantic,
    },
    FaultSpec {
        name: "keep-open",
        doc: "The endpoint never closes a connection (it stops answering instead).",
        scope: Scope::Any,
        behaviour: &KeepOpen,
    },
    FaultSpec {
        name: "mute",
        doc: "After the handshake the endpoint sends nothing and never closes.",
        scope: Scope::Any,
        behaviour: &Mute,
    },
    FaultSpec {
        name: "duplicate",
        doc: "After the handshake the endpoint sends every frame twice (as a client, its hello \
              too, before any answer).",
        scope: Scope::Any,
        behaviour: &Duplicate,
    },
    FaultSpec {
        name: "auth-bypass",
        doc: "The endpoint holds a secret but authenticates nobody: as a server it accepts every \
              hello at once, without a challenge, and takes whatever follows (the proxy proves \
              the secret to the real endpoint on the suite's behalf); as a client it says hello \
              without asking to authenticate (the proxy authenticates with the real client). \
              Needs `--secret-file`.",
        scope: Scope::Auth,
        behaviour: &AuthFault(AuthBreak::Bypass),
    },
    FaultSpec {
        name: "any-proof",
        doc: "The endpoint checks no proof: as a server it challenges, but takes any client \
              proof, right or wrong (the proxy replaces the suite's proof with the right one); as \
              a client it takes any server proof, or none (the proxy shows the real client a \
              right one, and proves the secret to the suite for it). Needs `--secret-file`.",
        scope: Scope::Auth,
        behaviour: &AuthFault(AuthBreak::AnyProof),
    },
    FaultSpec {
        name: "bad-own-proof",
        doc: "The endpoint's own proof does not verify: as a server its challenge carries a \
              wrong server proof, as a client it sends a wrong client proof (the proxy flips a \
              bit of the right one). Needs `--secret-file`.",
        scope: Scope::Auth,
        behaviour: &AuthFault(AuthBreak::BadOwnProof),
    },
    FaultSpec {
        name: "silent-close",
        doc: "The endpoint takes `closeReason` in the handshake but closes connections without \
              the close envelope it agreed to send (SPEC §8.1): the proxy drops every close \
              envelope.",
        scope: Scope::Any,
        behaviour: &SilentClose,
    },
    FaultSpec {
        name: "ownership-unchecked",
        doc: "The master does not check whose id a message names (SPEC §14.2): the proxy \
              rewrites the worker or application id of a Heartbeat, WorkerLatestState, \
              WorkerDecommissioning, WorkerSchedulerStateResponse, UnregisterApplication, \
              RequestExecutors or KillExecutors to the one registered over that connection.",
        scope: Scope::Master,
        behaviour: &OwnershipUnchecked,
    },
    FaultSpec {
        name: "no-redaction",
        doc: "The master redacts nothing in MasterStateResponse (SPEC §14.4): the proxy puts \
              back the values the suite registered.",
        scope: Scope::Master,
        behaviour: &NoRedaction,
    },
    FaultSpec {
        name: "waiting-reason-unlisted",
        doc:
            "The master states a waiting reason SPEC §16's table does not give, and keeps it while \
              an executor runs: the proxy sets every active application's waitingReason in \
              MasterStateResponse to \"waiting for resources\".",
        scope: Scope::Master,
        behaviour: &waiting::WaitingReasonUnlisted,
    },
    FaultSpec {
        name: "release-ignored",
        doc: "The master places executors whatever Spark releases the worker and the application \
              announced (SPEC §15.5): the proxy drops sparkRelease from the suite's \
              RegisterWorker and RegisterApplication.",
        scope: Scope::Master,
        behaviour: &releases::ReleaseIgnored,
    },
    FaultSpec {
        name: "deep-taken",
        doc: "The endpoint takes frames nested deeper than 64 levels (SPEC §2): the proxy drops \
              them.",
        scope: Scope::Master,
        behaviour: &DeepTaken,
    },
    FaultSpec {
        name: "depth-off-by-one",
        doc: "The endpoint refuses frames of exactly 64 levels (SPEC §2): the proxy closes on \
              them.",
        scope: Scope::Master,
        behaviour: &DepthOffByOne,
    },
    FaultSpec {
        name: "wrong-type-taken",
        doc: "The endpoint takes fields of the wrong type (SPEC §4): the proxy drops frames \
              refused with InvalidFields for anything but a map's or set's order.",
        scope: Scope::Master,
        behaviour: &InvalidFieldsTaken { order: false },
    },
    FaultSpec {
        name: "unordered-taken",
        doc: "The endpoint takes maps and sets out of order or with a key twice (SPEC §11.3): \
              the proxy drops the frames refused for it.",
        scope: Scope::Only(&[Target::Master, Target::Driver]),
        behaviour: &InvalidFieldsTaken { order: true },
    },
    FaultSpec {
        name: "no-spark-13604",
        doc: "The master does not kill what a WorkerLatestState lists and it does not know \
              (SPARK-13604, SPEC §14.2 Z2): the proxy drops KillExecutor and KillDriver for \
              executors and drivers never launched over that connection.",
        scope: Scope::Master,
        behaviour: &No13604,
    },
    FaultSpec {
        name: "no-reconnect",
        doc: "The master never sends ReconnectWorker (SPEC §14.2 Z2): the proxy drops it.",
        scope: Scope::Master,
        behaviour: &NoReconnect,
    },
    FaultSpec {
        name: "auth-not-configured-taken",
        doc: "A server without a secret accepts a hello asking to authenticate (handshake.md §5 \
              step 4): the proxy removes `auth` and `nonce` from the suite's hello.",
        scope: Scope::Master,
        behaviour: &AuthNotConfiguredTaken,
    },
    FaultSpec {
        name: "failure-without-message",
        doc: "The endpoint's failure envelopes lack their `message` (SPEC §3: `error` is \
              `{\"className\": str, \"message\": str}`): the proxy drops the key. Only the \
              case's judge (strict decoding of every frame the endpoint sends) sees it.",
        scope: Scope::Master,
        behaviour: &FailureWithoutMessage,
    },
    FaultSpec {
        name: "decommissioning-dropped",
        doc: "The master ignores a worker's WorkerDecommissioning (rule W5: a decommissioned \
              worker gets no LaunchExecutor): the proxy drops it.",
        scope: Scope::Master,
        behaviour: &DecommissioningDropped,
    },
    FaultSpec {
        name: "finished-app-revived",
        doc: "The master acts on a finished application named again (SPEC §14.2 Z1: answered \
              `false`, or nothing): the proxy turns the master's `false` to a RequestExecutors \
              or KillExecutors into `true`.",
        scope: Scope::Master,
        behaviour: &FinishedAppRevived,
    },
    FaultSpec {
        name: "off-route",
        doc: "The endpoint sends a message off its route (SPEC §14.1): after the first one-way \
              message it sends on a connection, the proxy adds one its role never sends (a \
              master a Heartbeat, a worker or application client a KillDriver, a driver a \
              LaunchedExecutor, an executor a StopExecutor). Only the case's judge (routes of \
              every frame) sees it.",
        scope: Scope::Any,
        behaviour: &OffRoute,
    },
    FaultSpec {
        name: "refused-ask-closes",
        doc: "The endpoint does not answer an ask it refuses with a failure (SPEC §8, §8.1, \
              §14.3: \"A refused ask is answered with a failure envelope; the connection stays \
              open\"): where it listens, the proxy drops its failure envelope and closes the \
              connection; where it connects, the proxy drops the failure (the ask is left \
              pending).",
        scope: Scope::Any,
        behaviour: &closes::RefusedAskCloses,
    },
    FaultSpec {
        name: "close-kind-wrong",
        doc: "The endpoint names the wrong kind in its close envelopes (SPEC §8.1, §11.2): the \
              proxy rewrites a decoding error's kind to the next of SPEC §8's table \
              (InvalidFields to InvalidMessagePack), UnknownAsk to DuplicateReply, DuplicateAsk \
              and DuplicateReply to UnknownAsk, and a strict endpoint's RuleViolation to \
              NotOwner.",
        scope: Scope::Any,
        behaviour: &closes::CloseKindWrong,
    },
    FaultSpec {
        name: "close-envelope-always",
        doc: "The endpoint sends a close envelope before its ordinary closes too (SPEC §8.1: \
              \"No close envelope is sent ... for an endpoint's ordinary closes\"): when its \
              stream ends after a frame that was not a close envelope, the proxy adds one (kind \
              Idle).",
        scope: Scope::Clients,
        behaviour: &closes::CloseEnvelopeAlways,
    },
    FaultSpec {
        name: "close-kind-unknown-ignored",
        doc: "The endpoint ignores a close envelope whose kind it does not know, or that holds \
              a field it does not know, and goes on (SPEC §8.1: \"A receiver MUST take a `kind` \
              it does not know as it is ... it closes too\"): the proxy drops such a close \
              envelope from the suite. Run on the worker, driver and executor targets (the \
              worker's UI port and the driver's executor port included); against a master, \
              keep-open and mute fail the same cases.",
        scope: Scope::Clients,
        behaviour: &closes::CloseKindUnknownIgnored,
    },
    FaultSpec {
        name: "fields-reordered",
        doc: "The endpoint writes the fields of every message it sends in reverse order (SPEC \
              §4: an encoder writes them \"in the order the definition lists them\"): the proxy \
              reverses the field map of each send, ask and reply message. A decoder takes \
              fields in any order: only the check of the encoder's order \
              (`spec/4/encoder/…`, conformance/src/harness/canonical.rs) sees it.",
        scope: Scope::Any,
        behaviour: &decoder::FieldsReordered,
    },
    FaultSpec {
        name: "unknown-key-refused",
        doc: "The endpoint closes the connection on a message holding a key its version does \
              not define, which a decoder MUST skip (SPEC §4, §11.4): the proxy closes on such \
              a frame from the suite, whichever side connects.",
        scope: Scope::Any,
        behaviour: &decoder::UnknownKeyRefused,
    },
    FaultSpec {
        name: "cluster-manager-asked",
        doc: "The driver asks a cluster manager for executors before it registered (rule K1): \
              the proxy accepts a `cluster-manager` hello itself and sends a RequestExecutors \
              ask at once.",
        scope: Scope::Only(&[Target::Driver]),
        behaviour: &decoder::ClusterManagerAsked,
    },
    FaultSpec {
        name: "limit-closes-all",
        doc: "A resource limit closes every connection, not its own only (SPEC §8): once the \
              endpoint sends a close envelope for a limit (Idle, FrameTimedOut, SlowConsumer, \
              TooManyAsks, InboundOverflow), the proxy closes every other connection at its \
              next frame.",
        scope: Scope::Server,
        behaviour: &LimitClosesAll,
    },
    FaultSpec {
        name: "registered-cut-off",
        doc: "The idle timeout is not disarmed by a registration (SPEC §8: a registered worker \
              or application is never closed by the limits): the proxy closes a worker's or an \
              application's connection at its first frame more than 1.5 s after its \
              RegisterWorker or RegisterApplication.",
        scope: Scope::Server,
        behaviour: &RegisteredCutOff,
    },
    FaultSpec {
        name: "admin-inverted",
        doc: "The master's admin check is inverted (SPEC §13, handshake.md §10.1): the proxy \
              closes a connection whose proof frame carries an admin proof, and turns the \
              master's `Permission denied:` failure into the reply the ask would have had.",
        scope: Scope::Server,
        behaviour: &AdminInverted,
    },
    FaultSpec {
        name: "admin-proof-dropped",
        doc: "The master ignores admin proofs (handshake.md §10.1, SPEC §13): the proxy removes \
              `admin` from the client's proof frame, so a right one grants nothing and a wrong \
              one is not refused.",
        scope: Scope::Server,
        behaviour: &AdminProofDropped,
    },
    FaultSpec {
        name: "settings-ignored",
        doc: "A server ignores the limits and the certificate it is given (SPEC §8, handshake.md \
              §5 step 0 and §11): the suite starts it with limits no case reaches and without \
              its `--spawn-server` template's TLS placeholders, so that it speaks plain TCP.",
        scope: Scope::Server,
        behaviour: &SettingsIgnored,
    },
    FaultSpec {
        name: "executor-refusal-hidden",
        doc: "The worker runs an executor command it must refuse (SPEC §14.5: a command naming \
              LD_PRELOAD and the like, a program not allowed): the proxy shows its \
              ExecutorStateChanged FAILED without an exit status as RUNNING without a message.",
        scope: Scope::Only(&[Target::Worker]),
        behaviour: &launch::ExecutorRefusalHidden,
    },
    FaultSpec {
        name: "driver-refusal-hidden",
        doc: "The worker runs a driver it must refuse (SPEC §14.5: a program not allowed, or one \
              allowed only as sparkwire's executor): the proxy shows its DriverStateChanged ERROR \
              as RUNNING without an exception.",
        scope: Scope::Only(&[Target::Worker]),
        behaviour: &launch::DriverRefusalHidden,
    },
    FaultSpec {
        name: "foreign-master-obeyed",
        doc: "The worker takes LaunchExecutor and KillExecutor from a master-role connection of a \
              master it is not registered with (SPEC §14.2 Z5): the proxy keeps them from the \
              worker and shows, on the connection of the master they name, the \
              ExecutorStateChanged RUNNING or KILLED of a worker that obeyed.",
        scope: Scope::Only(&[Target::Worker]),
        behaviour: &launch::ForeignMasterObeyed,
    },
    FaultSpec {
        name: "decommission-answered",
        doc: "The worker answers DecommissionWorker with WorkerDecommissioning naming itself (the \
              text SPEC §7.1 corrected: it sends nothing back): the proxy adds it after the \
              worker's next frame.",
        scope: Scope::Only(&[Target::Worker]),
        behaviour: &launch::DecommissionAnswered,
    },
    FaultSpec {
        name: "task-updates-loose",
        doc: "The executor's StatusUpdate LAUNCHING or RUNNING carries bytes (SPEC §10: empty \
              `bin`), and its final StatusUpdate of a task goes twice (SPEC §10: exactly one of \
              FINISHED, FAILED or KILLED): the proxy puts a byte in the first and repeats the \
              second.",
        scope: Scope::Only(&[Target::Executor]),
        behaviour: &launch::TaskUpdatesLoose,
    },
    FaultSpec {
        name: "executor-ownership-unchecked",
        doc: "The driver takes an executor's StatusUpdate, LaunchedExecutor and \
              ExecutorDecommissioning naming another executor (SPEC §14.2 Z6): the proxy rewrites \
              their executor id to the one registered over that connection.",
        scope: Scope::Only(&[Target::Driver]),
        behaviour: &launch::ExecutorOwnershipUnchecked,
    },
    FaultSpec {
        name: "task-named-otherwise",
        doc: "The driver names its tasks otherwise than Spark (SPEC §10: `task 3.1 in stage 0.0 \
              (TID 7)`): the proxy renames each LaunchTask's task `TID n`.",
        scope: Scope::Only(&[Target::Driver]),
        behaviour: &launch::TaskNamedOtherwise,
    },
    FaultSpec {
        name: "master-dials-worker",
        doc: "The master dials a registering worker's advertised address (SPEC §1: all traffic \
              travels over the connection the worker opened): the proxy opens a connection to a \
              loopback address other than 127.0.0.1 a RegisterWorker names and says a master's \
              hello there.",
        scope: Scope::Master,
        behaviour: &launch::MasterDialsWorker,
    },
    FaultSpec {
        name: "location-wrong",
        doc: "The endpoint locates an InvalidFields fault as a decoder that reads past the \
              offending item's marker would (SPEC §8.2: the offset is the item's first byte): the \
              proxy adds 1 to the offset of every InvalidFields close envelope. Served on the \
              master and the driver, whose spec/8.2/location/ cases it fails.",
        scope: Scope::Only(&[Target::Master, Target::Driver]),
        behaviour: &points::LocationWrong,
    },
    FaultSpec {
        name: "features-mishandled",
        doc: "The server mishandles the hello's features (handshake.md §5, §12): it lists each \
              feature it takes twice, writes the hello's features into a refused answer, and \
              does not check them at step 3 (the proxy passes a hello whose features is not an \
              array of str on without it).",
        scope: Scope::Master,
        behaviour: &points::FeaturesMishandled,
    },
    FaultSpec {
        name: "close-noticed-late",
        doc: "The master learns that a driver client's connection closed only when it next \
              writes to it, not when its end reaches it (SPEC §14.2 Z4): the proxy passes the end \
              of stream of the suite's driver-client connections on 3 s late.",
        scope: Scope::Master,
        behaviour: &points::CloseNoticedLate,
    },
    FaultSpec {
        name: "worker-lost-wrong-v1",
        doc: "A version 1 master gets ExecutorUpdated's workerLost wrong (SPEC §5; Spark 3.0 \
              sets it true only for the executors of a lost worker): the proxy flips it in every \
              version 1 ExecutorUpdated.",
        scope: Scope::Master,
        behaviour: &points::WorkerLostWrongV1,
    },
    FaultSpec {
        name: "answer-over-limit-pending",
        doc: "A master leaves an ask pending when its answer would not fit its frame limit \
              (SPEC §8: it is failed with org.apache.spark.SparkException and the connection \
              stays open): the proxy drops the failure envelopes it sends for RequestMasterState.",
        scope: Scope::Server,
        behaviour: &points::AnswerOverLimitPending,
    },
    FaultSpec {
        name: "driver-client-never-idle",
        doc: "The master applies its idle timeout to unregistered and ui connections only, not \
              to a driver-client between polls (SPEC §8): the proxy drops the close envelope of \
              kind Idle on a driver-client connection and passes no close of one on to the suite.",
        scope: Scope::Server,
        behaviour: &points::DriverClientNeverIdle,
    },
    FaultSpec {
        name: "strict-refusal-as-foreign-id",
        doc: "A strict master answers an ask it refuses only for a rule of rules.md as if for a \
              foreign id (SPEC §14.3: such a failure's class is org.apache.spark.SparkException): \
              the proxy turns its close envelope of kind RuleViolation into a failure of class \
              java.lang.SecurityException for the suite's last ask on that connection.",
        scope: Scope::Master,
        behaviour: &points::StrictRefusalAsForeignId,
    },
    FaultSpec {
        name: "late-250ms",
        doc: "Not a fault: a legal master that is slow to answer. The proxy passes each frame \
              the master writes (its handshake answer too) 250 ms after the one before it. Given \
              the time so slow a master needs (`--patience 30`), no case may fail for it (a case \
              must not depend on how fast a correct endpoint answers); the self-test runs none \
              under it, tests/suite.rs runs the cases that wait on a timeout the suite sets \
              (`--worker-timeout 2`).",
        scope: Scope::Only(&[]),
        behaviour: &points::Late250Ms,
    },
    // The judge's faults (conformance/src/fault/judge.rs): each breaks what only a case's judge
    // checks, one rule of protocol/rules.md or one end-of-trace obligation.
    FaultSpec {
        name: "executor-added-unlaunched",
        doc: "The master tells an application of an executor it never launched (rule N1): after \
              the first ExecutorAdded on a connection the proxy adds another, its id 1000 \
              higher. Only the judge's end-of-trace obligations see it.",
        scope: Scope::Judge(&[Target::Master]),
        behaviour: &judge::ExecutorAddedUnlaunched,
    },
    FaultSpec {
        name: "registration-unanswered",
        doc: "The master never answers a RegisterApplication whose application is not named \
              `sparkwire-conformance` (rule N3): the proxy drops the RegisteredApplication.",
        scope: Scope::Judge(&[Target::Master]),
        behaviour: &judge::RegistrationUnanswered,
    },
    FaultSpec {
        name: "executor-state-unreported",
        doc: "The worker never reports the state of an executor it launched (rule N4): the \
              proxy drops its ExecutorStateChanged.",
        scope: Scope::Judge(&[Target::Worker]),
        behaviour: &judge::ExecutorStateUnreported,
    },
    FaultSpec {
        name: "final-status-dropped",
        doc: "The executor never sends a task's final StatusUpdate (rule N2): the proxy drops \
              FINISHED, FAILED, KILLED and LOST.",
        scope: Scope::Judge(&[Target::Executor]),
        behaviour: &judge::FinalStatusDropped,
    },
    FaultSpec {
        name: "ask-id-reused",
        doc: "The endpoint reuses the id of an ask still pending (rule A1): the proxy sends its \
              first ask on a connection twice.",
        scope: Scope::Judge(&[Target::Worker, Target::Executor]),
        behaviour: &judge::AskIdReused,
    },
    FaultSpec {
        name: "commands-unregistered",
        doc: "The master sends a command to a worker before it registered it (rule W6): the \
              proxy passes a KillExecutor before the first RegisteredWorker on a connection.",
        scope: Scope::Judge(&[Target::Master]),
        behaviour: &judge::CommandsUnregistered,
    },
    FaultSpec {
        name: "app-id-wrong",
        doc: "The driver's application client names another application (rule P2): the proxy \
              rewrites the app id of its UnregisterApplication, RequestExecutors and \
              KillExecutors.",
        scope: Scope::Judge(&[Target::Driver]),
        behaviour: &judge::AppIdWrong,
    },
    FaultSpec {
        name: "launch-after-unregister",
        doc: "The master launches an executor for an application its client unregistered (rule \
              P4): after the next RegisteredWorker the proxy adds a LaunchExecutor for the \
              application of the last UnregisterApplication.",
        scope: Scope::Master,
        behaviour: &judge::LAUNCH_AFTER_UNREGISTER,
    },
    FaultSpec {
        name: "app-end-twice",
        doc: "An application's end is told twice (rule P5: after it finished the master sends \
              no second ApplicationRemoved, its client sends nothing more): the proxy repeats a \
              master's first ApplicationRemoved on a connection, a driver's application \
              client's UnregisterApplication.",
        scope: Scope::Judge(&[Target::Master, Target::Driver]),
        behaviour: &judge::AppEndTwice,
    },
    FaultSpec {
        name: "app-finished-early",
        doc: "The master tells a worker an application finished while it runs (rule P6): after \
              the first LaunchExecutor on a connection the proxy adds ApplicationFinished for its \
              application.",
        scope: Scope::Judge(&[Target::Master]),
        behaviour: &judge::AppFinishedEarly,
    },
    FaultSpec {
        name: "executor-talks-first",
        doc: "The executor sends LaunchedExecutor before its driver accepted its RegisterExecutor \
              (rule X1): the proxy adds it after the RegisterExecutor.",
        scope: Scope::Judge(&[Target::Executor]),
        behaviour: &judge::ExecutorTalksFirst,
    },
    FaultSpec {
        name: "unknown-task-status",
        doc: "The executor reports a task it was never given (rule T2): after its first \
              StatusUpdate the proxy adds a RUNNING one for a task id 1000000 higher.",
        scope: Scope::Judge(&[Target::Executor]),
        behaviour: &judge::UnknownTaskStatus,
    },
    FaultSpec {
        name: "local-message-sent",
        doc: "The master sends a local message (SPEC §6): after its first one-way message on a \
              connection the proxy adds a WorkDirCleanup.",
        scope: Scope::Judge(&[Target::Master]),
        behaviour: &judge::LocalMessageSent,
    },
    FaultSpec {
        name: "wrong-kind",
        doc: "The master sends a one-way message as an ask (SPEC §14.1, rule C4): after its first \
              one-way message on a connection the proxy adds the same message as an ask.",
        scope: Scope::Judge(&[Target::Master]),
        behaviour: &judge::WrongKind,
    },
    FaultSpec {
        name: "version-2-on-v1",
        doc: "The master sends a version 2 message on a version 1 connection (rule C5): after its \
              first one-way message on such a connection the proxy adds a DecommissionWorker.",
        scope: Scope::Judge(&[Target::Master]),
        behaviour: &judge::Version2OnV1,
    },
];

/// One way to break an endpoint: a handle on its entry of [`FAULTS`].
#[derive(Clone, Copy)]
pub struct Fault(&'static FaultSpec);

impl PartialEq for Fault {
    fn eq(&self, other: &Fault) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for Fault {}

impl std::fmt::Debug for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name)
    }
}

impl Fault {
    /// Every fault, in the order of [`FAULTS`].
    pub fn all() -> impl Iterator<Item = Fault> {
        FAULTS.iter().map(Fault)
    }

    /// The fault named `name`.
    pub fn from_name(name: &str) -> Option<Fault> {
        Fault::all().find(|f| f.name() == name)
    }

    /// The fault's name.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// What it breaks, and how.
    pub fn doc(self) -> &'static str {
        self.0.doc
    }

    /// True for the faults that break authentication ([`Scope::Auth`]).
    pub fn breaks_auth(self) -> bool {
        self.0.scope == Scope::Auth
    }

    /// True for the faults that break only what a master does ([`Scope::Master`]).
    pub fn master_only(self) -> bool {
        self.0.scope == Scope::Master
    }

    /// Whether the self-test runs `target` under this fault (its [`Scope`]): every target for a
    /// generic fault, the master for the authentication faults (which stand in for a master
    /// holding a secret) and the master's own, the targets named for the others.
    pub fn serves(self, target: Target) -> bool {
        match self.0.scope {
            Scope::Any => true,
            Scope::Auth | Scope::Master => target == Target::Master,
            Scope::Clients => target != Target::Master,
            Scope::Server => target == Target::Master,
            Scope::Only(targets) => targets.contains(&target),
            Scope::Judge(_) => false,
        }
    }

    /// True for the faults that break only a server the suite starts itself
    /// ([`Scope::Server`], `--spawn-server`).
    pub fn server_only(self) -> bool {
        self.0.scope == Scope::Server
    }

    /// True when a server the suite starts must be started without the limits and the TLS
    /// settings its case chose (the `settings-ignored` fault: a server that ignores them).
    pub fn ignores_settings(self) -> bool {
        self.0.behaviour.ignores_settings()
    }

    /// The targets whose cases' judge catches the fault ([`Scope::Judge`]); none for the others.
    pub fn judged_in(self) -> &'static [crate::harness::verdict::Target] {
        match self.0.scope {
            Scope::Judge(targets) => targets,
            _ => &[],
        }
    }
}

// ---- behaviours ----

/// What the proxy does instead of a client's hello.
enum HelloAct {
    /// Pass it on.
    Pass,
    /// Send these bytes (whole frames) upstream instead.
    Send(Vec<u8>),
    /// Accept the suite at once and say the proxy's own hello upstream ([`accept_any`]).
    AcceptAny,
    /// Refuse the suite for this reason and close both sides.
    Refuse(RefusalReason),
}

/// What a fault does at each point of a proxied connection. Every hook's default passes things
/// through unchanged; "the endpoint" is the endpoint under test, "the suite" the conformance
/// suite, whichever of them connects.
trait Behaviour: Sync {
    /// The authentication the fault breaks, when the endpoint holds a secret: the proxy then
    /// stands in for the whole handshake ([`auth_fault`], [`client_auth_fault`]).
    fn auth(&self) -> Option<AuthBreak> {
        None
    }

    /// The endpoint's closes never reach the suite, and the proxy holds the suite's side open a
    /// while after both ends stopped.
    fn keeps_open(&self) -> bool {
        false
    }

    /// The endpoint's close of a connection whose client said it is `role` does not reach the
    /// suite (the suite's side stays open), when the suite connects.
    fn hides_close_of(&self, _role: Option<Role>) -> bool {
        false
    }

    /// A server the suite starts is started without the limits and the TLS settings its case
    /// chose.
    fn ignores_settings(&self) -> bool {
        false
    }

    /// The suite's hello, when the suite connects.
    fn suite_hello(&self, _hello: Result<&Hello, ()>, _body: &[u8], _reads: usize) -> HelloAct {
        HelloAct::Pass
    }

    /// A first frame from the suite over the pre-handshake limit: whether the endpoint accepts
    /// it anyway (as [`HelloAct::AcceptAny`]).
    fn accepts_oversized_hello(&self) -> bool {
        false
    }

    /// The endpoint's hello, when the endpoint connects: the bytes (whole frames) the suite
    /// gets instead, if any.
    fn endpoint_hello(&self, _hello: Hello, _body: &[u8]) -> Option<Vec<u8>> {
        None
    }

    /// The endpoint's acceptance, when the suite connects: the one the suite gets instead, if
    /// any.
    fn acceptance(&self, _a: &Accepted) -> Option<Accepted> {
        None
    }

    /// A frame from the suite to the endpoint after the handshake, when the suite connects.
    fn suite_sent(&self, body: Bytes, _st: &StdMutex<State>) -> Act {
        Act::Forward(body)
    }

    /// A frame from the endpoint to the suite after the handshake; `endpoint_listens` says
    /// whether the suite connected.
    fn endpoint_sent(&self, body: Bytes, _st: &StdMutex<State>, _endpoint_listens: bool) -> Act {
        Act::Forward(body)
    }

    /// A frame from the suite to the endpoint after the handshake, when the endpoint connects:
    /// by default what [`Behaviour::suite_sent`] does with it, whichever side connects.
    fn suite_sent_to_client(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        self.suite_sent(body, st)
    }

    /// The endpoint's refused answer to the suite's hello (`body`, its frame body), when the
    /// suite connects: the bytes (whole frames) the suite gets instead, if any.
    fn refusal(&self, _body: &[u8]) -> Option<Vec<u8>> {
        None
    }

    /// How long the suite's end of stream takes to reach the endpoint, when the suite connects
    /// as `role`.
    fn suite_end_delay(&self, _role: Option<Role>) -> Option<std::time::Duration> {
        None
    }

    /// How long the proxy holds each frame of the endpoint's (its handshake answer included)
    /// before it passes it on, when the suite connects.
    fn endpoint_delay(&self) -> Option<std::time::Duration> {
        None
    }

    /// What the suite gets (whole frames) when the endpoint's stream ends, before the close.
    fn endpoint_ends(&self, _st: &StdMutex<State>) -> Vec<u8> {
        Vec::new()
    }

    /// What the suite gets first (whole frames) on a connection the proxy accepted itself
    /// ([`HelloAct::AcceptAny`]) at `version`, the suite's hello declaring `client_role`.
    fn first_frames(&self, _client_role: Option<Role>, _version: Version) -> Vec<u8> {
        Vec::new()
    }

    /// What the suite gets after a frame of the endpoint's was passed on (whole frames), the
    /// endpoint's role being `role`.
    fn after_endpoint_frame(
        &self,
        _body: &[u8],
        _role: Option<Role>,
        _st: &StdMutex<State>,
    ) -> Vec<u8> {
        Vec::new()
    }
}

/// The lowest (or highest) version of `versions` the crate knows.
fn known_version(versions: &[u64], lowest: bool) -> Option<u64> {
    let known = versions
        .iter()
        .copied()
        .filter(|v| Version::from_number(*v).is_some());
    if lowest {
        known.min()
    } else {
        known.max()
    }
}

struct AcceptAnyHello;

impl Behaviour for AcceptAnyHello {
    fn suite_hello(&self, _: Result<&Hello, ()>, _: &[u8], _: usize) -> HelloAct {
        HelloAct::AcceptAny
    }

    fn accepts_oversized_hello(&self) -> bool {
        true
    }
}

struct LowestVersion;

impl Behaviour for LowestVersion {
    fn suite_hello(&self, hello: Result<&Hello, ()>, _: &[u8], _: usize) -> HelloAct {
        let Ok(h) = hello else {
            return HelloAct::Pass;
        };
        let mut h = h.clone();
        if let Some(min) = known_version(&h.versions, true) {
            h.versions = vec![min];
        }
        HelloAct::Send(hello_bytes(&h))
    }

    fn endpoint_hello(&self, mut h: Hello, _: &[u8]) -> Option<Vec<u8>> {
        if let Some(min) = known_version(&h.versions, true) {
            h.versions = vec![min];
        }
        Some(hello_bytes(&h))
    }
}

struct RefuseSingleVersion;

impl Behaviour for RefuseSingleVersion {
    fn suite_hello(&self, hello: Result<&Hello, ()>, _: &[u8], _: usize) -> HelloAct {
        let Ok(h) = hello else {
            return HelloAct::Pass;
        };
        let mut vs = h.versions.clone();
        vs.sort_unstable();
        vs.dedup();
        if vs.len() == 1 {
            HelloAct::Refuse(RefusalReason::NoCommonVersion)
        } else {
            HelloAct::Pass
        }
    }

    fn endpoint_hello(&self, mut h: Hello, _: &[u8]) -> Option<Vec<u8>> {
        // As a client: it claims to speak only its highest version.
        if let Some(max) = known_version(&h.versions, false) {
            h.versions = vec![max];
        }
        Some(hello_bytes(&h))
    }
}

struct WrongRole;

fn other_role(r: Role) -> Role {
    if r == Role::Worker {
        Role::Ui
    } else {
        Role::Worker
    }
}

impl Behaviour for WrongRole {
    fn endpoint_hello(&self, mut h: Hello, _: &[u8]) -> Option<Vec<u8>> {
        h.role = other_role(h.role);
        Some(hello_bytes(&h))
    }

    fn acceptance(&self, a: &Accepted) -> Option<Accepted> {
        let mut a = a.clone();
        a.role = other_role(a.role);
        Some(a)
    }
}

struct Pedantic;

impl Behaviour for Pedantic {
    fn suite_hello(&self, hello: Result<&Hello, ()>, body: &[u8], reads: usize) -> HelloAct {
        let canonical = hello.ok().map(|h| {
            let mut b = Vec::new();
            encode_hello(h, &mut b);
            b
        });
        let ok = canonical.as_deref() == Some(body)
            && hello.is_ok_and(|h| !h.id.is_empty())
            && body.len() < 65536
            && reads <= 1
            && hello.is_ok_and(|h| {
                h.versions
                    .iter()
                    .all(|v| Version::from_number(*v).is_some())
            });
        if ok {
            HelloAct::Pass
        } else {
            HelloAct::Refuse(RefusalReason::BadMagic)
        }
    }

    fn endpoint_hello(&self, h: Hello, _: &[u8]) -> Option<Vec<u8>> {
        // The same hello with its keys in reverse order.
        let mut e = crate::harness::mp::hello_entries(&h.versions, h.role.name(), &h.id);
        e.reverse();
        Some(framed(&crate::harness::mp::map(&e)))
    }
}

struct KeepOpen;

impl Behaviour for KeepOpen {
    fn keeps_open(&self) -> bool {
        true
    }
}

struct Mute;

impl Behaviour for Mute {
    fn keeps_open(&self) -> bool {
        true
    }

    fn endpoint_sent(&self, _: Bytes, _: &StdMutex<State>, _: bool) -> Act {
        Act::Drop
    }
}

struct Duplicate;

impl Behaviour for Duplicate {
    fn endpoint_hello(&self, _: Hello, body: &[u8]) -> Option<Vec<u8>> {
        // An eager client: its hello twice, before any answer.
        let mut twice = framed(body);
        twice.extend_from_slice(&framed(body));
        Some(twice)
    }

    fn after_endpoint_frame(&self, body: &[u8], _: Option<Role>, _: &StdMutex<State>) -> Vec<u8> {
        framed(body)
    }
}

/// The authentication an [`AuthFault`] breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AuthBreak {
    /// Nobody is authenticated.
    Bypass,
    /// Any proof is taken.
    AnyProof,
    /// The endpoint's own proof does not verify.
    BadOwnProof,
}

struct AuthFault(AuthBreak);

impl Behaviour for AuthFault {
    fn auth(&self) -> Option<AuthBreak> {
        Some(self.0)
    }
}

struct SilentClose;

impl Behaviour for SilentClose {
    fn endpoint_sent(&self, body: Bytes, _: &StdMutex<State>, _: bool) -> Act {
        // A close envelope, `[4, …]` (SPEC §8.1), is dropped.
        if body.len() >= 2 && body[0] == 0x92 && body[1] == 0x04 {
            Act::Drop
        } else {
            Act::Forward(body)
        }
    }
}

struct AuthNotConfiguredTaken;

impl Behaviour for AuthNotConfiguredTaken {
    fn suite_hello(&self, hello: Result<&Hello, ()>, _: &[u8], _: usize) -> HelloAct {
        match hello {
            Ok(h) => {
                let mut h = h.clone();
                h.auth = None;
                HelloAct::Send(hello_bytes(&h))
            }
            Err(()) => HelloAct::Pass,
        }
    }
}

struct OffRoute;

impl Behaviour for OffRoute {
    fn after_endpoint_frame(
        &self,
        body: &[u8],
        role: Option<Role>,
        st: &StdMutex<State>,
    ) -> Vec<u8> {
        off_route(body, role, st).unwrap_or_default()
    }
}

// ---- the frame-level faults (the suite connects: the master target) ----

/// A frame after the handshake, decoded in the connection's version and family.
struct Decoded {
    version: Version,
    /// The connection is of the deploy family (its envelope is decoded as `D`).
    deploy: bool,
    /// The deploy envelope (`None` for a coarse one), or why it does not decode.
    envelope: Result<Option<Envelope<D>>, Error>,
}

/// `body` decoded, once the connection's version is known.
fn decoded(body: &Bytes, st: &StdMutex<State>) -> Option<Decoded> {
    let (version, role) = {
        let g = lock(st);
        (g.version, g.seen.role)
    };
    let version = version?;
    let deploy = role.is_none_or(|r| r.family() == "deploy");
    let envelope = if deploy {
        decode_envelope::<D>(body, version).map(Some)
    } else {
        decode_envelope::<sparkwire::messages::CoarseMessage>(body, version).map(|_| None)
    };
    Some(Decoded {
        version,
        deploy,
        envelope,
    })
}

/// `env` encoded in `version`, or `body` unchanged when it does not encode.
fn reencoded(env: &Envelope<D>, version: Version, body: Bytes) -> Act {
    let mut out = Vec::new();
    match encode_envelope(env, version, &mut out) {
        Ok(()) => Act::Forward(Bytes::from(out)),
        Err(_) => Act::Forward(body),
    }
}

fn lock(st: &StdMutex<State>) -> std::sync::MutexGuard<'_, State> {
    st.lock().unwrap_or_else(|e| e.into_inner())
}

struct DeepTaken;

impl Behaviour for DeepTaken {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        match decoded(&body, st).map(|d| d.envelope) {
            Some(Err(Error::TooDeep { .. })) => Act::Drop,
            _ => Act::Forward(body),
        }
    }
}

struct DepthOffByOne;

impl Behaviour for DepthOffByOne {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        if decoded(&body, st).is_none_or(|d| d.envelope.is_err()) {
            return Act::Forward(body);
        }
        // 64 levels exactly: one more array around it is too deep.
        let mut wrapped = vec![0x91];
        wrapped.extend_from_slice(&body);
        match sparkwire::wire::msgpack::value_len(&wrapped) {
            Err(Error::TooDeep { .. }) => Act::Close,
            _ => Act::Forward(body),
        }
    }
}

/// `wrong-type-taken` (`order: false`) and `unordered-taken` (`order: true`).
struct InvalidFieldsTaken {
    order: bool,
}

impl Behaviour for InvalidFieldsTaken {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        match decoded(&body, st).map(|d| d.envelope) {
            Some(Err(e)) if error_kind(&e) == "InvalidFields" => {
                let order = e.to_string().contains("distinct and ascending");
                if order == self.order {
                    Act::Drop
                } else {
                    Act::Forward(body)
                }
            }
            _ => Act::Forward(body),
        }
    }
}

struct OwnershipUnchecked;

impl Behaviour for OwnershipUnchecked {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        let Some(Decoded {
            version,
            envelope: Ok(Some(env)),
            ..
        }) = decoded(&body, st)
        else {
            return Act::Forward(body);
        };
        let mut g = lock(st);
        let (w, a) = (g.seen.own_worker.clone(), g.seen.own_app.clone());
        let rewritten = match env {
            Envelope::Send(D::RegisterWorker(r)) => {
                g.seen.own_worker = Some(r.id.clone());
                return Act::Forward(body);
            }
            Envelope::Send(D::Heartbeat(mut h)) if w.is_some() => {
                h.worker_id = w.unwrap_or_default();
                Envelope::Send(D::Heartbeat(h))
            }
            Envelope::Send(D::WorkerLatestState(mut l)) if w.is_some() => {
                l.id = w.unwrap_or_default();
                Envelope::Send(D::WorkerLatestState(l))
            }
            Envelope::Send(D::WorkerDecommissioning(mut d)) if w.is_some() => {
                d.id = w.unwrap_or_default();
                Envelope::Send(D::WorkerDecommissioning(d))
            }
            Envelope::Send(D::WorkerSchedulerStateResponse(mut r)) if w.is_some() => {
                r.id = w.unwrap_or_default();
                Envelope::Send(D::WorkerSchedulerStateResponse(r))
            }
            Envelope::Send(D::UnregisterApplication(mut u)) if a.is_some() => {
                u.app_id = a.unwrap_or_default();
                Envelope::Send(D::UnregisterApplication(u))
            }
            Envelope::Ask {
                id,
                message: D::RequestExecutors(mut r),
            } if a.is_some() => {
                r.app_id = a.unwrap_or_default();
                Envelope::Ask {
                    id,
                    message: D::RequestExecutors(r),
                }
            }
            Envelope::Ask {
                id,
                message: D::KillExecutors(mut k),
            } if a.is_some() => {
                k.app_id = a.unwrap_or_default();
                Envelope::Ask {
                    id,
                    message: D::KillExecutors(k),
                }
            }
            _ => return Act::Forward(body),
        };
        drop(g);
        reencoded(&rewritten, version, body)
    }

    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        if endpoint_listens {
            if let Some(Decoded {
                envelope: Ok(Some(Envelope::Send(D::RegisteredApplication(r)))),
                ..
            }) = decoded(&body, st)
            {
                lock(st).seen.own_app = Some(r.app_id.clone());
            }
        }
        Act::Forward(body)
    }
}

/// The values the suite registered, by their redacted form: what `no-redaction` puts back (all
/// connections of the process share it: the UI that reads is not the client that registered).
fn unredacted() -> &'static StdMutex<std::collections::BTreeMap<String, String>> {
    static MAP: std::sync::OnceLock<StdMutex<std::collections::BTreeMap<String, String>>> =
        std::sync::OnceLock::new();
    MAP.get_or_init(Default::default)
}

const REDACTED: &str = "*********(redacted)";

struct NoRedaction;

impl Behaviour for NoRedaction {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        if let Some(Decoded {
            envelope: Ok(Some(Envelope::Send(D::RegisterApplication(r)))),
            ..
        }) = decoded(&body, st)
        {
            let cmd = &r.app_description.command;
            if let Ok(mut m) = unredacted().lock() {
                for (k, v) in &cmd.environment {
                    m.insert(format!("env {k}"), v.clone());
                }
                for o in cmd.java_opts.iter().chain(&cmd.arguments) {
                    if let Some((k, _)) = o.split_once('=') {
                        m.insert(format!("{k}={REDACTED}"), o.clone());
                    }
                }
            }
        }
        Act::Forward(body)
    }

    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        if !endpoint_listens {
            return Act::Forward(body);
        }
        let Some(Decoded {
            version,
            envelope:
                Ok(Some(Envelope::Reply {
                    id,
                    reply: sparkwire::wire::Reply::Message(D::MasterStateResponse(mut s)),
                })),
            ..
        }) = decoded(&body, st)
        else {
            return Act::Forward(body);
        };
        let Ok(m) = unredacted().lock().map(|m| m.clone()) else {
            return Act::Forward(body);
        };
        for a in s.active_apps.iter_mut().chain(s.completed_apps.iter_mut()) {
            let cmd = &mut a.desc.command;
            for (k, v) in cmd.environment.iter_mut() {
                if let Some(orig) = m.get(&format!("env {k}")) {
                    v.clone_from(orig);
                }
            }
            for o in cmd.java_opts.iter_mut().chain(cmd.arguments.iter_mut()) {
                if let Some(orig) = m.get(o.as_str()) {
                    o.clone_from(orig);
                }
            }
        }
        let env = Envelope::Reply {
            id,
            reply: sparkwire::wire::Reply::Message(D::MasterStateResponse(s)),
        };
        reencoded(&env, version, body)
    }
}

struct No13604;

impl Behaviour for No13604 {
    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        if !endpoint_listens {
            return Act::Forward(body);
        }
        let Some(Decoded {
            envelope: Ok(Some(Envelope::Send(m))),
            ..
        }) = decoded(&body, st)
        else {
            return Act::Forward(body);
        };
        let mut g = lock(st);
        match m {
            D::LaunchExecutor(l) => {
                g.seen.launched_executors.insert((l.app_id, l.exec_id));
                Act::Forward(body)
            }
            D::LaunchDriver(l) => {
                g.seen.launched_drivers.insert(l.driver_id);
                Act::Forward(body)
            }
            D::KillExecutor(k)
                if !g
                    .seen
                    .launched_executors
                    .contains(&(k.app_id.clone(), k.exec_id)) =>
            {
                Act::Drop
            }
            D::KillDriver(k) if !g.seen.launched_drivers.contains(&k.driver_id) => Act::Drop,
            _ => Act::Forward(body),
        }
    }
}

struct NoReconnect;

impl Behaviour for NoReconnect {
    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        match decoded(&body, st) {
            Some(Decoded {
                envelope: Ok(Some(Envelope::Send(D::ReconnectWorker(_)))),
                ..
            }) if endpoint_listens => Act::Drop,
            _ => Act::Forward(body),
        }
    }
}

struct DecommissioningDropped;

impl Behaviour for DecommissioningDropped {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        match decoded(&body, st) {
            Some(Decoded {
                envelope: Ok(Some(Envelope::Send(D::WorkerDecommissioning(_)))),
                ..
            }) => Act::Drop,
            _ => Act::Forward(body),
        }
    }
}

struct FinishedAppRevived;

impl Behaviour for FinishedAppRevived {
    fn suite_sent(&self, body: Bytes, st: &StdMutex<State>) -> Act {
        if let Some(Decoded {
            envelope:
                Ok(Some(Envelope::Ask {
                    id,
                    message: D::RequestExecutors(_) | D::KillExecutors(_),
                })),
            ..
        }) = decoded(&body, st)
        {
            lock(st).seen.executor_asks.insert(id);
        }
        Act::Forward(body)
    }

    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        if !endpoint_listens {
            return Act::Forward(body);
        }
        match decoded(&body, st) {
            Some(Decoded {
                version,
                envelope:
                    Ok(Some(Envelope::Reply {
                        id,
                        reply: Reply::Bool(false),
                    })),
                ..
            }) if lock(st).seen.executor_asks.remove(&id) => reencoded(
                &Envelope::Reply {
                    id,
                    reply: Reply::Bool(true),
                },
                version,
                body,
            ),
            _ => Act::Forward(body),
        }
    }
}

struct FailureWithoutMessage;

impl Behaviour for FailureWithoutMessage {
    fn endpoint_sent(&self, body: Bytes, st: &StdMutex<State>, endpoint_listens: bool) -> Act {
        if !endpoint_listens {
            return Act::Forward(body);
        }
        let Some(d) = decoded(&body, st) else {
            return Act::Forward(body);
        };
        // [3, id, {"className": …, "message": …}] → [3, id, {"className": …}], any family.
        let failure = if d.deploy {
            match d.envelope {
                Ok(Some(Envelope::Failure { id, error })) => Some((id, error.class_name)),
                _ => None,
            }
        } else {
            match decode_envelope::<sparkwire::messages::CoarseMessage>(&body, d.version) {
                Ok(Envelope::Failure { id, error }) => Some((id, error.class_name)),
                _ => None,
            }
        };
        match failure {
            Some((id, class)) => Act::Forward(Bytes::from(crate::harness::mp::arr(&[
                crate::harness::mp::u(3),
                crate::harness::mp::u(id),
                crate::harness::mp::map(&[("className", crate::harness::mp::s(&class))]),
            ]))),
            None => Act::Forward(body),
        }
    }
}

// ---- the proxy ----

/// A running proxy; dropping it stops accepting connections.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Where the proxy listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Which end of each proxied connection the suite is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The suite connects (through the proxy) to the endpoint, which listens at the upstream.
    SuiteConnects {
        /// A role the endpoint takes, used when the proxy says hello itself.
        client_role: Role,
        /// The role the endpoint declares.
        server_role: Role,
    },
    /// The endpoint connects (through the proxy) to the suite, which listens at the upstream.
    EndpointConnects,
}

/// Starts a proxy on 127.0.0.1 in front of `upstream`. `secret` is the endpoint's shared
/// secret, which the authentication faults use to stand in for the suite.
pub async fn start(
    fault: Fault,
    upstream: SocketAddr,
    side: Side,
    secret: Option<Secret>,
) -> Result<Proxy, String> {
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .map_err(|e| format!("fault proxy: cannot listen: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let behaviour = fault.0.behaviour;
    let task = tokio::spawn(async move {
        while let Ok((inbound, _)) = listener.accept().await {
            let secret = secret.clone();
            tokio::spawn(async move {
                if let Ok(outbound) = TcpStream::connect(upstream).await {
                    let _ = inbound.set_nodelay(true);
                    let _ = outbound.set_nodelay(true);
                    let (suite, endpoint) = match side {
                        Side::SuiteConnects { .. } => (inbound, outbound),
                        Side::EndpointConnects => (outbound, inbound),
                    };
                    match (behaviour.auth(), side, secret) {
                        (Some(b), Side::SuiteConnects { server_role, .. }, Some(secret)) => {
                            auth_fault(b, server_role, &secret, suite, endpoint).await
                        }
                        (Some(b), Side::EndpointConnects, Some(secret)) => {
                            client_auth_fault(b, &secret, suite, endpoint).await
                        }
                        _ => pipe(behaviour, side, suite, endpoint).await,
                    }
                }
            });
        }
    });
    Ok(Proxy { addr, task })
}

/// What the proxy knows of one connection.
#[derive(Debug, Default)]
struct State {
    version: Option<Version>,
    /// What the frame-level faults remember of the connection.
    seen: Seen,
    /// The role the client's hello declared.
    client_role: Option<Role>,
    /// Whether the off-route message was added on this connection.
    off_route_sent: bool,
    offered: Vec<u64>,
    swallow_answer: bool,
    dead_suite_side: bool,
    /// Whether the endpoint's last frame was a close envelope (`close-envelope-always`).
    endpoint_last_close: bool,
}

/// What the frame-level faults remember of one connection.
#[derive(Debug, Default)]
struct Seen {
    role: Option<Role>,
    own_worker: Option<String>,
    own_app: Option<String>,
    launched_executors: std::collections::BTreeSet<(String, i32)>,
    launched_drivers: std::collections::BTreeSet<String>,
    /// The ids of the suite's RequestExecutors and KillExecutors asks not answered yet.
    executor_asks: std::collections::BTreeSet<u64>,
    /// When the suite's worker or application registered over the connection.
    registered_at: Option<std::time::Instant>,
    /// What the launch faults remember ([`launch`]).
    launch: launch::Seen,
    /// What the judge's faults remember.
    judge: judge::Seen,
    /// What issue 44's faults remember ([`points`]).
    points: points::Seen,
}

/// What to do with one frame.
enum Act {
    Forward(Bytes),
    Drop,
    Close,
}

struct Reader {
    half: OwnedReadHalf,
    buf: BytesMut,
    reads: usize,
}

enum Item {
    Frame(Bytes, usize),
    Oversized(Vec<u8>),
    End,
}

impl Reader {
    async fn next(&mut self, before_handshake: bool) -> Item {
        loop {
            if self.buf.len() >= 4 {
                let n = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]])
                    as usize;
                let limit = if before_handshake { 65536 } else { 64 << 20 };
                if n > limit {
                    return Item::Oversized(self.buf.split().to_vec());
                }
                if self.buf.len() >= 4 + n {
                    self.buf.advance(4);
                    let reads = std::mem::take(&mut self.reads);
                    return Item::Frame(self.buf.split_to(n).freeze(), reads);
                }
            }
            match self.half.read_buf(&mut self.buf).await {
                Ok(0) | Err(_) => return Item::End,
                Ok(_) => self.reads += 1,
            }
        }
    }
}

/// For `off-route`, the frame to add after `body`, a frame of an endpoint of `role`: after its
/// first one-way message on the connection, one its role never sends.
fn off_route(body: &[u8], role: Option<Role>, st: &StdMutex<State>) -> Option<Vec<u8>> {
    use sparkwire::messages::{coarse, deploy, CoarseMessage, EndpointRef};
    if !(body.len() >= 2 && body[0] == 0x92 && body[1] == 0x00) {
        return None;
    }
    let v = {
        let mut st = lock(st);
        if st.off_route_sent {
            return None;
        }
        st.off_route_sent = true;
        st.version.unwrap_or(Version::V2)
    };
    let mut out = Vec::new();
    let encoded = match role? {
        Role::Master => encode_envelope(
            &Envelope::Send(D::from(deploy::Heartbeat::new(
                "worker-off-route".into(),
                EndpointRef::client("Worker"),
            ))),
            v,
            &mut out,
        ),
        Role::Driver => encode_envelope(
            &Envelope::Send(CoarseMessage::from(coarse::LaunchedExecutor::new(
                "1".into(),
            ))),
            v,
            &mut out,
        ),
        Role::Executor => encode_envelope(
            &Envelope::Send(CoarseMessage::from(coarse::StopExecutor::new())),
            v,
            &mut out,
        ),
        _ => encode_envelope(
            &Envelope::Send(D::from(deploy::KillDriver::new("driver-off-route".into()))),
            v,
            &mut out,
        ),
    };
    encoded.ok().map(|()| framed(&out))
}

/// `env` in `version`, framed; `None` when it does not encode.
fn frame_of<F: sparkwire::messages::Family>(
    env: &Envelope<F>,
    version: Version,
) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    encode_envelope(env, version, &mut out).ok()?;
    Some(framed(&out))
}

fn framed(body: &[u8]) -> Vec<u8> {
    crate::harness::mp::frame(body)
}

fn answer_bytes(a: &Answer) -> Vec<u8> {
    let mut b = Vec::new();
    encode_answer(a, &mut b);
    framed(&b)
}

fn hello_bytes(h: &Hello) -> Vec<u8> {
    let mut b = Vec::new();
    encode_hello(h, &mut b);
    framed(&b)
}

type Writer = Arc<Mutex<Option<OwnedWriteHalf>>>;

async fn write(w: &Writer, bytes: &[u8]) {
    let mut g = w.lock().await;
    if let Some(h) = g.as_mut() {
        if h.write_all(bytes).await.is_err() {
            *g = None;
        }
    }
}

async fn close(w: &Writer) {
    let mut g = w.lock().await;
    if let Some(mut h) = g.take() {
        let _ = h.shutdown().await;
    }
}

/// A frame of the endpoint's after the handshake, to the suite: the behaviour's verdict on it,
/// then what it adds. Returns false when the connection is to close.
async fn endpoint_frame(
    behaviour: &dyn Behaviour,
    body: Bytes,
    st: &StdMutex<State>,
    endpoint_listens: bool,
    role: Option<Role>,
    to: &Writer,
) -> bool {
    let body = match behaviour.endpoint_sent(body, st, endpoint_listens) {
        Act::Forward(b) => b,
        Act::Drop => return true,
        Act::Close => return false,
    };
    write(to, &framed(&body)).await;
    let extra = behaviour.after_endpoint_frame(&body, role, st);
    if !extra.is_empty() {
        write(to, &extra).await;
    }
    true
}

async fn pipe(
    behaviour: &'static dyn Behaviour,
    side: Side,
    suite: TcpStream,
    endpoint: TcpStream,
) {
    let suite_is_client = matches!(side, Side::SuiteConnects { .. });
    let (client, server) = if suite_is_client {
        (suite, endpoint)
    } else {
        (endpoint, suite)
    };
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    let cw: Writer = Arc::new(Mutex::new(Some(cw)));
    let sw: Writer = Arc::new(Mutex::new(Some(sw)));
    let st = Arc::new(StdMutex::new(State::default()));
    let keep = behaviour.keeps_open();

    // The client's frames, to the server.
    let up = {
        let (from, to, back, st) = (cr, sw.clone(), cw.clone(), st.clone());
        async move {
            let mut r = Reader {
                half: from,
                buf: BytesMut::new(),
                reads: 0,
            };
            let mut first = true;
            loop {
                let handshaking = lock(&st).version.is_none() && first;
                match r.next(handshaking).await {
                    Item::End => {
                        if !suite_is_client {
                            let last = behaviour.endpoint_ends(&st);
                            if !last.is_empty() {
                                write(&to, &last).await;
                            }
                        }
                        if suite_is_client {
                            let role = lock(&st).client_role;
                            if let Some(d) = behaviour.suite_end_delay(role) {
                                tokio::time::sleep(d).await;
                            }
                        }
                        // An endpoint that is the client: under keep-open and mute its close is
                        // not passed on to the suite.
                        if suite_is_client || !keep {
                            close(&to).await;
                        }
                        break;
                    }
                    Item::Oversized(raw) => {
                        if first && suite_is_client && behaviour.accepts_oversized_hello() {
                            accept_any(&st, &back, &to, side).await;
                            // Whatever follows is dropped: the endpoint "took" the frame.
                            loop {
                                if let Item::End = r.next(false).await {
                                    break;
                                }
                            }
                            break;
                        }
                        write(&to, &raw).await;
                        let mut rest = vec![0u8; 8192];
                        loop {
                            match r.half.read(&mut rest).await {
                                Ok(0) | Err(_) => break,
                                Ok(n) => write(&to, &rest[..n]).await,
                            }
                        }
                        close(&to).await;
                        break;
                    }
                    Item::Frame(body, reads) => {
                        if first {
                            first = false;
                            let hello = decode_hello(&body);
                            if let Ok(h) = &hello {
                                let mut g = lock(&st);
                                g.offered = h.versions.clone();
                                g.client_role = Some(h.role);
                                g.seen.role = Some(h.role);
                            }
                            if suite_is_client {
                                match behaviour.suite_hello(
                                    hello.as_ref().map_err(|_| ()),
                                    &body,
                                    reads,
                                ) {
                                    HelloAct::Pass => write(&to, &framed(&body)).await,
                                    HelloAct::Send(bytes) => write(&to, &bytes).await,
                                    HelloAct::AcceptAny => {
                                        let v = accept_any(&st, &back, &to, side).await;
                                        let role = lock(&st).client_role;
                                        let first = behaviour.first_frames(role, v);
                                        if !first.is_empty() {
                                            write(&back, &first).await;
                                        }
                                    }
                                    HelloAct::Refuse(reason) => {
                                        refuse(&back, reason).await;
                                        lock(&st).dead_suite_side = true;
                                        close(&to).await;
                                        break;
                                    }
                                }
                            } else {
                                let instead =
                                    hello.ok().and_then(|h| behaviour.endpoint_hello(h, &body));
                                match instead {
                                    Some(bytes) => write(&to, &bytes).await,
                                    None => write(&to, &framed(&body)).await,
                                }
                            }
                            continue;
                        }
                        if suite_is_client {
                            match behaviour.suite_sent(body, &st) {
                                Act::Forward(b) => write(&to, &framed(&b)).await,
                                Act::Drop => {}
                                Act::Close => {
                                    close(&to).await;
                                    close(&back).await;
                                    break;
                                }
                            }
                        } else {
                            let role = lock(&st).client_role;
                            endpoint_frame(behaviour, body, &st, false, role, &to).await;
                        }
                    }
                }
            }
        }
    };

    // The server's frames, to the client.
    let down = {
        let (from, to, back, st) = (sr, cw.clone(), sw.clone(), st.clone());
        async move {
            let mut r = Reader {
                half: from,
                buf: BytesMut::new(),
                reads: 0,
            };
            let mut first = true;
            loop {
                let handshaking = first;
                match r.next(handshaking).await {
                    Item::End | Item::Oversized(_) => {
                        if suite_is_client {
                            let last = behaviour.endpoint_ends(&st);
                            if !last.is_empty() {
                                write(&to, &last).await;
                            }
                        }
                        // An endpoint that is the server: under keep-open and mute the suite
                        // sees no close.
                        let hide = keep || behaviour.hides_close_of(lock(&st).client_role);
                        if !(suite_is_client && hide) {
                            close(&to).await;
                        }
                        break;
                    }
                    Item::Frame(body, _) => {
                        if suite_is_client {
                            if let Some(d) = behaviour.endpoint_delay() {
                                tokio::time::sleep(d).await;
                            }
                        }
                        if first {
                            first = false;
                            let answer = decode_answer(&body);
                            let swallow = {
                                let mut g = lock(&st);
                                if let Ok(Answer::Accepted(a)) = &answer {
                                    g.version = Some(a.version);
                                }
                                g.swallow_answer
                            };
                            if swallow {
                                continue;
                            }
                            if let (Ok(Answer::Refused(_)), true) = (&answer, suite_is_client) {
                                if let Some(bytes) = behaviour.refusal(&body) {
                                    write(&to, &bytes).await;
                                    continue;
                                }
                            }
                            let instead = match &answer {
                                Ok(Answer::Accepted(a)) if suite_is_client => {
                                    behaviour.acceptance(a)
                                }
                                _ => None,
                            };
                            match instead {
                                Some(a) => write(&to, &answer_bytes(&Answer::Accepted(a))).await,
                                None => write(&to, &framed(&body)).await,
                            }
                            continue;
                        }
                        if !suite_is_client {
                            // The suite's frames to an endpoint that connected.
                            match behaviour.suite_sent_to_client(body, &st) {
                                Act::Forward(b) => write(&to, &framed(&b)).await,
                                Act::Drop => {}
                                Act::Close => {
                                    close(&to).await;
                                    close(&back).await;
                                    break;
                                }
                            }
                            continue;
                        }
                        let role = match side {
                            Side::SuiteConnects { server_role, .. } => Some(server_role),
                            Side::EndpointConnects => None,
                        };
                        if !endpoint_frame(behaviour, body, &st, true, role, &to).await {
                            close(&to).await;
                            break;
                        }
                    }
                }
            }
        }
    };
    tokio::join!(up, down);
    if keep {
        // An endpoint that never closes: the suite's side stays open a while longer.
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
    }
    drop((cw, sw));
}

/// Accepts the suite at once and says the proxy's own hello upstream; returns the version
/// accepted.
async fn accept_any(st: &StdMutex<State>, back: &Writer, to: &Writer, side: Side) -> Version {
    let Side::SuiteConnects {
        client_role,
        server_role,
    } = side
    else {
        return Version::V2;
    };
    let offered = lock(st).offered.clone();
    let version = if offered.contains(&2) || offered.is_empty() || !offered.contains(&1) {
        Version::V2
    } else {
        Version::V1
    };
    write(
        back,
        &answer_bytes(&Answer::Accepted(Accepted {
            version,
            versions: vec![1, 2],
            role: server_role,
            id: String::new(),
            features: Vec::new(),
        })),
    )
    .await;
    lock(st).swallow_answer = true;
    write(
        to,
        &hello_bytes(&Hello::new(&[version], client_role, "proxy")),
    )
    .await;
    version
}

async fn refuse(back: &Writer, reason: RefusalReason) {
    write(
        back,
        &answer_bytes(&Answer::Refused(Refusal {
            reason,
            message: "refused by the fault proxy".into(),
            versions: vec![1, 2],
        })),
    )
    .await;
    close(back).await;
}

/// Reads one frame body of at most the pre-handshake limit.
async fn read_frame(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix).await.ok()?;
    let n = u32::from_be_bytes(prefix) as usize;
    if n > 65536 {
        return None;
    }
    let mut body = vec![0u8; n];
    stream.read_exact(&mut body).await.ok()?;
    Some(body)
}

/// Reads a client's hello: its frame body and what it says.
async fn read_hello_frame(stream: &mut TcpStream) -> Option<(Vec<u8>, Hello)> {
    let body = read_frame(stream).await?;
    let hello = decode_hello(&body).ok()?;
    Some((body, hello))
}

/// The authentication faults: the proxy authenticates to the endpoint itself and lets the suite
/// through unauthenticated ([`AuthBreak::Bypass`]) or with any proof ([`AuthBreak::AnyProof`]).
async fn auth_fault(
    fault: AuthBreak,
    server_role: Role,
    secret: &Secret,
    mut suite: TcpStream,
    mut endpoint: TcpStream,
) {
    let Some((hello_body, hello)) = read_hello_frame(&mut suite).await else {
        return;
    };
    if fault == AuthBreak::BadOwnProof {
        // The hello passes as it is; the endpoint's challenge reaches the suite with a wrong
        // server proof.
        let hello_frame = frame_bytes(&hello_body);
        let _ = endpoint.write_all(&hello_frame).await;
        let Some(challenge) = read_frame(&mut endpoint).await else {
            return;
        };
        let nonce = crate::harness::mp::challenge_nonce(&challenge)
            .and_then(|n| <Nonce>::try_from(n.as_slice()).ok());
        let shown = match nonce {
            Some(nonce) => {
                let mut proof = server_proof(secret, &hello_frame, &nonce);
                proof[0] ^= 1;
                let mut out = Vec::new();
                encode_challenge(&Challenge { nonce, proof }, &mut out);
                out
            }
            None => challenge,
        };
        let _ = suite.write_all(&frame_bytes(&shown)).await;
    } else if fault == AuthBreak::AnyProof {
        // Hello and challenge pass as they are; the suite's proof becomes the right one.
        let _ = endpoint.write_all(&frame_bytes(&hello_body)).await;
        let Some(challenge) = read_frame(&mut endpoint).await else {
            return;
        };
        let _ = suite.write_all(&frame_bytes(&challenge)).await;
        let Some(next) = read_frame(&mut suite).await else {
            return;
        };
        let forwarded = if decode_proof(&next).is_ok() {
            let proof = Proof {
                proof: client_proof(secret, &frame_bytes(&hello_body), &frame_bytes(&challenge)),
                admin: None,
            };
            let mut out = Vec::new();
            encode_proof(&proof, &mut out);
            out
        } else {
            next
        };
        let _ = endpoint.write_all(&frame_bytes(&forwarded)).await;
    } else {
        // The suite is accepted at once; the proxy's own authenticated hello goes upstream.
        let version = if hello.versions.contains(&2) || !hello.versions.contains(&1) {
            Version::V2
        } else {
            Version::V1
        };
        let accepted = Answer::Accepted(Accepted {
            version,
            versions: vec![1, 2],
            role: server_role,
            id: String::new(),
            features: Vec::new(),
        });
        let _ = suite.write_all(&answer_bytes(&accepted)).await;
        let Ok(nonce) = fresh_nonce() else {
            return;
        };
        let own = Hello::new(&[version], hello.role, hello.id.clone()).with_auth(nonce);
        let mut own_body = Vec::new();
        encode_hello(&own, &mut own_body);
        let _ = endpoint.write_all(&frame_bytes(&own_body)).await;
        let Some(challenge) = read_frame(&mut endpoint).await else {
            return;
        };
        let local = Identity::new(hello.role, hello.id.clone())
            .with_versions(&[version])
            .with_secret(Some(secret.clone()));
        let Ok(ClientNext::SendProof(proof)) =
            read_server_frame(&challenge, &own, &own_body, &local)
        else {
            return;
        };
        let _ = endpoint.write_all(&frame_bytes(&proof)).await;
        // The endpoint's answer is the proxy's, not the suite's.
        if read_frame(&mut endpoint).await.is_none() {
            return;
        }
    }
    let _ = tokio::io::copy_bidirectional(&mut suite, &mut endpoint).await;
}

/// A challenge body that proves `secret` for the hello frame `hello_frame` with `nonce`.
fn right_challenge(secret: &Secret, hello_frame: &[u8], nonce: Nonce) -> Vec<u8> {
    let mut out = Vec::new();
    let challenge = Challenge {
        nonce,
        proof: server_proof(secret, hello_frame, &nonce),
    };
    encode_challenge(&challenge, &mut out);
    out
}

/// The authentication faults of a client (the endpoint connects to the suite): the proxy does
/// the endpoint's authentication for it, so that the suite sees a client that does not
/// authenticate ([`AuthBreak::Bypass`]) or one that takes any server proof ([`AuthBreak::AnyProof`]).
async fn client_auth_fault(
    fault: AuthBreak,
    secret: &Secret,
    mut suite: TcpStream,
    mut endpoint: TcpStream,
) {
    let Some((hello_body, hello)) = read_hello_frame(&mut endpoint).await else {
        return;
    };
    let hello_frame = frame_bytes(&hello_body);
    if hello.auth.is_none() {
        // A client that does not authenticate anyway: nothing to break.
        let _ = suite.write_all(&hello_frame).await;
    } else if fault == AuthBreak::BadOwnProof {
        // Hello and challenge pass as they are; the endpoint's proof reaches the suite wrong.
        let _ = suite.write_all(&hello_frame).await;
        let Some(first) = read_frame(&mut suite).await else {
            return;
        };
        let _ = endpoint.write_all(&frame_bytes(&first)).await;
        let Some(next) = read_frame(&mut endpoint).await else {
            return;
        };
        let sent = match decode_proof(&next) {
            Ok(mut proof) => {
                proof.proof[0] ^= 1;
                let mut out = Vec::new();
                encode_proof(&proof, &mut out);
                out
            }
            Err(_) => next,
        };
        let _ = suite.write_all(&frame_bytes(&sent)).await;
    } else if fault == AuthBreak::Bypass {
        // The proxy is the endpoint's server: it challenges it and takes its proof ...
        let local = Identity::new(Role::Driver, "proxy").with_secret(Some(secret.clone()));
        let ServerHello::Challenge(auth) = read_hello(&hello_body, &local, |_| true, fresh_nonce)
        else {
            return;
        };
        let _ = endpoint
            .write_all(&frame_bytes(auth.challenge_body()))
            .await;
        if read_frame(&mut endpoint).await.is_none() {
            return;
        }
        // ... and says hello to the suite without asking to authenticate; the suite's answer
        // goes to the endpoint as the answer to its proof.
        let mut plain = hello.clone();
        plain.auth = None;
        let _ = suite.write_all(&hello_bytes(&plain)).await;
    } else {
        // Any proof: the hello passes as it is; the endpoint is shown a right proof whatever
        // the suite sends, and the suite gets the endpoint's proof made right.
        let _ = suite.write_all(&hello_frame).await;
        let Some(first) = read_frame(&mut suite).await else {
            return;
        };
        let nonce = match crate::harness::mp::challenge_nonce(&first)
            .and_then(|n| <Nonce>::try_from(n.as_slice()).ok())
        {
            Some(n) => Some(n),
            None if decode_answer(&first).is_ok() => fresh_nonce().ok(),
            None => None,
        };
        let Some(nonce) = nonce else {
            let _ = endpoint.write_all(&frame_bytes(&first)).await;
            let _ = tokio::io::copy_bidirectional(&mut suite, &mut endpoint).await;
            return;
        };
        let shown = right_challenge(secret, &hello_frame, nonce);
        let _ = endpoint.write_all(&frame_bytes(&shown)).await;
        if read_frame(&mut endpoint).await.is_none() {
            return;
        }
        if crate::harness::mp::challenge_nonce(&first).is_some() {
            let proof = Proof {
                proof: client_proof(secret, &hello_frame, &frame_bytes(&first)),
                admin: None,
            };
            let mut out = Vec::new();
            encode_proof(&proof, &mut out);
            let _ = suite.write_all(&frame_bytes(&out)).await;
        } else {
            // The suite accepted without a challenge: that acceptance is the endpoint's answer.
            let _ = endpoint.write_all(&frame_bytes(&first)).await;
        }
    }
    let _ = tokio::io::copy_bidirectional(&mut suite, &mut endpoint).await;
}
