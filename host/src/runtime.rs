//! The waPC host, on wasmtime: what Kubewarden's policy-server does with a
//! module, minus the network.
//!
//! One [`Runtime`] (engine + epoch ticker) serves any number of [`Module`]s.
//! Each module is compiled and linked once (`InstancePre`); every operation
//! runs in a fresh instance, as policy-server does per request, so no state
//! leaks between evaluations. Instances get WASI preview 1 with no files, no
//! environment, no network and no stdio (a module's prints go nowhere: our
//! stdout is the AdmissionReview), a memory cap, and an execution deadline.
//!
//! We drive wasmtime directly rather than through `wasmtime-provider`
//! because that provider has no store limiter (no memory cap) and inherits
//! the host's stdio.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use wasmtime::{
    Caller, Config, Engine, InstancePre, Linker, Memory, OptLevel, ResourceLimiter, Store, Trap,
};
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::p1::WasiP1Ctx;

/// How often the engine's epoch advances; deadlines are counted in ticks.
const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Answers a module's `__host_call(binding, namespace, operation, payload)`.
pub trait HostCallback: Send + Sync {
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
    pub memory_bytes: usize,
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The guest answered with `__guest_error` (waPC "Guest call failure").
    Guest(String),
    DeadlineExceeded(Duration),
    MemoryLimitExceeded(usize),
    /// Any other trap or link/instantiation failure.
    Trap(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Guest(m) => write!(f, "guest call failure: {m}"),
            CallError::DeadlineExceeded(d) => write!(
                f,
                "the module exceeded the execution deadline of {} ms and was stopped",
                d.as_millis()
            ),
            CallError::MemoryLimitExceeded(bytes) => write!(
                f,
                "the module exceeded the memory limit of {} MiB and was stopped",
                bytes >> 20
            ),
            CallError::Trap(m) => write!(f, "the module trapped: {m}"),
        }
    }
}

impl std::error::Error for CallError {}

/// The engine shared by all modules, with its epoch ticker.
pub struct Runtime {
    engine: Engine,
    limits: Limits,
    ticker_stop: Arc<AtomicBool>,
}

impl Runtime {
    pub fn new(limits: Limits) -> anyhow::Result<Runtime> {
        let mut config = Config::new();
        config.epoch_interruption(true);
        config.cranelift_opt_level(OptLevel::Speed);
        let engine = Engine::new(&config).map_err(|e| anyhow::anyhow!("{e}"))?;
        let ticker_stop = Arc::new(AtomicBool::new(false));
        let (ticking_engine, stop) = (engine.clone(), ticker_stop.clone());
        thread::Builder::new()
            .name("epoch-ticker".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    thread::sleep(EPOCH_TICK);
                    ticking_engine.increment_epoch();
                }
            })?;
        Ok(Runtime {
            engine,
            limits,
            ticker_stop,
        })
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Compiles and links a module (once; calls are cheap afterwards).
    pub fn load(&self, wasm: &[u8]) -> anyhow::Result<Module> {
        let module = wasmtime::Module::new(&self.engine, wasm)
            .map_err(|e| anyhow::anyhow!("not a loadable wasm module: {e}"))?;
        let mut linker: Linker<GuestState> = Linker::new(&self.engine);
        wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |s: &mut GuestState| &mut s.wasi)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        link_wapc(&mut linker).map_err(|e| anyhow::anyhow!("{e}"))?;
        let pre = linker
            .instantiate_pre(&module)
            .map_err(|e| anyhow::anyhow!("the module cannot be linked as a waPC policy: {e}"))?;
        Ok(Module {
            engine: self.engine.clone(),
            pre,
            limits: self.limits,
        })
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}

/// A compiled, linked policy module.
pub struct Module {
    engine: Engine,
    pre: InstancePre<GuestState>,
    limits: Limits,
}

impl Module {
    /// Runs one waPC operation in a fresh instance.
    pub fn call(
        &self,
        operation: &str,
        payload: &[u8],
        host: Arc<dyn HostCallback>,
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
        let ticks = (self.limits.deadline.as_micros() / EPOCH_TICK.as_micros()).max(1) as u64;
        store.set_epoch_deadline(ticks);

        let outcome = self.run(&mut store, operation, payload);
        let state = store.data();
        match outcome {
            Ok(true) => Ok(state.guest_response.clone().unwrap_or_default()),
            Ok(false) => {
                Err(CallError::Guest(state.guest_error.clone().unwrap_or_else(
                    || "the guest failed without an error message".into(),
                )))
            }
            Err(e) if state.limiter.exceeded => {
                let _ = e;
                Err(CallError::MemoryLimitExceeded(self.limits.memory_bytes))
            }
            Err(e) => match e.downcast_ref::<Trap>() {
                Some(Trap::Interrupt) => Err(CallError::DeadlineExceeded(self.limits.deadline)),
                _ => Err(CallError::Trap(format!("{e:#}"))),
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

fn utf8(bytes: Vec<u8>, what: &str) -> wasmtime::Result<String> {
    String::from_utf8(bytes).map_err(|_| wasmtime::format_err!("{what} is not UTF-8"))
}

/// The nine `wapc` imports (wapc-guest 1.x protocol).
fn link_wapc(linker: &mut Linker<GuestState>) -> wasmtime::Result<()> {
    linker.func_wrap(
        "wapc",
        "__guest_request",
        |mut caller: Caller<'_, GuestState>, op_ptr: i32, payload_ptr: i32| {
            let (op, payload) = {
                let s = caller.data();
                (s.operation.clone(), s.payload.clone())
            };
            write(&mut caller, payload_ptr, &payload)?;
            write(&mut caller, op_ptr, &op)
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
            let bytes = caller.data().host_response.clone();
            write(&mut caller, ptr, &bytes)
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
            let bytes = caller.data().host_error.clone();
            write(&mut caller, ptr, &bytes)
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
