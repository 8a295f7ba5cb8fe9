//! `-o html`: one self-contained page (inline CSS and SVG, no script, no
//! reference to anything outside it) with the counts per policy and per
//! namespace, a bar chart of them, and every finding with its message.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;

use super::engine::Audit;
use crate::findings::{Finding, Outcome, SNAPSHOT_POLICY};
// HTML text and attribute values escape as XML's do (`&apos;` is HTML5's too,
// and the control characters it replaces are not allowed in HTML either).
use crate::output::xml_escape as escape;

const STYLE: &str = "\
body{font-family:system-ui,sans-serif;margin:2rem;color:#1b1f24;background:#fff}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0}
th,td{border:1px solid #d0d7de;padding:.3rem .6rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.n{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#1a7f37}.fail{color:#cf222e;font-weight:600}.warn{color:#9a6700}
.error{color:#8250df;font-weight:600}.skip{color:#0969da}
.msg{max-width:60rem;white-space:pre-wrap;word-break:break-word}
.muted{color:#57606a}";

/// Bar colours, one per outcome.
fn colour(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Pass => "#2da44e",
        Outcome::Fail => "#cf222e",
        Outcome::Warn => "#bf8700",
        Outcome::Error => "#8250df",
        Outcome::Skip => "#0969da",
    }
}

type Counts = BTreeMap<String, [usize; 5]>;

fn index(outcome: Outcome) -> usize {
    Outcome::ALL.iter().position(|o| *o == outcome).unwrap_or(0)
}

fn count_by(findings: &[Finding], key: impl Fn(&Finding) -> String) -> Counts {
    let mut counts = Counts::new();
    for finding in findings {
        counts.entry(key(finding)).or_insert([0; 5])[index(finding.result)] += 1;
    }
    counts
}

fn counts_table(html: &mut String, heading: &str, counts: &Counts) {
    let _ = write!(html, "<table><tr><th>{}</th>", escape(heading));
    for outcome in Outcome::ALL {
        let _ = write!(html, "<th class=\"{0}\">{0}</th>", outcome.word());
    }
    html.push_str("</tr>");
    for (name, row) in counts {
        let _ = write!(html, "<tr><td>{}</td>", escape(name));
        for n in row {
            let _ = write!(html, "<td class=\"n\">{n}</td>");
        }
        html.push_str("</tr>");
    }
    html.push_str("</table>");
}

/// A horizontal stacked bar per row: how the results of each policy split.
fn chart(html: &mut String, counts: &Counts) {
    const LABEL: usize = 200;
    const BAR: usize = 480;
    const ROW: usize = 26;
    let largest = counts
        .values()
        .map(|row| row.iter().sum::<usize>())
        .max()
        .unwrap_or(0)
        .max(1);
    let height = ROW * counts.len() + 30;
    let _ = write!(
        html,
        "<svg role=\"img\" aria-label=\"results per policy\" width=\"{}\" height=\"{height}\" \
         viewBox=\"0 0 {} {height}\">",
        LABEL + BAR + 60,
        LABEL + BAR + 60
    );
    for (row_index, (name, row)) in counts.iter().enumerate() {
        let y = row_index * ROW;
        let _ = write!(
            html,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"13\">{}</text>",
            LABEL - 8,
            y + 16,
            escape(name)
        );
        let mut x = LABEL;
        for (i, n) in row.iter().enumerate() {
            if *n == 0 {
                continue;
            }
            let width = (n * BAR).div_ceil(largest).max(2);
            let outcome = Outcome::ALL[i];
            let _ = write!(
                html,
                "<rect x=\"{x}\" y=\"{}\" width=\"{width}\" height=\"18\" fill=\"{}\">\
                 <title>{}: {n} {}</title></rect>",
                y + 3,
                colour(outcome),
                escape(name),
                outcome.word()
            );
            x += width;
        }
        let _ = write!(
            html,
            "<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#57606a\">{}</text>",
            x + 6,
            y + 16,
            row.iter().sum::<usize>()
        );
    }
    let legend_y = ROW * counts.len() + 16;
    for (i, outcome) in Outcome::ALL.iter().enumerate() {
        let x = LABEL + i * 80;
        let _ = write!(
            html,
            "<rect x=\"{x}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>\
             <text x=\"{}\" y=\"{}\" font-size=\"12\">{}</text>",
            legend_y - 10,
            colour(*outcome),
            x + 16,
            legend_y,
            outcome.word()
        );
    }
    html.push_str("</svg>");
}

/// The page.
pub fn render(audit: &Audit, findings: &[Finding]) -> String {
    let mut html = String::new();
    html.push_str(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>olm-guard audit</title><style>",
    );
    html.push_str(STYLE);
    html.push_str("</style></head><body><h1>olm-guard audit</h1>");
    let (objects, audited) = audit.coverage();
    let requester = match &audit.requester.user {
        Some(user) => format!(
            "as <b>{}</b> (groups {})",
            escape(user),
            escape(&crate::requester::groups_of(user, &audit.requester.groups).join(", "))
        ),
        None => "without a requester (no --as): checks that need one are skipped".into(),
    };
    let _ = write!(
        html,
        "<p>{} in the snapshot, {audited} covered by a module, {}; evaluated {requester}.</p>",
        crate::output::count(objects, "object"),
        crate::output::count(findings.len(), "result"),
    );

    html.push_str("<h2>Results per policy</h2>");
    let per_policy = count_by(findings, |f| f.policy.clone());
    chart(&mut html, &per_policy);
    counts_table(&mut html, "policy", &per_policy);

    html.push_str("<h2>Results per namespace</h2>");
    let per_namespace = count_by(findings, |f| match &f.object {
        Some(object) if !object.namespace.is_empty() => object.namespace.clone(),
        Some(_) => "(cluster-scoped)".into(),
        None => "(snapshot document)".into(),
    });
    counts_table(&mut html, "namespace", &per_namespace);

    html.push_str("<h2>Findings</h2>");
    let shown: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.result != Outcome::Pass)
        .collect();
    if shown.is_empty() {
        html.push_str("<p>No findings: every evaluation passed.</p>");
    } else {
        html.push_str(
            "<table><tr><th>object</th><th>namespace</th><th>policy</th><th>result</th>\
             <th>message</th></tr>",
        );
        for finding in shown {
            let (object, namespace) = match &finding.object {
                Some(o) => (
                    format!(
                        "{} {}",
                        o.kind,
                        if o.name.is_empty() {
                            "<unnamed>"
                        } else {
                            &o.name
                        }
                    ),
                    o.namespace.clone(),
                ),
                None => ("(snapshot document)".into(), String::new()),
            };
            let source = if finding.source.is_empty() {
                String::new()
            } else {
                format!(
                    "<br><span class=\"muted\">{}</span>",
                    escape(&finding.source)
                )
            };
            let policy = if finding.policy == SNAPSHOT_POLICY {
                "(snapshot)".to_string()
            } else {
                finding.policy.clone()
            };
            let word = finding.result.word();
            let _ = write!(
                html,
                "<tr><td>{object}{source}</td><td>{namespace}</td><td>{policy}</td>\
                 <td class=\"{word}\">{word}</td><td class=\"msg\">{message}</td></tr>",
                object = escape(&object),
                namespace = escape(&namespace),
                policy = escape(&policy),
                message = escape(&finding.message),
            );
        }
        html.push_str("</table>");
    }
    let passed = findings
        .iter()
        .filter(|f| f.result == Outcome::Pass)
        .count();
    let _ = write!(
        html,
        "<p class=\"muted\">{passed} passing results are counted above and not listed.</p>"
    );
    html.push_str("</body></html>\n");
    html
}

/// Writes [`render`].
pub fn write(out: &mut impl Write, audit: &Audit, findings: &[Finding]) -> std::io::Result<()> {
    out.write_all(render(audit, findings).as_bytes())
}
