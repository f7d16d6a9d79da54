//! [`Index`]: the library's front door, one open index file and the operations on it.

use crate::home::{HomeError, Profile, ProfileError};
use crate::offer::Session;
use crate::scan::Problem;
use crate::search::{Explanation, Hit, Offered, SearchOptions, Snapshot};
use crate::store::records::ManifestEntry;
use crate::store::{self, decode, ProfileTables, Store, StoreError};
use crate::sync::{self, SyncError, SyncOptions, SyncReport};
use redb::ReadableTable;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Any error of the library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The index file.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A profile name or directory.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// The Hermes home.
    #[error(transparent)]
    Home(#[from] HomeError),
    /// The profile exists but the index holds nothing for it yet.
    #[error("profile {profile:?} is not in the index {db} yet (indexed: {}); run `skillidx sync --profile {profile}`", if indexed.is_empty() { "none".to_owned() } else { indexed.join(", ") })]
    NotIndexed {
        /// The profile asked for.
        profile: String,
        /// The index file.
        db: PathBuf,
        /// The profiles it holds.
        indexed: Vec<String>,
    },
}

impl From<SyncError> for Error {
    fn from(e: SyncError) -> Self {
        match e {
            SyncError::Store(s) => Error::Store(s),
        }
    }
}

/// One indexed skill, as `list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillEntry {
    /// The id.
    pub id: String,
    /// The category.
    pub category: String,
    /// The description.
    pub description: String,
    /// The SKILL.md path.
    pub path: String,
    /// `None` when offered, else why not.
    pub inactive: Option<String>,
    /// Parser fallbacks taken.
    pub notes: Vec<String>,
}

/// A profile's figures, as `stats` shows them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ProfileStats {
    /// The profile.
    pub profile: String,
    /// Its home.
    pub home: Option<String>,
    /// Skills offered.
    pub active: u32,
    /// Skills indexed but not offered.
    pub inactive: u64,
    /// Files skipped, with the reason.
    pub skipped: Vec<Problem>,
    /// Skills whose name or description holds a possible prompt injection (neutralised in
    /// what is injected), with what was found.
    pub flagged: Vec<Problem>,
    /// Distinct terms.
    pub terms: u64,
    /// Average length of the seed document.
    pub avg_length: f64,
    /// Commits so far.
    pub generation: u64,
    /// When the last committing sync started, ns since the epoch.
    pub synced_at_ns: i64,
    /// The Hermes release line whose offer rules the last committing sync followed
    /// (`0.21`; `None` for an index made before skillidx knew several).
    pub hermes_version: Option<String>,
}

/// An open index file.
#[derive(Debug)]
pub struct Index {
    store: Store,
}

/// A file `sync --rebuild` moved aside to build a fresh index in its place
/// ([`Index::open_for_rebuild`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aside {
    /// Where the file is now.
    pub path: PathBuf,
    /// The root home the file indexed, when that is why it was moved; `None` for a file
    /// that was damaged or not an index.
    pub other_home: Option<PathBuf>,
}

impl Index {
    /// Opens an existing index for queries.
    pub fn open(db: &Path) -> Result<Index, Error> {
        Ok(Index {
            store: Store::open_read(db)?,
        })
    }

    /// Opens (or creates) an index for syncing and queries.
    pub fn open_writable(db: &Path) -> Result<Index, Error> {
        Ok(Index {
            store: Store::open_write(db)?,
        })
    }

