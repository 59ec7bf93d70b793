//! Any node takes any request. With partitions, a node holds only the banks of the partitions
//! placed on it; a request about a bank (or memory) of another partition is handed, credentials
//! and all, to a node that holds it, and its answer comes back as this node's. The caller never
//! learns where a bank lives. The owner checks the credentials again; they are the caller's, not
//! this node's.
//!
//! A handed-over request carries [`FORWARDED_HEADER`] and is never handed on again: two nodes
//! that disagree about the placement for a moment answer "unavailable" rather than pass a request
//! back and forth.

use std::future::Future;

use hindsight_core::placement::PartitionId;
use hindsight_node::Node;
use hindsight_node::Peer;
use tonic::transport::Channel;
use tonic::{Code, Request, Response, Status};

use crate::status::{from_node, NOT_TAKEN_HEADER};

/// Set on a request one node hands to another.
pub const FORWARDED_HEADER: &str = "x-hindsight-forwarded";

/// The headers of a request that go with it when it is handed on: the caller's credentials, and
/// the recall a part of a recall over several partitions belongs to.
const PASSED_ON: [&str; 2] = ["authorization", crate::recall_across::RECALL_PART_HEADER];

/// Whether `request` was handed over by another node.
pub(crate) fn is_forwarded<T>(request: &Request<T>) -> bool {
    request.metadata().contains_key(FORWARDED_HEADER)
}

/// The nodes to hand `request` to: `None` when this node serves it itself (it holds the
/// partition, there are no partitions, or the request was handed over already).
pub(crate) fn owners<T>(
    node: &Node,
    partition: Option<PartitionId>,
    request: &Request<T>,
) -> Result<Option<Vec<(u64, Channel)>>, Status> {
    if is_forwarded(request) {
        return Ok(None);
    }
    match node.owners_elsewhere(partition).map_err(from_node)? {
        Some(peers) => channels(node, peers).map(Some),
        None => Ok(None),
    }
}

/// A channel to each of `peers`.
fn channels(node: &Node, peers: Vec<Peer>) -> Result<Vec<(u64, Channel)>, Status> {
    peers
        .into_iter()
        .map(|peer| Ok((peer.id, channel_to(node, &peer.address)?)))
        .collect()
}

/// The node's shared, lazily connected channel to the node at `address`.
pub(crate) fn channel_to(node: &Node, address: &str) -> Result<Channel, Status> {
    node.cluster()
        .channel_to(address)
        .map_err(|e| Status::unavailable(e.to_string()))
}

/// What a handed-over request does to the store, which decides whether it may be handed to the
/// next owner after the one it went to broke off mid-call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// It may change what is stored: sent again, it could land twice, so the caller is told the
    /// outcome is unknown instead.
    Changes,
    /// It reads (a recall also counts the accesses of what it returns and logs itself): asking
    /// the next owner is safe, and keeps the bank readable while one of its nodes is down.
    Reads,
}

/// Sends `request` to the first of `owners` that answers (a node that is down or has no quorum
/// for the partition passes it to the next) through `call`, and returns its answer.
pub(crate) async fn forward<T, R, F, Fut>(
    owners: Vec<(u64, Channel)>,
    request: &Request<T>,
    effect: Effect,
    call: F,
) -> Result<Response<R>, Status>
where
    T: Clone,
    F: Fn(Channel, Request<T>) -> Fut,
    Fut: Future<Output = Result<Response<R>, Status>>,
{
    Ok(forward_from(owners, request, effect, &call).await?.1)
}

