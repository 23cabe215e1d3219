//! libFuzzer target `rtapp`: [`lbsim_fuzz::targets`]'s `rtapp` (the stable driver runs the same).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = (lbsim_fuzz::target("rtapp").expect("a target").run)(data);
});
