//! Answers computed once per key, shared by discovery and the lookups'
//! stores.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Answers computed once per key; concurrent first askers wait for one
/// computation instead of each asking the server.
pub(crate) struct Once<T> {
    cells: Mutex<HashMap<String, Arc<OnceLock<T>>>>,
}

impl<T> Default for Once<T> {
    fn default() -> Self {
        Once {
            cells: Mutex::new(HashMap::new()),
        }
    }
}

impl<T: Clone> Once<T> {
    /// The answer for `key`, made by `make` the first time it is asked.
    pub(crate) fn get_or_init(&self, key: String, make: impl FnOnce() -> T) -> T {
        let cell = {
            let mut cells = self.cells.lock().unwrap_or_else(|p| p.into_inner());
            cells.entry(key).or_default().clone()
        };
        cell.get_or_init(make).clone()
    }
}
