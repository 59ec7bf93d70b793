//! Gauges read from the node's state when `/metrics` is scraped.

use std::collections::BTreeSet;

use hindsight_core::BankConfig;

use super::Node;
use crate::metrics::{
    bank_gauge, dir_bytes, forget_deleted_banks, labelled_bank_gauge, quorum_index, resident_bytes,
};

impl Node {
    /// Sets the gauges read from the node's state: Raft, store, banks, indexes, disk and process.
    /// Blocking (sled reads, directory sizes); cheap enough for every scrape.
    pub fn refresh_metrics(&self) {
        self.refresh_raft_metrics();
        self.refresh_bank_metrics();
        let data_dir = &self.config().node.data_dir;
        if let Ok(available) = fs2::available_space(data_dir) {
            metrics::gauge!("hindsight_data_dir_available_bytes").set(available as f64);
        }
        if let Ok(total) = fs2::total_space(data_dir) {
            metrics::gauge!("hindsight_data_dir_capacity_bytes").set(total as f64);
        }
        if let Some(rss) = resident_bytes() {
            metrics::gauge!("hindsight_process_resident_memory_bytes").set(rss as f64);
        }
        metrics::gauge!("hindsight_node_ready").set(if self.is_ready() { 1.0 } else { 0.0 });
        metrics::gauge!(
            "hindsight_build_info",
            "version" => env!("CARGO_PKG_VERSION"),
            "embedding_model" => self.banks().context().embedder.model_id().to_string(),
        )
        .set(1.0);
    }

    fn refresh_raft_metrics(&self) {
        let store = self.banks().metadata_store().metrics();
        let id = store.node_id;
        let flag = |on: bool| if on { 1.0 } else { 0.0 };
        metrics::gauge!("hindsight_raft_node_id").set(id as f64);
        metrics::gauge!("hindsight_raft_term").set(store.term as f64);
        metrics::gauge!("hindsight_raft_leader_id").set(store.leader.unwrap_or(0) as f64);
        metrics::gauge!("hindsight_raft_has_leader").set(flag(store.leader.is_some()));
        metrics::gauge!("hindsight_raft_is_leader").set(flag(store.is_leader));
        let last = store.last_log_index.unwrap_or(0);
        let applied = store.applied_index.unwrap_or(0);
        metrics::gauge!("hindsight_raft_last_log_index").set(last as f64);
        metrics::gauge!("hindsight_raft_applied_index").set(applied as f64);
        metrics::gauge!("hindsight_raft_apply_lag_entries")
            .set(last.saturating_sub(applied) as f64);
        metrics::gauge!("hindsight_raft_snapshot_index")
            .set(store.snapshot_index.unwrap_or(0) as f64);
        metrics::gauge!("hindsight_raft_purged_index").set(store.purged_index.unwrap_or(0) as f64);
        metrics::counter!("hindsight_raft_entries_proposed_total").absolute(store.entries_proposed);
        metrics::counter!("hindsight_raft_commands_proposed_total")
            .absolute(store.commands_proposed);
        metrics::gauge!("hindsight_store_size_bytes").set(store.size_on_disk_bytes as f64);
        let placement = self.banks().metadata_reader().placement().ok().flatten();
        metrics::gauge!("hindsight_placement_version")
            .set(placement.map_or(0.0, |t| t.version as f64));
        let partitions = self.partitions().map(|p| p.counts()).unwrap_or_default();
        metrics::gauge!("hindsight_partition_replicas").set(partitions.hosted as f64);
        metrics::gauge!("hindsight_partitions_led").set(partitions.led as f64);
        metrics::gauge!("hindsight_partitions_without_leader").set(partitions.leaderless as f64);

        // Replication progress is known on the leader only; elsewhere every follower's lag reads
        // 0, so that a former leader's last figures do not linger as an alert.
        let raft = self
            .banks()
            .metadata_store()
            .raft()
            .metrics()
            .borrow()
            .clone();
        let membership = raft.membership_config.membership();
        let replication = raft.replication.as_ref().filter(|_| store.is_leader);
        let matched = |node: u64| -> u64 {
            let from_replication = replication
                .and_then(|r| r.get(&node).copied().flatten())
                .map(|log_id| log_id.index);
            match from_replication {
                Some(index) => index,
                None if node == id => last,
                None => 0,
            }
        };
        let voters: Vec<u64> = membership.voter_ids().collect();
        metrics::gauge!("hindsight_raft_voters").set(voters.len() as f64);
        let commit = match replication {
            Some(_) => quorum_index(voters.iter().map(|&v| matched(v)).collect()),
            // A follower knows what it applied, which the commit index is at least.
            None => applied,
        };
        metrics::gauge!("hindsight_raft_commit_index").set(commit as f64);
        for (&node, _) in membership.nodes() {
            if node == id {
                continue;
            }
            let follower = node.to_string();
            let (index, lag) = match replication {
                Some(_) => (matched(node), last.saturating_sub(matched(node))),
                None => (0, 0),
            };
            metrics::gauge!("hindsight_raft_follower_matched_index", "follower" => follower.clone())
                .set(index as f64);
            metrics::gauge!("hindsight_raft_follower_lag_entries", "follower" => follower)
                .set(lag as f64);
        }
        // A node that stopped leading must not go on reporting its last silence as its own.
        let unanswered_ms = raft
            .millis_since_quorum_ack
            .filter(|_| store.is_leader)
            .unwrap_or(0);
        metrics::gauge!("hindsight_raft_millis_since_quorum_ack").set(unanswered_ms as f64);
    }

