//! Every fault, one entry each: its name, what it breaks, which targets' self-test it serves, and
//! its behaviour.

use crate::harness::verdict::Target;

use super::auth::*;
use super::frames::*;
use super::hellos::*;
use super::limits::{
    AdminInverted, AdminProofDropped, LimitClosesAll, RegisteredCutOff, SettingsIgnored,
};
use super::spark_auth::{SparkAuthFault, SparkBreak};
use super::{closes, decoder, judge, launch, points, releases, waiting, FaultSpec, Scope};

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
        name: "spark-any-secret",
        doc: "On Spark's wire, an endpoint holding spark.authenticate.secret takes any proof: a SASL \
              digest-response or an AuthMessage made with another secret is answered as if it \
              verified (the proxy authenticates to the real endpoint itself). Needs `--wire spark \
              --secret-file`.",
        scope: Scope::Spark,
        behaviour: &SparkAuthFault(SparkBreak::AnySecret),
    },
    FaultSpec {
        name: "spark-rpc-before-auth",
        doc: "On Spark's wire, an endpoint holding a secret acts on a first request that is not of \
              the bootstrap, and on all after it (CVE-2020-9480); a peer that authenticates is \
              served correctly. Needs `--wire spark --secret-file`.",
        scope: Scope::Spark,
        behaviour: &SparkAuthFault(SparkBreak::RpcBeforeAuth),
    },
    FaultSpec {
        name: "spark-sasl-taken",
        doc: "On Spark's wire, an endpoint with spark.network.crypto.saslFallback=false takes SASL \
              anyway (with the right secret). Needs `--wire spark --secret-file`.",
        scope: Scope::Spark,
        behaviour: &SparkAuthFault(SparkBreak::SaslTaken),
    },
    FaultSpec {
        name: "spark-cleartext-after-engine",
        doc: "On Spark's wire, an endpoint that ran the auth engine reads a peer that then writes \
              frames in the clear in the clear, and answers it in the clear (a downgrade to no \
              encryption). Needs `--wire spark --secret-file`.",
        scope: Scope::Spark,
        behaviour: &SparkAuthFault(SparkBreak::Cleartext),
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
    // The judge's faults (conformance/src/faults/judge.rs): each breaks what only a case's judge
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
