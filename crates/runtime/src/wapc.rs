//! The waPC host, on wasmtime: what Kubewarden's policy-server does with a
//! module, minus the network.
//!
//! One [`Runtime`] (engine + epoch ticker) serves any number of [`Module`]s;
//! every module keeps the ticker alive, so a module that outlives its
//! runtime still stops at its deadline.
//! Each module is compiled and linked once (`InstancePre`); every operation
//! runs in a fresh instance, as policy-server does per request, so no state
//! leaks between evaluations. Instances get WASI preview 1 with no files, no
//! environment, no network and no stdio (a module's prints go nowhere: our
//! stdout is the AdmissionReview), a memory cap, and an execution deadline.
//! A fresh instance is cheap because it comes from wasmtime's pooling
//! allocator: a reused slot, the module's memory image mapped copy-on-write,
//! and the pages the last instance wrote reset in place (`pool`).
//!
//! We drive wasmtime directly rather than through `wasmtime-provider`
//! because that provider has no store limiter (no memory cap) and inherits
//! the host's stdio.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use wasmtime::{
    Caller, Config, Engine, InstanceAllocationStrategy, InstancePre, Linker, Memory, OptLevel,
    PoolingAllocationConfig, ResourceLimiter, Store, Trap,
};
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::p1::WasiP1Ctx;

/// How often the engine's epoch advances; deadlines are counted in ticks.
const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Answers a module's `__host_call(binding, namespace, operation, payload)`.
pub trait HostCallback: Send + Sync {
    /// The answer's bytes, or the error text the guest receives (waPC
    /// `__host_error`).
    fn call(
        &self,
        binding: &str,
        namespace: &str,
        operation: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, String>;
}

/// Limits applied to every instance.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest linear memory an instance may grow to.
    pub memory_bytes: usize,
    /// Wall-clock time one operation may run, counted in epoch ticks.
    pub deadline: Duration,
}

impl Default for Limits {
    /// policy-server's default evaluation timeout is 2 s; 256 MiB holds the
    /// largest snapshots we test (10,000 objects) several times over.
    fn default() -> Self {
        Limits {
            memory_bytes: 256 << 20,
            deadline: Duration::from_secs(2),
        }
    }
}

/// Why an operation failed, in the words a user needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The guest answered with `__guest_error` (waPC "Guest call failure").
    #[error("guest call failure: {0}")]
    Guest(String),
    /// The operation ran past [`Limits::deadline`].
    #[error("the module exceeded the execution deadline of {} ms and was stopped", .0.as_millis())]
    DeadlineExceeded(Duration),
    /// The instance tried to grow its memory past [`Limits::memory_bytes`].
    #[error("the module exceeded the memory limit of {} MiB and was stopped", .0 >> 20)]
    MemoryLimitExceeded(usize),
    /// Any other trap or link/instantiation failure.
    #[error("the module trapped: {0}")]
    Trap(String),
}

