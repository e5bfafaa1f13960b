//! Where a leader that took over turns to tell a recovered Spark-wire peer of the change, and
//! what the master keeps of its Spark-wire peers in its recovery records.
//!
//! A worker or an application that registered through the master's Spark-wire front
//! (`--spark-port`) is a Spark process: its recorded endpoint speaks Spark's RPC, not sparkwire's
//! handshake, so the master's own dial of it (to send `MasterChanged`, Spark's beginRecovery)
//! fails. With a [`SparkPeerDial`] installed (by whoever runs the front), such a failed dial is
//! handed to it instead of being given up: it sends `MasterChanged` over Spark's wire, and the
//! peer's answer (`WorkerSchedulerStateResponse`, `MasterChangeAcknowledged`) comes back
//! through the front like any other message of a Spark peer.
//!
//! The same slot holds a [`SparkPeerBook`]: the front notes there each Spark peer it registers
//! (its endpoint's address, its release and, for an application, the Java stream of its
//! `RegisterApplication`) before it hands the registration to the master; the master's runtime
//! adds that to the peer's recovery record ([`SparkPeerRecord`], SPEC §15.5) when it writes it,
//! and reads it back into the book when it is elected on stored records, so that a new leader
//! speaks to a recovered Spark peer in the peer's own release and launches executors for a
//! recovered Spark application with its original description.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

use crate::messages::Addr;
use crate::node::master::{DialTarget, Record, RecordKind, SparkPeerRecord, Stored};

/// What announces the master to a recovered peer at an address over another wire.
pub type SparkDialFn = dyn Fn(Addr, DialTarget) + Send + Sync;

/// A slot for the Spark-wire dial of recovered peers, shared between the master (which hands
/// failed dials to it) and the front (which fills it once it listens), with the book of the
/// master's Spark-wire peers. Empty by default.
///
/// A master may be elected (and dial its recovered peers) before its front listens: a slot told
/// a front is coming ([`SparkPeerDial::expect_front`]) holds the dials handed to it until then
/// (at most [`MAX_BOOKED`]), and the front's [`SparkPeerDial::install`] makes them. Without that,
/// a master restarted on its store lost every Spark peer it recovered whenever the election won
/// the race against the front (found by `sparkwire spark load --failover` with a clean restart).
#[derive(Clone, Default)]
pub struct SparkPeerDial {
    dial: Arc<OnceLock<Arc<SparkDialFn>>>,
    book: Arc<Mutex<SparkPeerBook>>,
    waiting: Arc<Mutex<Option<Held>>>,
}

/// The dials held for a front expected and not listening yet.
type Held = Vec<(Addr, DialTarget)>;

impl std::fmt::Debug for SparkPeerDial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparkPeerDial")
            .field("installed", &self.dial.get().is_some())
            .finish()
    }
}

impl SparkPeerDial {
    /// Installs the dial; the first one installed stays. Whether this one was installed. The
    /// dials held since [`SparkPeerDial::expect_front`] are made with it now.
    pub fn install(&self, dial: Arc<SparkDialFn>) -> bool {
        // Under the lock: a hand-over either sees the dial installed or is held and made here.
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        if self.dial.set(Arc::clone(&dial)).is_err() {
            return false;
        }
        for (addr, target) in waiting.take().unwrap_or_default() {
            dial(addr, target);
        }
        true
    }

    /// Says a front will install its dial: until it does, dials handed over are held for it,
    /// not given up.
    pub fn expect_front(&self) {
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        if self.dial.get().is_none() && waiting.is_none() {
            *waiting = Some(Vec::new());
        }
    }

    /// Hands a dial that failed over sparkwire's wire to the installed one, or holds it for the
    /// front expected. Whether it was taken.
    pub(crate) fn hand_over(&self, addr: Addr, target: DialTarget) -> bool {
        let dial = {
            let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
            match (self.dial.get(), waiting.as_mut()) {
                (Some(dial), _) => Arc::clone(dial),
                (None, Some(held)) if held.len() < MAX_BOOKED => {
                    held.push((addr, target));
                    return true;
                }
                (None, _) => return false,
            }
        };
        dial(addr, target);
        true
    }

