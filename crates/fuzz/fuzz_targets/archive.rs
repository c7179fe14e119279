//! Export archives (`kplane import`): the header, frames and records, to the end.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(mut r) = kplane_archive::Reader::open(data) {
        for _ in 0..10_000 {
            match r.next() {
                Ok(Some(_)) => {}
                _ => break,
            }
        }
    }
});
