//! An attribute as the plans hold it, before it is the SDK's `KeyValue`.

use std::borrow::Cow;

/// An attribute's value: a bounded word, a number or a flag.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(Cow<'static, str>),
    Int(i64),
    Bool(bool),
}

impl From<&'static str> for Value {
    fn from(s: &'static str) -> Value {
        Value::Str(Cow::Borrowed(s))
    }
}

pub type Attributes = Vec<(&'static str, Value)>;
