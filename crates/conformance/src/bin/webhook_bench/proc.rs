//! What a process has spent, from Linux's `/proc`: its CPU time (user and
//! system, `/proc/<pid>/stat`) and its resident memory, now and at its
//! peak (`/proc/<pid>/status`, `VmRSS` and `VmHWM`).

use std::time::Duration;

use anyhow::Context;

/// The clock ticks per second `/proc/<pid>/stat` counts in (`USER_HZ`):
/// 100 on every Linux this runs on.
const TICKS_PER_SECOND: f64 = 100.0;

/// User plus system CPU time of `pid` so far.
pub fn cpu(pid: u32) -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("/proc/{pid}/stat"))?;
    // The command name (field 2) may hold spaces; the fields after its
    // closing parenthesis are plain.
    let after = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .context("no command name in /proc/<pid>/stat")?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13
    // after the command name (state is the first there).
    let ticks = |at: usize| -> anyhow::Result<f64> {
        Ok(fields
            .get(at)
            .context("a short /proc/<pid>/stat")?
            .parse::<f64>()?)
    };
    Ok(Duration::from_secs_f64(
        (ticks(11)? + ticks(12)?) / TICKS_PER_SECOND,
    ))
}

/// `(VmRSS, VmHWM)` of `pid` in bytes: resident memory now and at its peak.
pub fn memory(pid: u32) -> anyhow::Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> anyhow::Result<u64> {
        let line = status
            .lines()
            .find(|l| l.starts_with(name))
            .with_context(|| format!("no {name} in /proc/{pid}/status"))?;
        let kib: u64 = line
            .trim_start_matches(name)
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()?;
        Ok(kib * 1024)
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

/// Bytes as MiB.
pub fn mib(bytes: u64) -> String {
    format!("{:.0} MiB", bytes as f64 / (1024.0 * 1024.0))
}
