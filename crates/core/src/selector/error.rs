//! Why a selector is refused: the key or term, and what the API server
//! would say of it.

/// A selector the API server would refuse; the text says which key or term
/// and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// A requirement of a structured selector ([`LabelSelector`](super::LabelSelector)) is
    /// invalid.
    #[error(transparent)]
    Requirement(#[from] RequirementError),
    /// A string selector does not parse ([`Selector::parse`](super::Selector::parse)).
    #[error("invalid label selector \"{selector}\": {problem}")]
    Syntax {
        /// The selector as given.
        selector: String,
        /// Where and why it does not parse (in this message, so not also a
        /// source).
        problem: SyntaxError,
    },
    /// A field selector term is not `field=value` or `field!=value`.
    #[error("{term:?} is not of the form field=value or field!=value")]
    FieldTerm {
        /// The term.
        term: String,
    },
    /// A field selector names a field other than `metadata.name` and
    /// `metadata.namespace`.
    #[error("field {field:?} is not supported (only metadata.name and metadata.namespace)")]
    Field {
        /// The field.
        field: String,
    },
}

/// One label requirement the API server would refuse (apimachinery
/// `NewRequirement`, `LabelSelectorAsSelector`), naming its key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequirementError {
    /// A `matchExpressions` operator other than the four.
    #[error(
        "\"{operator}\" is not a valid label selector operator for key \"{key}\"; \
         use In, NotIn, Exists or DoesNotExist"
    )]
    Operator {
        /// The key.
        key: String,
        /// The operator given.
        operator: String,
    },
    /// `In` or `NotIn` without a value.
    #[error("key \"{key}\": the In and NotIn operators need at least one value")]
    NoValues {
        /// The key.
        key: String,
    },
    /// `=` or `!=` with other than one value.
    #[error("key \"{key}\": = and != need exactly one value")]
    NotOneValue {
        /// The key.
        key: String,
    },
    /// `Exists` or `DoesNotExist` with values.
    #[error("key \"{key}\": the Exists and DoesNotExist operators take no values")]
    ValuesGiven {
        /// The key.
        key: String,
    },
    /// `>` or `<` with other than one integer.
    #[error("key \"{key}\": > and < need exactly one integer value")]
    NotOneInteger {
        /// The key.
        key: String,
    },
    /// A key whose prefix is not a DNS subdomain.
    #[error("label key \"{key}\": the prefix before \"/\" must be a lower-case DNS subdomain")]
    KeyPrefix {
        /// The key.
        key: String,
    },
    /// A key whose name part is not a label name.
    #[error(
        "label key \"{key}\" is not valid: the name part must be 1-63 characters of \
         letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
    )]
    KeyName {
        /// The key.
        key: String,
    },
    /// A value that is not a label value.
    #[error(
        "key \"{key}\": value \"{value}\" is not a valid label value (at most 63 \
         letters, digits, '-', '_' or '.', starting and ending with a letter or digit)"
    )]
    Value {
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
}

/// Where the string grammar of [`Selector::parse`](super::Selector::parse) stops, and what it
/// expected there (`found` is the rest of the selector).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyntaxError {
    /// A requirement is not followed by a comma.
    #[error("expected \",\" before \"{found}\"")]
    Comma {
        /// The rest of the selector.
        found: String,
    },
    /// A key is not followed by an operator.
    #[error("after key \"{key}\" expected =, ==, !=, in, notin, > or <, found \"{found}\"")]
    Operator {
        /// The key.
        key: String,
        /// The rest of the selector.
        found: String,
    },
    /// `in`/`notin` not followed by `(`.
    #[error("expected \"(\" to start a value list, found \"{found}\"")]
    ValueList {
        /// The rest of the selector.
        found: String,
    },
    /// A value list item not followed by `,` or `)`.
    #[error("expected \",\" or \")\" in a value list, found \"{found}\"")]
    ListSeparator {
        /// The rest of the selector.
        found: String,
    },
    /// The selector ends where a key was expected.
    #[error("a label key is missing at the end")]
    KeyAtEnd,
    /// No key where one was expected.
    #[error("expected a label key, found \"{found}\"")]
    Key {
        /// The rest of the selector.
        found: String,
    },
    /// A requirement that parses but is invalid.
    #[error(transparent)]
    Requirement(#[from] RequirementError),
}
