//! The API server's warning recorder (kubernetes
//! `staging/src/k8s.io/apiserver/pkg/endpoints/filters/warning.go`,
//! `recorder.AddWarning`): warnings of one response are deduplicated; once
//! their text passes 4,096 runes in all, every warning is cut to 256 runes,
//! those already written included, and a warning arriving after the cut
//! ones reach 4,096 runes again is dropped.

/// `truncateAtTotalRunes`.
pub const TRUNCATE_AT_TOTAL_RUNES: usize = 4 * 1024;
/// `truncateItemRunes`.
pub const TRUNCATE_ITEM_RUNES: usize = 256;

/// The warnings of one response.
#[derive(Debug, Clone)]
pub struct Recorder {
    total: usize,
    item: usize,
    recorded: Vec<String>,
    headers: Vec<String>,
    written: usize,
    truncating: bool,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::with_limits(TRUNCATE_AT_TOTAL_RUNES, TRUNCATE_ITEM_RUNES)
    }
}

impl Recorder {
    /// A recorder cutting at `total` runes in all and `item` runes each
    /// (the API server's are [`TRUNCATE_AT_TOTAL_RUNES`] and
    /// [`TRUNCATE_ITEM_RUNES`]).
    pub fn with_limits(total: usize, item: usize) -> Self {
        Recorder {
            total,
            item,
            recorded: Vec::new(),
            headers: Vec::new(),
            written: 0,
            truncating: false,
        }
    }

    /// `AddWarning`: records `text` unless it is empty, already recorded,
    /// not a valid header value (a control character), or past the limit.
    pub fn add(&mut self, text: &str) {
        if text.is_empty() || (self.written >= self.total && self.truncating) {
            return;
        }
        if self.recorded.iter().any(|r| r == text) {
            return;
        }
        self.recorded.push(text.to_string());
        if text.chars().any(char::is_control) {
            return;
        }
        let (cut, runes) = self.cut(text, self.truncating);
        if self.written + runes <= self.total || self.truncating {
            self.written += runes;
            self.headers.push(cut);
            return;
        }
        // Over the limit: cut everything recorded, in order, and go on
        // cutting.
        self.truncating = true;
        self.written = 0;
        self.headers.clear();
        for text in self.recorded.clone() {
            if text.chars().any(char::is_control) {
                continue;
            }
            let (cut, runes) = self.cut(&text, true);
            self.written += runes;
            self.headers.push(cut);
        }
    }

    fn cut(&self, text: &str, truncating: bool) -> (String, usize) {
        let runes = text.chars().count();
        if truncating && runes > self.item {
            (text.chars().take(self.item).collect(), self.item)
        } else {
            (text.to_string(), runes)
        }
    }

    /// The warnings the response carries.
    pub fn into_warnings(self) -> Vec<String> {
        self.headers
    }
}

/// `warnings` as the API server sends them in one response.
pub fn as_sent<'a>(warnings: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut recorder = Recorder::default();
    for warning in warnings {
        recorder.add(warning);
    }
    recorder.into_warnings()
}

#[cfg(test)]
mod tests {
    use super::Recorder;

    /// kubernetes `endpoints/filters/warning_test.go`, `TestTruncation`,
    /// with its limits (25 runes in all, 5 each).
    #[test]
    fn truncation_is_the_recorders() {
        let mut r = Recorder::with_limits(25, 5);
        for text in ["aaaaaaaaaa", "aaaaaaaaaa", "bb", "ccc", "Iñtërnâtiô"] {
            r.add(text);
        }
        assert_eq!(
            r.clone().into_warnings(),
            ["aaaaaaaaaa", "bb", "ccc", "Iñtërnâtiô"]
        );
        for text in ["e", "ffffffffff", "ffffffffff", "gggggggggg", "h"] {
            r.add(text);
        }
        assert_eq!(
            r.into_warnings(),
            ["aaaaa", "bb", "ccc", "Iñtër", "e", "fffff", "ggggg"]
        );
    }

    #[test]
    fn invalid_and_empty_texts_are_dropped() {
        let mut r = Recorder::default();
        r.add("");
        r.add("my\ntext");
        r.add("fine");
        assert_eq!(r.into_warnings(), ["fine"]);
    }
}
