//! Which skills are offered: Hermes 0.19.0's `build_skills_system_prompt()` rules, split
//! between what a sync can decide once and what only the session that asks can decide.
//!
//! Hermes decides per call (agent/prompt_builder.py:1584-1676): a skill is offered when its
//! `platforms` allow the OS, its `environments` are detected, neither its name nor its folder
//! name is disabled (globally or on the session's messaging platform), and its tool conditions
//! hold for the session's tools; then, after all of that, a local skill is listed once per
//! (category, name), and an external skill only when no local skill of that name and no
//! earlier external one is listed. So a local skill hidden in this session lets an external
//! one of the same name through.
//!
//! A sync ([`decide`]) settles everything that does not depend on the session: the OS,
//! `skills.disabled`, `environments` that can never match, and every clash whose members carry
//! no session condition. What is left goes into a compact [`OfferRules`] table (the documents
//! with a condition, the clash groups whose outcome moves with the session), and a query turns
//! it into the set of hidden documents for its [`Session`] ([`OfferRules::hidden`]) without
//! reading a document record. See `docs/offer-rules.md`.

use crate::fields::FIELD_COUNT;
use crate::skill::Conditions;
use crate::store::records::{ConfigSnapshot, DocHead, NotOffered};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The environments Hermes knows (`agent/skill_utils._KNOWN_ENVIRONMENTS`).
pub const KNOWN_ENVIRONMENTS: [&str; 3] = ["kanban", "docker", "s6"];

/// The runtime environments active for a session, as Hermes detects them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environments {
    /// A kanban worker (`HERMES_KANBAN_TASK`/`HERMES_KANBAN_BOARD`) or a profile whose
    /// `toolsets` hold `kanban`.
    pub kanban: bool,
    /// Inside a container.
    pub docker: bool,
    /// Inside the s6-overlay image.
    pub s6: bool,
}

impl Environments {
    /// Whether the known environment `tag` is active.
    pub fn has(&self, tag: &str) -> bool {
        match tag {
            "kanban" => self.kanban,
            "docker" => self.docker,
            "s6" => self.s6,
            _ => true,
        }
    }

    /// Parses `kanban,docker,s6` (any subset; empty for none).
    pub fn parse(list: &str) -> Result<Environments, String> {
        let mut env = Environments::default();
        for tag in list.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            match tag {
                "kanban" => env.kanban = true,
                "docker" => env.docker = true,
                "s6" => env.s6 = true,
                other => {
                    return Err(format!(
                        "unknown environment {other:?} (kanban, docker, s6)"
                    ))
                }
            }
        }
        Ok(env)
    }

    /// Detects the environments of this process for the profile at `home`, the way Hermes
    /// does (`agent/skill_utils._detect_environment`): kanban from `HERMES_KANBAN_TASK` or
    /// `HERMES_KANBAN_BOARD`, else `kanban` in the profile's `toolsets`; docker from
    /// `/.dockerenv`, `/run/.containerenv`, `KUBERNETES_SERVICE_HOST` or container markers in
    /// `/proc/1/cgroup` and `/proc/self/mountinfo`; s6 from `/run/s6` or
    /// `/package/admin/s6-overlay`. docker and s6 are looked up once per process, as Hermes
    /// caches them.
    pub fn detect(home: &Path) -> Environments {
        static HOST: std::sync::OnceLock<(bool, bool)> = std::sync::OnceLock::new();
        let (docker, s6) = *HOST.get_or_init(|| (is_container(), is_s6()));
        Environments {
            kanban: kanban_active(home),
            docker,
            s6,
        }
    }
}

fn env_set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

fn kanban_active(home: &Path) -> bool {
    if env_set("HERMES_KANBAN_TASK") || env_set("HERMES_KANBAN_BOARD") {
        return true;
    }
    // hermes_cli.config.load_config(): the profile's config.yaml merged over the defaults
    // (`toolsets: [hermes-cli]`); `"kanban" in toolsets`. Cached on the file's stat, as
    // Hermes caches the config, since a query without a session detects on every call.
    type Key = (std::path::PathBuf, crate::scan::FileStat);
    static CACHE: std::sync::Mutex<Option<(Key, bool)>> = std::sync::Mutex::new(None);
    let path = home.join("config.yaml");
    let Ok(meta) = std::fs::metadata(&path) else {
        return false;
    };
    let key = (path.clone(), crate::scan::FileStat::of(&meta));
    if let Ok(cache) = CACHE.lock() {
        if let Some((k, v)) = cache.as_ref() {
            if *k == key {
                return *v;
            }
        }
    }
    let found = kanban_in_config(&path);
    if let Ok(mut cache) = CACHE.lock() {
        *cache = Some((key, found));
    }
    found
}

