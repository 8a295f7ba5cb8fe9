//! CRD patches written against the CustomResourceDefinition a cluster
//! runs: RFC 6902 operations that add a property or validation rules to
//! every version's schema and never replace what the CRD already has (an
//! `add` on an existing member replaces it, so rules are appended with
//! `/-` to a list that exists).

use serde_json::{Value as Json, json};

/// The upstream CRDs the patches are written against when the user names
/// none, each with its name and file (`crates/native/upstream/README.md`
/// names their sources).
const SHIPPED: [(&str, &str, &str); 2] = [
    (
        "clusterobjectsets.olm.operatorframework.io",
        "olm.operatorframework.io_clusterobjectsets.yaml",
        include_str!("../upstream/olm.operatorframework.io_clusterobjectsets.yaml"),
    ),
    (
        "catalogsources.operators.coreos.com",
        "operators.coreos.com_catalogsources.yaml",
        include_str!("../upstream/operators.coreos.com_catalogsources.yaml"),
    ),
];

/// A CRD to write a patch against, and where it came from.
#[derive(Debug, Clone)]
pub struct Crd {
    /// `metadata.name`.
    pub name: String,
    /// Where it was read: `the shipped upstream copy (<file>)` or
    /// `the CRD given`.
    pub source: String,
    /// The CRD.
    pub document: Json,
}

/// A JSON patch (RFC 6902) for a CRD: validation rules the API server
/// enforces with the schema, before any admission policy runs. Written
/// against the CRD the user gives, or the shipped upstream copy
/// ([`find`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaPatch {
    /// The CRD's name (`clusterobjectsets.olm.operatorframework.io`).
    pub crd: String,
    /// The file name under `deploy/native/`.
    pub file: String,
    /// When to apply it, in one line (patches of one rule are applied in
    /// the order they are listed).
    pub step: String,
    /// The patch operations.
    pub patch: Json,
    /// The `x-kubernetes-validations` rules the patch adds, for evaluation.
    pub rules: Vec<CrdRule>,
}

/// One `x-kubernetes-validations` rule and the field it is on.
#[derive(Debug, Clone, PartialEq)]
pub struct CrdRule {
    /// The field the rule is on, from the object's root (`spec`,
    /// `spec.group`): `self` there, `oldSelf` its stored value.
    pub path: &'static str,
    /// The CEL rule.
    pub rule: String,
    /// The message.
    pub message: String,
    /// The message expression, if any.
    pub message_expression: Option<String>,
}

impl CrdRule {
    /// The rule as the schema writes it.
    pub fn to_json(&self) -> Json {
        let mut rule = json!({"rule": self.rule, "message": self.message});
        if let Some(m) = &self.message_expression {
            rule["messageExpression"] = Json::String(m.clone());
        }
        rule
    }
}

/// Why a patch cannot be written against a CRD, in one line that names the
/// CRD, where it came from ([`Crd::source`]) and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CrdError {
    /// No CRD of that name was given and none is shipped.
    #[error("no CRD {name} was given and none is shipped: give it with --crd FILE")]
    NotFound {
        /// The CRD's `metadata.name`.
        name: String,
    },
    /// The shipped copy does not parse (a broken build).
    #[error("the shipped copy of CRD {name} ({file}) cannot be read: {problem}")]
    Shipped {
        /// The CRD's `metadata.name`.
        name: String,
        /// The file under `upstream/`.
        file: String,
        /// What the YAML reader said.
        problem: String,
    },
    /// No version has an OpenAPI schema to add rules to.
    #[error(
        "CRD {name} ({origin}) has no version with a schema (spec.versions[].schema.openAPIV3Schema): \
         it cannot be patched with validation rules"
    )]
    NoSchema {
        /// The CRD's `metadata.name`.
        name: String,
        /// Where it was read ([`Crd::source`]).
        origin: String,
    },
    /// A version has no schema for the field the patch is written for.
    #[error(
        "CRD {name} ({origin}), version {version}, has no schema for {field}: it is not the CRD \
         this patch is written for; give the CRD your cluster runs with --crd FILE"
    )]
    NoField {
        /// The CRD's `metadata.name`.
        name: String,
        /// Where it was read ([`Crd::source`]).
        origin: String,
        /// The version's name.
        version: String,
        /// The field, dotted (`spec.group`).
        field: String,
    },
    /// A field's `x-kubernetes-validations` is there but not a list.
    #[error(
        "CRD {name} ({origin}), version {version}: x-kubernetes-validations of {field} is not a \
         list; fix the CRD first"
    )]
    ValidationsNotAList {
        /// The CRD's `metadata.name`.
        name: String,
        /// Where it was read ([`Crd::source`]).
        origin: String,
        /// The version's name.
        version: String,
        /// The field, dotted (`spec`).
        field: String,
    },
    /// An operation's path leads nowhere in the CRD ([`Crd::apply`]).
    #[error("CRD {name}: no {parent} to add to")]
    NoParent {
        /// The CRD's `metadata.name`.
        name: String,
        /// The JSON pointer of the missing parent.
        parent: String,
    },
    /// An operation adds to something that is neither a list nor an
    /// object ([`Crd::apply`]).
    #[error("CRD {name}: cannot add at {path}")]
    CannotAdd {
        /// The CRD's `metadata.name`.
        name: String,
        /// The operation's path.
        path: String,
    },
}

