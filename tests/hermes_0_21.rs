//! The 0.21 rule home: `skillidx offered --hermes-version 0.21.3` equals what Hermes 0.21.3
//! lists in `<available_skills>`, in five sessions (no platform, telegram, inside a trusted
//! project, inside an untrusted one, telegram inside the trusted project).
//!
//! Hermes 0.21.3 is not on a package registry and needs Python 3.14, so it cannot run here.
//! Each expected set was derived by reading its code, never by running skillidx, and each
//! expectation names the function that produces it. Sources (NousResearch/hermes-agent):
//! `agent/prompt_builder.py` at 00067189 (the 0.21.3 release commit itself); `agent/
//! skill_utils.py` and `tools/skills_guard.py` from the stored version that fits that
//! `prompt_builder` (the one whose `extract_skill_conditions` returns `session_platforms`,
//! with `ESSENTIAL_SKILLS`, `parse_config_string_list` and `get_skill_create_dir`).
//!
//! The sessions are what `build_skills_system_prompt(available_tools=None,
//! available_toolsets=None)` lists: no tool information, so no tool condition hides anything
//! (`_skill_should_show`), with the platform Hermes reads from `HERMES_PLATFORM`
//! (`_current_session_platform_hint`) and the working directory the project is found from
//! (`skill_utils.find_project_root`: `TERMINAL_CWD`, else the process's). The home holds no
//! `environments` or OS-bound skill, so neither the machine running the test nor its
//! environment can change the answer.
//!
//! If skillidx disagrees with an expectation here, the test fails on it: the expectation is
//! Hermes' and is not to be adjusted to skillidx.

mod common;
use common::*;
use std::path::{Path, PathBuf};

