//! The temporary file behind every atomic save: created exclusively in the target's directory
//! (mode 0600 on Unix, a random name starting `.bloomery-`), removed if dropped, renamed over
//! the target by [`TempFile::persist`]. With the `tempfile` feature this is the `tempfile`
//! crate's `NamedTempFile`; without it, the same steps done here.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// A temporary file in a chosen directory, deleted on drop unless persisted.
pub(crate) struct TempFile {
    #[cfg(feature = "tempfile")]
    inner: tempfile::NamedTempFile,
    #[cfg(not(feature = "tempfile"))]
    inner: own::Named,
}

impl TempFile {
    /// A new empty file `dir/.bloomery-<random><suffix>`, created exclusively.
    pub(crate) fn new_in(dir: &Path, suffix: &str) -> io::Result<Self> {
        #[cfg(feature = "tempfile")]
        let inner = tempfile::Builder::new()
            .prefix(".bloomery-")
            .suffix(suffix)
            .tempfile_in(dir)?;
        #[cfg(not(feature = "tempfile"))]
        let inner = own::Named::new_in(dir, suffix)?;
        Ok(Self { inner })
    }

    /// The directory a save to `path` puts its temporary file in.
    pub(crate) fn dir_of(path: &Path) -> PathBuf {
        match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        }
    }

    pub(crate) fn as_file(&self) -> &File {
        self.inner.as_file()
    }

    pub(crate) fn as_file_mut(&mut self) -> &mut File {
        self.inner.as_file_mut()
    }

    pub(crate) fn path(&self) -> &Path {
        self.inner.path()
    }

    /// A second handle on the same file.
    #[cfg(feature = "parquet")]
    pub(crate) fn reopen(&self) -> io::Result<File> {
        self.inner.reopen()
    }

    /// Rename the file to `path` (replacing a file there atomically); it is no longer deleted.
    pub(crate) fn persist(self, path: &Path) -> io::Result<()> {
        #[cfg(feature = "tempfile")]
        return self.inner.persist(path).map(drop).map_err(|e| e.error);
        #[cfg(not(feature = "tempfile"))]
        return self.inner.persist(path);
    }
}

#[cfg(not(feature = "tempfile"))]
mod own {
    use std::fs::{File, OpenOptions};
    use std::io;
    use std::path::{Path, PathBuf};

    pub(super) struct Named {
        path: PathBuf,
        /// `None` once persisted.
        file: Option<File>,
    }

    impl Named {
        pub(super) fn new_in(dir: &Path, suffix: &str) -> io::Result<Self> {
            let mut last = None;
            for _ in 0..16 {
                let mut r = [0u8; 8];
                getrandom::getrandom(&mut r).map_err(|e| io::Error::other(e.to_string()))?;
                let name = format!(".bloomery-{:016x}{suffix}", u64::from_le_bytes(r));
                let path = dir.join(name);
                let mut o = OpenOptions::new();
                o.read(true).write(true).create_new(true);
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
                match o.open(&path) {
                    Ok(file) => {
                        return Ok(Self {
                            path,
                            file: Some(file),
                        })
                    }
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                    Err(e) => return Err(e),
                }
            }
            Err(last.unwrap_or_else(|| io::Error::other("no free temporary file name")))
        }

        pub(super) fn as_file(&self) -> &File {
            self.file.as_ref().expect("not persisted")
        }

        pub(super) fn as_file_mut(&mut self) -> &mut File {
            self.file.as_mut().expect("not persisted")
        }

        pub(super) fn path(&self) -> &Path {
            &self.path
        }

        #[cfg(feature = "parquet")]
        pub(super) fn reopen(&self) -> io::Result<File> {
            OpenOptions::new().read(true).write(true).open(&self.path)
        }

        pub(super) fn persist(mut self, target: &Path) -> io::Result<()> {
            std::fs::rename(&self.path, target)?;
            self.file = None;
            Ok(())
        }
    }

    impl Drop for Named {
        fn drop(&mut self) {
            if self.file.take().is_some() {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn a_temp_file_is_removed_unless_persisted_and_persist_replaces_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let t = TempFile::new_in(dir.path(), ".tmp").unwrap();
        let p = t.path().to_path_buf();
        assert!(p.starts_with(dir.path()));
        assert!(p
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with(".bloomery-"));
        assert!(p.exists());
        drop(t);
        assert!(!p.exists());

        let target = dir.path().join("f");
        std::fs::write(&target, b"old").unwrap();
        let mut t = TempFile::new_in(dir.path(), ".tmp").unwrap();
        t.as_file_mut().write_all(b"new").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = t.as_file().metadata().unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        let p = t.path().to_path_buf();
        t.persist(&target).unwrap();
        assert!(!p.exists());
        let mut s = String::new();
        std::fs::File::open(&target)
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
