//! Protobuf request bodies (`application/vnd.kubernetes.protobuf`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = kplane_protobuf::decode(data);
});