    /// Runs `f` on the book (a poisoned lock is still a good book: every change is one insert).
    pub fn with_book<T>(&self, f: impl FnOnce(&mut SparkPeerBook) -> T) -> T {
        let mut book = self.book.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut book)
    }
}

/// The most peers the book keeps in each of its tables (the oldest goes first): a hostile peer
/// registering without end cannot grow it.
pub const MAX_BOOKED: usize = 4096;

/// What the master knows of its Spark-wire peers: the front's notes of registrations not yet
/// recorded (by the address of the peer's endpoint), and the [`SparkPeerRecord`] of each
/// recorded worker and application (by record kind and id).
#[derive(Debug, Default)]
pub struct SparkPeerBook {
    noted: HashMap<(String, i32), SparkPeerRecord>,
    noted_order: VecDeque<(String, i32)>,
    records: HashMap<(RecordKind, String), SparkPeerRecord>,
    records_order: VecDeque<(RecordKind, String)>,
    /// The release each recorded peer's endpoint speaks, by its address.
    releases: HashMap<(String, i32), String>,
}

fn key(addr: &Addr) -> (String, i32) {
    (addr.host.clone(), addr.port)
}

impl SparkPeerBook {
    /// The front registers a Spark peer whose endpoint is at `endpoint`: it speaks `release`;
    /// `registration` is an application's `RegisterApplication` stream.
    pub fn note(&mut self, endpoint: &Addr, release: &str, registration: Option<&[u8]>) {
        let k = key(endpoint);
        let record = SparkPeerRecord {
            release: Some(release.to_string()),
            registration: registration.map(hex),
        };
        if self.noted.insert(k.clone(), record).is_none() {
            self.noted_order.push_back(k);
        }
        while self.noted_order.len() > MAX_BOOKED {
            if let Some(old) = self.noted_order.pop_front() {
                self.noted.remove(&old);
            }
        }
    }

    fn keep(&mut self, kind: RecordKind, id: &str, endpoint: Option<&Addr>, r: SparkPeerRecord) {
        if let (Some(a), Some(release)) = (endpoint, &r.release) {
            self.releases.insert(key(a), release.clone());
        }
        let k = (kind, id.to_string());
        if self.records.insert(k.clone(), r).is_none() {
            self.records_order.push_back(k);
        }
        while self.records_order.len() > MAX_BOOKED {
            if let Some(old) = self.records_order.pop_front() {
                self.records.remove(&old);
            }
        }
        if self.releases.len() > MAX_BOOKED {
            self.releases.clear();
        }
    }

    /// `record` as the store keeps it: a worker's or an application's with what the book has
    /// of it when it is a Spark-wire peer (from its record already, else from the front's note
    /// of its endpoint), unchanged otherwise.
    pub fn complete(&mut self, mut record: Record) -> Record {
        match &mut record {
            Record::App(a) => {
                let endpoint = a.driver.address.clone();
                a.spark = self
                    .spark_of(
                        RecordKind::App,
                        &a.id,
                        endpoint.as_ref(),
                        a.spark.take().map(|b| *b),
                    )
                    .map(Box::new);
            }
            Record::Worker(w) => {
                let endpoint = w.endpoint.address.clone();
                w.spark = self
                    .spark_of(
                        RecordKind::Worker,
                        &w.id,
                        endpoint.as_ref(),
                        w.spark.take().map(|b| *b),
                    )
                    .map(Box::new);
            }
            Record::Driver(_) => {}
        }
        record
    }

    fn spark_of(
        &mut self,
        kind: RecordKind,
        id: &str,
        endpoint: Option<&Addr>,
        given: Option<SparkPeerRecord>,
    ) -> Option<SparkPeerRecord> {
        let noted = endpoint.and_then(|a| {
            let k = key(a);
            let n = self.noted.remove(&k);
            if n.is_some() {
                self.noted_order.retain(|o| *o != k);
            }
            n
        });
        // A registration noted anew (a worker registering again) is newer than the record.
        let r = noted
            .or(given)
            .or_else(|| self.records.get(&(kind, id.to_string())).cloned())?;
        self.keep(kind, id, endpoint, r.clone());
        Some(r)
    }

