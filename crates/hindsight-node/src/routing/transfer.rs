//! Moving a bank out of a node and back in: JSON lines that carry every record with its history,
//! the bank's configuration and its conflict queue, so that an import answers recall and trace as
//! the exported bank did.
//!
//! Export pages through the bank in id order (a bank of any size, in messages of bounded size);
//! each import call is one Raft command, applied whole or not at all.

use hindsight_core::history::HistoryEntry;
use hindsight_core::review::Conflict;
use hindsight_core::{BankConfig, Memory, MemoryId};
use serde::{Deserialize, Serialize};

/// Version of the line format; an import refuses versions it does not know.
pub const FORMAT: u32 = 1;

/// Records per export page unless the caller asks for fewer.
pub const DEFAULT_PAGE: usize = 500;
/// What a line of an export holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    /// First line: what the bank is (`format`, `config`).
    Bank,
    /// A record of any status with its whole history, oldest first (`memory`, `history`).
    Memory,
    /// An entry of the conflict queue, open or resolved (`conflict`).
    Conflict,
}

/// One line of an export. A flat record rather than a tagged enum: serde reads tagged enums
/// through a buffer that cannot hold the 128-bit ids.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExportLine {
    #[serde(rename = "type")]
    pub kind: LineKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<BankConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Box<Memory>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<HistoryEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflict: Option<Conflict>,
}

impl ExportLine {
    pub(crate) fn new(kind: LineKind) -> Self {
        ExportLine {
            kind,
            format: None,
            config: None,
            memory: None,
            history: vec![],
            conflict: None,
        }
    }
}

/// One page of an export.
#[derive(Debug, Clone)]
pub struct ExportPage {
    pub lines: Vec<String>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<MemoryId>,
}

/// How an import treats records whose signatures this node cannot verify.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// Sign records that are unsigned or whose signature fails here (a tampered line, or an
    /// export from a node with another record key) instead of refusing the import. An admin's
    /// explicit choice: it vouches for content this node cannot vouch for.
    pub resign: bool,
}

/// What an import call stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImportReport {
    pub memories: usize,
    pub conflicts: usize,
}
