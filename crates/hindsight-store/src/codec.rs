//! Value encoding. bincode: compact and fast, and every stored type (core domain types and
//! openraft's entries, votes and memberships) is plain serde without `deserialize_any`.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::StoreError;

pub(crate) fn encode<T: Serialize + ?Sized>(what: &str, value: &T) -> Result<Vec<u8>, StoreError> {
    bincode::serialize(value).map_err(|e| StoreError::codec(what, e))
}

pub(crate) fn decode<T: DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T, StoreError> {
    bincode::deserialize(bytes).map_err(|e| StoreError::codec(what, e))
}

pub(crate) fn encoded_len<T: Serialize + ?Sized>(value: &T) -> usize {
    bincode::serialized_size(value).map_or(usize::MAX, |n| n as usize)
}
