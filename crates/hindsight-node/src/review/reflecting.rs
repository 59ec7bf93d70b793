//! `reflect` (docs/DESIGN.md, "Reflect"): a finished task's trace becomes at most five memories, written
//! like any other with the source `reflection`. The rules reflector runs by default; the LLM one
//! when `[reflect] reflector = "llm"`, over the review's chat endpoint.

use hindsight_core::write::WriteRequest;
use hindsight_core::{BankName, Kind, Provenance, SourceKind, Subtype, Timestamp};
use hindsight_llm::{ChatClient, LlmReflectConfig, LlmReflector};
use hindsight_review::reflect::{ReflectError, Reflection, Reflector, RulesReflector, TaskTrace};

use crate::error::NodeError;

use super::ReviewHost;
pub use crate::config::ReflectorKind;
use crate::review::judging::LlmJudgeSection;

pub use hindsight_review::reflect::ReflectReport;

/// The node's reflector.
pub enum NodeReflector {
    Rules(RulesReflector),
    Llm(Box<LlmReflector>),
}

impl NodeReflector {
    pub fn new(kind: ReflectorKind, llm: &LlmJudgeSection) -> Result<Self, NodeError> {
        Ok(match kind {
            ReflectorKind::Rules => NodeReflector::Rules(RulesReflector),
            ReflectorKind::Llm => {
                let client = ChatClient::new(llm.chat.clone())
                    .map_err(|e| NodeError::Config(format!("review.llm.chat: {e}")))?;
                let reflector = LlmReflector::new(client, LlmReflectConfig::default())
                    .map_err(|e| NodeError::Config(format!("reflect: {e}")))?;
                NodeReflector::Llm(Box::new(reflector))
            }
        })
    }

    fn reflect(&self, trace: &TaskTrace) -> (Result<Vec<Reflection>, ReflectError>, u64, String) {
        match self {
            NodeReflector::Rules(r) => (r.reflect(trace), 0, r.name().to_string()),
            NodeReflector::Llm(r) => {
                let counted = r.reflect_counted(trace);
                (counted.result, counted.usage.total(), r.name().to_string())
            }
        }
    }
}

pub(crate) async fn reflect(
    node: &impl ReviewHost,
    bank: BankName,
    trace: TaskTrace,
    task_id: Option<String>,
    dry_run: bool,
) -> Result<ReflectReport, NodeError> {
    trace
        .validate()
        .map_err(|e| NodeError::Invalid(hindsight_core::ValidationError::Invalid(e.to_string())))?;
    let reflector = node.reviewing().reflector();
    let (result, tokens_used, name) =
        tokio::task::spawn_blocking(move || reflector.reflect(&trace))
            .await
            .map_err(NodeError::internal)?;
    let reflections = result.map_err(|e| match e {
        ReflectError::Invalid(m) => NodeError::Invalid(hindsight_core::ValidationError::Invalid(m)),
        ReflectError::Unavailable(m) | ReflectError::Malformed(m) => {
            NodeError::Unavailable(format!("the reflector gave no usable answer: {m}"))
        }
    })?;
    if dry_run || reflections.is_empty() {
        return Ok(ReflectReport {
            reflector: name,
            memories: reflections.into_iter().map(|r| (r, None)).collect(),
            tokens_used,
        });
    }
    let now = Timestamp::now();
    let requests: Vec<WriteRequest> = reflections
        .iter()
        .map(|r| {
            let mut provenance = Provenance::from_source(SourceKind::Reflection);
            provenance.task_id = task_id.clone();
            let mut request = WriteRequest::new(bank.clone(), r.content.clone(), provenance);
            request.kind = r.kind;
            request.subtype = r.subtype;
            request.occurred_at = Some(now);
            request.tags = r.tags.clone();
            request
                .metadata
                .insert("reflected_from".into(), r.why.clone());
            // How-tos and lessons are what reflection is for; they outweigh a passing fact.
            if matches!(r.subtype, Some(Subtype::Procedure | Subtype::Lesson))
                && r.kind == Kind::Semantic
            {
                request.importance = Some(0.7);
            }
            request
        })
        .collect();
    let outcomes = node.write_batch(requests).await?;
    Ok(ReflectReport {
        reflector: name,
        memories: reflections
            .into_iter()
            .zip(outcomes.into_iter().map(Some))
            .collect(),
        tokens_used,
    })
}
