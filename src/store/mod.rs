//! The store: one redb file holding every profile's index.
//!
//! The file format and its invariants are written down in `docs/store.md`; keep the two
//! in step. Every process opens the file in redb's multi-writer mode, so a gateway, CLI
//! sessions and a cron sync share it: readers never wait for a writer and always see the
//! last committed index, and a sync holds the write lock only while it applies changes it
//! has already computed.

pub mod records;

use records::*;
use redb::{
    ConcurrencyMode, Database, ReadOnlyDatabase, ReadTransaction, ReadableDatabase, ReadableTable,
    ReadableTableMetadata, TableDefinition, TableError, WriteTransaction,
};
use std::any::{Any, TypeId};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The layout version written by this build. See `migrations/`.
pub const SCHEMA_VERSION: u64 = 9;

/// Bytes every redb file starts with.
const REDB_MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];

/// Global key → value table: `schema_version`, `created_by`.
pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("skillidx.meta");
/// Profile name → postcard [`ProfileInfo`].
pub(crate) const PROFILES: TableDefinition<&str, &[u8]> = TableDefinition::new("skillidx.profiles");

/// Page cache for a process that only queries: small, since a hub-sized index's hot
/// postings fit in a few MiB and the process must stay lean.
const READ_CACHE_BYTES: usize = 16 << 20;
/// Page cache for a sync. A full build writes its tables' pages once, in key order, so
/// pages evicted from a small cache are not read back: 32 MiB builds a 90k-skill index as
/// fast as 128 MiB did, with 60 MB less at its peak (`bench-results/profiles.md`, change 20).
const WRITE_CACHE_BYTES: usize = 32 << 20;

/// What [`Store::compact`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compaction {
    /// Pages were moved and the file truncated.
    Compacted,
    /// The file had no free page to give back.
    NothingToDo,
    /// Another process was in a read or write transaction, so the file was left as it is.
    Busy,
}

/// What can go wrong with the index file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// There is no index file yet.
    #[error("no index at {0}: run `skillidx sync` first")]
    Missing(PathBuf),
    /// The index file is empty: cut to nothing (a failed copy, `: > file`), or being
    /// created by a sync at this moment. A sync writes it (a damaged one is replaced).
    #[error("the index file {0} is empty (cut to nothing, or being created by a sync right now): run `skillidx sync --rebuild`")]
    Empty(PathBuf),
    /// The file is not a redb database at all.
    #[error("{0} is not a skillidx index (not a redb database); move it away or run `skillidx sync --rebuild` to replace it")]
    Foreign(PathBuf),
    /// The file is a redb database written by something else.
    #[error("{0} is a redb database but not a skillidx index; use another --db, or run `skillidx sync --rebuild` to replace it")]
    NotOurs(PathBuf),
    /// The file is damaged.
    #[error("the index {path} is damaged ({detail}); run `skillidx sync --rebuild` to rebuild it from the skills")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What redb reported.
        detail: String,
    },
    /// A newer skillidx wrote the file.
    #[error("the index {path} has schema version {found}, newer than this skillidx understands ({SCHEMA_VERSION}); upgrade skillidx, or use another --db")]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// The version found.
        found: u64,
    },
    /// Opening or using the file failed at the I/O level.
    #[error("cannot use the index {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A redb operation failed.
    #[error("index {path}: {detail}")]
    Redb {
        /// The file.
        path: PathBuf,
        /// What redb reported.
        detail: String,
    },
    /// A record did not decode.
    #[error(
        "index {path}: a stored record is unreadable ({detail}); run `skillidx sync --rebuild`"
    )]
    BadRecord {
        /// The file.
        path: PathBuf,
        /// Which record.
        detail: String,
    },
    /// The file is in use by a process whose redb cannot share it with ours.
    #[error("the index {path} is open in another process with an incompatible redb ({detail}); stop that process or use another --db")]
    Incompatible {
        /// The file.
        path: PathBuf,
        /// What redb reported.
        detail: String,
    },
    /// The file indexes another Hermes home.
    #[error("the index {path} belongs to the Hermes home {recorded}, not {requested}; use that home, another --db for this one, or `skillidx sync --rebuild` to keep that index aside and build this home's in its place")]
    OtherHome {
        /// The file.
        path: PathBuf,
        /// The root home recorded in the file.
        recorded: PathBuf,
        /// The root home asked for.
        requested: PathBuf,
    },
    /// skillidx itself failed: a bug, not a problem with the file or the skills.
    #[error("internal error in skillidx while using {path} (please report it): {message}")]
    Internal {
        /// The file being used.
        path: PathBuf,
        /// The panic message and where it was raised.
        message: String,
    },
    /// redb panicked while reading the file, which a damaged file can cause.
    #[error("redb failed while reading the index {path} ({message}); the file may be damaged: run `skillidx sync --rebuild` to rebuild it from the skills, and please report this if it happens again")]
    RedbPanic {
        /// The file.
        path: PathBuf,
        /// The panic message and where it was raised.
        message: String,
    },
    /// Reading the file needs a write first (a repair, or a schema upgrade), and the file
    /// cannot be written here.
    #[error("the index {path} {need}, which needs write access to it ({source}); run `skillidx sync` once where the file is writable, or `skillidx sync --rebuild`")]
    NeedsWrite {
        /// The file.
        path: PathBuf,
        /// Why a reader must write: `was left unclean by a process that ended while writing
        /// it`, `has schema N, older than this skillidx's`.
        need: String,
        /// Why it cannot.
        source: std::io::Error,
    },
    /// A migration step failed.
    #[error("migrating {path} from schema {from}: {detail}")]
    Migration {
        /// The file.
        path: PathBuf,
        /// The version migrated from.
        from: u64,
        /// What failed.
        detail: String,
    },
}

