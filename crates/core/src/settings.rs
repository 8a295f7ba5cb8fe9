//! Policy settings: deserialised from the policy's `settings` object, then
//! checked by [`PolicySettings::validate`]. Both the module's
//! `validate_settings` and its `validate` go through [`parse`].

use serde::de::DeserializeOwned;
use serde_json::Value;

/// Why a policy refused its settings: what `validate_settings` answers
/// (`valid: false` with this message) and what `validate` denies with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// A setting of the wrong type, or one the policy does not know,
    /// named by its path: `settings.allowLegacy: expected a boolean, got a
    /// string`.
    #[error("{}", .0.under("settings"))]
    Field(crate::decode::FieldTypeError),
    /// The settings are not a mapping (a list, a string).
    #[error("settings: expected a mapping of setting names to values, got {got}")]
    NotAMapping {
        /// The JSON type found (`a list`).
        got: &'static str,
    },
    /// Well-typed settings the policy's own checks refuse, in its words,
    /// naming the setting and the fix.
    #[error("{0}")]
    Refused(String),
}

/// A policy's settings: serde-readable, with defaults, and checked beyond
/// their types by [`PolicySettings::validate`].
pub trait PolicySettings: DeserializeOwned + Default {
    /// Checks that need more than types (ranges, names):
    /// [`SettingsError::Refused`] naming the setting.
    fn validate(&self) -> Result<(), SettingsError> {
        Ok(())
    }
}

/// `null` or absent settings are the defaults, as in Kubewarden.
pub fn parse<S: PolicySettings>(value: &Value) -> Result<S, SettingsError> {
    let settings: S = match value {
        Value::Null => S::default(),
        // serde reads a struct from a list too (its fields in order), which
        // no policy's settings mean: Kubewarden's settings are a mapping.
        // The path-keeping decoder, so a type error names the setting:
        // `settings.allowLegacy: expected a boolean, got a string`.
        Value::Object(_) => crate::decode::from_value(value).map_err(SettingsError::Field)?,
        other => {
            return Err(SettingsError::NotAMapping {
                got: crate::decode::json_type(other),
            });
        }
    };
    settings.validate()?;
    Ok(settings)
}
