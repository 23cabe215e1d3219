//! libFuzzer target `settings`: [`lbsim_fuzz::targets`]'s `settings` (the stable driver runs the same).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = (lbsim_fuzz::target("settings").expect("a target").run)(data);
});
