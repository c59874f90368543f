//! Serde readers of fields the protocol's extensions add, shared by the messages and
//! the cards.

use serde::{Deserialize, Deserializer};

/// A field that a negotiated extension makes present, possibly null: present `null`
/// is `Some(None)`, absence (the default) is `None`.
pub(crate) fn present_nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}
