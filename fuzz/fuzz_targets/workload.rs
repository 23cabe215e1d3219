//! libFuzzer target `workload`: [`lbsim_fuzz::targets`]'s `workload` (the stable driver runs the same).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = (lbsim_fuzz::target("workload").expect("a target").run)(data);
});
