//! The recovery directory (Spark's FILESYSTEM recovery mode), the IO side: the records the core
//! asks to persist ([`Effect::Persist`](crate::node::master::Effect::Persist)), one JSON file each
//! (`app_<id>.json`, `worker_<id>.json`, `driver_<id>.json`, ids percent-encoded), written to a
//! temporary file, synced, renamed over the old one, and the directory synced: a crash at any
//! point leaves either the old record or the new one, never a torn one. Files that cannot be
//! read are skipped with a warning.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::node::master::{Record, RecordKind, Stored};

use super::recovery::{decode_record, encode_record, record_name};

/// The recovery directory could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A record could not be encoded.
    #[error("cannot encode a record: {0}")]
    Encode(#[from] serde_json::Error),
}

/// A recovery directory.
#[derive(Debug, Clone)]
pub struct Persistence {
    dir: PathBuf,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> PersistError + '_ {
    move |source| PersistError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Persistence {
    /// Opens (creating) the directory.
    pub fn open(dir: &Path) -> Result<Persistence, PersistError> {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        Ok(Persistence {
            dir: dir.to_path_buf(),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, kind: RecordKind, id: &str) -> PathBuf {
        self.dir.join(format!("{}.json", record_name(kind, id)))
    }

    /// Writes one record atomically.
    fn write(&self, kind: RecordKind, id: &str, body: &[u8]) -> Result<(), PersistError> {
        let path = self.path(kind, id);
        let tmp = self.dir.join(format!(
            ".tmp-{}-{}",
            record_name(kind, id),
            std::process::id()
        ));
        {
            let mut f = fs::File::create(&tmp).map_err(io_err(&tmp))?;
            f.write_all(body).map_err(io_err(&tmp))?;
            f.sync_all().map_err(io_err(&tmp))?;
        }
        fs::rename(&tmp, &path).map_err(io_err(&path))?;
        self.sync_dir()
    }

    /// Removes one record (absent is fine).
    fn remove(&self, kind: RecordKind, id: &str) -> Result<(), PersistError> {
        let path = self.path(kind, id);
        match fs::remove_file(&path) {
            Ok(()) => self.sync_dir(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_err(&path)(e)),
        }
    }

    fn sync_dir(&self) -> Result<(), PersistError> {
        // Directories can be opened and synced on Unix; elsewhere this is best effort.
        match fs::File::open(&self.dir) {
            Ok(d) => {
                let _ = d.sync_all();
                Ok(())
            }
            Err(e) => Err(io_err(&self.dir)(e)),
        }
    }

    /// Writes `record` atomically (an [`Effect::Persist`](crate::node::master::Effect::Persist)).
    pub fn store(&self, record: &Record) -> Result<(), PersistError> {
        self.write(record.kind(), record.id(), &encode_record(record)?)
    }

    /// Removes the record of `kind` and `id` (an
    /// [`Effect::Unpersist`](crate::node::master::Effect::Unpersist)).
    pub fn forget(&self, kind: RecordKind, id: &str) -> Result<(), PersistError> {
        self.remove(kind, id)
    }

    /// Reads every record; unreadable files are skipped with a warning.
    pub fn read_all(&self) -> Result<Stored, PersistError> {
        let mut stored = Stored::default();
        let entries = fs::read_dir(&self.dir).map_err(io_err(&self.dir))?;
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths {
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if !name.ends_with(".json") {
                continue;
            }
            let body = match fs::read(&path) {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "skipping an unreadable record");
                    continue;
                }
            };
            let record = name.trim_end_matches(".json");
            if let Err(why) = decode_record(&mut stored, record, &body) {
                tracing::warn!(path = %path.display(), "skipping a malformed record: {why}");
            }
        }
        Ok(stored)
    }
}
