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
        let quote = format!(
            "SPEC §8.2, \"two correct decoders report the same path and offset for the same frame\", \
                \"The offset is the position of the offending item's first byte\"; decoder.json, \"{}\"",
            v.name
        );
        let at = format!("path {:?}, offset {}", v.path, v.offset);
        let requirement = match at.chars().count() <= 50 {
            true => format!("the master, closeReason agreed, closes for this vector with InvalidFields at {at}"),
            false => format!(
                "the master, closeReason agreed, closes for this vector with InvalidFields at the vector's \
                    path, offset {}",
                v.offset
            ),
        };
        cs.push(Case {
            id,
            level: Level::Must,
            targets: vec![Target::Master],
            quote,
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
        quote: "SPEC §8.2, \"two correct decoders report the same path and offset for the same \
            frame\", the offset \"the position of the offending item's first byte\""
            .into(),
        requirement: "the driver closes for each coarse InvalidFields vector of decoder.json at \
            the vector's path and offset"
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
