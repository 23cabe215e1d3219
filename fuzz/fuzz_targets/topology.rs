//! libFuzzer target `topology`: [`lbsim_fuzz::targets`]'s `topology` (the stable driver runs the same).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = (lbsim_fuzz::target("topology").expect("a target").run)(data);
});
