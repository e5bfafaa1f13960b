//! Traces: round trips, reading errors with line numbers, the sample traces and the
//! `sparkwire validate` command on them, and the files documenting rules and traces.

mod common;

use common::files::temp_dir;
use common::processes::run;
use common::scenarios::{launched_asked_about_and_killed, submitted};
use std::path::{Path, PathBuf};

use sparkwire::messages::{
    CoarseMessage, DeployMessage, ExecutorLossReason, ExecutorState, Payload, TaskState,
    ThreadStackTrace,
};
use sparkwire::validate::scenario::{msg, Scenario};
use sparkwire::validate::trace::{
    read_events, to_text, write_binary, AnyTraceError, AnyTraceReader, BinaryTraceReader,
    TraceErrorKind, TraceReader,
};
use sparkwire::validate::{
    Endpoint, Event, EventBody, OutsideFrame, OutsideStatus, Rule, TaskPayloads, Validator,
};
use sparkwire::wire::handshake::Role;
use sparkwire::wire::Reply;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn driver() -> Endpoint {
    Endpoint::new(Role::Driver, "app-1")
}

/// A legal flow touching most of the protocol.
fn legal_flow() -> Scenario {
    let mut s = Scenario::new();
    let w1 = s.worker("worker-1", "10.0.0.1", 4, 8192);
    let w2 = s.worker("worker-2", "10.0.0.2", 4, 8192);
    let app = s.app("app-1");
    s.launch_executor(&app, &w1, 0, 2, 2048);
    s.launch_executor(&app, &w2, 1, 2, 2048);
    let e0 = s.executor(&driver(), "0", 2);
    let e1 = s.executor(&driver(), "1", 2);
    for t in 0..4 {
        s.run_task(&e0, "0", 2 * t, 1);
        s.run_task(&e1, "1", 2 * t + 1, 1);
    }
    s.advance(15_000);
    s.up(&w1, msg::heartbeat("worker-1"));
    s.up(&w2, msg::heartbeat("worker-2"));
    // Executor 1 dies and is replaced on worker-2.
    s.close(&e1);
    let ask = s.ask_up(
        &w2,
        msg::executor_state_changed("app-1", 1, ExecutorState::Exited),
    );
    s.reply_down(&w2, ask, Reply::<DeployMessage>::Bool(true));
    s.down(&app, msg::executor_updated(1, ExecutorState::Exited, None));
    s.launch_executor(&app, &w2, 2, 2, 2048);
    let e2 = s.executor(&driver(), "2", 2);
    s.run_task(&e2, "2", 100, 1);
    // worker-1 is lost with executor 0.
    s.close(&w1);
    s.close(&e0);
    s.down(
        &app,
        msg::executor_updated(0, ExecutorState::Lost, Some("10.0.0.1")),
    );
    s.down(&app, msg::worker_removed("worker-1", "10.0.0.1"));
    // A driver in cluster mode, submitted, asked about and killed.
    let client = submitted(&mut s, "driver-1");
    launched_asked_about_and_killed(&mut s, &client, &w2, "worker-2", "driver-1");
    s.close(&client);
    // The application ends.
    s.down(&e2, msg::stop_executor());
    s.close(&e2);
    s.up(&app, msg::unregister_application("app-1"));
    s.down(&w2, msg::kill_executor("app-1", 2));
    s.down(&w2, msg::application_finished("app-1"));
    s.close(&app);
    s
}

