//! `spec/8.2/…`: SPEC §8.2 (protocol/SPEC.md).

use crate::harness::case::run;
use crate::harness::case::Case;
use crate::harness::case::Target;
use crate::harness::env::Ctx;
use crate::harness::verdict::check;
use crate::harness::verdict::fail;
use crate::harness::verdict::Failure;
use crate::harness::verdict::Level;
use crate::harness::verdict::Outcome;
use crate::kit::common::offering_close_reason;
use crate::kit::replay::slug;
use crate::kit::server::close_envelope;
use crate::kit::support::open_points::*;
use sparkwire::wire::decode_envelope;
use sparkwire::wire::handshake::Role;
use std::time::Duration;

type C = sparkwire::messages::CoarseMessage;

/// The cases of this section, each naming its targets.
pub fn cases(cs: &mut Vec<Case>) {
    for v in located() {
        let id = format!("spec/8.2/location/{}", slug(&v.name));
        let requirement = format!(
            "SPEC §8.2, \"They do not depend on how a decoder reads ...: two correct decoders report the same path and \
                offset for the same frame\", \"The offset is the position of the offending item's first byte\", and \
                    the path grammar: the master, on a connection that agreed on closeReason, refuses the decoder.json \
                        vector \"{}\" with a close envelope of kind InvalidFields, path {:?} and offset {}",
            v.name, v.path, v.offset
        );
        cs.push(Case {
            id,
            level: Level::Must,
            targets: vec![Target::Master],
            requirement,
            body: run(move |ctx: Ctx| {
                let v = v.clone();
                async move { location(ctx, v).await }
            }),
            ..Case::default()
        });
    }
    cs.push(Case {
        id: "spec/8.2/location/driver".into(),
        level: Level::Must,
        targets: vec![Target::Driver],
        timeout: Duration::from_secs(15),
        requirement: "SPEC §8.2, \"two correct decoders report the same path and offset for the \
            same frame\", the offset \"the position of the offending item's first byte\", the path \
            grammar (a union's variant adds no step, indexes in brackets, integer keys unquoted) \
            and the offending item of each fault (a union's map, its name, a tuple, a set's \
            element): the driver, on its executor port, on connections that agreed on closeReason, \
            refuses each decoder.json InvalidFields vector of the coarse family (and the \
            family-free ones) with a close envelope of kind InvalidFields at the vector's path and \
            offset"
            .into(),
        body: run(driver_locations),
        ..Case::default()
    });
}

async fn driver_locations(ctx: Ctx) -> Outcome {
    let d = crate::kit::driver::registered(&ctx, crate::kit::driver::SMALL).await?;
    let vectors = located_in(|body, version| decode_envelope::<C>(body, version).err());
    for v in vectors {
        let version = *v.versions.last().ok_or_else(|| fail("a version", "none"))?;
        let (mut c, taken) = offering_close_reason(
            &ctx,
            d.driver_addr,
            "executor",
            &[version],
            Role::Executor,
            "1",
        )
        .await?;
        if !taken {
            return Err(Failure::Skipped(
                "the driver does not take closeReason (optional, handshake.md §12)".into(),
            ));
        }
        c.send_raw(&v.frame, &format!("the decoder.json vector \"{}\"", v.name))
            .await?;
        let want = format!(
            "for \"{}\": a close envelope of kind InvalidFields, path {:?}, offset {}",
            v.name, v.path, v.offset
        );
        let r = close_envelope(&ctx, &mut c, &want).await?;
        check(
            r.kind == "InvalidFields"
                && r.path.as_deref() == Some(v.path.as_str())
                && r.offset == Some(v.offset),
            want,
            format!("kind {}, path {:?}, offset {:?}", r.kind, r.path, r.offset),
        )?;
    }
    Ok(())
}