/// The CRD named `name`: among `objects` (the `--crd` files and the
/// `--cluster` snapshot, where a user gives the CRD their cluster runs),
/// else the shipped upstream copy.
pub fn find(name: &str, objects: Option<&[Json]>) -> Result<Crd, CrdError> {
    let given = objects.into_iter().flatten().find(|object| {
        object.get("kind").and_then(Json::as_str) == Some("CustomResourceDefinition")
            && object.pointer("/metadata/name").and_then(Json::as_str) == Some(name)
    });
    if let Some(document) = given {
        return Ok(Crd {
            name: name.to_string(),
            source: "the CRD given".into(),
            document: document.clone(),
        });
    }
    let Some((_, file, text)) = SHIPPED.iter().find(|(shipped, _, _)| *shipped == name) else {
        return Err(CrdError::NotFound {
            name: name.to_string(),
        });
    };
    let document = serde_yaml_ng::from_str(text).map_err(|e| CrdError::Shipped {
        name: name.to_string(),
        file: file.to_string(),
        problem: e.to_string(),
    })?;
    Ok(Crd {
        name: name.to_string(),
        source: format!("the shipped upstream copy ({file})"),
        document,
    })
}

impl Crd {
    /// The index and name of every version that has a schema.
    fn versions(&self) -> Result<Vec<(usize, String)>, CrdError> {
        let versions: Vec<(usize, String)> = self
            .document
            .pointer("/spec/versions")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .enumerate()
            .filter(|(_, version)| version.pointer("/schema/openAPIV3Schema").is_some())
            .map(|(i, version)| {
                let name = version.get("name").and_then(Json::as_str).unwrap_or("?");
                (i, name.to_string())
            })
            .collect();
        if versions.is_empty() {
            return Err(CrdError::NoSchema {
                name: self.name.clone(),
                origin: self.source.clone(),
            });
        }
        Ok(versions)
    }

    /// The pointer of `field`'s schema in version `index` (`["spec"]`,
    /// `["spec", "group"]`).
    fn pointer(index: usize, field: &[&str]) -> String {
        let mut pointer = format!("/spec/versions/{index}/schema/openAPIV3Schema");
        for part in field {
            pointer.push_str("/properties/");
            pointer.push_str(&part.replace('~', "~0").replace('/', "~1"));
        }
        pointer
    }

    /// `field`'s schema in version `index`, or why the patch cannot be
    /// written.
    fn schema(&self, index: usize, version: &str, field: &[&str]) -> Result<&Json, CrdError> {
        self.document
            .pointer(&Self::pointer(index, field))
            .filter(|schema| schema.is_object())
            .ok_or_else(|| CrdError::NoField {
                name: self.name.clone(),
                origin: self.source.clone(),
                version: version.to_string(),
                field: field.join("."),
            })
    }

    /// Whether every version's schema has `field`.
    pub fn has_field(&self, field: &[&str]) -> Result<bool, CrdError> {
        Ok(self.versions()?.iter().all(|(index, _)| {
            self.document
                .pointer(&Self::pointer(*index, field))
                .is_some()
        }))
    }

    /// Operations adding the property `name` with `schema` under `parent`
    /// in every version that lacks it (none when every version has it).
    pub fn add_property(
        &self,
        parent: &[&str],
        name: &str,
        schema: &Json,
    ) -> Result<Vec<Json>, CrdError> {
        let mut operations = Vec::new();
        for (index, version) in self.versions()? {
            let parent_schema = self.schema(index, &version, parent)?;
            let properties = parent_schema.get("properties");
            if properties.and_then(|p| p.get(name)).is_some() {
                continue;
            }
            let mut pointer = Self::pointer(index, parent);
            operations.push(if properties.is_some() {
                pointer.push_str("/properties/");
                pointer.push_str(name);
                json!({"op": "add", "path": pointer, "value": schema})
            } else {
                pointer.push_str("/properties");
                json!({"op": "add", "path": pointer, "value": {name: schema}})
            });
        }
        Ok(operations)
    }

