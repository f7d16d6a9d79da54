//! `skillidx hermes status`: is the plugin in place, is the index current, and does it offer
//! what Hermes itself offers?
//!
//! The last question is answered by Hermes' own code: the agent's Python (the interpreter
//! that runs the `skillidx` console script, or `SKILLIDX_PYTHON`, or `python3`) runs
//! `agent.prompt_builder.build_skills_system_prompt()` with no tool information, on a
//! scratch home whose entries link to the profile's (the builder writes a snapshot file into
//! its home; the user's home is left alone), and the
//! (category, name) pairs of its block ([`crate::compact::listed_skills`]) are compared with
//! what skillidx offers the same session ([`crate::offer::Session::detect`]).

use super::install::enabled_names;
use super::{HermesError, PLUGIN_FILES, PLUGIN_NAME};
use crate::home::Profile;
use crate::offer::Session;
use crate::store::StoreError;
use crate::Index;
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The snapshot Hermes' builder writes into its home.
const SNAPSHOT: &str = ".skills_prompt_snapshot.json";

/// Runs Hermes' builder on the home in `argv[1]` and prints its block.
const HERMES_SCRIPT: &str = r#"
import os, sys
os.environ["HERMES_HOME"] = sys.argv[1]
for v in ("HERMES_PLATFORM", "HERMES_SESSION_PLATFORM"):
    os.environ.pop(v, None)
from agent import prompt_builder as pb
pb.clear_skills_system_prompt_cache(clear_snapshot=True)
sys.stdout.write(pb.build_skills_system_prompt(available_tools=None, available_toolsets=None))
"#;

/// How the offered skills compare with Hermes' own block.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The interpreter that ran Hermes.
    pub python: String,
    /// Pairs Hermes offers.
    pub hermes: usize,
    /// Pairs skillidx offers.
    pub skillidx: usize,
    /// Offered by Hermes only (at most 20 shown).
    pub only_hermes: Vec<(String, String)>,
    /// Offered by skillidx only (at most 20 shown).
    pub only_skillidx: Vec<(String, String)>,
}

/// The size of the listing the plugin sends, in estimated tokens.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ListingTokens {
    /// Names only (budget 0).
    pub names_only: usize,
    /// Under the budget in effect.
    pub budgeted: usize,
}

/// What `hermes status` reports for one profile.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// The profile.
    pub profile: String,
    /// Its home.
    pub home: PathBuf,
    /// `plugins/skill-retrieval/` holds every plugin file.
    pub plugin_installed: bool,
    /// Those files are the ones this skillidx ships.
    pub plugin_current: bool,
    /// `plugins.enabled` in config.yaml lists the plugin.
    pub plugin_enabled: bool,
    /// The index file.
    pub db: PathBuf,
    /// The index holds this profile.
    pub indexed: bool,
    /// Why the index cannot be used, when it exists but cannot (damaged, another home's, a
    /// newer schema): the message names the remedy.
    pub index_error: Option<String>,
    /// Commits so far.
    pub generation: u64,
    /// When the last committing sync started, ns since the epoch.
    pub synced_at_ns: i64,
    /// Skills skillidx offers with no tool information, in this process's environment.
    pub offered: usize,
    /// The Hermes release line whose offer rules the index follows (`None`: not known).
    pub hermes_version: Option<String>,
    /// The listing budget in effect for the plugin, in tokens (`SKILL_RETRIEVAL_INDEX_BUDGET`
    /// in this environment or the profile's `.env`, else the default; 0: names only).
    pub index_budget: usize,
    /// The plugin's `<available_skills>` for the offered skills, in estimated tokens
    /// ([`super::budget::estimate_tokens`]): names only, and under the budget.
    pub listing_tokens: ListingTokens,
    /// The comparison with Hermes' own block, when Hermes could be run.
    pub hermes: Option<Comparison>,
    /// Why Hermes could not be run, when it could not.
    pub hermes_error: Option<String>,
}

