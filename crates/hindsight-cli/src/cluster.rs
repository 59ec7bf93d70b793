//! `hindsight cluster | init | join | leave`: the Raft cluster's membership.

use hindsight_api::pb::ClusterStatusResponse;
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
        "members": s.members.iter().map(|m| json!({
            "node_id": m.node_id,
            "address": m.address,
            "voter": m.voter,
            "lag": m.lag,
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
        .row(["applied_index", &index(s.applied_index)]);
    let mut members = Table::with_header(["NODE", "ADDRESS", "ROLE", "LAG"]);
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
            index(m.lag),
        ]);
    }
    format!("{}\n{}", fields.render(), members.render())
}
