//! `skillidx sync`: bring the index in line with the skills on disk.

use super::args::{Common, SemanticArgs};
use super::output::{errln, outln};
use crate::home::Profile;
use crate::store::Compaction;
use crate::sync::{SyncOptions, SyncReport};
use crate::{Aside, Index};
use anyhow::{Context, Result};
use clap::Args;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::Instant;

/// `skillidx sync`'s options.
#[derive(Args, Debug)]
pub struct SyncArgs {
    /// Sync every profile of the home.
    #[arg(long, conflicts_with = "profile")]
    all_profiles: bool,
    /// Forget the index and build it again (also replaces a damaged index file).
    #[arg(long)]
    rebuild: bool,
    #[command(flatten)]
    semantic: SemanticArgs,
    #[command(flatten)]
    common: Common,
}

impl SyncArgs {
    /// A plain sync of what `common` names (`agents install` indexes the agent with it).
    pub fn of(common: Common) -> SyncArgs {
        SyncArgs {
            all_profiles: false,
            rebuild: false,
            semantic: SemanticArgs::default(),
            common,
        }
    }
}

/// Syncs the profile (or every profile), prints a report per profile, drops the profiles
/// whose folder is gone (`--all-profiles`), and compacts the file after a build.
pub fn run(args: SyncArgs) -> Result<ExitCode> {
    let SyncArgs {
        all_profiles,
        rebuild,
        semantic,
        common,
    } = args;
    let everyone = common.agent.as_deref() == Some("all");
    let place = if everyone {
        // `all`: the agents' skills go into the Hermes home's index when there is one.
        Common {
            agent: Some(crate::agent::Agent::ClaudeCode.name().into()),
            ..common.clone()
        }
        .place()?
    } else {
        common.place()?
    };
    let hermes = common.hermes()?;
    let model = semantic.load();
    #[cfg(not(feature = "semantic"))]
    let _ = model;
    let mut profiles = targets(&common, &place, all_profiles, everyone)?;
    // A first build into a file this command creates: like a rebuild, one big transaction.
    let creating = std::fs::metadata(&place.db).map_or(true, |m| m.len() == 0);
    let mut index = open(&place.db, &place.root.path, rebuild)?;
    if all_profiles {
        let known = stored_projects(&index, &profiles, &common)?;
        profiles.extend(known);
    }
    let mut reports = Vec::new();
    for profile in &profiles {
        let report = sync_one(&index, profile, rebuild, hermes, common.json, &model)?;
        crate::failpoint::point(crate::failpoint::names::SYNC_BEFORE_REPORT)?;
        if !common.json {
            print_report(&report)?;
        }
        reports.push(report);
    }
    if all_profiles {
        for name in index.profiles()? {
            if !crate::agent::is_agent_profile(&name) && profiles.iter().all(|p| p.name != name) {
                index
                    .drop_profile(&name)
                    .with_context(|| format!("dropping profile {name}"))?;
                if name.contains(crate::project::PROFILE_SEPARATOR) {
                    errln!("skillidx: profile {name}: no longer a trusted project with skills; dropped it from the index");
                } else {
                    errln!(
                        "skillidx: profile {name}: its folder is gone; dropped it from the index"
                    );
                }
            }
        }
    }
    if (rebuild || creating) && index.store().is_writable() {
        compact(&mut index, &place.db, common.json)?;
    } else if reports.iter().any(grew_much) {
        drop(index);
        compact(
            &mut Index::open_writable(&place.db)?,
            &place.db,
            common.json,
        )?;
    }
    if common.json {
        outln!("{}", serde_json::to_string_pretty(&reports)?)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The profiles to sync: `--agent`'s (the user's and the project's), every agent's and the
/// Hermes home's for `--agent all`, else the Hermes profile (or every one).
fn targets(
    common: &Common,
    place: &super::args::Place,
    all_profiles: bool,
    everyone: bool,
) -> Result<Vec<Profile>> {
    let hermes_home =
        place.root.path.join("skills").is_dir() || place.root.path.join("config.yaml").is_file();
    let mut out = Vec::new();
    if everyone {
        if hermes_home {
            out.extend(hermes_profiles(common, place, all_profiles)?);
        }
        for agent in crate::agent::Agent::ALL {
            out.extend(common.agent_profiles(place, agent)?);
        }
        return Ok(out);
    }
    match common.other_agent()? {
        Some(agent) => common.agent_profiles(place, agent),
        None => hermes_profiles(common, place, all_profiles),
    }
}

fn hermes_profiles(
    common: &Common,
    place: &super::args::Place,
    all_profiles: bool,
) -> Result<Vec<Profile>> {
    let profiles = if all_profiles {
        place.root.profiles()
    } else {
        vec![place.root.profile(&common.profile_name(place))?]
    };
    // Each profile, then (Hermes 0.21) the same profile inside the working directory's
    // trusted project, if any.
    let mut out = Vec::with_capacity(profiles.len());
    for p in profiles {
        let in_project = common.in_session_project(p.clone())?;
        out.push(p);
        if in_project.project.is_some() {
            out.push(in_project);
        }
    }
    Ok(out)
}

/// The project profiles (`<profile>@<root>`) in the index, other than those in `profiles`,
/// whose project is still trusted by its profile (one of `profiles`) and has skills: a
/// cron `sync --all-profiles` keeps every project a session was in up to date.
fn stored_projects(index: &Index, profiles: &[Profile], common: &Common) -> Result<Vec<Profile>> {
    let version = crate::version::HermesVersion::resolve(common.hermes()?, None);
    let mut out = Vec::new();
    for name in index.profiles()? {
        let Some((base, root)) = name.split_once(crate::project::PROFILE_SEPARATOR) else {
            continue;
        };
        if crate::agent::is_agent_profile(&name) || profiles.iter().any(|p| p.name == name) {
            continue;
        }
        let Some(base) = profiles
            .iter()
            .find(|p| p.name == base && p.agent.is_none())
        else {
            continue;
        };
        let (profile, _) = base.clone().for_session(Path::new(root), version);
        if profile.name == name {
            out.push(profile);
        }
    }
    Ok(out)
}

/// Whether a sync wrote so much in one transaction that the file holds many dead pages: it
/// read every file again (every document rewritten), or it embedded a quarter or more of the
/// profile's skills (a first `sync --semantic`: 90k vectors grow a 180 MB index to 359 MB,
/// 242 MB once compacted).
fn grew_much(r: &SyncReport) -> bool {
    #[cfg(feature = "semantic")]
    let embedded_much = r.embedded > 0 && r.embedded * 4 >= r.active + r.inactive;
    #[cfg(not(feature = "semantic"))]
    let embedded_much = false;
    r.read_again || embedded_much
}

/// The index to sync into: for `--rebuild`, a damaged file or another home's is moved aside
/// first (and the user told where).
fn open(db: &Path, root: &Path, rebuild: bool) -> Result<Index> {
    if !rebuild {
        return Ok(Index::open_for_sync(db)?);
    }
    let (index, aside) = Index::open_for_rebuild(db, root)?;
    match aside {
        Some(Aside {
            path,
            other_home: Some(home),
        }) => errln!(
            "skillidx: {} indexed the Hermes home {}; kept it as {} and building one for {} in its place",
            db.display(),
            home.display(),
            path.display(),
            root.display()
        ),
        Some(Aside { path, .. }) => errln!(
            "skillidx: {} was not a usable index; moved it to {}",
            db.display(),
            path.display()
        ),
        None => {}
    }
    Ok(index)
}

/// Syncs one profile, with progress bars on a terminal once it takes more than a second.
fn sync_one(
    index: &Index,
    profile: &Profile,
    rebuild: bool,
    hermes: Option<crate::version::HermesVersion>,
    json: bool,
    #[cfg_attr(not(feature = "semantic"), allow(unused_variables))] model: &super::args::Model,
) -> Result<SyncReport> {
    let started = Instant::now();
    let show = std::io::stderr().is_terminal() && !json;
    let bar: OnceLock<indicatif::ProgressBar> = OnceLock::new();
    let progress = |done: usize, total: usize| {
        if !show || started.elapsed().as_secs_f64() < 1.0 {
            return;
        }
        let bar = bar.get_or_init(|| {
            let b = indicatif::ProgressBar::new(total as u64);
            b.set_message(format!("syncing {}", profile.name));
            b
        });
        bar.set_position(done as u64);
    };
    let embed_bar: OnceLock<indicatif::ProgressBar> = OnceLock::new();
    #[cfg_attr(not(feature = "semantic"), allow(unused_variables))]
    let embed_progress = |done: usize, total: usize| {
        // A first embedding of many skills takes minutes: show it.
        if !show || total < 100 {
            return;
        }
        let bar = embed_bar.get_or_init(|| {
            let b = indicatif::ProgressBar::new(total as u64);
            b.set_message(format!("embedding {}", profile.name));
            b
        });
        bar.set_position(done as u64);
    };
    let opts = SyncOptions {
        rebuild,
        progress: Some(&progress),
        os: None,
        hermes,
        #[cfg(feature = "semantic")]
        semantic: model.as_deref(),
        #[cfg(feature = "semantic")]
        embed_progress: Some(&embed_progress),
    };
    let report = index
        .sync(profile, &opts)
        .with_context(|| format!("syncing profile {}", profile.name))?;
    for b in [bar.get(), embed_bar.get()].into_iter().flatten() {
        b.finish_and_clear();
    }
    Ok(report)
}

/// Compacts the index after a build (`Index::compact`). The sync has committed: a failure
/// here leaves a valid, only larger, file, so it is a warning, not a failed command.
fn compact(index: &mut Index, db: &Path, quiet: bool) -> Result<()> {
    let size = || std::fs::metadata(db).map_or(0, |m| m.len());
    let before = size();
    let started = Instant::now();
    let mb = |b: u64| b as f64 / 1e6;
    match index.compact() {
        // On stdout, with the sync's report: stderr stays for problems (a cron line logs it).
        Ok(Compaction::Compacted) if !quiet => outln!(
            "compacted {}: {:.1} MB -> {:.1} MB in {:.1} s",
            db.display(),
            mb(before),
            mb(size()),
            started.elapsed().as_secs_f64()
        )?,
        Ok(Compaction::Busy) if !quiet => outln!(
            "{} is in use by another process: left uncompacted",
            db.display()
        )?,
        Ok(_) => {}
        Err(e) => errln!("skillidx: warning: compacting {}: {e}", db.display()),
    }
    Ok(())
}

/// One profile's sync report, as text.
pub fn print_report(r: &SyncReport) -> std::io::Result<()> {
    outln!(
        "profile {}: {} skills offered, {} not offered; added {}, updated {}, removed {}, unchanged {}, skipped {} ({:.0} ms{})",
        r.profile,
        r.active,
        r.inactive,
        r.added,
        r.updated,
        r.removed,
        r.unchanged,
        r.skipped.len(),
        r.elapsed_ms,
        if r.committed { "" } else { ", nothing to write" }
    )?;
    #[cfg(feature = "semantic")]
    if r.embedded > 0 {
        outln!("  embedded {} skills", r.embedded)?;
    }
    for p in &r.skipped {
        outln!("  skipped {}: {}", p.path.display(), p.reason)?;
    }
    for p in &r.warnings {
        outln!("  warning {}: {}", p.path.display(), p.reason)?;
    }
    Ok(())
}