    /// The record of `kind` and `id` is removed from the store: the book forgets it.
    pub fn forget(&mut self, kind: RecordKind, id: &str) {
        let k = (kind, id.to_string());
        if self.records.remove(&k).is_some() {
            self.records_order.retain(|o| *o != k);
        }
    }

    /// The master is elected on `stored`: the book holds what its records keep of their Spark
    /// peers.
    pub fn recovered(&mut self, stored: &Stored) {
        for a in &stored.apps {
            if let Some(s) = &a.spark {
                self.keep(
                    RecordKind::App,
                    &a.id,
                    a.driver.address.as_ref(),
                    (**s).clone(),
                );
            }
        }
        for w in &stored.workers {
            if let Some(s) = &w.spark {
                self.keep(
                    RecordKind::Worker,
                    &w.id,
                    w.endpoint.address.as_ref(),
                    (**s).clone(),
                );
            }
        }
    }

    /// The release the recorded Spark peer whose endpoint is at `endpoint` speaks, if the book
    /// knows it.
    pub fn release_at(&self, endpoint: &Addr) -> Option<&str> {
        self.releases.get(&key(endpoint)).map(String::as_str)
    }

    /// The `RegisterApplication` stream of recorded Spark application `app_id`, if kept.
    pub fn registration(&self, app_id: &str) -> Option<Vec<u8>> {
        let r = self.records.get(&(RecordKind::App, app_id.to_string()))?;
        unhex(r.registration.as_deref()?)
    }
}

/// Lowercase hexadecimal of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

