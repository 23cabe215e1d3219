//! libFuzzer target `host`: [`lbsim_fuzz::targets`]'s `host` (the stable driver runs the same).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = (lbsim_fuzz::target("host").expect("a target").run)(data);
});
