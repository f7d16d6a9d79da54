//! `skillidx hermes install|uninstall|status`: the `skill-retrieval` plugin in a profile.

use super::args::Common;
use super::output::outln;
use anyhow::Result;
use clap::Subcommand;
use std::path::PathBuf;
use std::process::ExitCode;

/// What to do with the plugin.
#[derive(Subcommand, Debug)]
pub enum HermesAction {
    /// Place the plugin in <profile home>/plugins/skill-retrieval/ and enable it in config.yaml.
    Install {
        #[command(flatten)]
        common: Common,
    },
    /// Disable the plugin in config.yaml and remove its folder.
    Uninstall {
        #[command(flatten)]
        common: Common,
    },
    /// Whether the plugin is installed and enabled, the index's last sync, and the skills
    /// offered compared with what Hermes' own code offers (run by SKILLIDX_PYTHON, else the
    /// Python running this command, else python3).
    Status {
        #[command(flatten)]
        common: Common,
    },
}

/// Runs `action`.
pub fn run(action: HermesAction) -> Result<ExitCode> {
    let (common, installing) = match &action {
        HermesAction::Install { common } => (common, true),
        HermesAction::Uninstall { common } => (common, false),
        HermesAction::Status { common } => return status(common),
    };
    let profile =
        crate::hermes::resolve_profile(common.home.as_deref(), common.profile.as_deref())?;
    let report = if installing {
        crate::hermes::install(&profile)?
    } else {
        crate::hermes::uninstall(&profile)?
    };
    if common.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else if installing {
        outln!(
            "{} {} plugin in {}; {} in {}",
            if report.files_changed {
                "installed"
            } else {
                "kept the"
            },
            crate::hermes::PLUGIN_NAME,
            report.plugin_dir.display(),
            if report.config_changed {
                "enabled it"
            } else {
                "already enabled"
            },
            report.config.display()
        )?;
        outln!("the plugin needs the skillidx Python package in the agent's environment (pip install skillidx); restart the agent to load it")?;
    } else {
        outln!(
            "{} {} in {}; {} {}",
            if report.config_changed {
                "disabled"
            } else {
                "was not enabled:"
            },
            crate::hermes::PLUGIN_NAME,
            report.config.display(),
            if report.files_changed {
                "removed"
            } else {
                "no folder at"
            },
            report.plugin_dir.display()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn status(common: &Common) -> Result<ExitCode> {
    let place = common.place()?;
    let profile = common.in_session_project(place.root.profile(&common.profile_name(&place))?)?;
    let python = std::env::var_os("SKILLIDX_PYTHON")
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from("python3"), PathBuf::from);
    let s = crate::hermes::status(&profile, &place.db, &python)?;
    if common.json {
        outln!("{}", serde_json::to_string_pretty(&s)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let yes = |b: bool| if b { "yes" } else { "no" };
    outln!("profile {} ({})", s.profile, s.home.display())?;
    outln!(
        "plugin {}: installed {}{}, enabled in config.yaml {}",
        crate::hermes::PLUGIN_NAME,
        yes(s.plugin_installed),
        if s.plugin_installed && !s.plugin_current {
            " (older files: run `skillidx hermes install` again)"
        } else {
            ""
        },
        yes(s.plugin_enabled)
    )?;
    if let Some(why) = &s.index_error {
        outln!("index {}: cannot be used: {why}", s.db.display())?;
    } else if s.indexed {
        let ago = (std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64)
            - s.synced_at_ns)
            / 1_000_000_000;
        outln!(
            "index {}: last sync {ago} s ago, generation {}, offer rules of Hermes {}",
            s.db.display(),
            s.generation,
            s.hermes_version
                .as_deref()
                .unwrap_or("0.19 (made before versions were told apart)")
        )?;
    } else {
        outln!(
            "index {}: this profile is not indexed yet (run `skillidx sync`)",
            s.db.display()
        )?;
    }
    outln!(
        "skills offered (no tool information): skillidx {}",
        s.offered
    )?;
    outln!(
        "listing sent by the plugin: budget {} tokens{}; about {} tokens (names only: {})",
        s.index_budget,
        if s.index_budget == 0 {
            " (0: names only)"
        } else {
            ""
        },
        s.listing_tokens.budgeted,
        s.listing_tokens.names_only
    )?;
    match (&s.hermes, &s.hermes_error) {
        (Some(c), _) => {
            outln!(
                "Hermes' own builder ({}): {}; {}",
                c.python,
                c.hermes,
                if c.only_hermes.is_empty() && c.only_skillidx.is_empty() {
                    "the same skills".to_owned()
                } else {
                    format!(
                        "differs: only Hermes {:?}, only skillidx {:?}",
                        c.only_hermes, c.only_skillidx
                    )
                }
            )?;
        }
        (None, Some(why)) => outln!("Hermes' own builder: not run ({why})")?,
        (None, None) => {}
    }
    Ok(ExitCode::SUCCESS)
}