/// The bytes of hexadecimal `text` (either case), or `None` when it is not that.
pub(crate) fn unhex(text: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| {
        char::from(c)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    let t = text.as_bytes();
    if t.len() % 2 != 0 {
        return None;
    }
    t.chunks(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::EndpointRef;
    use crate::node::master::{StoredApp, StoredWorker};

    fn recording(slot: &SparkPeerDial) -> Arc<Mutex<Vec<String>>> {
        let made = Arc::new(Mutex::new(Vec::new()));
        let into = Arc::clone(&made);
        slot.install(Arc::new(move |addr: Addr, _target: DialTarget| {
            into.lock().expect("the list").push(addr.host.clone());
        }));
        made
    }

    #[test]
    fn dials_handed_over_before_an_expected_front_listens_are_made_once_it_does() {
        let slot = SparkPeerDial::default();
        // No front expected: a hand-over is refused (the master gives the peer up, as before).
        assert!(!slot.hand_over(Addr::new("10.0.0.1", 1), DialTarget::Worker("w0".into())));
        slot.expect_front();
        assert!(slot.hand_over(Addr::new("10.0.0.2", 1), DialTarget::Worker("w1".into())));
        assert!(slot.hand_over(Addr::new("10.0.0.3", 1), DialTarget::App("a1".into())));
        let made = recording(&slot);
        assert_eq!(*made.lock().expect("the list"), ["10.0.0.2", "10.0.0.3"]);
        // Once installed, a hand-over is made at once.
        assert!(slot.hand_over(Addr::new("10.0.0.4", 1), DialTarget::Worker("w2".into())));
        assert_eq!(made.lock().expect("the list").len(), 3);
    }

    #[test]
    fn a_slot_holds_at_most_max_booked_dials_for_its_front() {
        let slot = SparkPeerDial::default();
        slot.expect_front();
        for i in 0..MAX_BOOKED {
            assert!(slot.hand_over(
                Addr::new("10.0.0.1", i as i32),
                DialTarget::Worker("w".into())
            ));
        }
        assert!(!slot.hand_over(Addr::new("10.0.0.9", 1), DialTarget::Worker("w".into())));
        let made = recording(&slot);
        assert_eq!(made.lock().expect("the list").len(), MAX_BOOKED);
    }

    fn app(id: &str, at: &Addr) -> StoredApp {
        let desc = crate::messages::ApplicationDescription {
            name: "a".into(),
            max_cores: None,
            command: crate::messages::Command {
                main_class: "M".into(),
                arguments: Vec::new(),
                environment: Default::default(),
                class_path_entries: Vec::new(),
                library_path_entries: Vec::new(),
                java_opts: Vec::new(),
            },
            app_ui_url: String::new(),
            default_profile: crate::messages::ResourceProfile::default_with(None, 512),
            event_log_dir: None,
            event_log_codec: None,
            initial_executor_limit: None,
            user: "u".into(),
        };
        StoredApp {
            id: id.into(),
            desc,
            driver: EndpointRef::at(at.clone(), "AppClient"),
            start_time: 1,
            spark: None,
        }
    }

    #[test]
    fn hex_round_trips_and_refuses_what_is_not_hex() {
        let bytes = [0u8, 1, 0xab, 0xff, 0x10];
        assert_eq!(hex(&bytes), "0001abff10");
        assert_eq!(unhex("0001ABff10"), Some(bytes.to_vec()));
        assert_eq!(unhex("0"), None);
        assert_eq!(unhex("zz"), None);
    }

    #[test]
    fn a_noted_spark_application_is_recorded_with_its_release_and_registration_then_recovered() {
        let at = Addr::new("10.77.0.5", 40001);
        let mut book = SparkPeerBook::default();
        book.note(&at, "4.0.1", Some(&[0xac, 0xed, 0, 5]));
        let Record::App(a) = book.complete(Record::App(app("app-1", &at))) else {
            panic!("not an application's record");
        };
        let spark = a.spark.clone().expect("a Spark peer's record");
        assert_eq!(spark.release.as_deref(), Some("4.0.1"));
        assert_eq!(spark.registration.as_deref(), Some("aced0005"));
        // Written again later (its state changed): still complete, the note used up.
        let mut bare = a.clone();
        bare.spark = None;
        let Record::App(again) = book.complete(Record::App(bare)) else {
            panic!("not an application's record");
        };
        assert_eq!(again.spark, a.spark);

        // A new leader's book, from the store.
        let mut fresh = SparkPeerBook::default();
        assert_eq!(fresh.registration("app-1"), None);
        fresh.recovered(&Stored {
            apps: vec![a],
            ..Stored::default()
        });
        assert_eq!(fresh.registration("app-1"), Some(vec![0xac, 0xed, 0, 5]));
        assert_eq!(fresh.release_at(&at), Some("4.0.1"));
        fresh.forget(RecordKind::App, "app-1");
        assert_eq!(fresh.registration("app-1"), None);
    }

    #[test]
    fn a_sparkwire_peer_is_recorded_without_spark_fields_and_old_records_read_as_sparkwire() {
        let mut book = SparkPeerBook::default();
        book.note(&Addr::new("10.77.0.9", 1), "3.5.9", None);
        let w = StoredWorker {
            id: "worker-1".into(),
            host: "10.77.0.4".into(),
            port: 7078,
            endpoint: EndpointRef::at(Addr::new("10.77.0.4", 7078), "Worker"),
            cores: 2,
            memory: 1024,
            web_ui: String::new(),
            resources: Default::default(),
            spark: None,
        };
        let Record::Worker(done) = book.complete(Record::Worker(w.clone())) else {
            panic!("not a worker's record");
        };
        assert_eq!(
            done.spark, None,
            "no note of its endpoint: a sparkwire worker"
        );
        let json = crate::reference::master::recovery::encode_record(&Record::Worker(done))
            .expect("encodes");
        assert!(
            !String::from_utf8_lossy(&json).contains("spark"),
            "a sparkwire peer's record is as before: {}",
            String::from_utf8_lossy(&json)
        );
        let mut stored = Stored::default();
        crate::reference::master::recovery::decode_record(&mut stored, "worker_worker-1", &json)
            .expect("an old record reads");
        assert_eq!(stored.workers, vec![w]);
    }

    #[test]
    fn the_book_stays_bounded() {
        let mut book = SparkPeerBook::default();
        for i in 0..(MAX_BOOKED + 10) {
            book.note(&Addr::new("10.0.0.1", i as i32), "4.0.1", None);
        }
        assert_eq!(book.noted.len(), MAX_BOOKED);
        assert_eq!(book.noted_order.len(), MAX_BOOKED);
    }
}
