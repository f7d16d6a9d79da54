//! `skillidx hermes install/uninstall` never leave the agent's config.yaml half-written,
//! keep its mode and owner, and uninstall puts it back byte for byte.
// The kill-mid-write test needs the `failpoints` feature; without it its helpers are unused.
#![cfg_attr(not(feature = "failpoints"), allow(dead_code))]

mod common;
use common::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// A config with comments, odd spacing, no `plugins:` section and trailing blank lines: the
/// shapes a text edit is most likely to disturb.
const CONFIG: &str = "# my agent\nmodel:\n  provider: custom   # local\n  default: stub\n\nskills:\n  disabled: [a]\n\n\n";

fn hermes(home: &Path, action: &str, failpoints: Option<&str>) -> std::process::Output {
    let mut cmd = bin();
    cmd.args(["hermes", action, "--home"]).arg(home);
    match failpoints {
        Some(f) => cmd.env("SKILLIDX_FAILPOINTS", f),
        None => cmd.env_remove("SKILLIDX_FAILPOINTS"),
    };
    cmd.output().expect("run skillidx")
}

fn ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// (mode, uid, gid) of a file.
fn owner_and_mode(path: &Path) -> (u32, u32, u32) {
    let m = std::fs::metadata(path).expect("stat");
    (m.permissions().mode() & 0o7777, m.uid(), m.gid())
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[cfg(feature = "failpoints")]
#[test]
fn install_killed_before_the_rename_leaves_config_intact_and_uninstall_restores_it() {
    let h = Home::new();
    let config = h.path().join("config.yaml");
    std::fs::write(&config, CONFIG).unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o640)).unwrap();
    // As root, give the file another owner: the install must keep it.
    let (_, uid, _) = owner_and_mode(&config);
    if uid == 0 {
        std::os::unix::fs::chown(&config, Some(1234), Some(1234)).unwrap();
    }
    let before = owner_and_mode(&config);
    // The plugin files already in place (as a previous version left them): the first file
    // the install replaces is config.yaml itself.
    let plugin = h.path().join("plugins/skill-retrieval");
    std::fs::create_dir_all(&plugin).unwrap();
    for name in ["plugin.yaml", "__init__.py"] {
        std::fs::copy(
            repo().join("python/skillidx/hermes_plugin").join(name),
            plugin.join(name),
        )
        .unwrap();
    }

    let out = hermes(h.path(), "install", Some("replace-before-rename=abort"));
    assert!(
        !out.status.success() && out.status.code().is_none(),
        "the install was not killed at the fail point: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), CONFIG);
    assert_eq!(owner_and_mode(&config), before);

    // A normal install then works (and clears the killed one's temporary file).
    ok(&hermes(h.path(), "install", None));
    let enabled = std::fs::read_to_string(&config).unwrap();
    assert!(enabled.starts_with(CONFIG.trim_end()), "{enabled}");
    assert!(enabled.contains("- skill-retrieval"), "{enabled}");
    assert_eq!(owner_and_mode(&config), before, "mode or owner changed");
    assert_eq!(entries(h.path()), ["config.yaml", "plugins", "skills"]);

    // Uninstall: the file as it was, byte for byte, with its mode and owner.
    ok(&hermes(h.path(), "uninstall", None));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), CONFIG);
    assert_eq!(owner_and_mode(&config), before);
    assert!(!plugin.exists());
}

#[test]
fn install_into_a_home_without_config_and_back() {
    let h = Home::new();
    ok(&hermes(h.path(), "install", None));
    let config = h.path().join("config.yaml");
    assert!(std::fs::read_to_string(&config)
        .unwrap()
        .contains("- skill-retrieval"));
    ok(&hermes(h.path(), "uninstall", None));
    assert!(
        !config.exists(),
        "uninstall left a config.yaml install made"
    );
    assert_eq!(entries(h.path()), ["plugins", "skills"]);
}
