//! `reelfarm admin user password`: an operator gives a user a console sign-in.

use std::io::Write;
use std::process::{Output, Stdio};

use super::{admin, reelfarm, stdout_of};

/// `admin user password USER --email EMAIL` with `password` on standard input.
fn set_password(dir: &std::path::Path, user: &str, email: &str, password: &str) -> Output {
    let mut child = reelfarm(dir, 0)
        .args(["admin", "user", "password", user, "--email", email])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(format!("{password}\n").as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn stderr_of(out: &Output) -> String {
    assert!(!out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn an_operator_sets_a_console_password_read_from_standard_input() {
    let dir = tempfile::tempdir().unwrap();
    stdout_of(admin(dir.path(), 0, &["user", "create", "ann"]));
    stdout_of(admin(dir.path(), 0, &["user", "create", "bob"]));

    let out = set_password(dir.path(), "ann", " Ann@Example.COM ", "a long enough password");
    assert_eq!(stdout_of(out), "ann signs in to the console as ann@example.com");
    // Again, another password: replaced.
    stdout_of(set_password(dir.path(), "ann", "ann@example.com", "another long password"));

    assert!(stderr_of(&set_password(dir.path(), "bob", "ann@example.com", "bob's long password"))
        .contains("another user signs in as ann@example.com"));
    assert!(stderr_of(&set_password(dir.path(), "bob", "bob", "bob's long password")).contains("--email"));
    assert!(stderr_of(&set_password(dir.path(), "bob", "bob@example.com", "short")).contains("at least 10 characters"));
    assert!(
        stderr_of(&set_password(dir.path(), "carol", "carol@example.com", "carol's password")).contains("not found")
    );
}
