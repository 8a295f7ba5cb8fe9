//! Lists read page by page (`limit` and `continue`), as kubectl reads them:
//! one consistent list of any size, at most one page in flight. Each page is
//! read as JSON, as the server sends it: the items are what the server
//! stored, with nothing typed away.

use kube::api::ListParams;
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct Selection {
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
}

impl Resource {
    /// The collection's path: `/api/v1[/namespaces/NS]/plural` or
    /// `/apis/group/version[/namespaces/NS]/plural`.
    pub(crate) fn collection(&self, namespace: Option<&str>) -> String {
        let root = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        match namespace {
            Some(namespace) if self.namespaced => {
                format!("{root}/namespaces/{namespace}/{}", self.plural)
            }
            _ => format!("{root}/{}", self.plural),
        }
    }
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
        let mut objects =
            self.list_selected(resource, &Selection::default(), page_size, progress)?;
        for object in &mut objects {
            if let Some(map) = object.as_object_mut() {
                map.entry("apiVersion")
                    .or_insert_with(|| Value::String(resource.api_version.clone()));
                map.entry("kind")
                    .or_insert_with(|| Value::String(resource.kind.clone()));
            }
        }
        Ok(Listed {
            resource: resource.clone(),
            objects,
        })
    }

    /// The objects of `resource` that `selection` chooses, page by page,
    /// as the server sent them.
    pub(crate) fn list_selected(
        &self,
        resource: &Resource,
        selection: &Selection,
        page_size: u32,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Vec<Value>, LiveError> {
        let collection =
            kube::core::Request::new(resource.collection(selection.namespace.as_deref()));
        let mut params = ListParams::default().limit(page_size.max(1));
        if let Some(labels) = selection
            .label_selector
            .as_deref()
            .filter(|s| !s.is_empty())
        {
            params = params.labels(labels);
        }
        if let Some(fields) = selection
            .field_selector
            .as_deref()
            .filter(|s| !s.is_empty())
        {
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
            let mut list: Value = self.send(&what, || collection.list(&params))?;
            if let Some(page_items) = list.get_mut("items").and_then(Value::as_array_mut) {
                items.append(page_items);
            }
            progress(items.len());
            let token = list
                .pointer("/metadata/continue")
                .and_then(Value::as_str)
                .filter(|token| !token.is_empty());
            match token {
                Some(token) => params = params.continue_token(token),
                None => return Ok(items),
            }
            page += 1;
        }
    }
}
