//! Parsing card JSON strictly: duplicate fields refused at every level, nesting
//! bounded by the protocol's depth.

use std::cell::RefCell;
use std::fmt;

use magi_protocol::cards::LIVE_ENVELOPE_BYTES;
use magi_protocol::limits::JSON_DEPTH;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::DecodeError;

/// Parses `json` into a value, refusing duplicate fields and deep nesting.
///
/// `serde_json` keeps the last of duplicate object fields without telling, and its
/// own nesting limit (128) is far above the protocol's, so this walks the text with
/// its own visitor instead. The visitor records why it stopped, as the parser's error
/// only carries a message.
pub(crate) fn strict_value(json: &str) -> Result<Value, DecodeError> {
    if json.len() > LIVE_ENVELOPE_BYTES {
        return Err(DecodeError::TooLarge);
    }
    let problem = RefCell::new(None);
    let seed = Strict {
        depth: 0,
        problem: &problem,
    };
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let parsed = seed
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value));
    parsed.map_err(|_| problem.into_inner().unwrap_or(DecodeError::Malformed))
}

/// One level of the strict walk: the number of containers around the value.
#[derive(Clone, Copy)]
struct Strict<'p> {
    depth: usize,
    problem: &'p RefCell<Option<DecodeError>>,
}

impl<'p> Strict<'p> {
    fn fail<E: de::Error>(self, problem: DecodeError) -> E {
        let message = problem.to_string();
        self.problem.borrow_mut().get_or_insert(problem);
        E::custom(message)
    }

    /// The seed for the elements of a container entered at this level.
    fn enter<E: de::Error>(self) -> Result<Strict<'p>, E> {
        let depth = self.depth + 1;
        if depth > JSON_DEPTH {
            return Err(self.fail(DecodeError::TooDeep));
        }
        Ok(Strict { depth, ..self })
    }
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("non-finite number"))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(inner)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // Keys compare after unescaping, so `"a"` and `"\u0061"` are duplicates.
            if object.contains_key(&key) {
                return Err(self.fail(DecodeError::DuplicateField(key)));
            }
            let value = map.next_value_seed(inner)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}
