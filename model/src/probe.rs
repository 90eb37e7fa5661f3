//! [`Probe<T>`]: a field that holds a value, an explicit "unknown", or the reason its probe failed.
//!
//! On the wire it is the value itself, the string `"unknown"`, or `"error: <reason>"`, exactly
//! as spec §6.1 asks: a failed probe fills its field with the error instead of vanishing.

use serde::de::value as de;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The reason a section carries before its collector has produced anything.
pub const NOT_COLLECTED: &str = "not collected";

const ERROR_PREFIX: &str = "error: ";
const UNKNOWN: &str = "unknown";

#[derive(Debug, Clone, PartialEq)]
pub enum Probe<T> {
    Value(T),
    /// Nothing failed, but the source does not say (e.g. a card without a model).
    Unknown,
    /// The probe failed; the reason is shown to the operator.
    Error(String),
}

impl<T> Probe<T> {
    pub fn error(reason: impl Into<String>) -> Self {
        Probe::Error(reason.into())
    }

    pub fn not_collected() -> Self {
        Probe::Error(NOT_COLLECTED.to_string())
    }

    pub fn value(&self) -> Option<&T> {
        match self {
            Probe::Value(v) => Some(v),
            _ => None,
        }
    }

    pub fn error_reason(&self) -> Option<&str> {
        match self {
            Probe::Error(r) => Some(r),
            _ => None,
        }
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Probe::Error(_))
    }

    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Probe<U> {
        match self {
            Probe::Value(v) => Probe::Value(f(v)),
            Probe::Unknown => Probe::Unknown,
            Probe::Error(r) => Probe::Error(r),
        }
    }
}

impl<T> From<Option<T>> for Probe<T> {
    fn from(value: Option<T>) -> Self {
        value.map_or(Probe::Unknown, Probe::Value)
    }
}

impl<T: Serialize> Serialize for Probe<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Probe::Value(v) => v.serialize(serializer),
            Probe::Unknown => serializer.serialize_str(UNKNOWN),
            Probe::Error(reason) => serializer.collect_str(&format_args!("{ERROR_PREFIX}{reason}")),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Probe<T> {
    /// Streams: the two sentinel strings are recognised on the way, anything else is handed to
    /// `T` as it comes, with no intermediate `serde_json::Value` (which would also cost the page
    /// tens of kilobytes of WebAssembly).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ProbeVisitor(std::marker::PhantomData))
    }
}

struct ProbeVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for ProbeVisitor<T> {
    type Value = Probe<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a value, \"unknown\" or \"error: <reason>\"")
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Self::Value, E> {
        if s == UNKNOWN {
            return Ok(Probe::Unknown);
        }
        if let Some(reason) = s.strip_prefix(ERROR_PREFIX) {
            return Ok(Probe::Error(reason.to_string()));
        }
        T::deserialize(de::StrDeserializer::new(s)).map(Probe::Value)
    }

    fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Self::Value, E> {
        self.visit_str(&s)
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Self::Value, E> {
        T::deserialize(de::BoolDeserializer::new(v)).map(Probe::Value)
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
        T::deserialize(de::U64Deserializer::new(v)).map(Probe::Value)
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
        T::deserialize(de::I64Deserializer::new(v)).map(Probe::Value)
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
        T::deserialize(de::F64Deserializer::new(v)).map(Probe::Value)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        T::deserialize(de::SeqAccessDeserializer::new(seq)).map(Probe::Value)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::deserialize(de::MapAccessDeserializer::new(map)).map(Probe::Value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_value_unknown_and_error() {
        for (probe, wire) in [
            (Probe::Value(3u32), "3"),
            (Probe::Unknown, "\"unknown\""),
            (
                Probe::error("connection refused"),
                "\"error: connection refused\"",
            ),
        ] {
            assert_eq!(serde_json::to_string(&probe).unwrap(), wire);
            assert_eq!(serde_json::from_str::<Probe<u32>>(wire).unwrap(), probe);
        }
    }

    #[test]
    fn a_wrong_type_is_a_deserialisation_error_not_a_silent_unknown() {
        assert!(serde_json::from_str::<Probe<u32>>("\"seven\"").is_err());
    }
}