impl StoreError {
    /// Whether the error says the file's contents are damaged (a truncated or scribbled
    /// file, a record that does not decode): what `sync --rebuild` repairs.
    pub fn is_corrupt(&self) -> bool {
        matches!(
            self,
            StoreError::Corrupt { .. }
                | StoreError::BadRecord { .. }
                | StoreError::RedbPanic { .. }
        )
    }

    /// Whether the error says the file (or this process's handle on it) is damaged: a
    /// long-running reader opens the file again before its next request.
    pub fn is_damage(&self) -> bool {
        matches!(
            self,
            StoreError::Corrupt { .. }
                | StoreError::Io { .. }
                | StoreError::Redb { .. }
                | StoreError::BadRecord { .. }
                | StoreError::RedbPanic { .. }
        )
    }
}

/// A result with a [`StoreError`].
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

enum Handle {
    Read(ReadOnlyDatabase),
    Write(Database),
}

/// An open index file.
pub struct Store {
    path: PathBuf,
    handle: Handle,
    /// Per type, the last record decoded by [`Store::decode_shared`], with its bytes.
    shared: Mutex<Vec<Shared>>,
}

/// A record decoded once for the many queries that read it unchanged.
struct Shared {
    ty: TypeId,
    bytes: Vec<u8>,
    value: Arc<dyn Any + Send + Sync>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Opens an existing index for queries.
    ///
    /// A file left needing repair by a killed sync is repaired through a writable open
    /// first, since redb refuses to repair from a read-only handle, and so is a file of an
    /// older schema upgraded: the only opens for reading that write. Where the file cannot
    /// be written, [`StoreError::NeedsWrite`] says which of the two it needed.
    pub fn open_read(path: &Path) -> Result<Store> {
        contain(path, || Self::open_read_inner(path))
    }

    fn open_read_inner(path: &Path) -> Result<Store> {
        check_file(path, false)?;
        let mut builder = redb::Builder::new();
        builder
            .set_concurrency_mode(ConcurrencyMode::MultiWriter)
            .set_cache_size(READ_CACHE_BYTES);
        let store = match builder.open_read_only(path) {
            Ok(db) => Store {
                path: path.to_owned(),
                handle: Handle::Read(db),
                shared: Mutex::default(),
            },
            Err(redb::DatabaseError::RepairAborted) => {
                // A repair rebuilds the header from the file's length, so a file cut short
                // (on a region boundary) would "repair" into one that points at missing pages
                // and fails every query: verify every page while repairing, which is rare.
                return reader_writes(path)
                    .and_then(|()| Self::open_write_inner(path, true))
                    .map_err(|e| {
                        needs_write(
                            e,
                            "was left unclean by a process that ended while writing it",
                        )
                    });
            }
            Err(e) => return Err(map_redb(path, e.into())),
        };
        match store.schema_version()? {
            Some(SCHEMA_VERSION) => Ok(store),
            Some(found) if found > SCHEMA_VERSION => Err(StoreError::NewerSchema {
                path: path.to_owned(),
                found,
            }),
            Some(found) => {
                drop(store);
                reader_writes(path)
                    .and_then(|()| Self::open_write_inner(path, false))
                    .map_err(|e| {
                    needs_write(
                        e,
                        &format!("has schema {found}, older than this skillidx's ({SCHEMA_VERSION}), and must be upgraded"),
                    )
                })
            }
            None => Err(StoreError::NotOurs(path.to_owned())),
        }
    }

    /// Opens the index for syncing, creating it (readable by its owner only) when missing,
    /// and bringing an older schema up to date.
    pub fn open_write(path: &Path) -> Result<Store> {
        contain(path, || Self::open_write_inner(path, false))
    }

