//! `hindsight partition list | move`: where the placement table puts each partition, and an
//! operator's move of one replica.

use hindsight_api::pb::{ListPartitionsResponse, PartitionInfo};
use serde_json::{json, Value};

use crate::cli::PartitionCommand;
use crate::output::emit;
use crate::table::Table;

pub async fn run(command: PartitionCommand) -> anyhow::Result<()> {
    match command {
        PartitionCommand::List(args) => {
            let client = args.client.connect().await?;
            let listed = client.list_partitions().await?;
            emit(
                args.client.json(),
                || listing_json(&listed),
                || listing_text(&listed),
            );
        }
        PartitionCommand::Move(args) => {
            let client = args.client.connect().await?;
            let listed = client
                .move_partition(args.partition, args.from, args.to)
                .await?;
            emit(
                args.client.json(),
                || listing_json(&listed),
                || {
                    format!(
                        "partition {} moves from node {} to node {} (placement table version {}); \
                         its leader copies it before it drops the old replica\n{}",
                        args.partition,
                        args.from,
                        args.to,
                        listed
                            .placement_version
                            .map_or("-".to_string(), |v| v.to_string()),
                        listing_text(&listed)
                    )
                },
            );
        }
    }
    Ok(())
}

fn listing_json(l: &ListPartitionsResponse) -> Value {
    json!({
        "node_id": l.node_id,
        "placement_version": l.placement_version,
        "partitions": l.partitions.iter().map(|p| json!({
            "partition": p.partition,
            "replicas": p.replicas,
            "hosted": p.hosted,
            "leader_id": p.leader_id,
            "voters": p.voters,
            "learners": p.learners,
            "applied_index": p.applied_index,
            "moving": p.moving,
        })).collect::<Vec<_>>(),
    })
}

fn listing_text(l: &ListPartitionsResponse) -> String {
    let Some(version) = l.placement_version else {
        return "the cluster has not placed its partitions yet\n".to_string();
    };
    let mut table = Table::with_header([
        "PARTITION",
        "REPLICAS",
        "HERE",
        "LEADER",
        "VOTERS",
        "LEARNERS",
        "APPLIED",
        "STATE",
    ]);
    for p in &l.partitions {
        table.row(row(p));
    }
    format!(
        "placement table version {version}, as node {} sees it\n{}",
        l.node_id,
        table.render()
    )
}

fn row(p: &PartitionInfo) -> [String; 8] {
    let ids = |ids: &[u64]| match ids {
        [] => "-".to_string(),
        ids => ids.iter().map(u64::to_string).collect::<Vec<_>>().join(","),
    };
    let here = |text: String| if p.hosted { text } else { "-".to_string() };
    [
        p.partition.to_string(),
        ids(&p.replicas),
        if p.hosted { "yes" } else { "no" }.to_string(),
        here(p.leader_id.map_or("none".to_string(), |id| id.to_string())),
        here(ids(&p.voters)),
        here(ids(&p.learners)),
        here(p.applied_index.map_or("-".to_string(), |i| i.to_string())),
        match p.moving {
            Some(true) => "moving",
            Some(false) => "placed",
            None => "-",
        }
        .to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(hosted: bool, moving: Option<bool>) -> PartitionInfo {
        PartitionInfo {
            partition: 3,
            replicas: vec![2, 4, 1],
            hosted,
            leader_id: hosted.then_some(2),
            voters: if hosted { vec![1, 2, 4] } else { vec![] },
            learners: if hosted { vec![5] } else { vec![] },
            applied_index: hosted.then_some(17),
            moving,
        }
    }

    #[test]
    fn a_partition_held_elsewhere_shows_only_where_the_table_puts_it() {
        assert_eq!(
            row(&info(false, None)),
            ["3", "2,4,1", "no", "-", "-", "-", "-", "-"].map(String::from)
        );
    }

    #[test]
    fn a_held_partition_shows_its_members_and_a_move_under_way() {
        assert_eq!(
            row(&info(true, Some(true))),
            ["3", "2,4,1", "yes", "2", "1,2,4", "5", "17", "moving"].map(String::from)
        );
    }
}
