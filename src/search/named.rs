//! Skills by the name a prompt gave for them: what a loader resolves `skill_load(name)` with.
//!
//! The prompt names a skill by its id (its name, or `category/folder` where the name is
//! ambiguous, or `plugin:name`), and the model may also use the bare name or the folder
//! path it saw in parentheses. The `names` table maps every frontmatter and folder name to
//! its documents, so a lookup reads a few records instead of every document; a table left
//! behind by an older build (its generation stamp is not the snapshot's) is not trusted, and
//! every document is read instead.

use super::{Hit, SearchOptions, Snapshot};
use crate::store::records::{name_key, DocHead, NAMES_GENERATION};
use crate::store::{decode, decode_head, get_lenient, open_or_none, StoreError};

impl Snapshot<'_> {
    /// The offered skills, not hidden in the session of `opts`, that `name` may mean: those
    /// whose id, name, folder name or `category/folder` path is `name`, the exact id first.
    pub fn named(&self, name: &str, opts: &SearchOptions) -> Result<Vec<Hit>, StoreError> {
        let hidden = self.hidden(&self.session(opts)?);
        let mut found: Vec<(u32, DocHead)> = Vec::new();
        for (doc, head) in self.heads_named(name)? {
            if head.inactive.is_none() && !hidden.contains(&doc) && means(&head, name) {
                found.push((doc, head));
            }
        }
        found.sort_by_key(|(doc, head)| (head.id != name, *doc));
        let mut out = Vec::with_capacity(found.len());
        for (doc, _) in found {
            out.extend(self.hit(doc, 0.0)?);
        }
        Ok(out)
    }

    /// The documents a lookup of `name` must look at: those the `names` table files under
    /// the name or its last `/` or `:` part, or every document when the table is stale.
    fn heads_named(&self, name: &str) -> Result<Vec<(u32, DocHead)>, StoreError> {
        let table = open_or_none(self.store, self.txn, self.tables.names())?;
        let stamp: Option<u64> = match &table {
            Some(t) => get_lenient(self.store, t, NAMES_GENERATION)?,
            None => None,
        };
        let (Some(table), true) = (table, stamp == Some(self.stats.generation)) else {
            return Ok(self
                .all_docs()?
                .into_iter()
                .map(|(d, h, _)| (d, h))
                .collect());
        };
        let mut keys = vec![name];
        keys.extend(name.rsplit('/').next());
        keys.extend(name.rsplit(':').next());
        keys.dedup();
        let mut docs: Vec<u32> = Vec::new();
        for key in keys {
            if let Some(v) = table
                .get(name_key(key).as_str())
                .map_err(|e| self.store.err(e))?
            {
                docs.extend(decode::<Vec<u32>>(self.store, v.value(), "name list")?);
            }
        }
        docs.sort_unstable();
        docs.dedup();
        let mut out = Vec::with_capacity(docs.len());
        for doc in docs {
            let Some(table) = &self.docs else { break };
            if let Some(v) = table.get(doc).map_err(|e| self.store.err(e))? {
                out.push((doc, decode_head(self.store, v.value())?));
            }
        }
        Ok(out)
    }
}

/// Whether a prompt naming `name` may mean the skill of `head`.
fn means(head: &DocHead, name: &str) -> bool {
    head.id == name
        || head.name == name
        || head.dir_name == name
        || head.folder == name
        || (!head.category.is_empty() && format!("{}/{}", head.category, head.dir_name) == name)
}
