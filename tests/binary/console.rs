//! `reelfarm admin user …`: an operator gives users a console sign-in (password, one-time
//! link) and makes operators.

use std::io::Write;
use std::process::{Output, Stdio};

use super::{admin, reelfarm, stdout_of};
use reelfarm_backends::store::{AccountStore, UserStore};

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
        .contains("email: is the address of another user"));
    assert!(stderr_of(&set_password(dir.path(), "bob", "bob", "bob's long password"))
        .contains("email: is not an e-mail address"));
    assert!(stderr_of(&set_password(dir.path(), "bob", "bob@example.com", "short")).contains("at least 10 characters"));
    assert!(
        stderr_of(&set_password(dir.path(), "carol", "carol@example.com", "carol's password")).contains("not found")
    );
}

/// The store of a data directory's embedded SQLite database, for a look at what the
/// commands did.
pub(super) fn with_store<T>(dir: &std::path::Path, check: impl AsyncFnOnce(reelfarm_backends::Store) -> T) -> T {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let url = format!("sqlite://{}", dir.join("reelfarm.db").display());
        check(reelfarm_backends::Store::connect(&url).await.unwrap()).await
    })
}

/// The token of a printed sign-in link.
fn link_token(printed: &str) -> String {
    let (_, token) = printed.rsplit_once("/console/sign-in/link/").expect("a sign-in link");
    token.trim().to_string()
}

#[test]
fn an_operator_makes_users_with_sign_in_links_and_operators() {
    let dir = tempfile::tempdir().unwrap();
    let printed = stdout_of(admin(
        dir.path(),
        0,
        &["user", "create", "olga", "--email", "Olga@Example.com", "--operator", "--sign-in-link"],
    ));
    let (id, link) = printed.split_once('\n').expect("the id, then the link");
    assert!(link.starts_with("http://127.0.0.1:0/console/sign-in/link/"), "{printed}");
    let again = stdout_of(admin(dir.path(), 0, &["user", "link", "olga", "--hours", "2"]));
    let out = admin(dir.path(), 0, &["user", "create", "twin", "--email", "olga@example.com"]);
    assert!(stderr_of(&out).contains("email: is the address of another user"), "{out:?}");
    assert!(stderr_of(&admin(dir.path(), 0, &["user", "link", "olga", "--hours", "0"])).contains("--hours"));
    assert_eq!(
        stdout_of(admin(dir.path(), 0, &["user", "operator", "olga", "--off"])),
        "olga is no longer an operator"
    );
    assert_eq!(stdout_of(admin(dir.path(), 0, &["user", "operator", "olga"])), "olga is an operator");

    with_store(dir.path(), async |store| {
        for link in [link_token(link), link_token(&again)] {
            let user = store.use_sign_in_link(&link).await.unwrap().expect("the link signs olga in");
            assert_eq!((user.id.as_str(), user.operator), (id, true));
            assert_eq!(store.use_sign_in_link(&link).await.unwrap(), None, "once");
        }
        assert_eq!(
            store.email_of(&store.find_user("olga").await.unwrap().id).await.unwrap().as_deref(),
            Some("olga@example.com")
        );
        assert!(store.find_user("twin").await.is_err(), "nothing made for a refused command");
    });
}
