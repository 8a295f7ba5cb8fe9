//! The page's entry points, as plain wasm exports: no glue generator, no
//! imports. `www/app.js` instantiates the module with an empty import
//! object and calls these four functions; each string crosses as UTF-8 bytes
//! in the module's memory.
//!
//! - [`olm_guard_alloc`]`(len)` gives the page a buffer of `len` bytes to
//!   write its input into;
//! - [`olm_guard_evaluate`]`(ptr, len)` takes that buffer back (it must not
//!   be used again) and answers [`crate::evaluate`]'s JSON as an answer
//!   buffer;
//! - [`olm_guard_rules`]`()` answers [`crate::rules`]'s JSON the same way;
//! - an answer buffer is a little-endian `u32` length followed by that many
//!   bytes of UTF-8; the page reads it and gives it back with
//!   [`olm_guard_free`]`(ptr, 4 + length)`.
//!
//! Every buffer is a `Box<[u8]>` of exactly its length, so the length the
//! page passes back is the one it was allocated with. The functions are
//! compiled (and linted, and tested) on every target; only on wasm32 do
//! their pointers fit the page's 32-bit view of memory.

/// Width of an answer buffer's length prefix.
const LENGTH_PREFIX: usize = 4;

/// A zeroed buffer of `len` bytes for the page to write its input into.
#[unsafe(no_mangle)]
pub extern "C" fn olm_guard_alloc(len: usize) -> *mut u8 {
    Box::into_raw(vec![0u8; len].into_boxed_slice()).cast::<u8>()
}

/// Frees a buffer from [`olm_guard_alloc`] or an answer buffer.
///
/// # Safety
/// `ptr` and `len` are exactly a buffer this module handed out and has not
/// taken back.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olm_guard_free(ptr: *mut u8, len: usize) {
    // SAFETY: the caller passes a Box<[u8]> of this length, once.
    drop(unsafe { take(ptr, len) });
}

/// Evaluates the JSON input in the buffer (which it frees) and answers the
/// result as an answer buffer.
///
/// # Safety
/// `ptr` and `len` are exactly a buffer from [`olm_guard_alloc`], not used
/// after this call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olm_guard_evaluate(ptr: *mut u8, len: usize) -> *mut u8 {
    // SAFETY: the caller passes a buffer from olm_guard_alloc, once.
    let input = unsafe { take(ptr, len) };
    answer(&crate::evaluate(&String::from_utf8_lossy(&input)))
}

/// Every rule as JSON ([`crate::rules`]), as an answer buffer.
#[unsafe(no_mangle)]
pub extern "C" fn olm_guard_rules() -> *mut u8 {
    answer(&crate::rules())
}

/// `text` as an answer buffer: its length as a little-endian `u32`, then its
/// bytes. The page has no answer near 4 GiB; a longer one is cut to a
/// length that fits rather than wrapped.
fn answer(text: &str) -> *mut u8 {
    let bytes = text.as_bytes();
    let len = bytes.len().min(u32::MAX as usize - LENGTH_PREFIX);
    let mut buffer = Vec::with_capacity(LENGTH_PREFIX + len);
    buffer.extend_from_slice(&(len as u32).to_le_bytes());
    buffer.extend_from_slice(bytes.get(..len).unwrap_or_default());
    Box::into_raw(buffer.into_boxed_slice()).cast::<u8>()
}

/// Takes back a buffer this module handed out.
///
/// # Safety
/// `ptr` and `len` are exactly a `Box<[u8]>` this module leaked, once.
unsafe fn take(ptr: *mut u8, len: usize) -> Box<[u8]> {
    // SAFETY: as the caller promises.
    unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads an answer buffer as the page does, and frees it.
    fn read_answer(ptr: *mut u8) -> String {
        // SAFETY: an answer buffer starts with its 4-byte length.
        let len = unsafe { u32::from_le_bytes(*ptr.cast::<[u8; 4]>()) } as usize;
        // SAFETY: followed by `len` bytes, all of one allocation.
        let bytes = unsafe { std::slice::from_raw_parts(ptr.add(LENGTH_PREFIX), len) };
        let text = String::from_utf8(bytes.to_vec()).expect("UTF-8");
        // SAFETY: the whole buffer, once.
        unsafe { olm_guard_free(ptr, LENGTH_PREFIX + len) };
        text
    }

    /// Writes `text` into a buffer from olm_guard_alloc, as the page does.
    fn input(text: &str) -> (*mut u8, usize) {
        let ptr = olm_guard_alloc(text.len());
        // SAFETY: a buffer of exactly this length.
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), ptr, text.len()) };
        (ptr, text.len())
    }

    #[test]
    fn the_exports_answer_what_the_functions_answer() {
        assert_eq!(read_answer(olm_guard_rules()), crate::rules());
        for text in [
            r#"{"rule": "catalog-union", "object": "kind: CatalogSource"}"#,
            "not json",
            "",
            "ünïcödé",
        ] {
            let (ptr, len) = input(text);
            // SAFETY: a fresh buffer from olm_guard_alloc, given up here.
            let answered = read_answer(unsafe { olm_guard_evaluate(ptr, len) });
            assert_eq!(answered, crate::evaluate(text), "{text}");
        }
    }

    #[test]
    fn invalid_utf8_is_an_answer_not_a_trap() {
        let ptr = olm_guard_alloc(2);
        // SAFETY: a 2-byte buffer.
        unsafe { std::ptr::copy_nonoverlapping([0xff, 0xfe].as_ptr(), ptr, 2) };
        // SAFETY: a fresh buffer from olm_guard_alloc, given up here.
        let answered = read_answer(unsafe { olm_guard_evaluate(ptr, 2) });
        assert!(answered.contains("\"ok\":false"), "{answered}");
    }

    #[test]
    fn an_empty_buffer_round_trips() {
        let ptr = olm_guard_alloc(0);
        // SAFETY: the zero-length buffer just handed out.
        unsafe { olm_guard_free(ptr, 0) };
    }
}