    /// Like [`Store::open_write`], but verifies the checksum of every page first, so that a
    /// damaged file is reported as [`StoreError::Corrupt`] instead of being trusted. Reads
    /// the whole file: for `sync --rebuild`, not for every open.
    pub fn open_write_verified(path: &Path) -> Result<Store> {
        contain(path, || Self::open_write_inner(path, true))
    }

    fn open_write_inner(path: &Path, verify: bool) -> Result<Store> {
        let fresh = check_file(path, true)?;
        if fresh {
            create_private(path)?;
        }
        let mut builder = redb::Builder::new();
        builder
            .set_concurrency_mode(ConcurrencyMode::MultiWriter)
            .set_cache_size(WRITE_CACHE_BYTES)
            .set_check_integrity_on_open(verify);
        let db = builder.create(path).map_err(|e| map_redb(path, e.into()))?;
        let store = Store {
            path: path.to_owned(),
            handle: Handle::Write(db),
            shared: Mutex::default(),
        };
        match store.schema_version()? {
            Some(SCHEMA_VERSION) => {}
            Some(found) if found > SCHEMA_VERSION => {
                return Err(StoreError::NewerSchema {
                    path: path.to_owned(),
                    found,
                })
            }
            Some(found) => crate::migrations::upgrade(&store, found)?,
            None if store.is_empty()? => store.initialize()?,
            None => return Err(StoreError::NotOurs(path.to_owned())),
        }
        Ok(store)
    }

    /// Whether this handle can write.
    pub fn is_writable(&self) -> bool {
        matches!(self.handle, Handle::Write(_))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Starts a read transaction: a consistent snapshot of the last commit.
    pub fn read(&self) -> Result<ReadTransaction> {
        let r = match &self.handle {
            Handle::Read(db) => db.begin_read(),
            Handle::Write(db) => db.begin_read(),
        };
        r.map_err(|e| self.err(e))
    }

    /// Starts a write transaction, waiting while another process commits.
    pub fn write(&self) -> Result<WriteTransaction> {
        let Handle::Write(db) = &self.handle else {
            return Err(StoreError::Redb {
                path: self.path.clone(),
                detail: "opened read-only".into(),
            });
        };
        let mut txn = db.begin_write().map_err(|e| self.err(e))?;
        // Every sync is one transaction; losing it on power failure would only cost a re-sync,
        // but readers in other processes must never see a commit that is not on disk.
        txn.set_durability(redb::Durability::Immediate)
            .map_err(|e| self.err(e))?;
        Ok(txn)
    }

    /// Commits `txn`.
    pub fn commit(&self, txn: WriteTransaction) -> Result<()> {
        txn.commit().map_err(|e| self.err(e))
    }

    /// Gives the file's free pages back: moves pages down and truncates the file. After one
    /// big transaction (a first build, a rebuild), redb leaves the pages that transaction
    /// freed as free space inside the file (~18 % of a 90k-skill index).
    ///
    /// Safe while other processes have the file open: redb holds the write lock and the
    /// header lock throughout, so no other process begins a transaction meanwhile (a reader
    /// beginning one waits until it ends), and it refuses to start while another process
    /// holds a read or write transaction. That refusal is not an error: the index is
    /// valid either way, so it returns [`Compaction::Busy`] and leaves the file as it is.
    pub fn compact(&mut self) -> Result<Compaction> {
        let path = self.path.clone();
        let Handle::Write(db) = &mut self.handle else {
            return Err(StoreError::Redb {
                path,
                detail: "opened read-only".into(),
            });
        };
        match db.compact() {
            Ok(true) => Ok(Compaction::Compacted),
            Ok(false) => Ok(Compaction::NothingToDo),
            Err(redb::CompactionError::TransactionInProgress) => Ok(Compaction::Busy),
            Err(e) => Err(map_redb(&path, e.into())),
        }
    }

    /// Maps a redb error on this file to what it means for the user.
    pub fn err(&self, e: impl Into<redb::Error>) -> StoreError {
        map_redb(&self.path, e.into())
    }

    /// Wraps a record that failed to decode.
    pub fn bad_record(&self, what: impl std::fmt::Display) -> StoreError {
        StoreError::BadRecord {
            path: self.path.clone(),
            detail: what.to_string(),
        }
    }

    fn schema_version(&self) -> Result<Option<u64>> {
        let txn = self.read()?;
        let table = match txn.open_table(META) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(self.err(e)),
        };
        self.version_in(&table)
    }

    /// The schema version recorded in `meta` (global table), read in any transaction.
    pub(crate) fn version_in(
        &self,
        meta: &impl ReadableTable<&'static str, &'static [u8]>,
    ) -> Result<Option<u64>> {
        let Some(v) = meta.get("schema_version").map_err(|e| self.err(e))? else {
            return Ok(None);
        };
        let bytes: [u8; 8] = v
            .value()
            .try_into()
            .map_err(|_| self.bad_record("schema_version"))?;
        Ok(Some(u64::from_le_bytes(bytes)))
    }

