//! API keys as listed and created; the secret's hash never leaves the node.

use hindsight_core::auth::ApiKey;
use hindsight_core::{Timestamp, ValidationError};

use crate::pb;

impl From<&ApiKey> for pb::ApiKeyInfo {
    fn from(k: &ApiKey) -> Self {
        pb::ApiKeyInfo {
            id: k.id.clone(),
            principal: k.principal.clone(),
            grants: k.grants.iter().map(ToString::to_string).collect(),
            created_at: k.created_at.to_rfc3339(),
            revoked_at: k.revoked_at.map(|t| t.to_rfc3339()),
        }
    }
}

impl TryFrom<pb::ApiKeyInfo> for ApiKey {
    type Error = ValidationError;

    fn try_from(k: pb::ApiKeyInfo) -> Result<Self, ValidationError> {
        Ok(ApiKey {
            id: k.id,
            principal: k.principal,
            secret_sha256: String::new(),
            grants: k
                .grants
                .iter()
                .map(|g| g.parse())
                .collect::<Result<_, _>>()?,
            created_at: Timestamp::parse_rfc3339(&k.created_at)?,
            revoked_at: k
                .revoked_at
                .map(|t| Timestamp::parse_rfc3339(&t))
                .transpose()?,
        })
    }
}
