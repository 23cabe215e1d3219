use super::*;

#[test]
fn reads_up_to_the_limit_and_refuses_one_byte_more() {
    let dir = std::env::temp_dir().join(format!("lbsim-kernel-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("f");
    std::fs::write(&path, b"12345").unwrap();
    assert_eq!(read_at_most(&path, 5).unwrap(), b"12345");
    assert!(matches!(
        read_at_most(&path, 4),
        Err(InputError::TooLarge { limit: 4 })
    ));
    assert!(matches!(
        read_at_most(&dir.join("missing"), 4),
        Err(InputError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(unix)]
#[test]
fn an_endless_device_is_refused_not_read_forever() {
    assert!(matches!(
        read_capped(Path::new("/dev/zero")),
        Err(InputError::TooLarge { .. })
    ));
}