    fn refresh_bank_metrics(&self) {
        // The banks of the groups this node holds a replica of.
        let mut banks: Option<Vec<BankConfig>> = Some(vec![]);
        for home in self.banks().hosted_homes() {
            let reader = home.reader();
            match reader.banks() {
                Ok(found) => {
                    for bank in &found {
                        if let Ok(count) = reader.bank_memory_count(&bank.name) {
                            bank_gauge("hindsight_bank_memories", bank.name.as_str(), count as f64);
                        }
                    }
                    if let Some(banks) = &mut banks {
                        banks.extend(found);
                    }
                }
                Err(_) => banks = None,
            }
        }
        if let Some(banks) = &banks {
            metrics::gauge!("hindsight_banks").set(banks.len() as f64);
        }
        let live: Option<BTreeSet<String>> =
            banks.map(|banks| banks.iter().map(|bank| bank.name.to_string()).collect());
        let context = self.banks().context();
        let handles = context.registry.handles();
        metrics::gauge!("hindsight_banks_loaded").set(handles.len() as f64);
        for handle in handles {
            let view = &handle.view;
            let bank = view.name.to_string();
            // A deleted bank's indexes may stay loaded a moment longer; its figures may not.
            if live.as_ref().is_some_and(|live| !live.contains(&bank)) {
                continue;
            }
            let index = &view.index;
            let vectors = index.vectors().stats();
            let keyword = index.bm25().stats();
            let gauges: [(&'static str, f64); 9] = [
                ("hindsight_index_vectors", vectors.live as f64),
                ("hindsight_index_tombstones", vectors.tombstones as f64),
                (
                    "hindsight_index_graph_points",
                    vectors.graph_points.unwrap_or(0) as f64,
                ),
                ("hindsight_index_unsearched", vectors.unsearched as f64),
                (
                    "hindsight_index_rebuilding",
                    f64::from(u8::from(vectors.rebuilding)),
                ),
                ("hindsight_index_keyword_docs", keyword.docs as f64),
                (
                    "hindsight_index_keyword_terms",
                    keyword.distinct_terms as f64,
                ),
                ("hindsight_index_entity_docs", index.entities().len() as f64),
                (
                    "hindsight_index_disk_bytes",
                    dir_bytes(&context.index_dir(&view.name)) as f64,
                ),
            ];
            for (name, value) in gauges {
                bank_gauge(name, &bank, value);
            }
            for (part, bytes) in view.heap_parts() {
                labelled_bank_gauge(
                    "hindsight_bank_heap_bytes",
                    &bank,
                    &[("part", part)],
                    bytes as f64,
                );
            }
        }
        if let Some(live) = live {
            forget_deleted_banks(&self.config().node.data_dir, live);
        }
    }
}