    /// The root home the index was first synced for, if any sync has recorded one.
    pub fn root_home(&self) -> Result<Option<PathBuf>> {
        let txn = self.read()?;
        let Some(meta) = open_or_none(self, &txn, META)? else {
            return Ok(None);
        };
        let home = meta.get("root_home").map_err(|e| self.err(e))?;
        Ok(home.map(|v| PathBuf::from(String::from_utf8_lossy(v.value()).into_owned())))
    }

    /// Refuses to write to a file that another process brought to a newer schema after this
    /// one opened it: the layout is checked when a file is opened, and a sync may scan for a
    /// long time before it takes the write lock.
    pub(crate) fn check_schema_in(&self, txn: &WriteTransaction) -> Result<()> {
        let meta = txn.open_table(META).map_err(|e| self.err(e))?;
        match self.version_in(&meta)? {
            Some(found) if found > SCHEMA_VERSION => Err(StoreError::NewerSchema {
                path: self.path.clone(),
                found,
            }),
            _ => Ok(()),
        }
    }

    /// Records `root` as the index's root home inside `txn`, or refuses when the index
    /// already belongs to another one ([`StoreError::OtherHome`]).
    pub(crate) fn claim_root_home(&self, txn: &WriteTransaction, root: &Path) -> Result<()> {
        let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
        let recorded = meta
            .get("root_home")
            .map_err(|e| self.err(e))?
            .map(|v| PathBuf::from(String::from_utf8_lossy(v.value()).into_owned()));
        match recorded {
            Some(r) if r == root => Ok(()),
            Some(recorded) => Err(StoreError::OtherHome {
                path: self.path.clone(),
                recorded,
                requested: root.to_owned(),
            }),
            None => {
                let text = root.to_string_lossy();
                meta.insert("root_home", text.as_bytes())
                    .map_err(|e| self.err(e))?;
                Ok(())
            }
        }
    }

    fn is_empty(&self) -> Result<bool> {
        let txn = self.read()?;
        let empty = txn.list_tables().map_err(|e| self.err(e))?.next().is_none();
        Ok(empty)
    }

    fn initialize(&self) -> Result<()> {
        let txn = self.write()?;
        {
            let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
            // Another process may have initialised it between our check and our lock.
            if meta
                .get("schema_version")
                .map_err(|e| self.err(e))?
                .is_none()
            {
                meta.insert("schema_version", SCHEMA_VERSION.to_le_bytes().as_slice())
                    .map_err(|e| self.err(e))?;
                let by = format!("skillidx {}", env!("CARGO_PKG_VERSION"));
                meta.insert("created_by", by.as_bytes())
                    .map_err(|e| self.err(e))?;
            }
            txn.open_table(PROFILES).map_err(|e| self.err(e))?;
        }
        self.commit(txn)
    }

    /// Writes the schema version (used by migrations).
    pub(crate) fn set_schema_version(&self, txn: &WriteTransaction, version: u64) -> Result<()> {
        let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
        meta.insert("schema_version", version.to_le_bytes().as_slice())
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The profiles the index holds.
    pub fn profiles(&self) -> Result<Vec<(String, ProfileInfo)>> {
        let txn = self.read()?;
        let table = match txn.open_table(PROFILES) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(self.err(e)),
        };
        let mut out = Vec::new();
        for row in table.iter().map_err(|e| self.err(e))? {
            let (k, v) = row.map_err(|e| self.err(e))?;
            out.push((
                k.value().to_owned(),
                decode(self, v.value(), "profile info")?,
            ));
        }
        Ok(out)
    }
}

/// The names of one profile's tables.
#[derive(Debug, Clone)]
pub struct ProfileTables {
    manifest: String,
    docs: String,
    terms: String,
    postings: String,
    seed: String,
    state: String,
    dirs: String,
    names: String,
    words: String,
}

impl ProfileTables {
    /// The tables of `profile`.
    pub fn new(profile: &str) -> ProfileTables {
        ProfileTables {
            manifest: format!("profile.{profile}.manifest"),
            docs: format!("profile.{profile}.docs"),
            terms: format!("profile.{profile}.terms"),
            postings: format!("profile.{profile}.postings"),
            seed: format!("profile.{profile}.seed"),
            state: format!("profile.{profile}.state"),
            dirs: format!("profile.{profile}.dirs"),
            names: format!("profile.{profile}.names"),
            words: format!("profile.{profile}.words"),
        }
    }

