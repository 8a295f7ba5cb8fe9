#![doc = include_str!("../../../../policies/catalog-union/README.md")]

mod alternatives;
mod judge;
mod legacy;
mod messages;
mod read;
mod update;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use olm_guard_core::{AdmissionRequest, Cluster, Operation, PolicySettings, Verdict};
use olm_guard_olm::catalog_source;

use judge::{Configured, judge};
use legacy::admit_legacy;
use read::{Terms, read_spec};
use update::stored_breakage;

/// The policy's settings; every key is optional (see the settings table in
/// the README).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// Count the legacy `sourceType` + `image`/`address`/`configMap` spec as
    /// an alternative (rule 1). On by default: it is the only form the
    /// CatalogSource CRD clusters run today can store.
    pub allow_legacy: bool,
    /// Warn about every accepted legacy spec, naming its union member
    /// (rule 5). Meant for clusters whose CatalogSource CRD has the union
    /// members: on today's CRD the advice cannot be followed.
    pub warn_legacy: bool,
    /// Rewrite a valid legacy spec into its union member (rule 6). The legacy
    /// spec is then validated as if `allowLegacy` were on, since it is not
    /// what gets stored; one that cannot be rewritten without loss is
    /// accepted as legacy only while `allowLegacy` is on. Meant, like
    /// `warnLegacy`, for clusters whose CRD has the union members.
    pub migrate_legacy: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            allow_legacy: true,
            warn_legacy: false,
            migrate_legacy: false,
        }
    }
}

impl PolicySettings for Settings {}

/// Judges a CREATE or UPDATE of a CatalogSource by rules 1-7; every other
/// request is accepted untouched.
pub fn validate(request: &AdmissionRequest, settings: &Settings, _: &dyn Cluster) -> Verdict {
    if !request.targets(catalog_source::GROUP, catalog_source::KIND)
        || !matches!(request.operation, Operation::Create | Operation::Update)
    {
        return Verdict::accept();
    }
    let Some(object) = request.object.as_object() else {
        return Verdict::bad_request(
            "request.object must be the CatalogSource being written (a JSON object); \
             send the whole object with the CREATE or UPDATE",
        );
    };
    match judge_object(object, settings) {
        Judgement::Admitted(verdict) | Judgement::Unreadable(verdict) => verdict,
        Judgement::Broken(problems) => {
            match stored_breakage(request, object, settings, &problems) {
                Some(warning) => Verdict::accept().with_warning(warning),
                None => Verdict::deny(problems.join("; ")),
            }
        }
    }
}

/// What rules 1-6 make of one object.
enum Judgement {
    /// Accepted, possibly with warnings or a migration.
    Admitted(Verdict),
    /// Denied: every problem found, each naming its field and the fix.
    Broken(Vec<String>),
    /// The spec cannot be read (a 400).
    Unreadable(Verdict),
}

fn judge_object(object: &Map<String, Value>, settings: &Settings) -> Judgement {
    let terms = Terms::for_object(object, settings);
    let spec = match read_spec(object, terms) {
        Ok(spec) => spec,
        Err(verdict) => return Judgement::Unreadable(verdict),
    };
    let legacy_counts = settings.allow_legacy || settings.migrate_legacy;
    match judge(&spec, legacy_counts, terms) {
        Err(problems) => Judgement::Broken(problems),
        Ok(Configured::Member) => Judgement::Admitted(Verdict::accept()),
        Ok(Configured::Legacy(legacy)) => admit_legacy(object, &legacy, settings),
    }
}

#[cfg(test)]
mod tests;
