//! libFuzzer target `sim`: [`lbsim_fuzz::targets`]'s `sim` (the stable driver runs the same).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = (lbsim_fuzz::target("sim").expect("a target").run)(data);
});
