//! Lists read page by page (`limit` and `continue`), as kubectl reads them:
//! one consistent list of any size, at most one page in flight.

use kube::api::{Api, DynamicObject, ListParams};
use serde_json::Value;

use crate::connect::Live;
use crate::discovery::Resource;
use crate::error::LiveError;

/// Objects per page when the user sets nothing: kubectl's `--chunk-size`
/// default, and the page size of the watcher that fills policy-server's
/// reflectors.
pub const DEFAULT_PAGE_SIZE: u32 = 500;

/// Every object of one kind, as read.
#[derive(Debug, Clone)]
pub struct Listed {
    /// The kind.
    pub resource: Resource,
    /// Its objects, each with its `apiVersion` and `kind` (list items of
    /// built-in kinds come without them).
    pub objects: Vec<Value>,
}

/// Which objects of a kind a list asks for.
#[derive(Debug, Clone, Default)]
pub(crate) struct Selection<'a> {
    pub namespace: Option<&'a str>,
    pub label_selector: Option<&'a str>,
    pub field_selector: Option<&'a str>,
}

impl Live {
    /// Every object of `resource`, in pages of `page_size`; `progress` hears
    /// the number of objects read after each page. A page that fails fails
    /// the whole list, naming the page and how many objects were read: a
    /// partial list is never returned as complete.
    pub fn list_pages(
        &self,
        resource: &Resource,
        page_size: u32,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Listed, LiveError> {
        let items = self.list_selected(resource, &Selection::default(), page_size, progress)?;
        let objects = items
            .into_iter()
            .map(|mut item| {
                if item.types.is_none() {
                    item.types = Some(kube::api::TypeMeta {
                        api_version: resource.api_version.clone(),
                        kind: resource.kind.clone(),
                    });
                }
                serde_json::to_value(item).map_err(|e| LiveError::Client {
                    server: self.server().to_string(),
                    what: format!("listing {}", resource.qualified()),
                    reason: e.to_string(),
                })
            })
            .collect::<Result<Vec<Value>, LiveError>>()?;
        Ok(Listed {
            resource: resource.clone(),
            objects,
        })
    }

    /// The objects of `resource` that `selection` chooses, page by page.
    pub(crate) fn list_selected(
        &self,
        resource: &Resource,
        selection: &Selection<'_>,
        page_size: u32,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Vec<DynamicObject>, LiveError> {
        let api_resource = resource.api_resource();
        let api: Api<DynamicObject> = match selection.namespace {
            Some(namespace) => Api::namespaced_with(self.client.clone(), namespace, &api_resource),
            None => Api::all_with(self.client.clone(), &api_resource),
        };
        let mut params = ListParams::default().limit(page_size.max(1));
        if let Some(labels) = selection.label_selector.filter(|s| !s.is_empty()) {
            params = params.labels(labels);
        }
        if let Some(fields) = selection.field_selector.filter(|s| !s.is_empty()) {
            params = params.fields(fields);
        }
        let mut items = Vec::new();
        let mut page = 1;
        loop {
            let what = if page == 1 {
                format!("listing {}", resource.qualified())
            } else {
                format!(
                    "listing {} (page {page}, after {} objects)",
                    resource.qualified(),
                    items.len()
                )
            };
            let list = self.call(&what, api.list(&params))?;
            items.extend(list.items);
            progress(items.len());
            match list.metadata.continue_.filter(|token| !token.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => return Ok(items),
            }
            page += 1;
        }
    }
}
