//! `memory_write`: keep one thing worth remembering.

use hindsight_api::pb;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::backend::Backend;
use crate::caller::Caller;
use crate::render::{put_nonempty, round};
use crate::tool_error::ToolError;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteArgs {
    /// One self-contained statement, understandable without this conversation, e.g. "The user
    /// prefers answers in French" or "Deploys to staging fail unless the VPN is up".
    pub content: String,
    /// The bank to write to, e.g. "acme/agent-7". Defaults to the configured bank.
    #[serde(default)]
    pub bank: Option<String>,
    /// "semantic" (lasting knowledge; the default), "episodic" (something that happened, at a
    /// time) or "working" (needed for the next hours only; it expires).
    #[serde(default)]
    pub kind: Option<Kind>,
    /// For semantic memories: "fact", "preference", "procedure", "lesson" or "rule".
    #[serde(default)]
    pub subtype: Option<Subtype>,
    /// Who stated it: "user" when the user said it, "tool" for a tool's result (name the tool in
    /// `tool`), "agent" for your own conclusion (the default; trusted less, and dropped when not
    /// judged worth keeping).
    #[serde(default)]
    pub source: Option<Source>,
    /// The tool that returned it, with source "tool".
    #[serde(default)]
    pub tool: Option<String>,
    /// Labels that later searches can filter on, e.g. ["billing"].
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// When it happened or was said, RFC 3339 (e.g. "2026-03-04T10:00:00Z"). Defaults to now.
    #[serde(default)]
    pub occurred_at: Option<String>,
    /// Forget it automatically this many seconds after it happened.
    #[serde(default)]
    pub ttl_seconds: Option<u64>,
}

#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Semantic,
    Episodic,
    Working,
}

#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Subtype {
    Fact,
    Preference,
    Procedure,
    Lesson,
    Rule,
}

#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    User,
    Tool,
    Agent,
}

impl WriteArgs {
    pub async fn run(self, backend: &dyn Backend, caller: &Caller) -> Result<Value, ToolError> {
        let request = self.request(caller)?;
        Ok(result(&backend.write(caller.key(), request).await?))
    }

    fn request(self, caller: &Caller) -> Result<pb::WriteRequest, ToolError> {
        Ok(pb::WriteRequest {
            bank: caller.bank(self.bank)?,
            content: self.content,
            kind: self.kind.map(|k| wire(&k)),
            subtype: self.subtype.map(|s| wire(&s)),
            provenance: Some(pb::Provenance {
                source: wire(&self.source.unwrap_or(Source::Agent)),
                tool: self.tool.filter(|t| !t.trim().is_empty()),
                ..Default::default()
            }),
            occurred_at: self.occurred_at.filter(|t| !t.trim().is_empty()),
            ttl_seconds: self.ttl_seconds,
            tags: self.tags.unwrap_or_default(),
            ..Default::default()
        })
    }
}

/// An argument enum's spelling on the wire: the same lowercase word serde reads.
fn wire<T: std::fmt::Debug>(value: &T) -> String {
    format!("{value:?}").to_lowercase()
}

/// The outcome, with a note where the agent might otherwise assume the memory was stored as is.
fn result(r: &pb::WriteResponse) -> Value {
    let mut out = Map::new();
    out.insert("id".into(), json!(r.id));
    out.insert("disposition".into(), json!(r.disposition));
    put_nonempty(&mut out, "merged_into", json!(r.merged_into));
    if let Some(similarity) = r.similarity {
        out.insert("similarity".into(), json!(round(similarity)));
    }
    put_nonempty(&mut out, "quarantine_reason", json!(r.quarantine_reason));
    let note = match r.disposition.as_str() {
        "merged" => Some("an equivalent memory existed; this write strengthened it"),
        "quarantined" => {
            Some("held back as suspicious: recall will not return it until a person releases it")
        }
        "rejected_low_importance" => Some(
            "nothing stored: not judged worth keeping; if the user stated it, write it with \
             source \"user\"",
        ),
        _ => None,
    };
    if let Some(note) = note {
        out.insert("note".into(), json!(note));
    }
    if let Some(scores) = &r.importance {
        out.insert("importance".into(), json!(round(scores.total)));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(json: Value) -> WriteArgs {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn defaults_fill_in_bank_and_source() {
        let caller = Caller {
            bank: Some("acme/a".into()),
            ..Default::default()
        };
        let r = args(json!({"content": "likes tea", "kind": "episodic", "subtype": "preference"}))
            .request(&caller)
            .unwrap();
        assert_eq!(r.bank, "acme/a");
        assert_eq!(r.kind.as_deref(), Some("episodic"));
        assert_eq!(r.subtype.as_deref(), Some("preference"));
        assert_eq!(r.provenance.unwrap().source, "agent");
    }

    #[test]
    fn unknown_kinds_are_refused() {
        assert!(serde_json::from_value::<WriteArgs>(json!({"content": "x", "kind": "x"})).is_err());
    }
}
