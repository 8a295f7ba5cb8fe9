//! The limits of a module instance and the compile cache: the flags of
//! every command that evaluates (`run`, `test`, `bench`, `audit`), and the
//! runtime they ask for.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use olm_guard_runtime::{CallError, Limits, Runtime};

/// `--memory-limit-mib`, `--timeout-ms` and the compile cache flags.
#[derive(Args)]
pub struct LimitArgs {
    /// Memory cap for a module instance, in MiB.
    #[arg(long, default_value_t = 256)]
    pub memory_limit_mib: usize,
    /// Execution deadline for one call, in milliseconds, at least 1 (0 is
    /// refused: there is no "no limit", as policy-server always has one;
    /// counted in ticks of 5 ms).
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_ms: u64,
    /// Compile every module afresh instead of reusing the compiled code kept
    /// in the compile cache.
    #[arg(long, env = "OLM_GUARD_NO_COMPILE_CACHE")]
    pub no_compile_cache: bool,
    /// Where compiled modules are kept, keyed by the module's bytes, the
    /// engine's settings and wasmtime's version; default
    /// `$XDG_CACHE_HOME/olm-guard/compiled` (else `~/.cache/olm-guard/compiled`).
    #[arg(long, value_name = "DIR", env = "OLM_GUARD_COMPILE_CACHE_DIR")]
    pub compile_cache_dir: Option<PathBuf>,
}

impl LimitArgs {
    /// The runtime these flags ask for: the limits, and the compile cache
    /// unless `--no-compile-cache`. A cache that cannot be used is a
    /// warning, not an error: it only saves time.
    pub fn runtime(&self) -> anyhow::Result<Runtime> {
        let dir = match (&self.compile_cache_dir, self.no_compile_cache) {
            (_, true) => None,
            (Some(dir), false) => Some(dir.clone()),
            (None, false) => olm_guard_runtime::cache_home().map(|home| home.join("compiled")),
        };
        if let Some(dir) = dir {
            match Runtime::with_compile_cache(self.limits(), &dir) {
                Ok(runtime) => return Ok(runtime),
                Err(e) => eprintln!(
                    "olm-guard: warning: {:#}; compiling without it (--no-compile-cache silences this)",
                    anyhow::Error::from(e)
                ),
            }
        }
        Ok(Runtime::new(self.limits())?)
    }

    /// The memory cap and the deadline.
    pub fn limits(&self) -> Limits {
        Limits {
            memory_bytes: self.memory_limit_mib << 20,
            deadline: Duration::from_millis(self.timeout_ms),
        }
    }

    /// A module's failure, with the flag that lifts the limit it hit.
    pub fn with_hint(&self, error: CallError) -> anyhow::Error {
        let hint = match &error {
            CallError::DeadlineExceeded(_) => format!(
                " (raise it with --timeout-ms, now {}; policy-server's default is 2000)",
                self.timeout_ms
            ),
            CallError::MemoryLimitExceeded(_) => format!(
                " (raise it with --memory-limit-mib, now {})",
                self.memory_limit_mib
            ),
            _ => String::new(),
        };
        anyhow::anyhow!("{error}{hint}")
    }
}