fn kanban_in_config(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    let Ok(value) = serde_yaml::from_str::<serde_yaml::Value>(&text) else {
        return false;
    };
    match value.get("toolsets") {
        Some(serde_yaml::Value::Sequence(items)) => {
            items.iter().any(|v| v.as_str() == Some("kanban"))
        }
        // `in` on a string is a substring test.
        Some(serde_yaml::Value::String(s)) => s.contains("kanban"),
        Some(serde_yaml::Value::Mapping(m)) => m.contains_key("kanban"),
        _ => false,
    }
}

fn is_container() -> bool {
    if Path::new("/.dockerenv").exists() || Path::new("/run/.containerenv").exists() {
        return true;
    }
    if env_set("KUBERNETES_SERVICE_HOST") {
        return true;
    }
    let has = |path: &str, markers: &[&str]| {
        std::fs::read_to_string(path).is_ok_and(|t| markers.iter().any(|m| t.contains(m)))
    };
    has(
        "/proc/1/cgroup",
        &[
            "docker",
            "podman",
            "/lxc/",
            "kubepods",
            "containerd",
            "crio",
        ],
    ) || has("/proc/self/mountinfo", &["kubepods", "containerd", "crio"])
}

fn is_s6() -> bool {
    Path::new("/run/s6").is_dir() || Path::new("/package/admin/s6-overlay").is_dir()
}

/// What a query knows about the session it answers for: everything Hermes' offer depends on
/// that a sync cannot know.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Session {
    /// The messaging platform whose `skills.platform_disabled` list applies. Hermes takes
    /// it from `HERMES_PLATFORM`, else `HERMES_SESSION_PLATFORM` (the gateway sets it);
    /// CLI, TUI, `hermes -z` and cron have none, so `platform_disabled.cli` never applies
    /// there.
    pub platform: Option<String>,
    /// The runtime environments active.
    pub environments: Environments,
    /// The session's tool names (`agent.valid_tool_names`); `None` with `toolsets` also
    /// `None` means no tool information, and no tool condition hides anything.
    pub tools: Option<BTreeSet<String>>,
    /// The session's toolsets (`registry.get_toolset_for_tool` of each tool).
    pub toolsets: Option<BTreeSet<String>>,
    /// Offer `<home>/plugins/*/skills` too. Hermes 0.19.0 never lists them in
    /// `<available_skills>`, so they are indexed but hidden unless asked for.
    pub plugins: bool,
}

impl Session {
    /// The session of this process for the profile at `home`, as Hermes sees it without
    /// tool information: the platform from `HERMES_PLATFORM`/`HERMES_SESSION_PLATFORM`,
    /// the environments detected, no tools (`None`, `None`).
    pub fn detect(home: &Path) -> Session {
        Session {
            platform: platform_from_env(),
            environments: Environments::detect(home),
            ..Default::default()
        }
    }

    /// The session of this process for the profile `name` at `home`: [`Session::detect`],
    /// with plugin skills offered in another agent's profile (Claude Code lists its plugins'
    /// skills, as `plugin:name`).
    pub fn for_profile(name: &str, home: &Path) -> Session {
        Session {
            plugins: crate::agent::is_agent_profile(name),
            ..Session::detect(home)
        }
    }

    /// Whether a skill's `session_platforms` let it through in this session (0.21's
    /// `_skill_should_show`, before the tool conditions): no list, no platform known (fail
    /// open), or the platform, stripped and lower-cased, in the list.
    pub fn platform_allows(&self, c: &Conditions) -> bool {
        let platform = self
            .platform
            .as_deref()
            .map(|p| p.trim_matches(crate::skill::py_space).to_lowercase())
            .filter(|p| !p.is_empty());
        match platform {
            Some(p) if !c.session_platforms.is_empty() => c.session_platforms.contains(&p),
            _ => true,
        }
    }