    /// Opens an index for syncing: read-only while it exists, so a sync that finds nothing
    /// changed leaves the file untouched (it opens the file for writing only to commit).
    pub fn open_for_sync(db: &Path) -> Result<Index, Error> {
        match Store::open_read(db) {
            Ok(store) => Ok(Index { store }),
            Err(StoreError::Missing(_) | StoreError::Empty(_)) => Self::open_writable(db),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens an index for `sync --rebuild` of the root home `root`. A file that is damaged
    /// or not an index is moved aside (to `<file>.broken-<time>-<pid>`) and replaced, as the
    /// user asked for a fresh one. So is another home's index (to `.other-home-…`): the home
    /// was moved or restored elsewhere with its index inside it, or `--db` names a file
    /// another home uses; that index is kept, not overwritten.
    pub fn open_for_rebuild(db: &Path, root: &Path) -> Result<(Index, Option<Aside>), Error> {
        // An empty file is moved aside too rather than filled in place: a reader holding
        // it (cut to nothing under it) follows a new file, not one with its old identity.
        // So is anything but a regular file (a FIFO would block every reader).
        let empty = std::fs::metadata(db).is_ok_and(|m| !m.is_file() || m.len() == 0);
        let verified = if empty {
            Err(StoreError::Empty(db.to_owned()))
        } else {
            Store::open_write_verified(db)
        };
        let other_home = match verified {
            Ok(store) => match store.root_home()? {
                Some(recorded) if recorded != root => Some(recorded),
                _ => return Ok((Index { store }, None)),
            },
            Err(
                StoreError::Foreign(_)
                | StoreError::NotOurs(_)
                | StoreError::Corrupt { .. }
                | StoreError::BadRecord { .. }
                | StoreError::Empty(_),
            ) => None,
            Err(e) => return Err(e.into()),
        };
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut aside = db.as_os_str().to_owned();
        // The process id too: two rebuilds that looked at once must not rename onto one name,
        // which would drop the file the first moved aside.
        let kind = if other_home.is_some() {
            "other-home"
        } else {
            "broken"
        };
        aside.push(format!(".{kind}-{stamp}-{}", std::process::id()));
        let aside = PathBuf::from(aside);
        crate::failpoint::point(crate::failpoint::names::REBUILD_BEFORE_RENAME).map_err(
            |source| StoreError::Io {
                path: db.to_owned(),
                source,
            },
        )?;
        std::fs::rename(db, &aside).map_err(|source| StoreError::Io {
            path: db.to_owned(),
            source,
        })?;
        Ok((
            Index {
                store: Store::open_write(db)?,
            },
            Some(Aside {
                path: aside,
                other_home,
            }),
        ))
    }

    /// The underlying store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Refuses an index that records another root home than `root` (a `--db` shared by two
    /// homes would answer one home's questions with the other's skills).
    pub fn ensure_home(&self, root: &Path) -> Result<(), Error> {
        match self.store.root_home()? {
            Some(recorded) if recorded != root => Err(StoreError::OtherHome {
                path: self.store.path().to_owned(),
                recorded,
                requested: root.to_owned(),
            }
            .into()),
            _ => Ok(()),
        }
    }

    /// Fails with [`Error::NotIndexed`] unless the index holds `profile`.
    pub fn ensure_profile(&self, profile: &str) -> Result<(), Error> {
        let indexed = self.profiles()?;
        if indexed.iter().any(|p| p == profile) {
            return Ok(());
        }
        Err(Error::NotIndexed {
            profile: profile.to_owned(),
            db: self.store.path().to_owned(),
            indexed,
        })
    }

    /// Gives the index file's free pages back to the file system ([`Store::compact`]): for
    /// after a first build or a rebuild, whose one big transaction leaves many free pages.
    /// Needs a handle opened for writing ([`Index::open_writable`],
    /// [`Index::open_for_rebuild`]). Another process in a transaction makes it a no-op
    /// ([`store::Compaction::Busy`]), not an error.
    pub fn compact(&mut self) -> Result<store::Compaction, Error> {
        let path = self.store.path().to_owned();
        let store = &mut self.store;
        Ok(store::contain(&path, || store.compact())?)
    }

    /// Forgets `profile`: its tables and its entry in the profile list, in one commit.
    /// For profiles whose folder is gone (`sync --all-profiles`).
    pub fn drop_profile(&self, profile: &str) -> Result<(), Error> {
        store::contain(self.store.path(), || {
            let writer;
            let store = if self.store.is_writable() {
                &self.store
            } else {
                writer = Store::open_write(self.store.path())?;
                &writer
            };
            let txn = store.write()?;
            store::delete_profile_tables(store, &txn, &ProfileTables::new(profile))?;
            // The semantic stage's vectors (derived data, `docs/store.md`): kept by a
            // rebuild, but not for a profile that is gone. Any build drops them.
            let vectors = format!("profile.{profile}.vectors");
            txn.delete_table(redb::TableDefinition::<&[u8], &[u8]>::new(&vectors))
                .map_err(|e| store.err(e))?;
            txn.open_table(store::PROFILES)
                .map_err(|e| store.err(e))?
                .remove(profile)
                .map_err(|e| store.err(e))?;
            store.commit(txn)?;
            Ok(())
        })
    }

    /// Syncs one profile.
    pub fn sync(&self, profile: &Profile, opts: &SyncOptions<'_>) -> Result<SyncReport, Error> {
        store::contain(self.store.path(), || {
            Ok(sync::sync_profile(&self.store, profile, opts)?)
        })
    }

    /// The top hits for `query` in `profile`.
    pub fn search(
        &self,
        profile: &str,
        query: &str,
        opts: &SearchOptions,
    ) -> Result<Vec<Hit>, Error> {
        store::contain(self.store.path(), || {
            let txn = self.store.read()?;
            crate::failpoint::point(crate::failpoint::names::SEARCH_IN_READ).map_err(|source| {
                StoreError::Io {
                    path: self.store.path().to_owned(),
                    source,
                }
            })?;
            Ok(Snapshot::open(&self.store, &txn, profile)?.search(query, opts)?)
        })
    }

    /// What Hermes' `<available_skills>` lists for `profile` in `session`: every skill
    /// offered there, sorted by category and name.
    pub fn offered(&self, profile: &str, session: &Session) -> Result<Vec<Offered>, Error> {
        store::contain(self.store.path(), || {
            let txn = self.store.read()?;
            Ok(Snapshot::open(&self.store, &txn, profile)?.offered(session)?)
        })
    }

    /// Why `skill` scores what it does for `query`.
    pub fn explain(
        &self,
        profile: &str,
        query: &str,
        skill: &str,
        opts: &SearchOptions,
    ) -> Result<Option<Explanation>, Error> {
        store::contain(self.store.path(), || {
            let txn = self.store.read()?;
            Ok(Snapshot::open(&self.store, &txn, profile)?.explain(query, skill, opts)?)
        })
    }

    /// Every indexed skill of `profile`, by id.
    pub fn list(&self, profile: &str) -> Result<Vec<SkillEntry>, Error> {
        store::contain(self.store.path(), || self.list_inner(profile))
    }

    fn list_inner(&self, profile: &str) -> Result<Vec<SkillEntry>, Error> {
        let txn = self.store.read()?;
        let snap = Snapshot::open(&self.store, &txn, profile)?;
        let mut out: Vec<SkillEntry> = snap
            .all_docs()?
            .into_iter()
            .map(|(_, h, b)| SkillEntry {
                id: h.id,
                category: b.category,
                description: b.description,
                path: h.key,
                inactive: h.inactive.map(|w| w.to_string()),
                notes: b.notes,
            })
            .collect();
        out.sort_by(|a, b| a.id.cmp(&b.id).then_with(|| a.path.cmp(&b.path)));
        Ok(out)
    }

    /// The profiles this index holds.
    pub fn profiles(&self) -> Result<Vec<String>, Error> {
        Ok(self
            .store
            .profiles()?
            .into_iter()
            .map(|(name, _)| name)
            .collect())
    }

    /// The Hermes release whose offer rules `profile`'s last sync followed (`None`: never
    /// synced, or by a build that did not record it).
    pub fn follows(&self, profile: &str) -> Result<Option<crate::version::HermesVersion>, Error> {
        store::contain(self.store.path(), || {
            let txn = self.store.read()?;
            let tables = ProfileTables::new(profile);
            let Some(state) = store::open_or_none(&self.store, &txn, tables.state())? else {
                return Ok(None);
            };
            let rules: Option<u64> =
                store::get_lenient(&self.store, &state, store::records::RULES_VERSION_KEY)?;
            Ok(rules.and_then(crate::version::HermesVersion::of_reading_rules))
        })
    }

    /// Figures for `profile`.
    pub fn stats(&self, profile: &str) -> Result<ProfileStats, Error> {
        store::contain(self.store.path(), || self.stats_inner(profile))
    }

    fn stats_inner(&self, profile: &str) -> Result<ProfileStats, Error> {
        let txn = self.store.read()?;
        let snap = Snapshot::open(&self.store, &txn, profile)?;
        let tables = ProfileTables::new(profile);
        let s = snap.stats();
        let mut out = ProfileStats {
            profile: profile.to_owned(),
            home: self
                .store
                .profiles()?
                .into_iter()
                .find(|(n, _)| n == profile)
                .map(|(_, i)| i.home),
            active: s.docs,
            generation: s.generation,
            synced_at_ns: s.synced_at_ns,
            avg_length: if s.docs == 0 {
                0.0
            } else {
                s.sum_lens[crate::fields::Field::Seed as usize] as f64 / f64::from(s.docs)
            },
            ..Default::default()
        };
        if let Some(docs) = store::open_or_none(&self.store, &txn, tables.docs())? {
            out.inactive = store::row_count(&self.store, &docs)?.saturating_sub(u64::from(s.docs));
        }
        for (_, head, body) in snap.all_docs()? {
            for flag in body.flags {
                out.flagged.push(Problem {
                    path: PathBuf::from(&head.key),
                    reason: flag,
                });
            }
        }
        if let Some(postings) = store::open_or_none(&self.store, &txn, tables.postings())? {
            out.terms = store::row_count(&self.store, &postings)?;
        }
        if let Some(state) = store::open_or_none(&self.store, &txn, tables.state())? {
            let walked: Option<Vec<Problem>> =
                store::get_lenient(&self.store, &state, store::WALK_PROBLEMS)?;
            out.skipped.extend(walked.unwrap_or_default());
            let rules: Option<u64> =
                store::get_lenient(&self.store, &state, store::records::RULES_VERSION_KEY)?;
            out.hermes_version = rules
                .and_then(crate::version::HermesVersion::of_reading_rules)
                .map(|v| v.to_string());
        }
        if let Some(manifest) = store::open_or_none(&self.store, &txn, tables.manifest())? {
            for row in manifest.iter().map_err(|e| self.store.err(e))? {
                let (k, v) = row.map_err(|e| self.store.err(e))?;
                let entry: ManifestEntry = decode(&self.store, v.value(), "manifest entry")?;
                if let store::records::EntryState::Skipped(reason) = entry.state {
                    out.skipped.push(Problem {
                        path: PathBuf::from(k.value()),
                        reason,
                    });
                }
            }
        }
        Ok(out)
    }
}