    /// Operations adding `rules` to the `x-kubernetes-validations` of
    /// `field` in every version: appended one by one to a list the CRD
    /// has, a new list otherwise. A rule the version already has (same
    /// `rule` text) is not added twice.
    pub fn add_rules(&self, field: &[&str], rules: &[CrdRule]) -> Result<Vec<Json>, CrdError> {
        let mut operations = Vec::new();
        for (index, version) in self.versions()? {
            let pointer = format!("{}/x-kubernetes-validations", Self::pointer(index, field));
            let existing = self
                .schema(index, &version, field)?
                .get("x-kubernetes-validations");
            let new: Vec<Json> = rules
                .iter()
                .filter(|rule| {
                    !existing.and_then(Json::as_array).is_some_and(|have| {
                        have.iter()
                            .any(|h| h.get("rule") == Some(&json!(rule.rule)))
                    })
                })
                .map(CrdRule::to_json)
                .collect();
            match existing {
                Some(list) if list.is_array() => operations.extend(new.into_iter().map(
                    |rule| json!({"op": "add", "path": format!("{pointer}/-"), "value": rule}),
                )),
                Some(_) => {
                    return Err(CrdError::ValidationsNotAList {
                        name: self.name.clone(),
                        origin: self.source.clone(),
                        version,
                        field: field.join("."),
                    });
                }
                None if new.is_empty() => {}
                None => operations.push(json!({"op": "add", "path": pointer, "value": new})),
            }
        }
        Ok(operations)
    }
}

impl Crd {
    /// The CRD as it is once `operations` (the `add`s this module writes)
    /// are applied, so that a later stage is written against what the
    /// earlier ones leave: two stages that each added a new rule list
    /// would otherwise replace each other's.
    pub fn apply(&mut self, operations: &[Json]) -> Result<(), CrdError> {
        for operation in operations {
            let path = operation.get("path").and_then(Json::as_str).unwrap_or("");
            let value = operation.get("value").cloned().unwrap_or(Json::Null);
            let (parent, last) = path.rsplit_once('/').unwrap_or(("", path));
            let target = self
                .document
                .pointer_mut(parent)
                .ok_or_else(|| CrdError::NoParent {
                    name: self.name.clone(),
                    parent: parent.to_string(),
                })?;
            match (target, last) {
                (Json::Array(items), "-") => items.push(value),
                (Json::Object(map), key) => {
                    map.insert(key.replace("~1", "/").replace("~0", "~"), value);
                }
                _ => {
                    return Err(CrdError::CannotAdd {
                        name: self.name.clone(),
                        path: path.to_string(),
                    });
                }
            }
        }
        Ok(())
    }
}

/// The CatalogSource CRD's name.
pub const CATALOG_SOURCES: &str = "catalogsources.operators.coreos.com";

/// The members of `spec` the union enhancement adds to CatalogSource, which
/// catalog-union's `migrateLegacy` writes. The CRD OLM ships today has none
/// of them, and the API server prunes what its schema does not name: a
/// migrated spec stored on it has no source left at all.
pub const UNION_MEMBERS: [&str; 3] = [
    "catalogImageSource",
    "catalogServiceSource",
    "configMapSource",
];

/// The [`UNION_MEMBERS`] some version of `catalog`'s schema lacks.
pub fn missing_union_members(catalog: &Crd) -> Result<Vec<&'static str>, CrdError> {
    let mut missing = Vec::new();
    for member in UNION_MEMBERS {
        if !catalog.has_field(&["spec", member])? {
            missing.push(member);
        }
    }
    Ok(missing)
}