    /// Whether Hermes' tool conditions let a skill with `conditions` through
    /// (`agent/prompt_builder._skill_should_show`).
    pub fn tools_allow(&self, c: &Conditions) -> bool {
        if self.tools.is_none() && self.toolsets.is_none() {
            return true;
        }
        if c.never_with_tools {
            return false;
        }
        let empty = BTreeSet::new();
        let at = self.tools.as_ref().unwrap_or(&empty);
        let ats = self.toolsets.as_ref().unwrap_or(&empty);
        !(c.fallback_for_toolsets.iter().any(|t| ats.contains(t))
            || c.fallback_for_tools.iter().any(|t| at.contains(t))
            || c.requires_toolsets.iter().any(|t| !ats.contains(t))
            || c.requires_tools.iter().any(|t| !at.contains(t)))
    }
}

/// `HERMES_PLATFORM`, else `HERMES_SESSION_PLATFORM`, when set and not empty.
pub fn platform_from_env() -> Option<String> {
    ["HERMES_PLATFORM", "HERMES_SESSION_PLATFORM"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.is_empty())
}

/// A skill's `environments`, reduced to what decides Hermes' `skill_matches_environment`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvRule {
    /// No list, or an unknown tag (Hermes fails open).
    Always,
    /// A list whose items are all empty (`[""]`): hidden everywhere.
    Never,
    /// Offered when any of these known environments is active.
    AnyOf(Vec<String>),
}

/// Reduces the normalised `environments` items (`str(e).lower().strip()`, as the parser
/// stores them; `None` for no list) to an [`EnvRule`].
pub fn env_rule(items: &[String], has_list: bool) -> EnvRule {
    if !has_list {
        return EnvRule::Always;
    }
    let mut known = Vec::new();
    for item in items.iter().filter(|i| !i.is_empty()) {
        if !KNOWN_ENVIRONMENTS.contains(&item.as_str()) {
            return EnvRule::Always;
        }
        if !known.contains(item) {
            known.push(item.clone());
        }
    }
    if known.is_empty() {
        EnvRule::Never
    } else {
        EnvRule::AnyOf(known)
    }
}

/// The session-dependent conditions of one document, with its field lengths so that a
/// query can take a hidden document out of the statistics without reading it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocRule {
    /// The document.
    pub doc: u32,
    /// Its per-field lengths.
    pub lens: [u32; FIELD_COUNT],
    /// Known environments of which one must be active (empty: no condition).
    pub environments: Vec<String>,
    /// Its tool conditions (empty: none).
    pub conditions: Conditions,
    /// Messaging platforms whose `platform_disabled` list names it.
    pub platform_disabled: Vec<String>,
    /// A plugin's skill, offered only when the session asks for plugins.
    pub plugin: bool,
}

impl DocRule {
    /// Whether the document is shown in `session` before clashes are resolved.
    pub fn shows(&self, session: &Session) -> bool {
        (!self.plugin || session.plugins)
            && (self.environments.is_empty()
                || self
                    .environments
                    .iter()
                    .any(|e| session.environments.has(e)))
            && !session
                .platform
                .as_ref()
                .is_some_and(|p| self.platform_disabled.contains(p))
            && session.platform_allows(&self.conditions)
            && session.tools_allow(&self.conditions)
    }

    fn has_condition(&self) -> bool {
        self.plugin
            || !self.environments.is_empty()
            || !self.conditions.is_empty()
            || !self.platform_disabled.is_empty()
    }
}

/// One member of a clash group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// The document.
    pub doc: u32,
    /// Its category when it is a local skill; `None` for an external one;
    /// [`PROJECT_MARK`] for a trusted project's.
    pub local_category: Option<String>,
}

/// What [`Member::local_category`] holds for a project skill. A category comes from folder
/// names, which cannot hold NUL, so the mark is never a real category, and the stored form
/// of clash groups (docs/store.md) stays the one written before projects existed.
pub const PROJECT_MARK: &str = "\0project";

impl Member {
    /// A trusted project's skill `doc`.
    pub fn project(doc: u32) -> Member {
        Member {
            doc,
            local_category: Some(PROJECT_MARK.to_owned()),
        }
    }

    /// Whether it is a trusted project's skill.
    pub fn is_project(&self) -> bool {
        self.local_category.as_deref() == Some(PROJECT_MARK)
    }
}

/// Skills sharing a frontmatter name whose offer depends on each other, in Hermes' order:
/// project skills by (folder, path), then local skills by path, then external ones by
/// (external dir, path).
pub type ClashGroup = Vec<Member>;