/// Why a module could not be made ready to call.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The engine or its epoch ticker could not be set up.
    #[error("cannot start the wasm engine")]
    Engine(#[source] wasmtime::Error),
    /// The epoch-ticker thread could not be spawned.
    #[error("cannot start the epoch ticker")]
    Ticker(#[source] std::io::Error),
    /// The bytes do not start with the WebAssembly magic number `\0asm`.
    #[error("not a WebAssembly module (no \\0asm header)")]
    NotWasm,
    /// wasmtime could not compile the bytes.
    #[error("not a loadable wasm module")]
    Compile(#[source] wasmtime::Error),
    /// The module's imports do not fit a waPC policy (WASI preview 1 + waPC).
    #[error("the module cannot be linked as a waPC policy")]
    Link(#[source] wasmtime::Error),
    /// The compile cache directory cannot be used.
    #[error("cannot use the compile cache in {}", dir.display())]
    CompileCache {
        /// The directory asked for.
        dir: std::path::PathBuf,
        /// wasmtime's account.
        #[source]
        source: wasmtime::Error,
    },
}

/// Advances the engine's epoch every [`EPOCH_TICK`] until dropped. Shared by
/// the [`Runtime`] and every [`Module`] it loads: deadlines hold for as long
/// as anything that can run guest code exists.
struct Ticker {
    stop: Arc<AtomicBool>,
}

impl Ticker {
    fn start(engine: &Engine) -> Result<Ticker, LoadError> {
        let stop = Arc::new(AtomicBool::new(false));
        let (ticking_engine, stopped) = (engine.clone(), stop.clone());
        thread::Builder::new()
            .name("epoch-ticker".into())
            .spawn(move || {
                while !stopped.load(Ordering::Relaxed) {
                    thread::sleep(EPOCH_TICK);
                    ticking_engine.increment_epoch();
                }
            })
            .map_err(LoadError::Ticker)?;
        Ok(Ticker { stop })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Instance slots in the pool: more than the evaluations a process runs at
/// once (the audit runs one per core). Each slot reserves address space,
/// not memory.
const POOL_SLOTS: u32 = 64;

/// Linear memory a slot keeps resident between instances, reset with
/// `memset` (only the pages written, found with Linux's `PAGEMAP_SCAN`)
/// instead of being handed back to the kernel and faulted in again by the
/// next instance. A one-line request touches about 1 MiB; a 10,000-object
/// list answer tens of MiB, of which this much is reused.
const KEEP_RESIDENT: usize = 16 << 20;

/// wasmtime's pooling allocator, so a fresh instance per evaluation costs
/// little: slots are reused, each module's data segments are mapped
/// copy-on-write from an image made once, and the memory a slot already
/// faulted in stays resident (measured in `docs/performance.md`, "Against
/// Kubewarden's waPC host"). The memory cap stays the store limiter's
/// ([`MemoryCap`]), so exceeding it is the same named error as before.
fn pool() -> PoolingAllocationConfig {
    let mut pool = PoolingAllocationConfig::new();
    pool.total_core_instances(POOL_SLOTS)
        .total_memories(POOL_SLOTS)
        .total_tables(POOL_SLOTS)
        .linear_memory_keep_resident(KEEP_RESIDENT)
        .table_keep_resident(1 << 16)
        // Falls back to resetting the whole kept region on kernels before
        // 6.7.
        .pagemap_scan(wasmtime::Enabled::Auto);
    pool
}

/// The engine shared by all modules, with its epoch ticker.
pub struct Runtime {
    engine: Engine,
    limits: Limits,
    ticker: Arc<Ticker>,
}

impl Runtime {
    /// An engine with epoch interruption on and optimised code, and its
    /// ticker; `limits` apply to every module it loads. Every load compiles.
    pub fn new(limits: Limits) -> Result<Runtime, LoadError> {
        Runtime::build(limits, None)
    }

    /// [`Runtime::new`], keeping compiled modules in `dir` across processes:
    /// a one-shot `olm-guard run` then skips compilation (most of its time).
    /// This is wasmtime's own compilation cache: an entry is keyed by a hash
    /// of the module's bytes, the compiler's settings and wasmtime's version,
    /// so a changed module, engine configuration or wasmtime never reads a
    /// stale entry, and an unreadable entry is compiled again
    /// (bytecodealliance/wasmtime, `crates/cache/src/lib.rs`,
    /// `ModuleCacheEntry::get_data`). kwctl keeps precompiled policies for the
    /// same reason.
    pub fn with_compile_cache(limits: Limits, dir: &std::path::Path) -> Result<Runtime, LoadError> {
        Runtime::build(limits, Some(dir))
    }

    fn build(limits: Limits, cache_dir: Option<&std::path::Path>) -> Result<Runtime, LoadError> {
        let mut config = Config::new();
        config.epoch_interruption(true);
        config.cranelift_opt_level(OptLevel::Speed);
        if let Some(dir) = cache_dir {
            let cache_error = |source| LoadError::CompileCache {
                dir: dir.to_path_buf(),
                source,
            };
            std::fs::create_dir_all(dir).map_err(|e| cache_error(e.into()))?;
            let mut cache = wasmtime::CacheConfig::new();
            cache.with_directory(dir);
            config.cache(Some(wasmtime::Cache::new(cache).map_err(cache_error)?));
        }
        let mut pooled = config.clone();
        pooled.allocation_strategy(InstanceAllocationStrategy::Pooling(pool()));
        // The pool reserves its address space up front (4 GiB and a guard
        // per slot). Where that is refused, e.g. under a tight `ulimit -v`,
        // instances are allocated on demand: slower, same behaviour.
        let engine = Engine::new(&pooled)
            .or_else(|_| Engine::new(&config))
            .map_err(LoadError::Engine)?;
        let ticker = Arc::new(Ticker::start(&engine)?);
        Ok(Runtime {
            engine,
            limits,
            ticker,
        })
    }

    /// The limits every module of this runtime runs under.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Compiles and links a module (once; calls are cheap afterwards).
    pub fn load(&self, wasm: &[u8]) -> Result<Module, LoadError> {
        // wasmtime also accepts the text format; a policy is a binary, and a
        // text file would otherwise fail with a WAT parser's complaint.
        if !wasm.starts_with(b"\0asm") {
            return Err(LoadError::NotWasm);
        }
        let module = wasmtime::Module::new(&self.engine, wasm).map_err(LoadError::Compile)?;
        let mut linker: Linker<GuestState> = Linker::new(&self.engine);
        wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |s: &mut GuestState| &mut s.wasi)
            .map_err(LoadError::Link)?;
        link_wapc(&mut linker).map_err(LoadError::Link)?;
        let pre = linker.instantiate_pre(&module).map_err(LoadError::Link)?;
        Ok(Module {
            engine: self.engine.clone(),
            pre,
            limits: self.limits,
            _ticker: self.ticker.clone(),
        })
    }
}

/// A compiled, linked policy module.
pub struct Module {
    engine: Engine,
    pre: InstancePre<GuestState>,
    limits: Limits,
    /// Keeps deadlines enforced even after the [`Runtime`] is gone.
    _ticker: Arc<Ticker>,
}

impl Module {
    /// The limits every instance of this module runs under.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Runs one waPC operation in a fresh instance.
    pub fn call(
        &self,
        operation: &str,
        payload: &[u8],
        host: Arc<dyn HostCallback>,
    ) -> Result<Vec<u8>, CallError> {
        self.call_within(operation, payload, host, self.limits.deadline)
    }

    /// [`Module::call`] with its own deadline instead of
    /// [`Limits::deadline`]: an operation that does the work of many
    /// evaluations (`validate_batch`) gets the time of as many.
    pub fn call_within(
        &self,
        operation: &str,
        payload: &[u8],
        host: Arc<dyn HostCallback>,
        deadline: Duration,
    ) -> Result<Vec<u8>, CallError> {
        let state = GuestState {
            wasi: WasiCtxBuilder::new().build_p1(),
            limiter: MemoryCap {
                max_bytes: self.limits.memory_bytes,
                exceeded: false,
            },
            operation: operation.as_bytes().to_vec(),
            payload: payload.to_vec(),
            guest_response: None,
            guest_error: None,
            host_response: Vec::new(),
            host_error: Vec::new(),
            host,
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limiter);
        let ticks = (deadline.as_micros() / EPOCH_TICK.as_micros()).max(1) as u64;
        store.set_epoch_deadline(ticks);

        let outcome = self.run(&mut store, operation, payload);
        let state = store.data_mut();
        match outcome {
            Ok(true) => Ok(state.guest_response.take().unwrap_or_default()),
            Ok(false) => {
                Err(CallError::Guest(state.guest_error.take().unwrap_or_else(
                    || "the guest failed without an error message".into(),
                )))
            }
            Err(e) if state.limiter.exceeded => {
                let _ = e;
                Err(CallError::MemoryLimitExceeded(self.limits.memory_bytes))
            }
            Err(e) => match e.downcast_ref::<Trap>() {
                Some(Trap::Interrupt) => Err(CallError::DeadlineExceeded(deadline)),
                // The trap's own words ("call stack exhausted"); wasmtime's
                // multi-line wasm backtrace is for debuggers, not for a
                // one-line error a user reads.
                Some(trap) => Err(CallError::Trap(trap.to_string())),
                None => Err(CallError::Trap(one_line(&format!("{e:#}")))),
            },
        }
    }

    fn run(
        &self,
        store: &mut Store<GuestState>,
        operation: &str,
        payload: &[u8],
    ) -> wasmtime::Result<bool> {
        let instance = self.pre.instantiate(&mut *store)?;
        // waPC start sequence: `_start` then `wapc_init`, each if exported.
        for start in ["_start", "wapc_init"] {
            if let Some(f) = instance.get_func(&mut *store, start) {
                f.typed::<(), ()>(&mut *store)?.call(&mut *store, ())?;
            }
        }
        let guest_call = instance
            .get_typed_func::<(i32, i32), i32>(&mut *store, "__guest_call")
            .map_err(|_| wasmtime::format_err!("the module does not export __guest_call"))?;
        let answer =
            guest_call.call(&mut *store, (operation.len() as i32, payload.len() as i32))?;
        Ok(answer == 1)
    }
}

/// The first line of `text`: wasmtime appends backtraces on further lines.
fn one_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().trim().to_string()
}

struct MemoryCap {
    max_bytes: usize,
    exceeded: bool,
}

impl ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_bytes {
            self.exceeded = true;
            // A trap, not a failed grow: Rust's allocator would abort with an
            // opaque `unreachable` anyway, and this keeps the cause visible.
            wasmtime::bail!("memory limit of {} bytes reached", self.max_bytes);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}

struct GuestState {
    wasi: WasiP1Ctx,
    limiter: MemoryCap,
    operation: Vec<u8>,
    payload: Vec<u8>,
    guest_response: Option<Vec<u8>>,
    guest_error: Option<String>,
    host_response: Vec<u8>,
    host_error: Vec<u8>,
    host: Arc<dyn HostCallback>,
}

fn memory(caller: &mut Caller<'_, GuestState>) -> wasmtime::Result<Memory> {
    caller
        .get_export("memory")
        .and_then(|e| e.into_memory())
        .ok_or_else(|| wasmtime::format_err!("the module does not export its memory as 'memory'"))
}

fn read(caller: &mut Caller<'_, GuestState>, ptr: i32, len: i32) -> wasmtime::Result<Vec<u8>> {
    let memory = memory(caller)?;
    let (start, len) = (ptr as u32 as usize, len as u32 as usize);
    memory
        .data(&*caller)
        .get(start..start.saturating_add(len))
        .map(<[u8]>::to_vec)
        .ok_or_else(|| wasmtime::format_err!("guest pointer out of bounds"))
}

fn write(caller: &mut Caller<'_, GuestState>, ptr: i32, bytes: &[u8]) -> wasmtime::Result<()> {
    let memory = memory(caller)?;
    memory
        .write(&mut *caller, ptr as u32 as usize, bytes)
        .map_err(|_| wasmtime::format_err!("guest pointer out of bounds"))
}

/// Writes bytes the host holds for the guest (an answer, an error) at
/// `ptr`: taken out and put back rather than cloned, since a list answer can
/// be megabytes.
fn write_held(
    caller: &mut Caller<'_, GuestState>,
    ptr: i32,
    held: fn(&mut GuestState) -> &mut Vec<u8>,
) -> wasmtime::Result<()> {
    let bytes = std::mem::take(held(caller.data_mut()));
    let written = write(caller, ptr, &bytes);
    *held(caller.data_mut()) = bytes;
    written
}

fn utf8(bytes: Vec<u8>, what: &str) -> wasmtime::Result<String> {
    String::from_utf8(bytes).map_err(|_| wasmtime::format_err!("{what} is not UTF-8"))
}

/// The nine `wapc` imports (wapc-guest 1.x protocol).
fn link_wapc(linker: &mut Linker<GuestState>) -> wasmtime::Result<()> {
    linker.func_wrap(
        "wapc",
        "__guest_request",
        |mut caller: Caller<'_, GuestState>, op_ptr: i32, payload_ptr: i32| {
            // Taken, not copied: the guest asks once per call.
            let state = caller.data_mut();
            let (op, payload) = (
                std::mem::take(&mut state.operation),
                std::mem::take(&mut state.payload),
            );
            write(&mut caller, payload_ptr, &payload)?;
            write(&mut caller, op_ptr, &op)?;
            let state = caller.data_mut();
            (state.operation, state.payload) = (op, payload);
            Ok(())
        },
    )?;
    linker.func_wrap(
        "wapc",
        "__guest_response",
        |mut caller: Caller<'_, GuestState>, ptr: i32, len: i32| {
            let bytes = read(&mut caller, ptr, len)?;
            caller.data_mut().guest_response = Some(bytes);
            Ok(())
        },
    )?;
    linker.func_wrap(
        "wapc",
        "__guest_error",
        |mut caller: Caller<'_, GuestState>, ptr: i32, len: i32| {
            let bytes = read(&mut caller, ptr, len)?;
            caller.data_mut().guest_error = Some(String::from_utf8_lossy(&bytes).into_owned());
            Ok(())
        },
    )?;
    linker.func_wrap(
        "wapc",
        "__host_call",
        |mut caller: Caller<'_, GuestState>,
         bd_ptr: i32,
         bd_len: i32,
         ns_ptr: i32,
         ns_len: i32,
         op_ptr: i32,
         op_len: i32,
         ptr: i32,
         len: i32|
         -> wasmtime::Result<i32> {
            let binding = utf8(read(&mut caller, bd_ptr, bd_len)?, "binding")?;
            let namespace = utf8(read(&mut caller, ns_ptr, ns_len)?, "namespace")?;
            let operation = utf8(read(&mut caller, op_ptr, op_len)?, "operation")?;
            let payload = read(&mut caller, ptr, len)?;
            let host = caller.data().host.clone();
            let answer = host.call(&binding, &namespace, &operation, &payload);
            let state = caller.data_mut();
            state.host_response.clear();
            state.host_error.clear();
            Ok(match answer {
                Ok(bytes) => {
                    state.host_response = bytes;
                    1
                }
                Err(message) => {
                    state.host_error = message.into_bytes();
                    0
                }
            })
        },
    )?;
    linker.func_wrap(
        "wapc",
        "__host_response_len",
        |caller: Caller<'_, GuestState>| caller.data().host_response.len() as i32,
    )?;
    linker.func_wrap(
        "wapc",
        "__host_response",
        |mut caller: Caller<'_, GuestState>, ptr: i32| {
            write_held(&mut caller, ptr, |s| &mut s.host_response)
        },
    )?;
    linker.func_wrap(
        "wapc",
        "__host_error_len",
        |caller: Caller<'_, GuestState>| caller.data().host_error.len() as i32,
    )?;
    linker.func_wrap(
        "wapc",
        "__host_error",
        |mut caller: Caller<'_, GuestState>, ptr: i32| {
            write_held(&mut caller, ptr, |s| &mut s.host_error)
        },
    )?;
    linker.func_wrap(
        "wapc",
        "__console_log",
        |mut caller: Caller<'_, GuestState>, ptr: i32, len: i32| {
            let _ = read(&mut caller, ptr, len)?;
            Ok(())
        },
    )?;
    Ok(())
}
