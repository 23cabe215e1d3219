//! libFuzzer target `trace`: [`lbsim_fuzz::targets`]'s `trace` (the stable driver runs the same).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = (lbsim_fuzz::target("trace").expect("a target").run)(data);
});
