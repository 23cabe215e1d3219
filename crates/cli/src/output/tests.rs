use super::*;

/// A fresh, empty directory for one test.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lbsim-output-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The names in `d`, sorted.
fn names(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_finished_file_appears_whole_and_no_temporary_is_left() {
    let d = dir("whole");
    let path = d.join("out.txt");
    let out = OutputFile::new("--trace", &path, false).unwrap();
    out.write(|w| w.write_all(b"all of it\n")).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"all of it\n");
    assert_eq!(names(&d), ["out.txt"]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_write_failing_midway_leaves_neither_target_nor_temporary() {
    let d = dir("midway");
    let path = d.join("out.txt");
    let out = OutputFile::new("--trace", &path, false).unwrap();
    let e = out
        .write(|w| {
            w.write_all(&[b'x'; 100_000])?;
            Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"))
        })
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "--trace {}: writing the file failed (disk full); nothing was written",
            path.display()
        )
    );
    assert!(names(&d).is_empty(), "{:?}", names(&d));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_existing_file_is_kept_unless_forced() {
    let d = dir("existing");
    let path = d.join("mine.txt");
    std::fs::write(&path, b"the user's").unwrap();
    let e = OutputFile::new("--trace", &path, false).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "--trace {}: the file exists; pass --force to overwrite it",
            path.display()
        )
    );
    // A file that appears between the check and the end of the write is kept too.
    let late = d.join("late.txt");
    let out = OutputFile::new("--trace", &late, false).unwrap();
    std::fs::write(&late, b"appeared").unwrap();
    let e = out.write(|w| w.write_all(b"new")).unwrap_err();
    assert!(e.to_string().contains("pass --force"), "{e}");
    assert_eq!(std::fs::read(&late).unwrap(), b"appeared");
    // Forced, both are replaced whole.
    for p in [&path, &late] {
        OutputFile::new("--trace", p, true)
            .unwrap()
            .write(|w| w.write_all(b"new"))
            .unwrap();
        assert_eq!(std::fs::read(p).unwrap(), b"new");
    }
    assert_eq!(names(&d), ["late.txt", "mine.txt"]);
    // A forced write that fails leaves the old file as it was.
    OutputFile::new("--trace", &path, true)
        .unwrap()
        .write(|_| Err(io::Error::other("producer failed")))
        .unwrap_err();
    assert_eq!(std::fs::read(&path).unwrap(), b"new");
    assert_eq!(names(&d), ["late.txt", "mine.txt"]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_missing_directory_or_a_directory_target_is_refused_first() {
    let d = dir("dirs");
    let e = OutputFile::new("--trace", &d.join("no/such/t.txt"), false).unwrap_err();
    assert!(e.to_string().ends_with("no/such does not exist"), "{e}");
    let e = OutputFile::new("--trace", &d, true).unwrap_err();
    assert!(e.to_string().ends_with("is a directory, not a file"), "{e}");
    std::fs::remove_dir_all(&d).unwrap();
}