/// The legal flow with violations added.
fn illegal_flow() -> Scenario {
    let mut s = legal_flow();
    let w3 = s.open(Endpoint::new(Role::Worker, "worker-3"), s.master.clone());
    s.up(&w3, msg::heartbeat("worker-3"));
    s.up(&w3, msg::register_worker("worker-3", "10.0.0.3", 2, 2048));
    s.down(&w3, msg::registered_worker(false));
    let app = s.app("app-2");
    s.down(&w3, msg::launch_executor("app-2", 0, 4, 1024));
    let e = s.executor(&Endpoint::new(Role::Driver, "app-2"), "0", 1);
    s.down(&e, msg::launch_task(1, 1));
    s.down(&e, msg::launch_task(2, 1));
    s.up(&e, msg::status_update("0", 1, TaskState::Finished, 1));
    s.up(&e, msg::status_update("0", 2, TaskState::Finished, 1));
    s.up(&e, msg::status_update("0", 3, TaskState::Finished, 1));
    s.up(&app, msg::unregister_application("app-2"));
    s
}

#[test]
fn traces_round_trip_every_kind_of_event() {
    let events = every_kind_of_event();
    let text = to_text(&events).expect("traces write");
    assert_eq!(text.lines().count(), events.len());
    let back = read_events(&text).expect("traces read back");
    assert_eq!(back, events);
}

/// The open events of `events` whose task payloads are Spark's.
fn spark_marked(events: &[Event]) -> Vec<u64> {
    events
        .iter()
        .filter(|e| {
            matches!(
                e.body,
                EventBody::Open {
                    tasks: TaskPayloads::Spark,
                    ..
                }
            )
        })
        .map(|e| e.conn)
        .collect()
}

#[test]
fn an_opens_task_payloads_are_written_only_when_spark_and_read_back() {
    let events = every_kind_of_event();
    let marked = spark_marked(&events);
    assert_eq!(marked.len(), 1, "the sample marks one connection");
    let text = to_text(&events).expect("writes");
    // The key is on the marked open alone, after `version`; every other line is as before.
    let with_key: Vec<&str> = text.lines().filter(|l| l.contains("\"tasks\"")).collect();
    assert_eq!(with_key.len(), 1, "{text}");
    assert!(
        with_key[0].starts_with("{\"time\":")
            && with_key[0].contains(&format!("\"conn\":{},\"event\":\"open\"", marked[0]))
            && with_key[0].ends_with(",\"version\":2,\"tasks\":\"spark\"}"),
        "{}",
        with_key[0]
    );
    assert_eq!(spark_marked(&read_events(&text).expect("reads")), marked);
    // The binary form: both opens read back as written, through either reader.
    let bytes = write_binary(&events).expect("writes");
    let back: Vec<Event> = BinaryTraceReader::new(bytes.as_slice())
        .collect::<Result<_, _>>()
        .expect("reads");
    assert_eq!(spark_marked(&back), marked);
    // An explicit "sparkwire" reads as the key's absence.
    let unmarked = with_key[0].replace("\"spark\"", "\"sparkwire\"");
    assert_eq!(
        read_events(&unmarked).expect("reads"),
        read_events(&with_key[0].replace(",\"tasks\":\"spark\"", "")).expect("reads")
    );
}