    /// path → postcard [`ManifestEntry`].
    pub fn manifest(&self) -> TableDefinition<'_, &'static str, &'static [u8]> {
        TableDefinition::new(&self.manifest)
    }
    /// doc id → postcard ([`DocHead`], [`DocBody`]).
    pub fn docs(&self) -> TableDefinition<'_, u32, &'static [u8]> {
        TableDefinition::new(&self.docs)
    }
    /// doc id → the forward index ([`crate::forward`]).
    pub fn terms(&self) -> TableDefinition<'_, u32, &'static [u8]> {
        TableDefinition::new(&self.terms)
    }
    /// term → postings list (see [`crate::postings`]).
    pub fn postings(&self) -> TableDefinition<'_, &'static str, &'static [u8]> {
        TableDefinition::new(&self.postings)
    }
    /// term → the seed field's projection of its postings list
    /// ([`crate::postings::Projection`]): the entries with the seed field, each with that
    /// field's statistics only. The projection of the term's row in
    /// [`postings`](Self::postings), and absent where no entry has the field, whenever the
    /// table's stamp ([`records::SEED_GENERATION`]) is the profile's generation.
    pub fn seed(&self) -> TableDefinition<'_, &'static str, &'static [u8]> {
        TableDefinition::new(&self.seed)
    }
    /// folder path → postcard [`crate::scan::DirListing`]: the folder cache of the scan.
    pub fn dirs(&self) -> TableDefinition<'_, &'static str, &'static [u8]> {
        TableDefinition::new(&self.dirs)
    }
    /// `n:<name>` → postcard `Vec<u32>`: the documents whose frontmatter name or folder
    /// name is `<name>`, ascending; `#generation` → postcard `u64`: the generation the table
    /// was last kept in step with (see [`records::NAMES_GENERATION`]).
    pub fn names(&self) -> TableDefinition<'_, &'static str, &'static [u8]> {
        TableDefinition::new(&self.names)
    }
    /// doc id → postcard `(String, String)`: the document's name and description analysed
    /// ([`crate::analyze::word_order`]), each term once per occurrence, in order, joined by
    /// single spaces. Proximity reads word order here instead of analysing the text again.
    pub fn words(&self) -> TableDefinition<'_, u32, &'static [u8]> {
        TableDefinition::new(&self.words)
    }
    /// `stats` → [`CorpusStats`], `config` → [`ConfigSnapshot`], `offer_rules` →
    /// [`OfferRules`].
    pub fn state(&self) -> TableDefinition<'_, &'static str, &'static [u8]> {
        TableDefinition::new(&self.state)
    }
}

/// Deletes every table of one profile inside `txn` (for a rebuild, or a profile that no
/// longer exists).
pub fn delete_profile_tables(
    store: &Store,
    txn: &WriteTransaction,
    tables: &ProfileTables,
) -> Result<()> {
    let err = |e: TableError| store.err(e);
    txn.delete_table(tables.manifest()).map_err(err)?;
    txn.delete_table(tables.docs()).map_err(err)?;
    txn.delete_table(tables.terms()).map_err(err)?;
    txn.delete_table(tables.postings()).map_err(err)?;
    txn.delete_table(tables.seed()).map_err(err)?;
    txn.delete_table(tables.dirs()).map_err(err)?;
    txn.delete_table(tables.names()).map_err(err)?;
    txn.delete_table(tables.words()).map_err(err)?;
    txn.delete_table(tables.state()).map_err(err)?;
    Ok(())
}

/// Writes the `seed` table of one profile afresh inside `txn`: the projection onto the
/// seed field of every postings list (see [`ProfileTables::seed`]). For a file migrated to
/// schema 7, and for a sync that finds the table behind the lists.
pub fn project_seed(store: &Store, txn: &WriteTransaction, tables: &ProfileTables) -> Result<()> {
    use crate::fields::Field;
    use crate::postings::Projection;
    let postings = txn
        .open_table(tables.postings())
        .map_err(|e| store.err(e))?;
    let mut rows = Vec::new();
    for row in postings.iter().map_err(|e| store.err(e))? {
        let (term, bytes) = row.map_err(|e| store.err(e))?;
        let projection = Projection::of_bytes(Field::Seed, bytes.value())
            .map_err(|e| store.bad_record(format!("postings of {:?}: {e}", term.value())))?;
        if let Some(projection) = projection {
            rows.push((term.value().to_owned(), projection));
        }
    }
    let mut seed = txn.open_table(tables.seed()).map_err(|e| store.err(e))?;
    seed.retain(|_, _| false).map_err(|e| store.err(e))?;
    let rows = rows.iter().map(|(t, p)| (t.as_str(), p.as_slice()));
    insert_sorted(&mut seed, rows).map_err(|e| store.err(e))
}

/// The `state` key of what the last committing sync's walk could not use (a symlink loop, a
/// FIFO, a link out of the skill root): a postcard `Vec<Problem>`, for `stats`.
pub const WALK_PROBLEMS: &str = "walk_problems";