/// The per-profile table a query turns into its hidden documents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OfferRules {
    /// Every document with a session condition or in a group below, by document id.
    pub docs: Vec<DocRule>,
    /// The clash groups whose outcome depends on the session.
    pub clashes: Vec<ClashGroup>,
}

impl OfferRules {
    /// The documents hidden in `session`: those whose conditions fail, and those that lose
    /// a clash to a skill shown in it.
    pub fn hidden(&self, session: &Session) -> FxHashSet<u32> {
        let mut hidden: FxHashSet<u32> = self
            .docs
            .iter()
            .filter(|r| !r.shows(session))
            .map(|r| r.doc)
            .collect();
        let mut losers = Vec::new();
        for group in &self.clashes {
            resolve(
                group,
                |d| !hidden.contains(&d),
                |loser, _| losers.push(loser),
            );
        }
        hidden.extend(losers);
        hidden
    }

    /// The field lengths of a document of the table.
    pub fn lens(&self, doc: u32) -> Option<[u32; FIELD_COUNT]> {
        self.docs
            .binary_search_by_key(&doc, |r| r.doc)
            .ok()
            .map(|i| self.docs[i].lens)
    }
}

/// Resolves one clash group as Hermes does once every filter has run: the first shown project
/// skill, when there is one, is the only one listed (0.21 `build_skills_system_prompt`: a
/// project skill claims its name once it passes the filters, and local and external skills
/// of a claimed name are left out); else each shown local skill is listed, once per category
/// (the first by path), and an external one only when no local one is shown and it is the
/// first shown external. `lost(loser, winner)` is called for the others.
pub fn resolve(group: &[Member], shown: impl Fn(u32) -> bool, mut lost: impl FnMut(u32, u32)) {
    if let Some(winner) = group.iter().find(|m| m.is_project() && shown(m.doc)) {
        for m in group.iter().filter(|m| m.doc != winner.doc && shown(m.doc)) {
            lost(m.doc, winner.doc);
        }
        return;
    }
    let mut first_local: Option<u32> = None;
    let mut by_category: FxHashMap<&str, u32> = FxHashMap::default();
    let mut first_external: Option<u32> = None;
    for m in group {
        if !shown(m.doc) {
            continue;
        }
        match &m.local_category {
            Some(cat) => {
                first_local.get_or_insert(m.doc);
                match by_category.get(cat.as_str()) {
                    Some(&w) => lost(m.doc, w),
                    None => {
                        by_category.insert(cat, m.doc);
                    }
                }
            }
            None => match first_local.or(first_external) {
                Some(w) => lost(m.doc, w),
                None => first_external = Some(m.doc),
            },
        }
    }
}

/// How many SKILL.md files `skill_view(name)` finds for a skill of a project's tier (its
/// tier's only: the project wins a collision) or of another tier (every tier's).
fn carried(carriers: &FxHashMap<(bool, &str), u32>, name: &str, project: bool) -> u32 {
    let count = |p| carriers.get(&(p, name)).copied().unwrap_or(0);
    if project {
        count(true)
    } else {
        count(true) + count(false)
    }
}

/// What a sync decides for every document.
#[derive(Debug, Default)]
pub struct Decisions {
    /// Per document never offered in any session, why (a document not here is offered in
    /// some session). Kept sparse: a full build holds this beside every document.
    pub inactive: FxHashMap<u32, NotOffered>,
    /// Per document whose id is not the one its head holds, the id to load it by.
    pub ids: FxHashMap<u32, String>,
    /// What is left for the session.
    pub rules: OfferRules,
}

/// The rank of a plugin skill (last in precedence).
pub const PLUGIN_RANK: u32 = u32::MAX;

/// The rank of the first project skill folder's skills; the second's is one more. Ranks are
/// stored, and local skills were 0 before projects existed: project ranks sit in a band
/// of their own, just below [`PLUGIN_RANK`], and [`Tier`] puts them first.
pub const PROJECT_RANK: u32 = u32::MAX - 16;

/// A document's root, by precedence in a name clash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// A trusted project's folder (Hermes 0.21), by position.
    Project(u32),
    /// The profile's own skills.
    Local,
    /// `skills.create_dir` and `skills.external_dirs`, by position.
    External(u32),
    /// A plugin's skills.
    Plugin,
}