/// Every kind of event, the replies of every kind and `outside` frames with and without their
/// optional keys included.
fn every_kind_of_event() -> Vec<Event> {
    let mut s = legal_flow();
    // An executor connection whose task payloads are Spark's own (its open carries the marker).
    let spark = s.executor(&Endpoint::new(Role::Driver, "app-8"), "3", 1);
    s.set_tasks(&spark, TaskPayloads::Spark);
    let e = s.executor(&Endpoint::new(Role::Driver, "app-9"), "7", 1);
    let ask = s.ask_down(&e, msg::kill_task(1, "7"));
    s.reply_up(&e, ask, Reply::<CoarseMessage>::Int(-3));
    let thread = ThreadStackTrace::new(7, "t".into(), "BLOCKED".into(), vec!["a".into()]);
    s.reply_up(
        &e,
        ask + 1,
        Reply::<CoarseMessage>::ThreadDump(Some(thread)),
    );
    s.reply_up(&e, ask + 2, Reply::<CoarseMessage>::ThreadDump(None));
    s.reply_up(
        &e,
        ask + 3,
        Reply::<CoarseMessage>::Bytes(Payload::copy_from(&[0, 1, 255])),
    );
    let reason =
        ExecutorLossReason::executor_exited(137, false, "Command exited with code 137".into());
    s.reply_up(&e, ask + 4, Reply::<CoarseMessage>::LossReason(reason));
    s.fail_down::<CoarseMessage>(&e, ask + 5, "Duplicate executor ID: 7");
    let (from, to) = (
        Endpoint::new(Role::Executor, "7"),
        Endpoint::new(Role::Driver, "app-9"),
    );
    for (id, detail) in [(Some(u64::MAX), Some("bad frame: 3 bytes")), (None, None)] {
        let frame = OutsideFrame {
            transport: "RpcRequest".into(),
            id,
            endpoint: detail.map(|_| "endpoint-verifier".to_string()),
            class: detail.map(|_| {
                "org.apache.spark.rpc.netty.RpcEndpointVerifier$CheckExistence".to_string()
            }),
            status: if detail.is_some() {
                OutsideStatus::Undecoded
            } else {
                OutsideStatus::Outside
            },
            detail: detail.map(str::to_string),
            bytes: 191,
        };
        s.push(Event {
            time: s.now(),
            conn: e.conn,
            body: EventBody::Outside {
                from: from.clone(),
                to: to.clone(),
                frame,
            },
        });
    }
    s.into_events()
}

#[test]
fn binary_traces_round_trip_every_kind_of_event_and_convert_back_to_the_same_lines() {
    let events = every_kind_of_event();
    let bytes = write_binary(&events).expect("the binary form writes");
    let back: Result<Vec<_>, _> = BinaryTraceReader::new(bytes.as_slice()).collect();
    assert_eq!(back.as_ref(), Ok(&events));
    // JSON Lines → events → binary → events → JSON Lines gives the same text.
    let text = to_text(&events).expect("writes");
    let again = to_text(&back.expect("reads")).expect("writes");
    assert_eq!(again, text);
    // Either form is read by the reader that tells them apart.
    for input in [text.as_bytes(), bytes.as_slice()] {
        let read: Result<Vec<_>, _> = AnyTraceReader::new(input).collect();
        assert_eq!(read, Ok(events.clone()));
    }
    // The binary form carries the envelopes' wire bytes: it is smaller than the JSON.
    assert!(
        bytes.len() < text.len(),
        "{} vs {}",
        bytes.len(),
        text.len()
    );
}

#[test]
fn json_lines_read_through_the_detecting_reader_keep_their_line_errors() {
    let text = "\n{\"time\":0,\"conn\":1,\"event\":\"close\"}\n{\"time\":0}\n";
    let mut it = AnyTraceReader::new(text.as_bytes());
    assert!(!it.is_binary());
    assert!(matches!(it.next(), Some(Ok(_))));
    match it.next() {
        Some(Err(AnyTraceError::Lines(e))) => {
            assert_eq!(e.line, 3);
            assert_eq!(e.kind, TraceErrorKind::Missing("conn"));
            assert_eq!(e.to_string(), "line 3: missing field \"conn\"");
        }
        other => panic!("expected line 3's error, got {other:?}"),
    }
}

fn first_error(text: &str) -> (usize, TraceErrorKind) {
    match TraceReader::new(text.as_bytes()).find_map(Result::err) {
        Some(e) => (e.line, e.kind),
        None => panic!("no error in {text:?}"),
    }
}