/// Records what the walk could not use, in the sync's write transaction.
pub fn put_walk_problems(
    store: &Store,
    txn: &WriteTransaction,
    tables: &ProfileTables,
    problems: &[crate::scan::Problem],
) -> Result<()> {
    let mut state = txn.open_table(tables.state()).map_err(|e| store.err(e))?;
    if problems.is_empty() {
        state.remove(WALK_PROBLEMS).map_err(|e| store.err(e))?;
    } else {
        state
            .insert(WALK_PROBLEMS, encode(&problems).as_slice())
            .map_err(|e| store.err(e))?;
    }
    Ok(())
}

/// The record under `key` in `table`, or `None` when it is missing or does not decode:
/// for the records a sync can do without (a table's stamp, the committed offer rules),
/// whose absence only makes it rebuild what they describe.
pub fn get_lenient<T: serde::de::DeserializeOwned>(
    store: &Store,
    table: &impl ReadableTable<&'static str, &'static [u8]>,
    key: &str,
) -> Result<Option<T>> {
    let row = table.get(key).map_err(|e| store.err(e))?;
    Ok(row.and_then(|v| postcard::from_bytes(v.value()).ok()))
}

/// Decodes a postcard record, naming it on failure.
pub fn decode<T: serde::de::DeserializeOwned>(
    store: &Store,
    bytes: &[u8],
    what: &str,
) -> Result<T> {
    postcard::from_bytes(bytes).map_err(|e| store.bad_record(format!("{what}: {e}")))
}

impl Store {
    /// Decodes a postcard record that query after query reads unchanged (the offer rules,
    /// 4 % of a short query at 2.8k skills when decoded each time). When `bytes` equal the
    /// bytes last decoded as a `T`, that value comes back without decoding. The key is the
    /// bytes themselves, so no sync, rebuild or other profile can make the value stale.
    pub fn decode_shared<T>(&self, bytes: &[u8], what: &str) -> Result<Arc<T>>
    where
        T: serde::de::DeserializeOwned + Send + Sync + 'static,
    {
        let ty = TypeId::of::<T>();
        // A poisoned lock only means a panic elsewhere mid-update: the entries are whole.
        let mut shared = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        let at = shared.iter().position(|e| e.ty == ty);
        if let Some(e) = at.map(|i| &shared[i]) {
            if e.bytes == bytes {
                if let Ok(value) = Arc::clone(&e.value).downcast::<T>() {
                    return Ok(value);
                }
            }
        }
        let value: Arc<T> = Arc::new(decode(self, bytes, what)?);
        let entry = Shared {
            ty,
            bytes: bytes.to_vec(),
            value: value.clone(),
        };
        match at {
            Some(i) => shared[i] = entry,
            None => shared.push(entry),
        }
        Ok(value)
    }
}

/// Decodes the head of a document record without the body.
pub fn decode_head(store: &Store, bytes: &[u8]) -> Result<DocHead> {
    postcard::take_from_bytes::<DocHead>(bytes)
        .map(|(h, _)| h)
        .map_err(|e| store.bad_record(format!("document head: {e}")))
}

/// Encodes a postcard record.
pub fn encode<T: serde::Serialize>(value: &T) -> Vec<u8> {
    postcard::to_allocvec(value).expect("postcard serialization into a Vec cannot fail")
}

