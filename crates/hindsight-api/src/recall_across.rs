//! A recall over banks that live in several partitions. No node need hold them all, so the node
//! that takes the request splits it: the banks of partitions it holds are recalled here in one
//! part, and each other partition's banks are handed to a node holding that partition. The parts
//! run at once; their hits are merged by score and cut to the request's `top_k` and `max_tokens`.
//!
//! Every part is logged under one recall id, the one the caller gets, on the node that served it,
//! so feedback on a result (handed to a node of the result's partition, preferred leader first,
//! the order the part was handed in) finds the recall there.
//!
//! A part that fails fails the whole recall: an answer silently missing a bank's memories would
//! look like one where the bank had nothing to say.

use std::collections::BTreeMap;
use std::time::Instant;

use hindsight_core::placement::PartitionId;
use hindsight_core::retrieval::RecallId;
use hindsight_core::{RecallRequest, Timestamp};
use hindsight_node::Node;
use tokio::task::JoinSet;
use tonic::{Request, Response, Status};

use crate::gateway::{bank_partition, forward, owners, Effect};
use crate::pb;
use crate::pb::memory_service_client::MemoryServiceClient;
use crate::status::{from_node, parse};

/// Set on a part of a recall handed to another node: the id of the whole recall, to log the part
/// under.
pub const RECALL_PART_HEADER: &str = "x-hindsight-recall-part-of";

/// The request's banks grouped by partition, when they lie in more than one; `None` otherwise,
/// and when a bank name does not parse (the node that serves the request then refuses it).
pub(crate) fn partitions_of(
    node: &Node,
    banks: &[String],
) -> Option<BTreeMap<PartitionId, Vec<String>>> {
    let mut groups: BTreeMap<PartitionId, Vec<String>> = BTreeMap::new();
    for bank in banks {
        groups
            .entry(bank_partition(node, bank)?)
            .or_default()
            .push(bank.clone());
    }
    (groups.len() > 1).then_some(groups)
}

/// The id a served part is to be logged under, when the request is a part of a larger recall.
pub(crate) fn part_of<T>(request: &Request<T>) -> Result<Option<RecallId>, Status> {
    request
        .metadata()
        .get(RECALL_PART_HEADER)
        .map(|value| {
            value
                .to_str()
                .ok()
                .and_then(|id| id.parse().ok())
                .ok_or_else(|| {
                    Status::invalid_argument(format!("{RECALL_PART_HEADER} is not a recall id"))
                })
        })
        .transpose()
}

/// Serves `request`, whose banks lie in the partitions of `groups`, for `caller` (already
/// authenticated and allowed to read every bank).
pub(crate) async fn recall(
    node: &Node,
    caller: &str,
    request: Request<pb::RecallRequest>,
    groups: BTreeMap<PartitionId, Vec<String>>,
    limits: &RecallRequest,
) -> Result<Response<pb::RecallResponse>, Status> {
    let started = Instant::now();
    let id = RecallId::new(Timestamp::now().millis(), rand::random());
    let mut parts = JoinSet::new();
    let mut here: Vec<String> = vec![];
    for (partition, banks) in groups {
        let Some(owners) = owners(node, Some(partition), &request)? else {
            here.extend(banks);
            continue;
        };
        let mut part = Request::new(pb::RecallRequest {
            banks,
            ..request.get_ref().clone()
        });
        *part.metadata_mut() = request.metadata().clone();
        part.metadata_mut().insert(
            RECALL_PART_HEADER,
            id.to_string()
                .parse()
                .map_err(|_| Status::internal("a recall id is not a header value"))?,
        );
        parts.spawn(async move {
            forward(owners, &part, Effect::Reads, |channel, handed| async move {
                MemoryServiceClient::new(channel)
                    .max_decoding_message_size(crate::server::MAX_MESSAGE_BYTES)
                    .max_encoding_message_size(crate::server::MAX_MESSAGE_BYTES)
                    .recall(handed)
                    .await
            })
            .await
            .map(Response::into_inner)
        });
    }
    if !here.is_empty() {
        let part: RecallRequest = parse(pb::RecallRequest {
            banks: here,
            ..request.get_ref().clone()
        })?;
        let (node, caller) = (node.clone(), caller.to_string());
        parts.spawn(async move {
            node.recall_part_as(&caller, part, id)
                .await
                .map(|response| pb::RecallResponse::from(&response))
                .map_err(from_node)
        });
    }
    let mut answers = vec![];
    while let Some(answer) = parts.join_next().await {
        answers.push(answer.map_err(|e| Status::internal(format!("a recall part failed: {e}")))??);
    }
    let mut merged = merge(answers, limits.top_k as usize, limits.max_tokens);
    merged.took_micros = started.elapsed().as_micros() as u64;
    // Parts served without a retrieval log (it is off there) give no id: then neither does the
    // whole, as feedback could not find every part.
    if merged.recall_id != id.to_string() {
        merged.recall_id.clear();
    }
    Ok(Response::new(merged))
}

