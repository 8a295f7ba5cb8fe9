//! Reading what is evaluated: an AdmissionReview or AdmissionRequest file
//! (`--request`, `-` for stdin), and the objects of a manifest (`--object`,
//! `-` for stdin; `--old-object`), each labelled with its file and document
//! for messages.

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::Value;

use olm_guard_evaluator::input as admission;

/// The text of `path`, `-` being stdin, with the name messages give it.
fn read(path: &Path, what: &str) -> anyhow::Result<(String, String)> {
    if path == Path::new("-") {
        let text = crate::file_text::read_stdin()
            .with_context(|| format!("cannot read the {what} from stdin"))?;
        return Ok(("<stdin>".to_string(), text));
    }
    let text =
        crate::file_text::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok((path.display().to_string(), text))
}

/// The AdmissionRequest of a `--request` file (`-`: stdin): a review's
/// `request`, or the bare request; an error names the file.
pub fn request_file(path: &Path) -> anyhow::Result<Value> {
    let (source, text) = read(path, "request")?;
    let document = admission::document_of(path, &text)?;
    if document.is_null() {
        bail!(
            "--request {source}: the file is empty: expected an AdmissionReview or an AdmissionRequest"
        );
    }
    admission::admission_request(document).with_context(|| source)
}

/// Every object of a manifest file (`-`: stdin), labelled `file: document N`
/// (`: items[M]` inside a List); a document that is not an object is an error
/// naming it, and so is a file with no object (nothing to evaluate, as
/// `kubectl apply -f` refuses one).
pub fn objects_of(path: &Path) -> anyhow::Result<Vec<(String, Value)>> {
    let (source, text) = read(path, "object")?;
    Ok(olm_guard_evaluator::preflight::manifest_documents(
        &source, &text,
    )?)
}

/// The one object of an `--old-object` file, with its label; a file with
/// none or several is an error saying how many it holds.
pub fn old_object(path: &Path) -> anyhow::Result<(String, Value)> {
    let mut objects = objects_of(path)?;
    let count = objects.len();
    match (objects.pop(), count) {
        (Some(object), 1) => Ok(object),
        _ => bail!(
            "{}: --old-object must hold one object, found {count}",
            path.display()
        ),
    }
}