/// Writes `rows`, in ascending key order, into a table of bytes. An empty table (a
/// first build) takes them through one cursor at its end, which packs each leaf as it
/// goes, where an insert per row looks its key up and splits a leaf half full (a first
/// build of 2.8k skills, whose 81k postings lists go in this way: 1.2x faster in all). A
/// cursor refuses a key out of order, so the order is a requirement, not a hint.
pub fn insert_sorted<'k, K: redb::Key + 'static>(
    table: &mut redb::Table<'_, K, &'static [u8]>,
    rows: impl IntoIterator<Item = (K::SelfType<'k>, impl AsRef<[u8]>)>,
) -> std::result::Result<(), redb::Error> {
    if !table.is_empty()? {
        for (key, value) in rows {
            table.insert(key, value.as_ref())?;
        }
        return Ok(());
    }
    let mut end = table.upper_bound_mut(std::ops::Bound::<K::SelfType<'k>>::Unbounded)?;
    for (key, value) in rows {
        end.insert_before(key, value.as_ref())?;
    }
    Ok(end.close()?)
}

/// Opens a table in a read transaction; a table that does not exist yet reads as `None`.
pub fn open_or_none<K: redb::Key + 'static, V: redb::Value + 'static>(
    store: &Store,
    txn: &ReadTransaction,
    def: TableDefinition<K, V>,
) -> Result<Option<redb::ReadOnlyTable<K, V>>> {
    match txn.open_table(def) {
        Ok(t) => Ok(Some(t)),
        Err(TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(store.err(e)),
    }
}

/// Reads the forward index of `doc`, whose field lengths are `lens` (its head's).
pub fn read_terms(
    store: &Store,
    table: &impl ReadableTable<u32, &'static [u8]>,
    doc: u32,
    lens: &[u32; crate::fields::FIELD_COUNT],
) -> Result<Vec<TermEntry>> {
    match table.get(doc).map_err(|e| store.err(e))? {
        Some(v) => crate::forward::decode(v.value(), lens)
            .map_err(|e| store.bad_record(format!("document {doc}: {e}"))),
        None => Ok(Vec::new()),
    }
}

/// Number of rows in a table, for `stats`.
pub fn row_count(store: &Store, table: &impl ReadableTableMetadata) -> Result<u64> {
    table.len().map_err(|e| store.err(e))
}

std::thread_local! {
    static CONTAINING: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    static PANIC_AT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// The message of a caught panic.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Runs `f`, turning a panic inside it into an error instead of taking the process down.
/// While `f` runs, the panic message is not printed: it becomes part of the error. A
/// panic raised inside redb's code ([`StoreError::RedbPanic`]) may come from a damaged
/// file; any other is a bug of skillidx ([`StoreError::Internal`]).
pub fn contain<T, E>(path: &Path, f: impl FnOnce() -> Result<T, E>) -> Result<T, E>
where
    E: From<StoreError>,
{
    catch_quietly(f).unwrap_or_else(|(message, at)| {
        let message = format!("{message} (at {at})");
        let in_redb = at.contains("/redb-") || at.contains("\\redb-");
        Err(E::from(if in_redb {
            StoreError::RedbPanic {
                path: path.to_owned(),
                message,
            }
        } else {
            StoreError::Internal {
                path: path.to_owned(),
                message,
            }
        }))
    })
}

/// Runs `f`, catching a panic without printing it (on whatever thread `f` runs, a rayon
/// worker included): `Err` holds the panic's message and the source file it was raised in,
/// for the caller to report as it sees fit.
pub fn catch_quietly<T>(f: impl FnOnce() -> T) -> Result<T, (String, String)> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if CONTAINING.with(|c| c.get()) == 0 {
                previous(info);
            } else {
                let at = info.location().map(|l| l.file().to_owned());
                PANIC_AT.with(|p| *p.borrow_mut() = at);
            }
        }));
    });
    CONTAINING.with(|c| c.set(c.get() + 1));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    CONTAINING.with(|c| c.set(c.get() - 1));
    result.map_err(|panic| {
        let at = PANIC_AT.with(|p| p.borrow_mut().take()).unwrap_or_default();
        (panic_message(&*panic), at)
    })
}

/// Checks that `path` is absent, empty or starts like a redb file. Returns whether it is
/// absent or empty.
/// A reader is about to open the file for writing (fail point [`READER_WRITES`], whose
/// `error` stands for a file system that refuses the write).
///
/// [`READER_WRITES`]: crate::failpoint::names::READER_WRITES
fn reader_writes(path: &Path) -> Result<()> {
    crate::failpoint::point(crate::failpoint::names::READER_WRITES).map_err(|source| {
        StoreError::Io {
            path: path.to_owned(),
            source,
        }
    })
}

/// A reader's writable open failed at the I/O level (a read-only file system, no write
/// permission): says why the reader had to write.
fn needs_write(e: StoreError, need: &str) -> StoreError {
    match e {
        StoreError::Io { path, source } => StoreError::NeedsWrite {
            path,
            need: need.to_owned(),
            source,
        },
        other => other,
    }
}

fn check_file(path: &Path, may_create: bool) -> Result<bool> {
    use std::io::Read;
    let mut open = std::fs::OpenOptions::new();
    open.read(true);
    // A FIFO (or a device) put at the path would block an open for reading, and a reader
    // must never wait: opened without blocking, then refused as not a regular file.
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        open.custom_flags(libc::O_NONBLOCK);
    }
    let mut file = match open.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return if may_create {
                Ok(true)
            } else {
                Err(StoreError::Missing(path.to_owned()))
            };
        }
        Err(source) => {
            return Err(StoreError::Io {
                path: path.to_owned(),
                source,
            })
        }
    };
    match file.metadata() {
        Ok(m) if m.is_file() => {}
        Ok(_) => {
            return Err(StoreError::Io {
                path: path.to_owned(),
                source: std::io::Error::other(
                    "not a regular file (a FIFO, a device or a folder); move it away or run `skillidx sync --rebuild`",
                ),
            })
        }
        Err(source) => {
            return Err(StoreError::Io {
                path: path.to_owned(),
                source,
            })
        }
    }
    let mut head = [0u8; REDB_MAGIC.len()];
    let mut got = 0;
    while got < head.len() {
        match file.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(source) => {
                return Err(StoreError::Io {
                    path: path.to_owned(),
                    source,
                })
            }
        }
    }
    match got {
        0 if may_create => Ok(true),
        0 => Err(StoreError::Empty(path.to_owned())),
        n if n < head.len() || head != REDB_MAGIC => Err(StoreError::Foreign(path.to_owned())),
        _ => Ok(false),
    }
}