#[test]
fn reading_errors_name_the_line_and_the_problem() {
    let good = r#"{"time":0,"conn":1,"event":"open","client":{"role":"worker","id":"w"},"server":{"role":"master","id":"m"},"version":2}"#;
    type Check = fn(&TraceErrorKind) -> bool;
    let cases: Vec<(&str, Check)> = vec![
        ("{not json", |k| matches!(k, TraceErrorKind::Json(_))),
        (r#"[1,2]"#, |k| {
            matches!(k, TraceErrorKind::Invalid { field: "event", .. })
        }),
        (r#"{"conn":1,"event":"close"}"#, |k| {
            *k == TraceErrorKind::Missing("time")
        }),
        (r#"{"time":-1,"conn":1,"event":"close"}"#, |k| {
            matches!(k, TraceErrorKind::Invalid { field: "time", .. })
        }),
        (r#"{"time":1,"conn":1,"event":"shout"}"#, |k| {
            matches!(k, TraceErrorKind::Invalid { field: "event", .. })
        }),
        (
            r#"{"time":1,"conn":2,"event":"open","client":{"role":"wizard","id":"w"},"server":{"role":"master","id":"m"},"version":2}"#,
            |k| {
                matches!(
                    k,
                    TraceErrorKind::Invalid {
                        field: "client",
                        ..
                    }
                )
            },
        ),
        (
            r#"{"time":1,"conn":2,"event":"open","client":{"role":"worker","id":"w"},"server":{"role":"master","id":"m"},"version":9}"#,
            |k| {
                matches!(
                    k,
                    TraceErrorKind::Invalid {
                        field: "version",
                        ..
                    }
                )
            },
        ),
        // An open's task payloads are spark's or sparkwire's, named by a string.
        (
            r#"{"time":1,"conn":2,"event":"open","client":{"role":"executor","id":"0"},"server":{"role":"driver","id":"d"},"version":2,"tasks":"scala"}"#,
            |k| {
                matches!(k, TraceErrorKind::Invalid { field: "tasks", problem }
                    if problem.contains("\"scala\"") && problem.contains("expected spark or sparkwire"))
            },
        ),
        (
            r#"{"time":1,"conn":2,"event":"open","client":{"role":"executor","id":"0"},"server":{"role":"driver","id":"d"},"version":2,"tasks":1}"#,
            |k| matches!(k, TraceErrorKind::Invalid { field: "tasks", .. }),
        ),
        (
            r#"{"time":1,"conn":1,"event":"send","from":{"role":"worker","id":"w"},"to":{"role":"master","id":"m"},"version":2,"message":{"NoSuchMessage":{}}}"#,
            |k| matches!(k, TraceErrorKind::Message(_)),
        ),
        (
            r#"{"time":1,"conn":1,"event":"send","from":{"role":"worker","id":"w"},"to":{"role":"master","id":"m"},"version":2,"message":{"Heartbeat":{"workerId":7}}}"#,
            |k| matches!(k, TraceErrorKind::Message(_)),
        ),
        (
            r#"{"time":1,"conn":1,"event":"ask","from":{"role":"worker","id":"w"},"to":{"role":"master","id":"m"},"version":2,"message":{"Heartbeat":{}}}"#,
            |k| *k == TraceErrorKind::Missing("id"),
        ),
        (
            r#"{"time":1,"conn":1,"event":"reply","id":1,"from":{"role":"master","id":"m"},"to":{"role":"worker","id":"w"},"version":2,"reply":{"bool":true,"int":1}}"#,
            |k| matches!(k, TraceErrorKind::Invalid { field: "reply", .. }),
        ),
        (
            r#"{"time":1,"conn":1,"event":"reply","id":1,"from":{"role":"master","id":"m"},"to":{"role":"worker","id":"w"},"version":2,"reply":{"bytes":"abc"}}"#,
            |k| matches!(k, TraceErrorKind::Invalid { field: "reply", .. }),
        ),
        (
            r#"{"time":1,"conn":1,"event":"failure","id":1,"from":{"role":"master","id":"m"},"to":{"role":"worker","id":"w"},"version":2,"error":"boom"}"#,
            |k| matches!(k, TraceErrorKind::Invalid { field: "error", .. }),
        ),
        // Structs written as JSON arrays are refused, as in MessagePack (SPEC.md §11.5): a
        // message's fields, a nested struct, a failure's error.
        (
            r#"{"time":1,"conn":1,"event":"send","from":{"role":"worker","id":"w"},"to":{"role":"master","id":"m"},"version":2,"message":{"Heartbeat":["w",{"address":null,"name":"Worker"}]}}"#,
            |k| matches!(k, TraceErrorKind::Message(_)),
        ),
        (
            r#"{"time":1,"conn":1,"event":"send","from":{"role":"worker","id":"w"},"to":{"role":"master","id":"m"},"version":2,"message":{"Heartbeat":{"workerId":"w","worker":[null,"Worker"]}}}"#,
            |k| matches!(k, TraceErrorKind::Message(_)),
        ),
        (
            r#"{"time":1,"conn":1,"event":"failure","id":1,"from":{"role":"master","id":"m"},"to":{"role":"worker","id":"w"},"version":2,"error":["java.lang.Exception","boom"]}"#,
            |k| matches!(k, TraceErrorKind::Invalid { field: "error", .. }),
        ),
    ];
    for (bad, check) in cases {
        let text = format!("{good}\n\n{bad}\n{good}\n");
        let (line, kind) = first_error(&text);
        assert_eq!(line, 3, "{bad}");
        assert!(check(&kind), "{bad}: {kind:?}");
    }
}

