use super::*;

#[test]
fn a_closed_pipe_is_quiet_and_other_failures_name_standard_output() {
    assert!(finish(Ok(())).is_ok());
    assert!(finish(Err(io::Error::from(io::ErrorKind::BrokenPipe))).is_ok());
    let e = finish(Err(io::Error::other("disk on fire"))).unwrap_err();
    assert_eq!(
        e.to_string(),
        "writing standard output failed: disk on fire"
    );
}
