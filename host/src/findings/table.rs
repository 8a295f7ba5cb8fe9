//! The default output of `audit` and of `run` with several modules: the
//! results grouped by object, then a count per policy. Colour only on a
//! terminal (and not with `NO_COLOR`).

use std::io::Write;

use super::{Finding, Outcome, SNAPSHOT_POLICY};

fn paint(outcome: Outcome, colour: bool) -> String {
    let word = format!("{:<5}", outcome.word());
    if !colour {
        return word;
    }
    let code = match outcome {
        Outcome::Pass => "32",
        Outcome::Fail => "1;31",
        Outcome::Warn => "33",
        Outcome::Error => "1;35",
        Outcome::Skip => "36",
    };
    format!("\x1b[{code}m{word}\x1b[0m")
}

/// How a table shows its `skip` results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skips {
    /// In their objects' blocks, as any result (`run`: one per object).
    Inline,
    /// Once per reason, with how many objects it holds for (`audit`: a
    /// cluster's many objects skipped for one reason would drown the rest).
    ByReason,
}

/// Writes the table: one block per object with its results (passing ones
/// only with `show_pass`; skips by `skips`), in the order of `findings`,
/// then one line per policy of `policies` with its counts. A finding whose
/// policy is not in `policies` is shown in its object's block but counted
/// nowhere (`run` says so for an object no module applies to).
pub fn write(
    out: &mut impl Write,
    policies: &[&str],
    findings: &[Finding],
    show_pass: bool,
    skips: Skips,
    colour: bool,
) -> std::io::Result<()> {
    let shown: Vec<&Finding> = findings
        .iter()
        .filter(|f| show_pass || f.result != Outcome::Pass)
        .filter(|f| skips == Skips::Inline || f.result != Outcome::Skip)
        .collect();
    let width = policies
        .iter()
        .map(|p| p.len())
        .chain(shown.iter().map(|f| f.policy.len()))
        .chain([SNAPSHOT_POLICY.len(), "POLICY".len()])
        .max()
        .unwrap_or(6);
    if shown.is_empty() {
        writeln!(out, "No findings.")?;
    } else {
        writeln!(out, "{:<width$}  RESULT  MESSAGE", "POLICY")?;
    }
    let mut current: Option<(Option<String>, &str)> = None;
    for finding in shown {
        let object = finding.object.as_ref().map(|o| o.display());
        let key = (object.clone(), finding.source.as_str());
        if current.as_ref() != Some(&key) {
            let title = object.unwrap_or_else(|| "(snapshot document)".into());
            let title = if colour {
                format!("\x1b[1m{title}\x1b[0m")
            } else {
                title
            };
            if finding.source.is_empty() {
                writeln!(out, "\n{title}")?;
            } else {
                writeln!(out, "\n{title}  ({})", finding.source)?;
            }
            current = Some(key);
        }
        writeln!(
            out,
            "{:<width$}  {}   {}",
            finding.policy,
            paint(finding.result, colour),
            finding.message
        )?;
    }
    if skips == Skips::ByReason {
        write_skips(out, findings, width)?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:<width$}  {:>5} {:>5} {:>5} {:>5} {:>5}",
        "SUMMARY", "pass", "fail", "warn", "error", "skip"
    )?;
    let mut names: Vec<&str> = policies.to_vec();
    if findings.iter().any(|f| f.policy == SNAPSHOT_POLICY) {
        names.insert(0, SNAPSHOT_POLICY);
    }
    for name in names {
        let count = |outcome: Outcome| {
            findings
                .iter()
                .filter(|f| f.policy == name && f.result == outcome)
                .count()
        };
        writeln!(
            out,
            "{name:<width$}  {:>5} {:>5} {:>5} {:>5} {:>5}",
            count(Outcome::Pass),
            count(Outcome::Fail),
            count(Outcome::Warn),
            count(Outcome::Error),
            count(Outcome::Skip),
        )?;
    }
    Ok(())
}

/// The skipped results, one line per policy and reason with how many
/// objects it holds for, in the order first met.
fn write_skips(out: &mut impl Write, findings: &[Finding], width: usize) -> std::io::Result<()> {
    let mut reasons: Vec<(&str, &str, usize)> = Vec::new();
    for finding in findings.iter().filter(|f| f.result == Outcome::Skip) {
        match reasons
            .iter_mut()
            .find(|(policy, message, _)| *policy == finding.policy && *message == finding.message)
        {
            Some((_, _, n)) => *n += 1,
            None => reasons.push((&finding.policy, &finding.message, 1)),
        }
    }
    if reasons.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nSkipped, by reason:")?;
    for (policy, message, n) in reasons {
        writeln!(
            out,
            "{policy:<width$}  {:>11}  {message}",
            crate::output::count(n, "object")
        )?;
    }
    Ok(())
}
