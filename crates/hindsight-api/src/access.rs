//! Who is calling: the API key in a request's metadata, resolved by the node into a principal
//! whose rights every RPC checks before it acts.

use hindsight_core::auth::{Principal, Right};
use hindsight_core::BankName;
use hindsight_node::{access, Node};
use tonic::metadata::MetadataMap;
use tonic::{Request, Status};

use crate::status::from_node;

pub use hindsight_client::status::AUTHORIZATION;

pub(crate) fn principal<T>(node: &Node, request: &Request<T>) -> Result<Principal, Status> {
    node.authenticate(token(request.metadata()).as_deref())
        .map_err(from_node)
}

fn token(metadata: &MetadataMap) -> Option<String> {
    let value = metadata.get(AUTHORIZATION)?.to_str().ok()?.trim();
    Some(
        value
            .strip_prefix("Bearer ")
            .or_else(|| value.strip_prefix("bearer "))
            .unwrap_or(value)
            .to_string(),
    )
}

pub(crate) fn require(principal: &Principal, right: Right, bank: &BankName) -> Result<(), Status> {
    access::require(principal, right, bank).map_err(from_node)
}

/// Like [`require`] for a memory found by id: a caller who may not read its bank is told it does
/// not exist, so ids cannot be probed across tenants.
pub(crate) fn require_on_memory(
    principal: &Principal,
    right: Right,
    bank: &BankName,
    id: &str,
) -> Result<(), Status> {
    if principal.may(Right::Read, bank) {
        require(principal, right, bank)
    } else {
        Err(Status::not_found(format!("memory {id} not found")))
    }
}

pub(crate) fn require_global_admin(principal: &Principal) -> Result<(), Status> {
    access::require_global_admin(principal).map_err(from_node)
}
