//! The indexes one MCP server answers from: the profile it was started for, and each other
//! agent's skills, opened (and built when missing) the first time a call names that agent.

use crate::refresh::LiveIndex;
use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Opens the index of the agent named, or says why it cannot.
pub type Opener = Box<dyn Fn(&str) -> Result<LiveIndex, String> + Send + Sync>;

/// The server's indexes, by agent name (`hermes` for a Hermes profile).
pub struct Served {
    first: (String, Arc<LiveIndex>),
    opener: Option<Opener>,
    others: Mutex<FxHashMap<String, Arc<LiveIndex>>>,
}

impl Served {
    /// A server of `live`, the skills of `agent`, and of no other.
    pub fn one(agent: &str, live: LiveIndex) -> Served {
        Served {
            first: (agent.to_owned(), Arc::new(live)),
            opener: None,
            others: Mutex::default(),
        }
    }

    /// Also serves the other agents `opener` opens.
    pub fn with_opener(mut self, opener: Opener) -> Served {
        self.opener = Some(opener);
        self
    }

    /// The index of `agent` (`None`: the one the server was started for).
    pub fn get(&self, agent: Option<&str>) -> Result<Arc<LiveIndex>, String> {
        let (name, first) = &self.first;
        let agent = match agent {
            None => return Ok(first.clone()),
            Some(a) if a == name => return Ok(first.clone()),
            Some(a) => a,
        };
        let Some(opener) = &self.opener else {
            return Err(format!(
                "Skills of {:?} are not indexed by this server; it serves {name:?} (profile {:?}).",
                crate::safety::inline(agent),
                first.profile().name
            ));
        };
        let mut others = self.others.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(live) = others.get(agent) {
            return Ok(live.clone());
        }
        let live = Arc::new(opener(agent)?);
        others.insert(agent.to_owned(), live.clone());
        Ok(live)
    }
}