fn create_private(path: &Path) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
            path: path.to_owned(),
            source,
        })?;
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path).map(drop).map_err(|source| StoreError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Maps a redb error on `path` to a [`StoreError`] by its kind.
fn map_redb(path: &Path, e: redb::Error) -> StoreError {
    let path = path.to_owned();
    match e {
        // redb reads pages where the header says they are: a file that ends early was cut.
        redb::Error::Io(source) if source.kind() == std::io::ErrorKind::UnexpectedEof => {
            StoreError::Corrupt {
                path,
                detail: format!(
                    "the file ends before its data does, as a truncated copy does: {source}"
                ),
            }
        }
        redb::Error::Io(source) => StoreError::Io { path, source },
        redb::Error::PreviousIo => StoreError::Corrupt {
            path,
            detail: "an earlier read of it failed in this process".into(),
        },
        redb::Error::Corrupted(detail) => StoreError::Corrupt { path, detail },
        redb::Error::UpgradeRequired(v) => StoreError::Corrupt {
            path,
            detail: format!("written by an old redb (file format {v})"),
        },
        e @ (redb::Error::TableTypeMismatch { .. }
        | redb::Error::TableIsMultimap(_)
        | redb::Error::TableIsNotMultimap(_)
        | redb::Error::TypeDefinitionChanged { .. }) => StoreError::BadRecord {
            path,
            detail: e.to_string(),
        },
        e @ (redb::Error::DatabaseAlreadyOpen | redb::Error::LockProtocolMismatch) => {
            StoreError::Incompatible {
                path,
                detail: e.to_string(),
            }
        }
        e @ (redb::Error::LockPoisoned(_) | redb::Error::TransactionPoisoned) => {
            StoreError::Internal {
                path,
                message: e.to_string(),
            }
        }
        other => StoreError::Redb {
            path,
            detail: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_record_is_decoded_again_when_its_bytes_change() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_write(&dir.path().join("index.redb")).unwrap();
        let (a, b) = (encode(&vec![1u32, 2, 3]), encode(&vec![1u32, 2, 4]));
        let first: Arc<Vec<u32>> = store.decode_shared(&a, "test").unwrap();
        let again: Arc<Vec<u32>> = store.decode_shared(&a, "test").unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let changed: Arc<Vec<u32>> = store.decode_shared(&b, "test").unwrap();
        assert_eq!(*changed, vec![1, 2, 4]);
        // The same bytes read as another type are that type's own value.
        let bytes: Arc<Vec<u8>> = store.decode_shared(&b, "test").unwrap();
        assert_eq!(*bytes, vec![1, 2, 4]);
        let back: Arc<Vec<u32>> = store.decode_shared(&a, "test").unwrap();
        assert_eq!(*back, vec![1, 2, 3]);
        assert!(store.decode_shared::<Vec<u32>>(&[0xff], "test").is_err());
    }

    #[test]
    fn rows_written_sorted_read_back_the_same_into_an_empty_table_or_not() {
        const T: TableDefinition<&str, &[u8]> = TableDefinition::new("t");
        let dir = tempfile::tempdir().unwrap();
        let db = redb::Database::create(dir.path().join("t.redb")).unwrap();
        // Enough rows, of varied sizes (one larger than a page), to fill many leaves.
        let rows: Vec<(String, Vec<u8>)> = (0..3_000u32)
            .map(|i| {
                (
                    format!("term{i:05}"),
                    vec![i as u8; (i % 97) as usize + (i % 1000 == 7) as usize * 9_000],
                )
            })
            .collect();
        let read = |db: &redb::Database| -> Vec<(String, Vec<u8>)> {
            let txn = db.begin_read().unwrap();
            let t = txn.open_table(T).unwrap();
            t.iter()
                .unwrap()
                .map(|r| r.unwrap())
                .map(|(k, v)| (k.value().to_owned(), v.value().to_vec()))
                .collect()
        };
        // Into an empty table (the cursor), then a second half into the same table (inserts).
        let (first, second) = rows.split_at(1_000);
        for half in [second, first] {
            let txn = db.begin_write().unwrap();
            {
                let mut t = txn.open_table(T).unwrap();
                insert_sorted(&mut t, half.iter().map(|(k, v)| (k.as_str(), v))).unwrap();
            }
            txn.commit().unwrap();
        }
        assert_eq!(read(&db), rows);
        // Out of order into an empty table is an error, not a table out of order.
        let db = redb::Database::create(dir.path().join("u.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        let mut t = txn.open_table(T).unwrap();
        let backwards = [("b", [1u8]), ("a", [2u8])];
        assert!(insert_sorted(&mut t, backwards.iter().map(|(k, v)| (*k, v))).is_err());
    }
}