/// The CatalogSource CRD the union enhancement proposes, from today's
/// `catalog`: the three union members (`catalogImageSource`,
/// `catalogServiceSource`, `configMapSource`, their fields kept as written)
/// and `spec.sourceType` optional. catalog-union's union settings
/// (`warnLegacy`, `migrateLegacy`, `allowLegacy: false`) are written for a
/// cluster that serves it.
pub fn with_union_members(catalog: &Crd) -> Result<Crd, CrdError> {
    let mut union = catalog.clone();
    for version in union.document["spec"]["versions"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        if let Some(required) = version
            .pointer_mut("/schema/openAPIV3Schema/properties/spec/required")
            .and_then(Json::as_array_mut)
        {
            required.retain(|field| field != "sourceType");
        }
    }
    let member = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    for name in UNION_MEMBERS {
        let add = union.add_property(&["spec"], name, &member)?;
        union.apply(&add)?;
    }
    Ok(union)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> CrdRule {
        CrdRule {
            path: "spec",
            rule: text.into(),
            message: "m".into(),
            message_expression: None,
        }
    }

    fn two_versions() -> Json {
        json!({
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.example.com"},
            "spec": {"versions": [
                {"name": "v1", "schema": {"openAPIV3Schema": {"properties": {"spec": {
                    "type": "object",
                    "properties": {"size": {"type": "integer"}},
                    "x-kubernetes-validations": [{"rule": "self.size > 0", "message": "size"}],
                }}}}},
                {"name": "v2", "schema": {"openAPIV3Schema": {"properties": {"spec": {
                    "type": "object",
                }}}}},
            ]},
        })
    }

    #[test]
    fn rules_are_appended_to_a_list_the_crd_has_and_never_replace_it() {
        let objects = [two_versions()];
        let crd = find("things.example.com", Some(&objects)).unwrap();
        assert_eq!(crd.source, "the CRD given");
        let ops = crd
            .add_rules(&["spec"], &[rule("self.size > 0"), rule("has(self.group)")])
            .unwrap();
        let spec = "/spec/versions/{}/schema/openAPIV3Schema/properties/spec";
        assert_eq!(
            ops,
            vec![
                json!({"op": "add",
                       "path": format!("{}/x-kubernetes-validations/-", spec.replace("{}", "0")),
                       "value": {"rule": "has(self.group)", "message": "m"}}),
                json!({"op": "add",
                       "path": format!("{}/x-kubernetes-validations", spec.replace("{}", "1")),
                       "value": [{"rule": "self.size > 0", "message": "m"},
                                 {"rule": "has(self.group)", "message": "m"}]}),
            ]
        );
    }

    #[test]
    fn a_property_is_added_where_it_is_missing_only() {
        let objects = [two_versions()];
        let crd = find("things.example.com", Some(&objects)).unwrap();
        let schema = json!({"type": "string"});
        let ops = crd.add_property(&["spec"], "size", &schema).unwrap();
        assert_eq!(
            ops,
            vec![json!({"op": "add",
                        "path": "/spec/versions/1/schema/openAPIV3Schema/properties/spec/properties",
                        "value": {"size": {"type": "string"}}})]
        );
        assert!(!crd.has_field(&["spec", "size"]).unwrap());
        assert!(crd.has_field(&["spec"]).unwrap());
        // Rules go only on a field every version has.
        let err = crd
            .add_rules(&["spec", "group"], &[rule("self == oldSelf")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("version v1, has no schema for spec.group"),
            "{err}"
        );
    }

    #[test]
    fn a_crd_of_another_shape_is_refused_in_one_line() {
        let objects = [json!({"kind": "CustomResourceDefinition",
                              "metadata": {"name": "things.example.com"}, "spec": {}})];
        let crd = find("things.example.com", Some(&objects)).unwrap();
        let err = crd
            .add_rules(&["spec"], &[rule("true")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("has no version with a schema") && !err.contains('\n'),
            "{err}"
        );
        let objects = [json!({"kind": "CustomResourceDefinition",
                              "metadata": {"name": "things.example.com"},
                              "spec": {"versions": [{"name": "v1",
                                  "schema": {"openAPIV3Schema": {"type": "object"}}}]}})];
        let crd = find("things.example.com", Some(&objects)).unwrap();
        let err = crd
            .add_rules(&["spec"], &[rule("true")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("version v1, has no schema for spec") && err.contains("--crd"),
            "{err}"
        );
        let err = find("other.example.com", None).unwrap_err().to_string();
        assert!(err.contains("--crd FILE"), "{err}");
    }

    #[test]
    fn the_shipped_crds_read_and_have_the_fields_the_patches_need() {
        let cos = find("clusterobjectsets.olm.operatorframework.io", None).unwrap();
        assert!(cos.source.contains("shipped upstream copy"));
        assert!(cos.has_field(&["spec", "revision"]).unwrap());
        assert!(!cos.has_field(&["spec", "group"]).unwrap());
        let catalogs = find("catalogsources.operators.coreos.com", None).unwrap();
        assert!(catalogs.has_field(&["spec", "sourceType"]).unwrap());
    }

    #[test]
    fn todays_catalog_source_crd_lacks_every_union_member_the_union_one_has_them() {
        let today = find(CATALOG_SOURCES, None).unwrap();
        assert_eq!(missing_union_members(&today).unwrap(), UNION_MEMBERS);
        let union = with_union_members(&today).unwrap();
        assert!(missing_union_members(&union).unwrap().is_empty());
    }
}