/// The rule home and the folders its sessions run in.
struct RuleHome {
    home: Home,
    /// A git repository listed in `skills.trusted_project_dirs`.
    trusted: PathBuf,
    /// A git repository with skills, not listed.
    untrusted: PathBuf,
    /// A folder in no git repository.
    outside: PathBuf,
    _dirs: tempfile::TempDir,
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A SKILL.md in the folder `dir` (its frontmatter `name:` line written as given, so that
/// `name: ''` can be written too), with `extra` frontmatter lines.
fn skill_at(dir: &Path, name_line: &str, extra: &str) {
    write(
        &dir.join("SKILL.md"),
        &format!("---\n{name_line}\ndescription: a skill of the rule home\n{extra}---\n# Skill\n\nBody.\n"),
    );
}

fn named(name: &str) -> String {
    format!("name: {name}")
}

fn git_init(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let out = std::process::Command::new("git")
        .args(["init", "-q"])
        .arg(dir)
        .output()
        .expect("git");
    assert!(out.status.success(), "git init {}", dir.display());
}

/// A home with every 0.21 offer rule of issue 25, plus ordinary skills for contrast:
///
/// - `skills/`: ordinary skills; `gone` (disabled); `hermes-agent` (disabled everywhere and
///   on telegram); `no-name` (`name: ''`); `tg-off` (disabled on telegram); `tg-only` and
///   `discord-only` (`metadata.hermes.session_platforms`); `shared`, `chatty`, `guarded`
///   (names a trusted project skill also has); `orgskill` (a name an org skill also has);
/// - `skills/_org/`: the active org `acme` (`deploy`, `orgskill`) and a stale org `old`;
/// - `skills.create_dir: made`: `created-skill`, `dup-ext` (also external), `plain` (also
///   local);
/// - one external dir: `ext-only`, `plain` and `dup-ext` (names taken earlier), `ext-off`
///   (disabled), and `blank-ext` with `name: ''`;
/// - a trusted project (`.hermes/skills` and `.agents/skills`) with skills shadowing local,
///   org and external ones, one quarantined, one for discord only, one name in both folders;
/// - an untrusted project whose skills would shadow local ones.
///
/// `disabled` and `platform_disabled.telegram` are written as strings holding a list.
fn rule_home() -> RuleHome {
    let home = Home::new();
    for (rel, name) in [
        ("tools/plain", "plain"),
        ("tools/gone", "gone"),
        ("tools/tg-off", "tg-off"),
        ("tools/shared", "shared"),
        ("tools/chatty", "chatty"),
        ("tools/guarded", "guarded"),
        ("tools/orgskill", "orgskill"),
        ("ops/hermes-agent", "hermes-agent"),
        ("_org/acme/tools/deploy", "deploy"),
        ("_org/acme/tools/orgskill", "orgskill"),
        ("_org/old/tools/stale", "stale"),
    ] {
        home.skill(rel, name, "a skill of the rule home");
    }
    let skills = home.path().join("skills");
    skill_at(&skills.join("tools/no-name"), "name: ''", "");
    skill_at(
        &skills.join("chat/tg-only"),
        &named("tg-only"),
        "metadata:\n  hermes:\n    session_platforms: [' Telegram ']\n",
    );
    skill_at(
        &skills.join("chat/discord-only"),
        &named("discord-only"),
        "metadata:\n  hermes:\n    session_platforms: [Discord]\n",
    );
    write(&skills.join("_org/.active_org"), "acme\n");

    let made = home.path().join("made");
    for name in ["created-skill", "dup-ext", "plain"] {
        skill_at(&made.join("general").join(name), &named(name), "");
    }

    let dirs = tempfile::tempdir().unwrap();
    let ext = dirs.path().join("ext");
    for name in ["ext-only", "plain", "dup-ext", "ext-off"] {
        skill_at(&ext.join("devops").join(name), &named(name), "");
    }
    skill_at(&ext.join("devops/blank-ext"), "name: ''", "");

    let trusted = dirs.path().join("trusted");
    git_init(&trusted);
    std::fs::create_dir_all(trusted.join("src/deep")).unwrap();
    let hermes_dir = trusted.join(".hermes/skills");
    let agents_dir = trusted.join(".agents/skills");
    let project = [
        (hermes_dir.join("dev/shared"), "shared", ""),
        (hermes_dir.join("dev/proj-only"), "proj-only", ""),
        (
            hermes_dir.join("dev/chatty"),
            "chatty",
            "metadata:\n  hermes:\n    session_platforms: [discord]\n",
        ),
        (hermes_dir.join("dev/guarded"), "guarded", ""),
        (agents_dir.join("x/proj-only"), "proj-only", ""),
        (agents_dir.join("x/agents-only"), "agents-only", ""),
        (agents_dir.join("x/deploy"), "deploy", ""),
        (agents_dir.join("x/ext-only"), "ext-only", ""),
    ];
    for (dir, name, extra) in &project {
        skill_at(dir, &named(name), extra);
    }
    write(&hermes_dir.join("dev/guarded/tool.exe"), "MZ not really\n");
    for (dir, name, _) in &project {
        let verdict = if *name == "guarded" {
            "dangerous"
        } else {
            "safe"
        };
        record_verdict(home.path(), dir, verdict);
    }

    let untrusted = dirs.path().join("untrusted");
    git_init(&untrusted);
    skill_at(
        &untrusted.join(".hermes/skills/dev/shared"),
        &named("shared"),
        "",
    );
    skill_at(
        &untrusted.join(".agents/skills/u/untrusted-only"),
        &named("untrusted-only"),
        "",
    );

    let outside = dirs.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();

    home.config(&format!(
        "skills:\n  disabled: \"['gone', 'hermes-agent', 'ext-off']\"\n  platform_disabled:\n    \
         telegram: \"['tg-off', 'hermes-agent']\"\n  create_dir: made\n  external_dirs: ['{}']\n  \
         project_discovery: true\n  trusted_project_dirs: ['{}']\n",
        ext.display(),
        trusted.display()
    ));
    RuleHome {
        home,
        trusted,
        untrusted,
        outside,
        _dirs: dirs,
    }
}

/// What `skillidx offered --hermes-version 0.21.3` lists in the session at `cwd` on
/// `platform` (`""`: none), after a sync.
fn offered(h: &RuleHome, cwd: &Path, platform: &str) -> Vec<(String, String)> {
    offered_as_0_21(&h.home, cwd, platform)
}

fn pairs(xs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = xs
        .iter()
        .map(|(c, n)| (c.to_string(), n.to_string()))
        .collect();
    v.sort();
    v
}

// Rules every expectation below shares (agent/prompt_builder.py at 00067189):
//
// - `_build_skills_system_prompt_inner` lists the local skills (`iter_skill_index_files` of
//   `skills/`, each made an entry by `_build_snapshot_entry`: category = the folders between
//   the root and the skill folder), keeping those `hides` passes: hidden when the entry's
//   name (`_entry_name`: the frontmatter name, or the folder name when that is empty) or its
//   folder name is in `get_disabled_skill_names(platform)`, or `_skill_should_show` says no.
// - Then the trusted project folders (`_collect_extra_skills` with `project_names` as the
//   claimed set), then the local entries whose name no project skill claimed
//   (`_label_visible_entries`), then `create_dir` and the external dirs
//   (`build_skills_system_prompt`: `get_all_skills_dirs()[1:]`), each skill skipped when any
//   category already lists its name (`seen_skill_names`).
// - `_render_skills_index` lists categories and names sorted, one line per name in a category.

#[test]
fn no_platform_outside_any_project() {
    let h = rule_home();
    let got = offered(&h, &h.outside, "");
    let want = pairs(&[
        // Ordinary local skills.
        ("tools", "plain"),
        ("tools", "guarded"),
        ("tools", "orgskill"),
        // `find_project_root` finds no `.git` above the folder: `get_project_skills_dirs` is
        // empty, so nothing shadows `shared` or `chatty`.
        ("tools", "shared"),
        ("tools", "chatty"),
        // skill_utils.py::get_disabled_skill_names returns `(disabled) - ESSENTIAL_SKILLS`:
        // `hermes-agent` stays although listed. `gone` is hidden: the string
        // "['gone', 'hermes-agent', 'ext-off']" is a list (`parse_config_string_list`,
        // `ast.literal_eval`), so `gone` is not offered here nor in any session.
        ("ops", "hermes-agent"),
        // No platform (`_current_session_platform_hint` is ""): `platform_disabled` is not
        // read (`get_disabled_skill_names`), and `_skill_should_show` fails open on
        // `session_platforms` ("if wanted_platforms and session_platform and ...").
        ("tools", "tg-off"),
        ("chat", "tg-only"),
        ("chat", "discord-only"),
        // `name: ''`: `_build_snapshot_entry` keeps `frontmatter_name` "", and
        // `_entry_name` ("frontmatter_name or skill_name") lists the folder name.
        ("tools", "no-name"),
        // skill_utils.py::iter_skill_index_files walks `_org/` only into the id in
        // `_org/.active_org` (`read_active_org_id`, stripped): `old` is pruned.
        // `_build_snapshot_entry` records `org_id` and `_label_visible_entries` lists it
        // under `org:<id>`; the personal `orgskill` is kept too (a name collision labels both,
        // drops neither).
        ("org:acme", "deploy"),
        ("org:acme", "orgskill"),
        // skill_utils.py::get_all_skills_dirs: local, then `get_skill_create_dir` (`made`,
        // relative to the home), then `get_external_skills_dirs`. `made/general/plain` loses
        // to the local `plain`; `dup-ext` is first listed from `made`, so the external one
        // is skipped (`_collect_extra_skills`: `fm_name in claimed`).
        ("general", "created-skill"),
        ("general", "dup-ext"),
        // The external dir: `plain` and `dup-ext` taken earlier; `ext-off` disabled (`hides`).
        ("devops", "ext-only"),
        // `_collect_extra_skills` lists an external skill under `entry["frontmatter_name"]`,
        // not `_entry_name`: `name: ''` stays "" outside the local folder.
        ("devops", ""),
    ]);
    assert_eq!(got, want);
}

#[test]
fn telegram_outside_any_project() {
    let h = rule_home();
    let got = offered(&h, &h.outside, "telegram");
    let want = pairs(&[
        ("tools", "plain"),
        ("tools", "guarded"),
        ("tools", "orgskill"),
        ("tools", "shared"),
        ("tools", "chatty"),
        // get_disabled_skill_names("telegram"): `disabled | platform_disabled["telegram"]`
        // (also a string holding a list), minus ESSENTIAL_SKILLS: `hermes-agent` is offered,
        // `tg-off` is not.
        ("ops", "hermes-agent"),
        // `_skill_should_show`: `[str(p).strip().lower() ...]` of `[' Telegram ']` holds
        // "telegram", the session's platform lowered: shown. `[Discord]` does not: hidden.
        ("chat", "tg-only"),
        ("tools", "no-name"),
        ("org:acme", "deploy"),
        ("org:acme", "orgskill"),
        ("general", "created-skill"),
        ("general", "dup-ext"),
        ("devops", "ext-only"),
        ("devops", ""),
    ]);
    assert_eq!(got, want);
}

#[test]
fn no_platform_inside_the_trusted_project() {
    let h = rule_home();
    let got = offered(&h, &h.trusted.join("src/deep"), "");
    let want = pairs(&[
        // skill_utils.py::get_project_skills_dirs: `project_discovery` is not `False`,
        // `find_project_root` walks up from `src/deep` to the folder holding `.git`,
        // `is_project_root_trusted` finds it in `trusted_project_dirs`, and
        // `_candidate_project_skills_dirs` gives `.hermes/skills` then `.agents/skills`
        // (`PROJECT_SKILLS_SUBDIRS`). `_collect_extra_skills` lists them first, each name
        // claimed by the first shown skill: `x/proj-only` loses to `dev/proj-only`.
        ("dev", "shared"),
        ("dev", "proj-only"),
        ("dev", "chatty"),
        ("x", "agents-only"),
        ("x", "deploy"),
        ("x", "ext-only"),
        // `iter_project_skill_files` never yields `dev/guarded` (`is_quarantined_project_skill`:
        // verdict dangerous), so it claims nothing and the local `guarded` is listed.
        ("tools", "guarded"),
        // `_label_visible_entries` gets only the local entries whose name no project skill
        // claimed: `tools/shared`, `tools/chatty` and the org's `deploy` are left out.
        ("tools", "plain"),
        ("tools", "orgskill"),
        ("ops", "hermes-agent"),
        ("tools", "tg-off"),
        ("chat", "tg-only"),
        ("chat", "discord-only"),
        ("tools", "no-name"),
        ("org:acme", "orgskill"),
        ("general", "created-skill"),
        ("general", "dup-ext"),
        // The external `ext-only` is skipped: the project's claimed the name
        // (`seen_skill_names` holds every name listed so far).
        ("devops", ""),
    ]);
    assert_eq!(got, want);
}

#[test]
fn inside_an_untrusted_project() {
    let h = rule_home();
    let got = offered(&h, &h.untrusted, "");
    // `is_project_root_trusted` is false for a root not in `trusted_project_dirs`, so
    // `get_project_skills_dirs` returns [] and the project adds and shadows nothing: the
    // same list as outside any project.
    let want = pairs(&[
        ("tools", "plain"),
        ("tools", "guarded"),
        ("tools", "orgskill"),
        ("tools", "shared"),
        ("tools", "chatty"),
        ("ops", "hermes-agent"),
        ("tools", "tg-off"),
        ("chat", "tg-only"),
        ("chat", "discord-only"),
        ("tools", "no-name"),
        ("org:acme", "deploy"),
        ("org:acme", "orgskill"),
        ("general", "created-skill"),
        ("general", "dup-ext"),
        ("devops", "ext-only"),
        ("devops", ""),
    ]);
    assert_eq!(got, want);
}

#[test]
fn telegram_inside_the_trusted_project() {
    let h = rule_home();
    let got = offered(&h, &h.trusted, "telegram");
    let want = pairs(&[
        ("dev", "shared"),
        ("dev", "proj-only"),
        ("x", "agents-only"),
        ("x", "deploy"),
        ("x", "ext-only"),
        // `_collect_extra_skills` runs `hides` before claiming: the project's discord-only
        // `chatty` fails `_skill_should_show` on telegram and claims nothing, so the local
        // `chatty` is listed.
        ("tools", "chatty"),
        ("tools", "guarded"),
        ("tools", "plain"),
        ("tools", "orgskill"),
        // ESSENTIAL_SKILLS again; `tg-off` and `discord-only` hidden on telegram as outside.
        ("ops", "hermes-agent"),
        ("chat", "tg-only"),
        ("tools", "no-name"),
        ("org:acme", "orgskill"),
        ("general", "created-skill"),
        ("general", "dup-ext"),
        ("devops", ""),
    ]);
    assert_eq!(got, want);
}
