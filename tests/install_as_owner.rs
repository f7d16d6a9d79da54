//! `skillidx hermes install` run by root into another user's home writes with that user's
//! rights: a link the user left in the home (or swaps in while the install runs) cannot make
//! it write a file the user could not write, and what it makes belongs to the user. Runs the
//! command in a child process, since acting as another user changes the whole process.
//! Needs root (skipped otherwise).

mod common;
use common::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

const NOBODY: u32 = 65534;

fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn install(home: &std::path::Path) -> std::process::Output {
    bin()
        .args(["hermes", "install", "--home"])
        .arg(home)
        .output()
        .unwrap()
}

#[test]
fn root_installing_into_a_users_home_writes_as_that_user() {
    if !running_as_root() {
        eprintln!("SKIPPED: not root");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = t.path().join("home");
    std::fs::create_dir_all(home.join("skills")).unwrap();
    for p in [home.clone(), home.join("skills")] {
        std::os::unix::fs::chown(&p, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    // The user links config.yaml to a root-only file, and makes it their own link.
    let secret = t.path().join("root-only.yaml");
    std::fs::write(&secret, "model: root\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink(&secret, home.join("config.yaml")).unwrap();
    std::os::unix::fs::lchown(home.join("config.yaml"), Some(NOBODY), Some(NOBODY)).unwrap();
    let out = install(&home);
    assert!(!out.status.success());
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "model: root\n");
    // A root-only folder the user links the plugin folder to.
    std::fs::remove_file(home.join("config.yaml")).unwrap();
    let rootdir = t.path().join("root-only-dir");
    std::fs::create_dir(&rootdir).unwrap();
    std::fs::set_permissions(&rootdir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let _ = std::fs::remove_dir_all(home.join("plugins"));
    std::fs::create_dir(home.join("plugins")).unwrap();
    std::os::unix::fs::chown(home.join("plugins"), Some(NOBODY), Some(NOBODY)).unwrap();
    std::os::unix::fs::symlink(&rootdir, home.join("plugins/skill-retrieval")).unwrap();
    assert!(!install(&home).status.success());
    assert_eq!(std::fs::read_dir(&rootdir).unwrap().count(), 0);
    // A plain install: the user's own files.
    std::fs::remove_file(home.join("plugins/skill-retrieval")).unwrap();
    let out = install(&home);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let made = home.join("plugins/skill-retrieval/__init__.py");
    assert_eq!(std::fs::metadata(made).unwrap().uid(), NOBODY);
    assert_eq!(
        std::fs::metadata(home.join("config.yaml")).unwrap().uid(),
        NOBODY
    );
    // The user makes `work` the active profile and links it to a root-only folder that
    // holds a root-owned config.yaml.
    let rootprof = t.path().join("root-only-profile");
    std::fs::create_dir(&rootprof).unwrap();
    std::fs::write(rootprof.join("config.yaml"), "model: root\n").unwrap();
    std::fs::set_permissions(&rootprof, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::create_dir(home.join("profiles")).unwrap();
    std::os::unix::fs::chown(home.join("profiles"), Some(NOBODY), Some(NOBODY)).unwrap();
    std::os::unix::fs::symlink(&rootprof, home.join("profiles/work")).unwrap();
    std::os::unix::fs::lchown(home.join("profiles/work"), Some(NOBODY), Some(NOBODY)).unwrap();
    std::fs::write(home.join("active_profile"), "work\n").unwrap();
    assert!(!install(&home).status.success());
    assert_eq!(
        std::fs::read_to_string(rootprof.join("config.yaml")).unwrap(),
        "model: root\n"
    );
    assert_eq!(std::fs::read_dir(&rootprof).unwrap().count(), 1);
}