#[test]
fn reader_survives_mangled_traces_without_panicking() {
    let text = to_text(legal_flow().events()).expect("traces write");
    let bytes = text.as_bytes();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for round in 0..300 {
        let mut mangled = bytes.to_vec();
        for _ in 0..(1 + round % 5) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = (state % mangled.len() as u64) as usize;
            mangled[at] = (state >> 32) as u8;
        }
        let mut v = Validator::default();
        for e in TraceReader::new(&mangled[..]).flatten() {
            v.observe(&e);
        }
        v.finish();
    }
    let truncated = &bytes[..bytes.len() / 2];
    let results: Vec<_> = TraceReader::new(truncated).collect();
    assert!(results.iter().rev().skip(1).all(Result::is_ok));
}

#[test]
fn rules_md_lists_exactly_the_rules_of_the_enum() {
    let text =
        std::fs::read_to_string(root().join("protocol/rules.md")).expect("protocol/rules.md");
    let listed: Vec<(String, String, String)> = text
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l
                .strip_prefix('|')?
                .strip_suffix('|')?
                .split(" | ")
                .collect();
            match cells.as_slice() {
                [id, slug, rule] if slug.trim().starts_with('`') => Some((
                    id.trim().to_string(),
                    slug.trim().trim_matches('`').to_string(),
                    rule.trim().to_string(),
                )),
                _ => None,
            }
        })
        .collect();
    let expected: Vec<(String, String, String)> = Rule::ALL
        .iter()
        .map(|r| {
            (
                r.id().to_string(),
                r.slug().to_string(),
                r.text().to_string(),
            )
        })
        .collect();
    assert_eq!(listed, expected);
}

#[test]
fn rule_ids_and_slugs_are_unique_and_found() {
    for r in Rule::ALL {
        assert_eq!(Rule::find(r.id()), Some(*r));
        assert_eq!(Rule::find(r.slug()), Some(*r));
    }
    assert_eq!(Rule::find("Z9"), None);
}

#[test]
fn trace_md_examples_read() {
    let text =
        std::fs::read_to_string(root().join("protocol/trace.md")).expect("protocol/trace.md");
    let mut in_block = false;
    let mut lines = Vec::new();
    for l in text.lines() {
        if l.starts_with("```json") {
            in_block = true;
        } else if l.starts_with("```") {
            in_block = false;
        } else if in_block {
            lines.push(l);
        }
    }
    assert!(lines.len() >= 7);
    let events = read_events(&lines.join("\n")).expect("the examples read");
    let mut v = Validator::default();
    let rules: Vec<Rule> = events[2..]
        .iter()
        .flat_map(|e| v.observe(e))
        .map(|x| x.rule)
        .collect();
    assert_eq!(rules, [Rule::AskReplyPending]);
}

