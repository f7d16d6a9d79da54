//! `skillidx watch`: keep every profile's index in step while running.

use super::args::Common;
use super::output::{self, errln, outln};
use super::sync::print_report;
use crate::watch::WatchEvent;
use anyhow::Result;
use clap::Args;
use std::process::ExitCode;

/// `skillidx watch`'s options.
#[derive(Args, Debug)]
pub struct WatchArgs {
    /// Wait this long after the last change before syncing.
    #[arg(long, default_value_t = 500)]
    debounce_ms: u64,
    #[command(flatten)]
    common: Common,
}

/// Syncs every profile, then each profile again whenever its skills or config change. A
/// reader of the reports that goes away does not stop the watch: the syncs are its job.
pub fn run(args: WatchArgs) -> Result<ExitCode> {
    let place = args.common.place()?;
    let json = args.common.json;
    let root = place.root.path.clone();
    let report = |event: WatchEvent| {
        let written = match event {
            WatchEvent::Ready { watched } if json => {
                outln!(
                    "{}",
                    serde_json::json!({ "ready": true, "watched": watched })
                )
            }
            WatchEvent::Ready { watched } => {
                errln!("skillidx: watching {watched} folders of {}", root.display());
                Ok(())
            }
            WatchEvent::Synced(Ok(r)) if json => match serde_json::to_string(&r) {
                Ok(line) => outln!("{line}"),
                Err(e) => {
                    errln!("skillidx: {e}");
                    Ok(())
                }
            },
            WatchEvent::Synced(Ok(r)) => print_report(&r),
            WatchEvent::Synced(Err(e)) => {
                errln!("skillidx: sync failed: {e}");
                Ok(())
            }
            WatchEvent::Dropped(name) if json => {
                outln!("{}", serde_json::json!({ "dropped": name }))
            }
            WatchEvent::Dropped(name) => {
                errln!("skillidx: profile {name}: its folder is gone; dropped it from the index");
                Ok(())
            }
        };
        if let Err(e) = written.and_then(|()| output::flush()) {
            errln!("skillidx: cannot write the report: {e}");
        }
    };
    crate::watch::watch(
        &place.root,
        &place.db,
        args.common.hermes()?,
        std::time::Duration::from_millis(args.debounce_ms.max(10)),
        report,
        || false,
    )?;
    Ok(ExitCode::SUCCESS)
}
