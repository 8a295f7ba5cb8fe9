//! Pulled modules kept on disk by manifest digest, so a tag that still
//! resolves to the same digest is not pulled again. kwctl keeps pulled
//! policies in its store (kubewarden/kubewarden-controller,
//! `crates/policy-fetcher/src/store/mod.rs`); keying by digest instead of by
//! tag means a moved tag is always noticed.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{OciError, Options, PolicyRef, pull, resolve};

/// The default cache: `$XDG_CACHE_HOME/olm-guard/modules`, else
/// `~/.cache/olm-guard/modules`.
pub fn default_cache_dir() -> Option<PathBuf> {
    Some(olm_guard_runtime::cache_home()?.join("modules"))
}

/// A module in the cache.
#[derive(Debug, Clone)]
pub struct Cached {
    /// `<cache>/sha256/<hex>.wasm`.
    pub path: PathBuf,
    /// The manifest digest, `sha256:<hex>`.
    pub digest: String,
    /// Whether the module was already there (no pull).
    pub hit: bool,
}

/// Where the module of manifest `digest` lives in `cache_dir`.
pub fn cache_path(cache_dir: &Path, digest: &str) -> PathBuf {
    let (algorithm, hex) = digest.split_once(':').unwrap_or(("sha256", digest));
    cache_dir.join(algorithm).join(format!("{hex}.wasm"))
}

impl Cached {
    /// The module `reference` names, from `cache_dir` when its digest is
    /// there, else pulled and stored.
    pub fn fetch(
        reference: &PolicyRef,
        options: &Options,
        cache_dir: &Path,
    ) -> Result<Cached, OciError> {
        let digest = resolve(reference, options)?;
        let path = cache_path(cache_dir, &digest);
        if path.is_file() {
            return Ok(Cached {
                path,
                digest,
                hit: true,
            });
        }
        // The tag may have moved since it was resolved: store the module
        // under the digest actually pulled.
        let pulled = pull(reference, options)?;
        let path = cache_path(cache_dir, &pulled.digest);
        write_atomically(&path, &pulled.module)?;
        Ok(Cached {
            path,
            digest: pulled.digest,
            hit: false,
        })
    }
}

/// Write through a temporary file and rename, so a reader never sees half
/// a module and two concurrent pulls do not corrupt each other.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), OciError> {
    let io = |error| OciError::Io {
        path: path.display().to_string(),
        error,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("module"),
        std::process::id()
    ));
    let mut file = std::fs::File::create(&tmp).map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.sync_all().map_err(io)?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_by_digest() {
        let digest = format!("sha256:{}", "0f".repeat(32));
        assert_eq!(
            cache_path(Path::new("/c"), &digest),
            PathBuf::from(format!("/c/sha256/{}.wasm", "0f".repeat(32)))
        );
    }

    #[test]
    fn atomic_writes_create_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sha256/x.wasm");
        write_atomically(&path, b"abc").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"abc");
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
    }
}
