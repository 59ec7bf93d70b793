//! `[integrity]`.

use serde::{Deserialize, Serialize};

/// `[integrity]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntegritySection {
    /// Sign every record written and check every record read.
    pub enabled: bool,
    /// The id stored with each signature, so a key can be rotated.
    pub key_id: String,
    /// The variable holding the signing key (any string of at least 32 characters). Unset, the
    /// node uses `<data_dir>/record-key`, made on first start.
    pub key_env: String,
    /// Keys that still verify older records after a rotation, as `ID=VARIABLE`.
    pub retired_keys: Vec<String>,
}

impl Default for IntegritySection {
    fn default() -> Self {
        IntegritySection {
            enabled: true,
            key_id: "local".into(),
            key_env: "HINDSIGHT_RECORD_KEY".into(),
            retired_keys: vec![],
        }
    }
}