/// [`forward`], also naming the node that answered.
async fn forward_from<T, R, F, Fut>(
    owners: Vec<(u64, Channel)>,
    request: &Request<T>,
    effect: Effect,
    call: &F,
) -> Result<(u64, Response<R>), Status>
where
    T: Clone,
    F: Fn(Channel, Request<T>) -> Fut,
    Fut: Future<Output = Result<Response<R>, Status>>,
{
    let mut last = Status::unavailable("no node holds the partition");
    for (node_id, channel) in owners {
        let mut handed = Request::new(request.get_ref().clone());
        for header in PASSED_ON {
            if let Some(value) = request.metadata().get(header) {
                handed.metadata_mut().insert(header, value.clone());
            }
        }
        handed
            .metadata_mut()
            .insert(FORWARDED_HEADER, tonic::metadata::MetadataValue::from(1u64));
        match call(channel, handed).await {
            Ok(response) => return Ok((node_id, response)),
            // A change the owner may have proposed before it failed (its leader lost the
            // majority mid-commit, the commit timed out) could still be applied there: sent to
            // the next owner as well, it would be stored twice under two ids.
            Err(status)
                if effect == Effect::Changes
                    && status.code() == Code::Unavailable
                    && !surely_not_taken(&status) =>
            {
                return Err(Status::unavailable(format!(
                    "node {node_id}, which holds the partition: {}; the request may or may not \
                     have been carried out",
                    status.message()
                )));
            }
            Err(status) if status.code() == Code::Unavailable => {
                last = Status::unavailable(format!(
                    "node {node_id}, which holds the partition: {}",
                    status.message()
                ));
            }
            // The owner went away mid-call. A read goes on to the next owner.
            Err(status)
                if effect == Effect::Reads
                    && matches!(status.code(), Code::Unknown | Code::Cancelled) =>
            {
                last = Status::unavailable(format!(
                    "node {node_id}, which holds the partition, did not answer ({})",
                    status.message()
                ));
            }
            // A change may or may not have been carried out, so it is not tried on the next owner
            // (a write could land twice); the caller is told to retry, as for any unavailable node.
            Err(status) if matches!(status.code(), Code::Unknown | Code::Cancelled) => {
                return Err(Status::unavailable(format!(
                    "node {node_id}, which holds the partition, did not answer ({}); the request \
                     may or may not have been carried out",
                    status.message()
                )));
            }
            Err(status) => return Err(status),
        }
    }
    Err(last)
}

/// Whether an owner's unavailable answer means the request was not carried out at all: the
/// owner said so, or the connection to it could not be made.
fn surely_not_taken(status: &Status) -> bool {
    status.metadata().get(NOT_TAKEN_HEADER).is_some() || hindsight_cluster::is_connect_error(status)
}

/// A request that concerns every partition (listing banks), asked of nodes that between them hold
/// every partition this node holds no replica of; their answers, one per node asked. Nothing when
/// this node holds them all, or the request was handed over already.
pub(crate) async fn from_other_partitions<T, R, F, Fut>(
    node: &Node,
    request: &Request<T>,
    call: F,
) -> Result<Vec<Response<R>>, Status>
where
    T: Clone,
    F: Fn(Channel, Request<T>) -> Fut,
    Fut: Future<Output = Result<Response<R>, Status>>,
{
    if is_forwarded(request) {
        return Ok(vec![]);
    }
    let Some(table) = node.placement().map_err(from_node)? else {
        return Ok(vec![]);
    };
    let mut covered: std::collections::BTreeSet<PartitionId> = node
        .partitions()
        .map(|p| p.hosted().into_iter().collect())
        .unwrap_or_default();
    let mut answers = vec![];
    for p in 0..table.partition_count() {
        if covered.contains(&p) {
            continue;
        }
        let Some(peers) = node.owners_elsewhere(Some(p)).map_err(from_node)? else {
            continue;
        };
        let owners = channels(node, peers)?;
        let (answered_by, answer) = forward_from(owners, request, Effect::Reads, &call).await?;
        covered.extend(table.partitions_of(answered_by));
        answers.push(answer);
    }
    Ok(answers)
}

/// The partition of a bank named in a request; `None` for a name that does not parse (this node
/// then refuses it itself) or without partitions.
pub(crate) fn bank_partition(node: &Node, bank: &str) -> Option<PartitionId> {
    node.partition_of_bank(&bank.parse().ok()?)
}

/// The partition of a memory id named in a request; `None` as for [`bank_partition`].
pub(crate) fn memory_partition(node: &Node, id: &str) -> Option<PartitionId> {
    node.partition_of_memory(id.parse().ok()?)
}

