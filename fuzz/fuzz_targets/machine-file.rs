//! libFuzzer target `machine-file`: [`lbsim_fuzz::targets`]'s `machine-file` (the stable driver runs the same).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = (lbsim_fuzz::target("machine-file").expect("a target").run)(data);
});