/// The parts' hits, best first, at most `top_k` and within `max_tokens`, with the parts' time
/// window and recall id when they all agree on it.
fn merge(
    parts: Vec<pb::RecallResponse>,
    top_k: usize,
    max_tokens: Option<u32>,
) -> pb::RecallResponse {
    let recall_id = match parts.first() {
        Some(first) if parts.iter().all(|p| p.recall_id == first.recall_id) => {
            first.recall_id.clone()
        }
        _ => String::new(),
    };
    let time_window = parts.iter().find_map(|p| p.time_window.clone());
    let mut hits: Vec<pb::RecallHit> = parts.into_iter().flat_map(|p| p.hits).collect();
    hits.sort_by(|a, b| {
        b.score.total_cmp(&a.score).then_with(|| {
            let id = |h: &pb::RecallHit| h.memory.as_ref().map(|m| m.id.clone());
            id(a).cmp(&id(b))
        })
    });
    let mut kept = vec![];
    let mut tokens_used = 0u32;
    for hit in hits.into_iter().take(top_k) {
        let tokens = hit
            .memory
            .as_ref()
            .map_or(0, |m| hindsight_text::count_tokens(&m.content) as u32);
        if max_tokens.is_some_and(|budget| tokens_used + tokens > budget) {
            break;
        }
        tokens_used += tokens;
        kept.push(hit);
    }
    pb::RecallResponse {
        hits: kept,
        time_window,
        tokens_used,
        took_micros: 0,
        recall_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(id: &str, content: &str, score: f32) -> pb::RecallHit {
        pb::RecallHit {
            memory: Some(pb::Memory {
                id: id.into(),
                content: content.into(),
                ..Default::default()
            }),
            score,
            ..Default::default()
        }
    }

    fn part(recall_id: &str, hits: Vec<pb::RecallHit>) -> pb::RecallResponse {
        pb::RecallResponse {
            hits,
            recall_id: recall_id.into(),
            ..Default::default()
        }
    }

    fn ids(response: &pb::RecallResponse) -> Vec<String> {
        response
            .hits
            .iter()
            .map(|h| h.memory.as_ref().unwrap().id.clone())
            .collect()
    }

    #[test]
    fn the_parts_hits_are_interleaved_by_score_and_cut_to_top_k() {
        let merged = merge(
            vec![
                part("r", vec![hit("a1", "one", 0.9), hit("a2", "two", 0.4)]),
                part("r", vec![hit("b1", "three", 0.7), hit("b2", "four", 0.1)]),
            ],
            3,
            None,
        );
        assert_eq!(ids(&merged), ["a1", "b1", "a2"]);
        assert_eq!(merged.recall_id, "r");
        let tokens: usize = ["one", "three", "two"]
            .iter()
            .map(|c| hindsight_text::count_tokens(c))
            .sum();
        assert_eq!(merged.tokens_used as usize, tokens);
    }

    #[test]
    fn the_token_budget_holds_across_parts() {
        let first = hindsight_text::count_tokens("one two three") as u32;
        let second = hindsight_text::count_tokens("four five") as u32;
        let merged = merge(
            vec![
                part("r", vec![hit("a1", "one two three", 0.9)]),
                part(
                    "r",
                    vec![hit("b1", "four five", 0.8), hit("b2", "six", 0.2)],
                ),
            ],
            10,
            Some(first + second - 1),
        );
        assert_eq!(ids(&merged), ["a1"]);
        assert_eq!(merged.tokens_used, first);
    }

    #[test]
    fn parts_logged_under_different_ids_give_no_id() {
        let merged = merge(vec![part("r", vec![]), part("", vec![])], 10, None);
        assert_eq!(merged.recall_id, "");
    }
}
