use super::*;

#[test]
fn a_cause_the_message_already_shows_is_not_repeated() {
    let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
    let e = anyhow::Error::new(io).context("x.json: No such file");
    assert_eq!(one_line(&e), "x.json: No such file");
    let e = anyhow::anyhow!("inner").context("outer");
    assert_eq!(one_line(&e), "outer: inner");
}

#[test]
fn control_characters_are_escaped() {
    let e = anyhow::anyhow!("--pattern `\nx\t\u{1b}[31m`: bad");
    assert_eq!(one_line(&e), "--pattern `\\nx\\t\\u{1b}[31m`: bad");
}

#[test]
fn clap_reports_fold_into_one_line_naming_the_help_to_read() {
    for (rendered, expected) in [
        (
            "error: unexpected argument '-1' found\n\n  tip: to pass '-1' as a value, use '-- -1'\n\nUsage: lbsim run [OPTIONS] [FILE.toml]\n\nFor more information, try '--help'.\n",
            "unexpected argument '-1' found; tip: to pass '-1' as a value, use '-- -1' (see `lbsim run --help`)",
        ),
        (
            "error: the following required arguments were not provided:\n  --duration <D>\n\nUsage: lbsim pelt --pattern <PATTERN> --duration <D>\n\nFor more information, try '--help'.\n",
            "the following required arguments were not provided: --duration <D> (see `lbsim pelt --help`)",
        ),
        (
            "error: invalid value '99999999999999999999999' for '--seed <SEED>': number too large to fit in target type\n\nFor more information, try '--help'.\n",
            "invalid value '99999999999999999999999' for '--seed <SEED>': number too large to fit in target type",
        ),
    ] {
        assert_eq!(clap_one_line(rendered), expected);
    }
}
