//! `handshake/8/…`: protocol/handshake.md §8.

use crate::harness::case::bind;
use crate::harness::case::Case;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::mp;
use crate::harness::peer::frame;
use crate::harness::verdict::Level;
use crate::kit::endpoint::Endpoint;
use crate::kit::support::client::*;

/// The cases of this section for the connecting endpoint `s` (a worker, a driver's application
/// client, an executor).
pub fn for_client(cs: &mut Vec<Case>, s: Endpoint) {
    let name = s.name;
    cs.push(Case {
        id: "handshake/8/bad-magic".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!(
            "{name} closes the connection when the answer's magic is not \"sparkwire\""
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            closes(ctx, s.clone(), |h| {
                let mut e = accepted_entries(best(h), s.suite_role.name());
                e[0].1 = mp::s("sparkfire");
                frame(&mp::map(&e))
            })
            .await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/8/not-msgpack".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!("{name} closes the connection when the answer is not MessagePack"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            closes(ctx, s, |_| frame(&[0xc1, 0xc1])).await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/8/version-and-refused".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!(
            "{name} closes the connection when the answer has both `version` and `refused`"
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            closes(ctx, s.clone(), |h| {
                let mut e = accepted_entries(best(h), s.suite_role.name());
                e.push(("refused", mp::s("badMagic")));
                frame(&mp::map(&e))
            })
            .await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/8/missing-role".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!("{name} closes the connection when an acceptance has no `role`"),
        body: bind(&s, move |ctx: Ctx, s| async move {
            closes(ctx, s.clone(), |h| {
                let mut e = accepted_entries(best(h), s.suite_role.name());
                e.remove(3);
                frame(&mp::map(&e))
            })
            .await
        }),
        ..Case::default()
    });
    cs.push(Case {
        id: "handshake/8/oversized-answer".into(),
        level: Level::Must,
        targets: vec![Target::Worker, Target::Driver, Target::Executor],
        requirement: format!(
            "{name} closes the connection when the answer's prefix declares more than 65536 bytes"
        ),
        body: bind(&s, move |ctx: Ctx, s| async move {
            closes(ctx, s, |_| 65537u32.to_be_bytes().to_vec()).await
        }),
        ..Case::default()
    });
}
