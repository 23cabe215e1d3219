use super::*;

#[test]
fn bits_follow_sd_flags_h_definition_order() {
    // sd_flags.h (v6.6-v6.12): the low nibble equals WF_EXEC/WF_FORK/WF_TTWU
    // shifted as fair.c relies on (`sd_flag = wake_flags & 0xF`).
    assert_eq!(SdFlag::BalanceNewidle.bit(), 0x1);
    assert_eq!(SdFlag::BalanceExec.bit(), 0x2);
    assert_eq!(SdFlag::BalanceFork.bit(), 0x4);
    assert_eq!(SdFlag::BalanceWake.bit(), 0x8);
    assert_eq!(SdFlag::Numa.bit(), 1 << 14);
    for (i, f) in SdFlag::ALL.iter().enumerate() {
        assert_eq!(*f as usize, i);
    }
}

#[test]
fn degenerate_groups_mask_is_everything_but_wake_affine() {
    let all = SdFlags::from_bits_truncate(u32::MAX);
    let mut expected = all;
    expected.remove(SdFlag::WakeAffine);
    assert_eq!(SdFlags::DEGENERATE_GROUPS_MASK, expected);
}

#[test]
fn display_and_names_use_definition_order() {
    let f = SdFlags::from_flags(&[
        SdFlag::PreferSibling,
        SdFlag::ShareLlc,
        SdFlag::BalanceNewidle,
    ]);
    assert_eq!(
        f.to_string(),
        "SD_BALANCE_NEWIDLE SD_SHARE_LLC SD_PREFER_SIBLING"
    );
    assert_eq!(
        f.names(),
        ["SD_BALANCE_NEWIDLE", "SD_SHARE_LLC", "SD_PREFER_SIBLING"]
    );
    assert_eq!(
        SdFlag::from_name("SD_SHARE_PKG_RESOURCES"),
        Some(SdFlag::ShareLlc)
    );
    assert_eq!(SdFlag::from_name("SD_NUMA"), Some(SdFlag::Numa));
    assert_eq!(SdFlag::from_name("SD_LOAD_BALANCE"), None);
}