/// Hands the request to the owners of `$partition`, when this node holds no replica of it,
/// through the `$client` method `$method`, and returns their answer from the calling function.
/// `$effect` is the request's [`Effect`]: `Changes` or `Reads`.
macro_rules! forward_to_owners {
    ($self:ident, $request:ident, $partition:expr, $effect:ident, $client:ident :: $method:ident) => {
        if let Some(owners) = $crate::gateway::owners(&$self.node, $partition, &$request)? {
            return $crate::gateway::forward(
                owners,
                &$request,
                $crate::gateway::Effect::$effect,
                |channel, handed| async move {
                    $client::new(channel)
                        .max_decoding_message_size($crate::server::MAX_MESSAGE_BYTES)
                        .max_encoding_message_size($crate::server::MAX_MESSAGE_BYTES)
                        .$method(handed)
                        .await
                },
            )
            .await;
        }
    };
}
pub(crate) use forward_to_owners;

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tonic::transport::Endpoint;

    use super::*;

    /// Two owners whose channels are never dialled: the calls below answer for them.
    fn two_owners() -> Vec<(u64, Channel)> {
        [1, 2]
            .into_iter()
            .map(|id| {
                let channel = Endpoint::from_static("http://127.0.0.1:9").connect_lazy();
                (id, channel)
            })
            .collect()
    }

    /// Forwards to two owners, the first answering `first` and the second "ok"; returns the
    /// outcome and how many owners were called.
    async fn forward_with_first(effect: Effect, first: Status) -> (Result<String, Status>, usize) {
        let calls = AtomicUsize::new(0);
        let outcome = forward(
            two_owners(),
            &Request::new(()),
            effect,
            |_channel, _handed: Request<()>| {
                let call = calls.fetch_add(1, Ordering::SeqCst);
                let first = first.clone();
                async move {
                    match call {
                        0 => Err(first),
                        _ => Ok(Response::new("ok".to_string())),
                    }
                }
            },
        )
        .await
        .map(Response::into_inner);
        (outcome, calls.load(Ordering::SeqCst))
    }

    #[tokio::test]
    async fn a_read_goes_on_to_the_next_owner_when_one_breaks_off_mid_call() {
        for broken in [
            Status::unknown("transport error"),
            Status::cancelled("operation was canceled"),
        ] {
            let (outcome, calls) = forward_with_first(Effect::Reads, broken).await;
            assert_eq!(outcome.expect("the second owner answers"), "ok");
            assert_eq!(calls, 2);
        }
    }

    #[tokio::test]
    async fn a_change_is_not_sent_again_after_an_owner_breaks_off_mid_call() {
        let (outcome, calls) =
            forward_with_first(Effect::Changes, Status::unknown("transport error")).await;
        let status = outcome.expect_err("the outcome is unknown");
        assert_eq!(status.code(), Code::Unavailable);
        assert!(
            status
                .message()
                .contains("may or may not have been carried out"),
            "{status:?}"
        );
        assert_eq!(calls, 1, "a write that may have landed is not sent twice");
    }

    #[tokio::test]
    async fn a_read_goes_on_to_the_next_owner_when_one_is_unavailable() {
        let (outcome, calls) =
            forward_with_first(Effect::Reads, Status::unavailable("no quorum")).await;
        assert_eq!(outcome.expect("the second owner answers"), "ok");
        assert_eq!(calls, 2);
    }

    #[tokio::test]
    async fn a_change_goes_on_to_the_next_owner_only_when_the_first_surely_did_not_take_it() {
        let not_taken = from_node(hindsight_node::NodeError::NotTaken(
            "node 1 leads, but no majority has answered it; the change was not proposed".into(),
        ));
        let (outcome, calls) = forward_with_first(Effect::Changes, not_taken).await;
        assert_eq!(outcome.expect("the second owner answers"), "ok");
        assert_eq!(calls, 2);

        // Proposed, then the owner's leader lost its majority: the entry may still commit
        // there, so a second owner must not store the write again under another id.
        let unknown = from_node(hindsight_node::NodeError::Unavailable(
            "the write was not acknowledged: the change may or may not be applied".into(),
        ));
        let (outcome, calls) = forward_with_first(Effect::Changes, unknown).await;
        let status = outcome.expect_err("the outcome is unknown");
        assert_eq!(status.code(), Code::Unavailable);
        assert!(
            status
                .message()
                .contains("may or may not have been carried out"),
            "{status:?}"
        );
        assert_eq!(calls, 1, "a write that may have landed is not sent twice");
    }

    #[tokio::test]
    async fn a_refusal_is_the_answer_whatever_the_request() {
        for effect in [Effect::Changes, Effect::Reads] {
            let (outcome, calls) =
                forward_with_first(effect, Status::permission_denied("no right to read")).await;
            assert_eq!(outcome.expect_err("refused").code(), Code::PermissionDenied);
            assert_eq!(calls, 1);
        }
    }
}
