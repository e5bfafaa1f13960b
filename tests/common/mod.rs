//! Helpers shared by the integration tests.
#![allow(dead_code)]

#[cfg(feature = "arbitrary")]
use arbitrary::{Arbitrary, Unstructured};
#[cfg(feature = "arbitrary")]
use sparkwire::messages::Family;

/// A small deterministic generator (xorshift64*), so failures reproduce from the seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

#[cfg(feature = "arbitrary")]
/// Random messages of family `F` until every message name has at least `per_name` samples.
pub fn samples_of_every_message<F>(seed: u64, per_name: usize) -> Vec<F>
where
    F: Family + for<'a> Arbitrary<'a>,
{
    let mut rng = Rng::new(seed);
    let mut counts = std::collections::BTreeMap::<&'static str, usize>::new();
    let mut out = Vec::new();
    for _ in 0..200_000 {
        let data = rng.bytes(600);
        let mut u = Unstructured::new(&data);
        if let Ok(m) = F::arbitrary(&mut u) {
            let c = counts.entry(m.name()).or_insert(0);
            if *c < per_name {
                *c += 1;
                out.push(m);
            }
        }
        if counts.len() == F::NAMES.len() && counts.values().all(|c| *c >= per_name) {
            return out;
        }
    }
    panic!("arbitrary did not produce every message: got {counts:?}");
}