impl Tier {
    /// The tier of a stored rank.
    pub fn of(rank: u32) -> Tier {
        match rank {
            0 => Tier::Local,
            PLUGIN_RANK => Tier::Plugin,
            r if r >= PROJECT_RANK => Tier::Project(r - PROJECT_RANK),
            r => Tier::External(r - 1),
        }
    }
}

/// The rank stored for a document found under `origin`.
pub fn rank_of(origin: &crate::skill::Origin) -> u32 {
    use crate::skill::Origin;
    match origin {
        Origin::Local => 0,
        Origin::External(i) => 1 + i,
        Origin::Plugin(_) => PLUGIN_RANK,
        Origin::Project(i) => PROJECT_RANK + i,
    }
}

/// Decides, for every document, what the sync can: whether it can be offered at all
/// (`platforms` for `os`, `skills.disabled`, `environments` that never match, clashes that do
/// not depend on the session), the id it is loaded by (its name, or its folder path when
/// `skill_view` would find that name ambiguous), and the [`OfferRules`] for the rest.
pub fn decide(heads: &BTreeMap<u32, DocHead>, config: &ConfigSnapshot, os: &str) -> Decisions {
    let mut out = Decisions::default();
    // skill_view(name) refuses a name that more than one SKILL.md carries as its folder
    // name or its frontmatter name, in any root, offered or not; a collision between a
    // trusted project's tier and the others goes to the project's skill.
    let project = |h: &DocHead| matches!(Tier::of(h.rank), Tier::Project(_));
    let mut carriers: FxHashMap<(bool, &str), u32> = FxHashMap::default();
    for h in heads.values().filter(|h| h.rank != PLUGIN_RANK) {
        *carriers
            .entry((project(h), h.dir_name.as_str()))
            .or_default() += 1;
        if h.name != h.dir_name {
            *carriers.entry((project(h), h.name.as_str())).or_default() += 1;
        }
    }
    let mut rules: BTreeMap<u32, DocRule> = BTreeMap::new();
    let mut conditional: FxHashSet<u32> = FxHashSet::default();
    let mut by_name: BTreeMap<&str, Vec<(u32, &DocHead)>> = BTreeMap::new();
    for (&d, h) in heads {
        let id = if h.rank == PLUGIN_RANK {
            h.id.clone()
        } else if h.name.is_empty() || carried(&carriers, h.name.as_str(), project(h)) > 1 {
            h.folder.clone()
        } else {
            h.name.clone()
        };
        if id != h.id {
            out.ids.insert(d, id);
        }
        let why = if !crate::skill::runs_on(&h.platforms, os) {
            Some(NotOffered::OtherOs { os: os.to_owned() })
        } else if config.all_disabled()
            || config.disabled.contains(&h.name)
            || config.disabled.contains(&h.dir_name)
        {
            Some(NotOffered::Disabled)
        } else {
            match env_rule(&h.environments, h.has_environments) {
                EnvRule::Never => Some(NotOffered::NoEnvironment),
                EnvRule::Always => None,
                EnvRule::AnyOf(envs) => {
                    rules.entry(d).or_default().environments = envs;
                    None
                }
            }
        };
        if let Some(why) = why {
            rules.remove(&d);
            out.inactive.insert(d, why);
            continue;
        }
        let rule = rules.entry(d).or_default();
        rule.doc = d;
        rule.lens = h.lens;
        rule.conditions = h.conditions.clone();
        rule.plugin = h.rank == PLUGIN_RANK;
        rule.platform_disabled = config
            .platform_disabled
            .iter()
            .filter(|(_, names)| names.contains(&h.name) || names.contains(&h.dir_name))
            .map(|(p, _)| p.clone())
            .collect();
        if rule.has_condition() {
            conditional.insert(d);
        } else {
            rules.remove(&d);
        }
        if h.rank != PLUGIN_RANK {
            by_name.entry(h.name.as_str()).or_default().push((d, h));
        }
    }

    let mut in_groups: FxHashSet<u32> = FxHashSet::default();
    for (_, mut members) in by_name {
        if members.len() < 2 {
            continue;
        }
        members.sort_by(|a, b| (Tier::of(a.1.rank), &a.1.key).cmp(&(Tier::of(b.1.rank), &b.1.key)));
        let not_local = members.iter().any(|(_, h)| Tier::of(h.rank) != Tier::Local);
        let mut cats = FxHashSet::default();
        let same_category = members
            .iter()
            .filter(|(_, h)| Tier::of(h.rank) == Tier::Local)
            .any(|(_, h)| !cats.insert(h.category.as_str()));
        if !not_local && !same_category {
            continue;
        }
        let group: ClashGroup = members
            .iter()
            .map(|(d, h)| match Tier::of(h.rank) {
                Tier::Project(_) => Member::project(*d),
                Tier::Local => Member {
                    doc: *d,
                    local_category: Some(h.category.clone()),
                },
                _ => Member {
                    doc: *d,
                    local_category: None,
                },
            })
            .collect();
        if group.iter().any(|m| conditional.contains(&m.doc)) {
            in_groups.extend(group.iter().map(|m| m.doc));
            out.rules.clashes.push(group);
        } else {
            resolve(
                &group,
                |_| true,
                |loser, winner| {
                    out.inactive.insert(
                        loser,
                        NotOffered::Shadowed {
                            by: heads[&winner].key.clone(),
                        },
                    );
                },
            );
        }
    }
    for d in in_groups {
        rules.entry(d).or_insert_with(|| DocRule {
            doc: d,
            lens: heads[&d].lens,
            ..Default::default()
        });
    }
    out.rules.docs = rules.into_values().collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environments_reduce_like_hermes() {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(env_rule(&[], false), EnvRule::Always);
        assert_eq!(env_rule(&v(&[""]), true), EnvRule::Never);
        assert_eq!(env_rule(&v(&["kanban", "mars"]), true), EnvRule::Always);
        assert_eq!(
            env_rule(&v(&["kanban", "", "s6"]), true),
            EnvRule::AnyOf(v(&["kanban", "s6"]))
        );
    }

    #[test]
    fn tool_conditions_follow_skill_should_show() {
        let set = |xs: &[&str]| Some(xs.iter().map(|s| s.to_string()).collect());
        let c = Conditions {
            requires_tools: vec!["terminal".into()],
            ..Default::default()
        };
        let mut s = Session::default();
        assert!(s.tools_allow(&c));
        s.toolsets = set(&["web"]);
        assert!(
            !s.tools_allow(&c),
            "tools None is empty once toolsets are given"
        );
        s.tools = set(&["terminal"]);
        assert!(s.tools_allow(&c));
        let f = Conditions {
            fallback_for_toolsets: vec!["web".into()],
            ..Default::default()
        };
        assert!(!s.tools_allow(&f));
    }

    #[test]
    fn the_first_shown_project_skill_takes_the_name() {
        let local = |doc: u32| Member {
            doc,
            local_category: Some("a".into()),
        };
        let g = vec![Member::project(1), Member::project(2), local(3), local(4)];
        let run = |shown: &[u32]| {
            let mut l = Vec::new();
            resolve(&g, |d| shown.contains(&d), |a, b| l.push((a, b)));
            l
        };
        assert_eq!(run(&[1, 2, 3]), [(2, 1), (3, 1)]);
        // A hidden project skill claims nothing: the next one, else the local rules.
        assert_eq!(run(&[2, 3]), [(3, 2)]);
        assert_eq!(run(&[3, 4]), [(4, 3)]);
        assert_eq!(
            Tier::of(rank_of(&crate::skill::Origin::Project(1))),
            Tier::Project(1)
        );
        assert!(Tier::Project(1) < Tier::Local && Tier::Local < Tier::External(0));
    }

    #[test]
    fn a_hidden_local_lets_the_external_through() {
        let g = vec![
            Member {
                doc: 1,
                local_category: Some("a".into()),
            },
            Member {
                doc: 2,
                local_category: Some("a".into()),
            },
            Member {
                doc: 3,
                local_category: Some("b".into()),
            },
            Member {
                doc: 4,
                local_category: None,
            },
            Member {
                doc: 5,
                local_category: None,
            },
        ];
        let run = |shown: &[u32]| {
            let mut l = Vec::new();
            resolve(&g, |d| shown.contains(&d), |a, b| l.push((a, b)));
            l
        };
        assert_eq!(run(&[1, 2, 3, 4, 5]), [(2, 1), (4, 1), (5, 1)]);
        assert_eq!(run(&[4, 5]), [(5, 4)]);
        assert_eq!(run(&[2, 5]), [(5, 2)]);
        assert_eq!(run(&[5]), []);
    }
}
