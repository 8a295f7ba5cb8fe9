//! Kubernetes' authorizer questions, answered by the caller.
//!
//! The harness answers the policies' authorizer checks from the table an
//! [`Admit`] carries, and names each check the table lacks in
//! [`Admitted::unasked`], one line each (`describeCheck` in `go/authz.go`).
//! [`admit_answering`] lets Kubernetes ask: it admits with the answers so
//! far, reads the checks the table lacked back from those lines, has the
//! caller answer them, and admits again, until Kubernetes asks nothing the
//! table lacks. The table then holds the checks Kubernetes' own evaluation
//! makes, with the caller's answers, and the last answer is what a cluster
//! whose authorizer answers as the caller does would say; no evaluation of
//! ours decides which checks are made.

use crate::{Admit, Admitted, AuthorizerAnswer, HarnessError, KubeHarness};

/// The most rounds [`admit_answering`] runs: each answers at least one new
/// check, and the generated policies make at most a few dozen, most of
/// them in the first round.
const MAX_ROUNDS: usize = 64;

/// `admit` through the harness, every authorizer check Kubernetes makes
/// answered by `authorize` (`Ok(allowed)`, or `Err` with the text of an
/// authorizer that could not answer). `admit.authorizer` keeps the answers
/// given before the call and gains one per check asked, so that the same
/// `admit` can be sent again (a reinvocation) with nothing left to ask.
pub fn admit_answering(
    kube: &mut KubeHarness,
    admit: &mut Admit,
    authorize: &mut dyn FnMut(&AuthorizerAnswer) -> Result<bool, String>,
) -> Result<Admitted, HarnessError> {
    for _ in 0..MAX_ROUNDS {
        let admitted = kube.admit(admit)?;
        if admitted.unasked.is_empty() {
            return Ok(admitted);
        }
        let mut asked: Vec<AuthorizerAnswer> = admitted
            .unasked
            .iter()
            .map(|line| check(line))
            .collect::<Result<_, _>>()?;
        asked.sort();
        asked.dedup();
        for mut question in asked {
            if admit.authorizer.iter().any(|a| same_check(a, &question)) {
                return Err(HarnessError::Protocol(format!(
                    "Kubernetes asked again, unanswered, a check the table answers (the line \
                     does not read back to the check it names: {question:?})"
                )));
            }
            match authorize(&question) {
                Ok(allowed) => question.allowed = allowed,
                Err(error) => question.error = error,
            }
            admit.authorizer.push(question);
        }
    }
    Err(HarnessError::Protocol(format!(
        "Kubernetes still asked new authorizer checks after {MAX_ROUNDS} rounds of answers"
    )))
}

/// Whether two answers are to the same check.
fn same_check(a: &AuthorizerAnswer, b: &AuthorizerAnswer) -> bool {
    let mut groups = (a.groups.clone(), b.groups.clone());
    groups.0.sort();
    groups.1.sort();
    groups.0 == groups.1
        && (&a.user, &a.verb, &a.namespace, &a.api_group)
            == (&b.user, &b.verb, &b.namespace, &b.api_group)
        && (&a.resource, &a.subresource, &a.name, &a.path)
            == (&b.resource, &b.subresource, &b.name, &b.path)
}

