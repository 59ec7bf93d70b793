//! `hindsight cluster | init | join | leave`: the Raft cluster's membership.

use hindsight_api::pb::{ClusterMember, ClusterStatusResponse};
use serde_json::{json, Value};

use crate::cli::{JoinArgs, LeaveArgs, StatusArgs};
use crate::output::emit;
use crate::table::Table;

pub async fn status(args: StatusArgs) -> anyhow::Result<()> {
    let client = args.client.connect().await?;
    let status = client.cluster_status().await?;
    show(args.client.json(), &status);
    Ok(())
}

pub async fn init(args: StatusArgs) -> anyhow::Result<()> {
    let client = args.client.connect().await?;
    let status = client.init_cluster().await?;
    show(args.client.json(), &status);
    Ok(())
}

pub async fn join(args: JoinArgs) -> anyhow::Result<()> {
    let client = args.client.connect().await?;
    let status = client.join_cluster(&args.seed).await?;
    show(args.client.json(), &status);
    Ok(())
}

pub async fn leave(args: LeaveArgs) -> anyhow::Result<()> {
    let client = args.client.connect().await?;
    let node_id = match args.node_id {
        Some(id) => id,
        None => client.cluster_status().await?.node_id,
    };
    let status = client.remove_member(node_id).await?;
    show(args.client.json(), &status);
    Ok(())
}

fn show(as_json: bool, status: &ClusterStatusResponse) {
    emit(as_json, || status_json(status), || status_text(status));
}

fn status_json(s: &ClusterStatusResponse) -> Value {
    json!({
        "node_id": s.node_id,
        "leader_id": s.leader_id,
        "term": s.term,
        "state": s.state,
        "last_log_index": s.last_log_index,
        "committed_index": s.committed_index,
        "applied_index": s.applied_index,
        "millis_since_quorum_ack": s.millis_since_quorum_ack,
        "members": s.members.iter().map(|m| json!({
            "node_id": m.node_id,
            "address": m.address,
            "voter": m.voter,
            "lag": m.lag,
            "state": member_state(m),
            "reachable": m.reachable,
            "millis_since_ack": m.millis_since_ack,
        })).collect::<Vec<_>>(),
        "linked_nodes": s.linked_nodes,
        "link_hints_sent": s.link_hints_sent,
        "link_hints_received": s.link_hints_received,
        "placement_version": s.placement_version,
        "partitions": s.partitions.iter().map(|p| json!({
            "partition": p.partition,
            "replicas": p.replicas,
            "hosted": p.hosted,
            "leader_id": p.leader_id,
            "applied_index": p.applied_index,
            "voters": p.voters,
        })).collect::<Vec<_>>(),
    })
}

fn status_text(s: &ClusterStatusResponse) -> String {
    let index = |i: Option<u64>| i.map_or("-".to_string(), |i| i.to_string());
    let mut fields = Table::fields();
    fields
        .row(["node_id", &s.node_id.to_string()])
        .row(["state", &s.state])
        .row([
            "leader",
            &s.leader_id.map_or("none".to_string(), |id| id.to_string()),
        ])
        .row(["term", &s.term.to_string()])
        .row(["last_log_index", &index(s.last_log_index)])
        .row(["committed_index", &index(s.committed_index)])
        .row(["applied_index", &index(s.applied_index)])
        .row(["millis_since_quorum_ack", &index(s.millis_since_quorum_ack)]);
    let mut members = Table::with_header(["NODE", "ADDRESS", "ROLE", "STATE", "LAG", "LINKED"]);
    for m in &s.members {
        let role = match (Some(m.node_id) == s.leader_id, m.voter) {
            (true, _) => "leader",
            (false, true) => "voter",
            (false, false) => "learner",
        };
        members.row([
            m.node_id.to_string(),
            m.address.clone(),
            role.to_string(),
            member_state(m),
            index(m.lag),
            match (m.node_id == s.node_id, s.linked_nodes.contains(&m.node_id)) {
                (true, _) => "-",
                (false, true) => "yes",
                (false, false) => "no",
            }
            .to_string(),
        ]);
    }
    let mut out = format!("{}\n{}", fields.render(), members.render());
    if let Some(version) = s.placement_version {
        out.push_str(&format!("\nplacement table version {version}\n"));
        out.push_str(&partitions_text(s));
    }
    out
}

/// Whether a member answers, as the answering node can tell: the leader from its own Raft calls
/// to each member, any node for itself; a follower cannot tell for the others.
fn member_state(m: &ClusterMember) -> String {
    match (m.reachable, m.millis_since_ack) {
        (Some(true), _) => "up".to_string(),
        (Some(false), Some(ms)) => format!("down (no answer for {:.1} s)", ms as f64 / 1000.0),
        (Some(false), None) => "down".to_string(),
        (None, _) => "unknown".to_string(),
    }
}

/// One row per partition: where the table places it, and what this node's replica sees.
fn partitions_text(s: &ClusterStatusResponse) -> String {
    let ids = |ids: &[u64]| ids.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    let index = |i: Option<u64>| i.map_or("-".to_string(), |i| i.to_string());
    let mut table = Table::with_header([
        "PARTITION",
        "REPLICAS",
        "HERE",
        "LEADER",
        "VOTERS",
        "APPLIED",
    ]);
    for p in &s.partitions {
        table.row([
            p.partition.to_string(),
            ids(&p.replicas),
            if p.hosted { "yes" } else { "no" }.to_string(),
            match (p.hosted, p.leader_id) {
                (false, _) => "-".to_string(),
                (true, None) => "none".to_string(),
                (true, Some(id)) => id.to_string(),
            },
            if p.hosted {
                ids(&p.voters)
            } else {
                "-".to_string()
            },
            index(p.applied_index),
        ]);
    }
    table.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(reachable: Option<bool>, millis_since_ack: Option<u64>) -> ClusterMember {
        ClusterMember {
            node_id: 2,
            address: "127.0.0.1:7400".into(),
            voter: true,
            lag: None,
            reachable,
            millis_since_ack,
        }
    }

    #[test]
    fn a_member_is_up_down_for_how_long_or_unknown() {
        assert_eq!(member_state(&member(Some(true), Some(40))), "up");
        assert_eq!(
            member_state(&member(Some(false), Some(12_345))),
            "down (no answer for 12.3 s)"
        );
        assert_eq!(member_state(&member(Some(false), None)), "down");
        assert_eq!(member_state(&member(None, None)), "unknown");
    }
}
