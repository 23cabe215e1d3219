//! libFuzzer target `scenario`: [`lbsim_fuzz::targets`]'s `scenario` (the stable driver runs the same).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = (lbsim_fuzz::target("scenario").expect("a target").run)(data);
});