/// The check one `unasked` line names, read back from `describeCheck`'s
/// two forms (`go/authz.go`):
///
/// - `may "<user>" (groups [<g> <g>]) <verb> group "<g>" resource "<r>"
///   subresource "<s>" name "<n>" in namespace "<ns>"`;
/// - `may "<user>" (groups [<g>]) <verb> the non-resource URL <path>`.
pub fn check(line: &str) -> Result<AuthorizerAnswer, HarnessError> {
    let unreadable = |why: &str| {
        HarnessError::Protocol(format!(
            "an unasked authorizer check that does not read as go/authz.go's describeCheck \
             writes it ({why}): {line}"
        ))
    };
    let mut rest = line
        .strip_prefix("may ")
        .ok_or_else(|| unreadable("no \"may \""))?;
    let user = go_quoted(&mut rest).ok_or_else(|| unreadable("the user"))?;
    rest = rest
        .strip_prefix(" (groups [")
        .ok_or_else(|| unreadable("no groups"))?;
    let (groups, after) = rest
        .split_once("]) ")
        .ok_or_else(|| unreadable("the groups do not end"))?;
    let (verb, after) = after.split_once(' ').ok_or_else(|| unreadable("no verb"))?;
    let mut answer = AuthorizerAnswer {
        user,
        groups: groups.split_whitespace().map(str::to_string).collect(),
        verb: verb.to_string(),
        ..AuthorizerAnswer::default()
    };
    if let Some(path) = after.strip_prefix("the non-resource URL ") {
        answer.path = path.to_string();
        return Ok(answer);
    }
    rest = after;
    let fields = [
        "group ",
        " resource ",
        " subresource ",
        " name ",
        " in namespace ",
    ];
    let mut values = Vec::with_capacity(fields.len());
    for field in fields {
        rest = rest
            .strip_prefix(field)
            .ok_or_else(|| unreadable(field.trim()))?;
        values.push(go_quoted(&mut rest).ok_or_else(|| unreadable(field.trim()))?);
    }
    if !rest.is_empty() {
        return Err(unreadable("text after the namespace"));
    }
    let mut values = values.into_iter();
    let mut next = || values.next().unwrap_or_default();
    answer.api_group = next();
    answer.resource = next();
    answer.subresource = next();
    answer.name = next();
    answer.namespace = next();
    Ok(answer)
}

/// One Go-quoted string (`%q`, Go's `strconv.Quote`) at the start of
/// `rest`, unquoted; `rest` moves past it.
fn go_quoted(rest: &mut &str) -> Option<String> {
    let body = rest.strip_prefix('"')?;
    let mut chars = body.char_indices();
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                *rest = &body[i + 1..];
                return Some(out);
            }
            '\\' => {
                let (_, escape) = chars.next()?;
                let hex = |chars: &mut std::str::CharIndices, digits: usize| {
                    let text: String = chars.by_ref().take(digits).map(|(_, c)| c).collect();
                    u32::from_str_radix(&text, 16).ok().and_then(char::from_u32)
                };
                out.push(match escape {
                    '"' | '\\' | '\'' => escape,
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    'a' => '\u{07}',
                    'b' => '\u{08}',
                    'f' => '\u{0C}',
                    'v' => '\u{0B}',
                    'x' => hex(&mut chars, 2)?,
                    'u' => hex(&mut chars, 4)?,
                    'U' => hex(&mut chars, 8)?,
                    _ => return None,
                });
            }
            other => out.push(other),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_read_back() {
        let resource = check(
            "may \"alice\" (groups [system:authenticated dev]) manage group \
             \"olm.operatorframework.io\" resource \"clusterobjectsets\" subresource \"groups\" \
             name \"widgets\" in namespace \"\"",
        )
        .unwrap();
        assert_eq!(
            resource,
            AuthorizerAnswer {
                user: "alice".into(),
                groups: vec!["system:authenticated".into(), "dev".into()],
                verb: "manage".into(),
                api_group: "olm.operatorframework.io".into(),
                resource: "clusterobjectsets".into(),
                subresource: "groups".into(),
                name: "widgets".into(),
                ..AuthorizerAnswer::default()
            }
        );
        let url = check("may \"bob\" (groups []) * the non-resource URL *").unwrap();
        assert_eq!((url.verb.as_str(), url.path.as_str()), ("*", "*"));
        assert!(url.groups.is_empty());
    }

    #[test]
    fn go_quoting_is_undone() {
        let line = "may \"a\\\"b\\\\c\\x01\\u00e9\" (groups [g]) get group \"\" resource \"pods\" \
                    subresource \"\" name \"\" in namespace \"ns\"";
        assert_eq!(check(line).unwrap().user, "a\"b\\c\u{1}\u{e9}");
    }

    #[test]
    fn another_text_is_refused_with_the_line() {
        for line in [
            "the check get pods",
            "may alice (groups []) get the non-resource URL /",
            "may \"alice\" (groups []) get group \"\" resource \"pods\"",
        ] {
            let error = check(line).unwrap_err().to_string();
            assert!(error.contains(line), "{error}");
        }
    }
}
