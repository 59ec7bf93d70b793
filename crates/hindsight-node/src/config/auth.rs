//! `[auth]`.

use serde::{Deserialize, Serialize};

/// `[auth]`: whether requests must carry an API key, and where the admin key comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthSection {
    /// Off (the embedded default for a node on loopback), every request has every right and the
    /// node says so in its log at start.
    pub enabled: bool,
    /// The environment variable holding the bootstrap admin key (`hs_<id>_<secret>`, any id and a
    /// secret of at least 16 characters); required when auth is on.
    pub admin_key_env: String,
    /// Let `/metrics` show the series labelled with a bank (names and sizes of every tenant's
    /// banks) to any scrape. Off, only a scrape with an admin key for every bank (`**=admin`)
    /// sees them; the node-wide series are public either way.
    pub public_bank_metrics: bool,
}

impl Default for AuthSection {
    fn default() -> Self {
        AuthSection {
            enabled: false,
            admin_key_env: "HINDSIGHT_ADMIN_KEY".into(),
            public_bank_metrics: false,
        }
    }
}
