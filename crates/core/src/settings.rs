//! Policy settings: deserialised from the policy's `settings` object, then
//! checked by [`PolicySettings::validate`]. Both the module's
//! `validate_settings` and its `validate` go through [`parse`].

use serde::de::DeserializeOwned;
use serde_json::Value;

/// A policy's settings: serde-readable, with defaults, and checked beyond
/// their types by [`PolicySettings::validate`].
pub trait PolicySettings: DeserializeOwned + Default {
    /// Checks that need more than types (ranges, names).
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

/// `null` or absent settings are the defaults, as in Kubewarden.
pub fn parse<S: PolicySettings>(value: &Value) -> Result<S, String> {
    let settings: S = match value {
        Value::Null => S::default(),
        // serde reads a struct from a list too (its fields in order), which
        // no policy's settings mean: Kubewarden's settings are a mapping.
        // The path-keeping decoder, so a type error names the setting:
        // `settings.allowLegacy: expected a boolean, got a string`.
        Value::Object(_) => crate::decode::from_value(value).map_err(|e| e.under("settings"))?,
        other => {
            return Err(format!(
                "settings: expected a mapping of setting names to values, got {}",
                crate::decode::json_type(other)
            ));
        }
    };
    settings.validate()?;
    Ok(settings)
}