/// The status of `profile`, with the index at `db`; `python` runs Hermes' builder.
pub fn status(profile: &Profile, db: &Path, python: &Path) -> Result<Status, HermesError> {
    let plugin_dir = profile.home.join("plugins").join(PLUGIN_NAME);
    let files: Vec<Option<Vec<u8>>> = PLUGIN_FILES
        .iter()
        .map(|(name, _)| std::fs::read(plugin_dir.join(name)).ok())
        .collect();
    let plugin_installed = files.iter().all(Option::is_some);
    let plugin_current = plugin_installed
        && PLUGIN_FILES
            .iter()
            .zip(&files)
            .all(|((_, want), have)| have.as_deref() == Some(want.as_bytes()));
    let config = std::fs::read_to_string(profile.home.join("config.yaml")).unwrap_or_default();
    let plugin_enabled = serde_yaml::from_str::<serde_yaml::Value>(&config)
        .ok()
        .and_then(|v| enabled_names(&v))
        .is_some_and(|names| names.iter().any(|n| n == PLUGIN_NAME));
    let mut out = Status {
        profile: profile.name.clone(),
        home: profile.home.clone(),
        plugin_installed,
        plugin_current,
        plugin_enabled,
        db: db.to_owned(),
        indexed: false,
        index_error: None,
        generation: 0,
        synced_at_ns: 0,
        offered: 0,
        hermes_version: None,
        index_budget: index_budget(&profile.home),
        listing_tokens: ListingTokens::default(),
        hermes: None,
        hermes_error: None,
    };
    let opened = Index::open(db).and_then(|i| i.ensure_profile(&profile.name).map(|()| i));
    let ours: BTreeSet<(String, String)> = match opened {
        Ok(index) => {
            let stats = index.stats(&profile.name).map_err(index_error)?;
            out.indexed = true;
            out.generation = stats.generation;
            out.synced_at_ns = stats.synced_at_ns;
            out.hermes_version = stats.hermes_version.clone();
            index
                .offered(&profile.name, &Session::detect(&profile.home))
                .map_err(index_error)?
                .into_iter()
                .map(|o| (o.category, o.name))
                .collect()
        }
        Err(crate::Error::NotIndexed { .. } | crate::Error::Store(StoreError::Missing(_))) => {
            BTreeSet::new()
        }
        Err(e) => {
            out.index_error = Some(e.to_string());
            BTreeSet::new()
        }
    };
    out.offered = ours.len();
    out.listing_tokens = listing_tokens(&ours, &profile.home, out.index_budget);
    match hermes_pairs(profile, python) {
        Ok(theirs) => {
            let diff = |a: &BTreeSet<(String, String)>, b: &BTreeSet<(String, String)>| {
                a.difference(b).take(20).cloned().collect()
            };
            out.hermes = Some(Comparison {
                python: python.display().to_string(),
                hermes: theirs.len(),
                skillidx: ours.len(),
                only_hermes: diff(&theirs, &ours),
                only_skillidx: diff(&ours, &theirs),
            });
        }
        Err(why) => out.hermes_error = Some(why),
    }
    Ok(out)
}

/// The budget the plugin would read: its variable in this environment, else in the
/// profile's `.env` (Hermes loads it into the agent's environment), else the default.
fn index_budget(home: &Path) -> usize {
    const VAR: &str = "SKILL_RETRIEVAL_INDEX_BUDGET";
    let from_dotenv = || {
        let text = std::fs::read_to_string(home.join(".env")).ok()?;
        text.lines()
            .filter_map(|l| l.trim().strip_prefix(VAR)?.trim_start().strip_prefix('='))
            .map(|v| v.trim().trim_matches(['"', '\'']).to_owned())
            .next_back()
    };
    std::env::var(VAR)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .or_else(from_dotenv)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(super::budget::DEFAULT_TOKENS)
}

/// The listing of `offered` (Hermes orders categories and names), names only and budgeted.
fn listing_tokens(
    offered: &BTreeSet<(String, String)>,
    home: &Path,
    tokens: usize,
) -> ListingTokens {
    use super::budget::{budgeted, estimate_tokens, Budget, Usage};
    use super::listing::{Block, Group};
    let mut block = Block::default();
    for (category, name) in offered {
        match block.groups.last_mut() {
            Some(g) if &g.category == category => g.names.push(name.clone()),
            _ => block.groups.push(Group {
                category: category.clone(),
                demoted: false,
                names: vec![name.clone()],
                labels: Vec::new(),
            }),
        }
    }
    let budget = Budget {
        tokens,
        pinned: Vec::new(),
        search_tool: Some("skills_search".into()),
        loader: super::load::loader("auto", true, offered.len() as u32).to_owned(),
    };
    ListingTokens {
        names_only: estimate_tokens(&block.names_only()),
        budgeted: estimate_tokens(&budgeted(&block, &Usage::read(home), &budget)),
    }
}

fn index_error(e: crate::Error) -> HermesError {
    HermesError::Index(Box::new(e))
}

/// A scratch folder removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The (category, name) pairs Hermes' own builder offers for `profile`, run by `python`.
fn hermes_pairs(profile: &Profile, python: &Path) -> Result<BTreeSet<(String, String)>, String> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let scratch = Scratch(
        std::env::temp_dir().join(format!("skillidx-status-{}-{nanos}", std::process::id())),
    );
    std::fs::create_dir_all(&scratch.0).map_err(|e| format!("a scratch home: {e}"))?;
    // Every entry of the home but Hermes' snapshot, so that relative `external_dirs`
    // resolve as they do in the real home.
    let entries = std::fs::read_dir(&profile.home)
        .map_err(|e| format!("reading {}: {e}", profile.home.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name == SNAPSHOT {
            continue;
        }
        std::os::unix::fs::symlink(entry.path(), scratch.0.join(&name))
            .map_err(|e| format!("linking {}: {e}", entry.path().display()))?;
    }
    let mut child = Command::new(python)
        .arg("-c")
        .arg(HERMES_SCRIPT)
        .arg(&scratch.0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    // Read both pipes while waiting: a large block would otherwise fill the pipe and stall.
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                return Err(format!("{} did not answer within 120 s", python.display()));
            }
        }
    }
    let ok = child.wait().is_ok_and(|s| s.success());
    let out = stdout.join().unwrap_or_default();
    let err = stderr.join().unwrap_or_default();
    if !ok {
        let err = String::from_utf8_lossy(&err);
        let last = err.lines().last().unwrap_or("").to_owned();
        return Err(format!(
            "Hermes' builder failed in {} ({last}); run this from the agent's environment, or set SKILLIDX_PYTHON to its python",
            python.display()
        ));
    }
    let block = String::from_utf8_lossy(&out);
    Ok(crate::compact::listed_skills(&block).into_iter().collect())
}
