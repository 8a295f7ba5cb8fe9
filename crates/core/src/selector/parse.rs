//! The string grammar of `kubectl -l` and the list APIs
//! (kubernetes/apimachinery `pkg/labels/selector.go`, `Parser`).

use super::SyntaxError;
use super::requirement::{Operator, Requirement};

/// Recursive-descent parser over the string grammar.
pub(super) struct Parser<'a> {
    rest: &'a str,
}

impl<'a> Parser<'a> {
    pub(super) fn new(input: &'a str) -> Self {
        Parser { rest: input }
    }

    pub(super) fn parse(mut self) -> Result<Vec<Requirement>, SyntaxError> {
        let mut requirements = Vec::new();
        self.skip_space();
        if self.rest.is_empty() {
            return Ok(requirements);
        }
        loop {
            requirements.push(self.requirement()?);
            self.skip_space();
            if self.rest.is_empty() {
                return Ok(requirements);
            }
            if !self.eat(",") {
                return Err(SyntaxError::Comma {
                    found: self.rest.to_string(),
                });
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, SyntaxError> {
        self.skip_space();
        if self.eat("!") {
            let key = self.word()?;
            return Ok(Requirement::new(&key, Operator::DoesNotExist, [])?);
        }
        let key = self.word()?;
        self.skip_space();
        if self.rest.is_empty() || self.rest.starts_with(',') {
            return Ok(Requirement::new(&key, Operator::Exists, [])?);
        }
        let operator = if self.eat("==") || self.eat("=") {
            Operator::Equals
        } else if self.eat("!=") {
            Operator::NotEquals
        } else if self.eat(">") {
            Operator::GreaterThan
        } else if self.eat("<") {
            Operator::LessThan
        } else if self.eat_keyword("notin") {
            Operator::NotIn
        } else if self.eat_keyword("in") {
            Operator::In
        } else {
            return Err(SyntaxError::Operator {
                key,
                found: self.rest.to_string(),
            });
        };
        let values = match operator {
            Operator::In | Operator::NotIn => self.value_list()?,
            _ => vec![self.value()],
        };
        Ok(Requirement::new(&key, operator, values)?)
    }

    /// `(a, b)`; `()` is one empty value, as in apimachinery.
    fn value_list(&mut self) -> Result<Vec<String>, SyntaxError> {
        self.skip_space();
        if !self.eat("(") {
            return Err(SyntaxError::ValueList {
                found: self.rest.to_string(),
            });
        }
        let mut values = Vec::new();
        loop {
            values.push(self.value());
            self.skip_space();
            if self.eat(")") {
                return Ok(values);
            }
            if !self.eat(",") {
                return Err(SyntaxError::ListSeparator {
                    found: self.rest.to_string(),
                });
            }
        }
    }

    /// A value may be empty (`a=` selects `a: ""`).
    fn value(&mut self) -> String {
        self.skip_space();
        self.take_word()
    }

    fn word(&mut self) -> Result<String, SyntaxError> {
        self.skip_space();
        let word = self.take_word();
        if word.is_empty() {
            Err(if self.rest.is_empty() {
                SyntaxError::KeyAtEnd
            } else {
                SyntaxError::Key {
                    found: self.rest.to_string(),
                }
            })
        } else {
            Ok(word)
        }
    }

    fn take_word(&mut self) -> String {
        let end = self
            .rest
            .find(|c: char| c.is_whitespace() || "=!(),<>".contains(c))
            .unwrap_or(self.rest.len());
        let (word, rest) = self.rest.split_at(end);
        self.rest = rest;
        word.to_string()
    }

    /// `in`/`notin` only as whole words, so a key named `inx` is not split.
    fn eat_keyword(&mut self, keyword: &str) -> bool {
        let Some(after) = self.rest.strip_prefix(keyword) else {
            return false;
        };
        if after.starts_with(|c: char| c.is_whitespace() || c == '(') {
            self.rest = after;
            true
        } else {
            false
        }
    }

    fn eat(&mut self, token: &str) -> bool {
        match self.rest.strip_prefix(token) {
            Some(after) => {
                self.rest = after;
                true
            }
            None => false,
        }
    }

    fn skip_space(&mut self) {
        self.rest = self.rest.trim_start();
    }
}