fn check_or_write(path: &Path, events: &[Event]) {
    let text = to_text(events).expect("traces write");
    if std::env::var_os("SPARKWIRE_WRITE_TRACES").is_some() {
        std::fs::write(path, &text).expect("sample trace written");
    }
    let current = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        current == text,
        "{} is stale; regenerate with SPARKWIRE_WRITE_TRACES=1 cargo test --test validate_trace",
        path.display()
    );
}

#[test]
fn sample_traces_are_current() {
    let dir = root().join("protocol/traces");
    check_or_write(&dir.join("legal-flow.jsonl"), legal_flow().events());
    check_or_write(&dir.join("illegal-flow.jsonl"), illegal_flow().events());
}

#[test]
fn validate_command_accepts_the_legal_sample_and_rejects_the_illegal_one() {
    let dir = root().join("protocol/traces");
    let legal = dir.join("legal-flow.jsonl");
    let (code, text) = run(&["validate", legal.to_str().expect("utf-8 path")]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("no violations"), "{text}");
    let (code, _) = run(&[
        "validate",
        "--strict-order",
        legal.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(code, 0);

    let illegal = dir.join("illegal-flow.jsonl");
    let (code, text) = run(&["validate", illegal.to_str().expect("utf-8 path")]);
    assert_eq!(code, 1, "{text}");
    for rule in [
        Rule::WorkerRegisterFirst,
        Rule::WorkerCapacity,
        Rule::TaskSlots,
        Rule::TaskKnown,
    ] {
        assert!(
            text.contains(&rule.to_string()),
            "{rule} missing from:\n{text}"
        );
    }
    assert!(text.contains("violation(s):"), "{text}");
}

#[test]
fn validate_command_exits_2_on_unreadable_input() {
    let dir = std::env::temp_dir().join(format!("sparkwire-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"time\":0}\n").expect("written");
    let (code, text) = run(&["validate", bad.to_str().expect("utf-8 path")]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("line 1"), "{text}");
    let (code, _) = run(&[
        "validate",
        dir.join("absent.jsonl").to_str().expect("utf-8 path"),
    ]);
    assert_eq!(code, 2);
    let _ = std::fs::remove_dir_all(&dir);
}

fn utf8(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn trace_convert_writes_binary_that_validates_alike_and_converts_back_to_the_same_text() {
    let dir = temp_dir("convert");
    let samples = root().join("protocol/traces");
    for (name, want_code) in [("legal-flow", 0), ("illegal-flow", 1)] {
        let json = samples.join(format!("{name}.jsonl"));
        let binary = dir.join(format!("{name}.swtrace"));
        let back = dir.join(format!("{name}.jsonl"));
        let (code, text) = run(&["trace", "convert", utf8(&json), utf8(&binary)]);
        assert_eq!(code, 0, "{text}");
        let bytes = std::fs::read(&binary).expect("written");
        assert_eq!(
            &bytes[..8],
            b"\xc1SWTRACE",
            "the extension selects the binary form"
        );
        let (code, text) = run(&["trace", "convert", utf8(&binary), utf8(&back)]);
        assert_eq!(code, 0, "{text}");
        assert_eq!(
            std::fs::read_to_string(&back).expect("written"),
            std::fs::read_to_string(&json).expect("the sample"),
        );
        // --format overrides the extension.
        let forced = dir.join(format!("{name}.bin"));
        let (code, text) = run(&[
            "trace",
            "convert",
            "--format",
            "binary",
            utf8(&json),
            utf8(&forced),
        ]);
        assert_eq!(code, 0, "{text}");
        assert_eq!(std::fs::read(&forced).expect("written"), bytes);
        // `validate` reads the binary form and says exactly what it says of the JSON.
        let (json_code, json_out) = run(&["validate", utf8(&json)]);
        let (bin_code, bin_out) = run(&["validate", utf8(&binary)]);
        assert_eq!((json_code, bin_code), (want_code, want_code), "{bin_out}");
        assert_eq!(bin_out, json_out);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// An executor running a task launched as a real Spark driver launches it, its connection
/// marked (or not) as carrying Spark's task payloads.
fn spark_task_trace(tasks: TaskPayloads) -> String {
    let mut s = Scenario::new();
    let e = s.executor(&Endpoint::new(Role::Driver, "10.0.0.1:7078"), "0", 2);
    s.set_tasks(&e, tasks);
    s.down(&e, msg::spark_launch_task(0, "0"));
    s.up(&e, msg::status_update("0", 0, TaskState::Running, 1));
    s.up(&e, msg::status_update("0", 0, TaskState::Finished, 1));
    to_text(s.events()).expect("writes")
}

#[test]
fn validate_needs_no_flag_for_a_trace_marked_spark_and_convert_keeps_the_mark() {
    let dir = temp_dir("spark-tasks");
    let marked = dir.join("marked.jsonl");
    std::fs::write(&marked, spark_task_trace(TaskPayloads::Spark)).expect("written");
    let unmarked = dir.join("unmarked.jsonl");
    std::fs::write(&unmarked, spark_task_trace(TaskPayloads::Sparkwire)).expect("written");
    let (code, text) = run(&["validate", utf8(&marked)]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("no violations"), "{text}");
    // The same events unmarked need the flag, as before.
    let (code, text) = run(&["validate", utf8(&unmarked)]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains(&Rule::TaskDecodable.to_string()), "{text}");
    let (code, text) = run(&["validate", "--opaque-tasks", utf8(&unmarked)]);
    assert_eq!(code, 0, "{text}");
    // Converted to the binary form and back, the mark stays: the binary trace validates alike
    // and the text comes back the same.
    let binary = dir.join("marked.swtrace");
    let back = dir.join("back.jsonl");
    let (code, text) = run(&["trace", "convert", utf8(&marked), utf8(&binary)]);
    assert_eq!(code, 0, "{text}");
    let (code, text) = run(&["validate", utf8(&binary)]);
    assert_eq!(code, 0, "{text}");
    let (code, text) = run(&["trace", "convert", utf8(&binary), utf8(&back)]);
    assert_eq!(code, 0, "{text}");
    let again = std::fs::read_to_string(&back).expect("written");
    assert!(again.contains("\"tasks\":\"spark\""), "{again}");
    assert_eq!(again, std::fs::read_to_string(&marked).expect("written"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn validate_command_names_the_record_and_offset_of_a_bad_binary_trace() {
    let dir = temp_dir("bad-binary");
    let events = read_events(
        &std::fs::read_to_string(root().join("protocol/traces/legal-flow.jsonl")).expect("sample"),
    )
    .expect("reads");
    let whole = write_binary(&events[..3]).expect("writes");
    let two = write_binary(&events[..2]).expect("writes").len();
    let cut = dir.join("cut.swtrace");
    std::fs::write(&cut, &whole[..whole.len() - 1]).expect("written");
    let (code, text) = run(&["validate", utf8(&cut)]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains(&format!("record 3 at byte {two}: truncated")),
        "{text}"
    );
    // A huge length is refused at once; an unknown format version is named.
    let mut huge = whole[..two].to_vec();
    huge.extend_from_slice(&[0xff; 4]);
    std::fs::write(&cut, &huge).expect("written");
    let (code, text) = run(&["validate", utf8(&cut)]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("record 3") && text.contains("longer than the limit"),
        "{text}"
    );
    let mut future = whole.clone();
    future[11] = 9;
    std::fs::write(&cut, &future).expect("written");
    let (code, text) = run(&["validate", utf8(&cut)]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("record 0 at byte 0: bad header") && text.contains("version 9"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
