//! libFuzzer target `cost-profile`: [`lbsim_fuzz::targets`]'s `cost-profile` (the stable driver runs the same).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = (lbsim_fuzz::target("cost-profile").expect("a target").run)(data);
});
