//! The parts of a review cycle that look after the bank as a whole rather than after pairs:
//! distilling rules from repeated episodes, deleting archived records past their retention, and
//! archiving the least useful memories of a bank over its quota (docs/DESIGN.md, "Review").

use crate::bank::homes::NewIds;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use hindsight_core::memory::StatusChange;
use hindsight_core::review::DerivedMemory;
use hindsight_core::{
    BankName, Kind, Memory, MemoryId, Provenance, SourceKind, Status, Subtype, Support, Timestamp,
};
use hindsight_review::{
    distill, is_reviewable, reinforce, Action, Decision, DistillConfig, MemoryUpdate, Neighbourhood,
};

/// The judge name capacity evictions carry.
pub const CAPACITY: &str = "capacity";

/// Share of its quota at which a bank is warned about (logged and counted) before anything is
/// archived.
pub const CAPACITY_WARNING_RATIO: f64 = 0.9;

/// Episodes changed in this cycle either join a rule distilled before or, with enough similar
/// episodes around them, seed a new one. Only the changed episodes and their neighbourhoods are
/// looked at, so the cost follows the size of the change, not of the bank.
pub fn distillation(
    changed: &[Arc<Memory>],
    records: &HashMap<MemoryId, Arc<Memory>>,
    neighbourhood: &dyn Neighbourhood,
    config: &DistillConfig,
    ids: NewIds,
    now: Timestamp,
) -> (Vec<Decision>, Vec<DerivedMemory>) {
    let fresh: Vec<&Arc<Memory>> = changed
        .iter()
        .filter(|m| m.kind == Kind::Episodic && is_reviewable(m))
        .collect();
    if fresh.is_empty() || config.min_support == 0 {
        return (vec![], vec![]);
    }
    let rules: Vec<Arc<Memory>> = records
        .values()
        .filter(|m| m.subtype == Some(Subtype::Rule) && !m.support.derived_from.is_empty())
        .filter(|m| m.status != Status::Deleted)
        .cloned()
        .collect();
    let behind: BTreeSet<MemoryId> = rules
        .iter()
        .flat_map(|r| r.support.derived_from.iter().copied())
        .collect();
    let mut pool: BTreeMap<MemoryId, Arc<Memory>> = BTreeMap::new();
    for episode in fresh {
        if behind.contains(&episode.id) {
            continue;
        }
        pool.insert(episode.id, episode.clone());
        let around = neighbourhood
            .similar(episode, config.similarity, config.neighbours_per_episode)
            .into_iter()
            .map(|(m, _)| m)
            .chain(neighbourhood.same_slot(episode, config.neighbours_per_episode));
        for other in around {
            if other.kind == Kind::Episodic && is_reviewable(&other) && !behind.contains(&other.id)
            {
                pool.insert(other.id, other);
            }
        }
    }
    let pool: Vec<Arc<Memory>> = pool.into_values().collect();
    let live_rules: Vec<Arc<Memory>> = rules.into_iter().filter(|r| is_reviewable(r)).collect();
    let (mut decisions, taken) = reinforce(&live_rules, &pool, neighbourhood, config);
    let rest: Vec<Arc<Memory>> = pool
        .into_iter()
        .filter(|m| !taken.contains(&m.id))
        .collect();
    let mut created = vec![];
    for decision in distill(&rest, neighbourhood, config) {
        if let Action::Distill(rule) = &decision.action {
            let sources: Vec<&Arc<Memory>> = rule
                .derived_from
                .iter()
                .filter_map(|id| records.get(id))
                .collect();
            let Some(first) = sources.first() else {
                continue;
            };
            let bank = first.bank.clone();
            let latest = sources.iter().map(|m| m.occurred_at).max().unwrap_or(now);
            created.push(DerivedMemory {
                memory: rule_memory(bank, rule, ids.next(now), latest, now),
                judge: decision.judge.clone(),
                explanation: decision.reason.clone(),
            });
        }
        decisions.push(decision);
    }
    (decisions, created)
}

fn rule_memory(
    bank: BankName,
    rule: &hindsight_review::DistilledRule,
    id: MemoryId,
    occurred_at: Timestamp,
    now: Timestamp,
) -> Memory {
    let mut memory = Memory::new(
        id,
        bank,
        rule.content.clone(),
        Provenance::from_source(SourceKind::Reflection),
        occurred_at,
    );
    memory.subtype = Some(Subtype::Rule);
    memory.recorded_at = now;
    memory.updated_at = now;
    memory.entities = hindsight_text::extract_entities(&rule.content);
    memory.slot = rule.slot.clone();
    memory.confidence = rule.confidence;
    memory.status_log = vec![StatusChange {
        effective_at: occurred_at,
        status: Status::Active,
        confidence: Some(rule.confidence),
    }];
    memory.support = Support {
        count: rule.derived_from.len() as u32,
        merged: vec![],
        derived_from: rule.derived_from.clone(),
    };
    memory.tags = vec!["distilled".into()];
    memory
}

/// Archived records whose archiving is at least `retention_days` old at `as_of`: deleted for good.
pub fn purge_due(
    records: &HashMap<MemoryId, Arc<Memory>>,
    as_of: Timestamp,
    retention_days: u64,
) -> Vec<MemoryId> {
    let mut due: Vec<MemoryId> = records
        .values()
        .filter(|m| m.status == Status::Archived)
        .filter(|m| {
            let archived_at = m
                .status_log
                .iter()
                .rev()
                .find(|c| c.status == Status::Archived)
                .map_or(m.updated_at, |c| c.effective_at);
            as_of.days_since(archived_at) >= retention_days as f64
        })
        .map(|m| m.id)
        .collect();
    due.sort();
    due
}

/// A bank's quotas; 0: none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Quota {
    /// Live memories.
    pub memories: u64,
    /// Content bytes of live and quarantined memories ([`Memory::quota_bytes`]).
    pub bytes: u64,
}

/// How full a bank is against its quota (0 when it has none).
pub fn capacity_used(live: usize, max_memories: u64) -> f64 {
    if max_memories == 0 {
        0.0
    } else {
        live as f64 / max_memories as f64
    }
}

/// The review's look at a bank's size: how full it is against each quota (gauges for alerting,
/// and a warning from [`CAPACITY_WARNING_RATIO`] on), and the [`evictions`] of a bank over one.
pub fn capacity(
    bank: &BankName,
    records: &HashMap<MemoryId, Arc<Memory>>,
    quota: Quota,
    decided: &BTreeSet<MemoryId>,
) -> Vec<Decision> {
    let live = records
        .values()
        .filter(|m| !m.status.hidden_by_default())
        .count();
    let used = capacity_used(live, quota.memories);
    if quota.memories > 0 {
        // Watched by alerting before eviction starts archiving the bank's weakest memories.
        crate::metrics::bank_gauge("hindsight_bank_quota_used_ratio", bank.as_str(), used);
    }
    if used >= CAPACITY_WARNING_RATIO {
        crate::metrics::bank_counter("hindsight_bank_quota_warnings_total", bank.as_str(), &[], 1);
        tracing::warn!(
            %bank, live, max_memories = quota.memories,
            "bank at {:.0} % of its memory quota", used * 100.0
        );
    }
    if quota.bytes > 0 {
        let held = held_bytes(records);
        let used = held as f64 / quota.bytes as f64;
        // Writes past the byte quota are refused, so a full bank shows here before its writers
        // start failing.
        crate::metrics::bank_gauge("hindsight_bank_byte_quota_used_ratio", bank.as_str(), used);
        if used >= CAPACITY_WARNING_RATIO {
            crate::metrics::bank_counter(
                "hindsight_bank_byte_quota_warnings_total",
                bank.as_str(),
                &[],
                1,
            );
            tracing::warn!(
                %bank, held, max_bytes = quota.bytes,
                "bank at {:.0} % of its byte quota", used * 100.0
            );
        }
    }
    evictions(records, quota, decided)
}

fn held_bytes(records: &HashMap<MemoryId, Arc<Memory>>) -> u64 {
    records.values().map(|m| m.quota_bytes()).sum()
}

/// When a bank holds more live memories than its quota, or more content bytes than its byte
/// quota (which writes keep to, unless the quota was lowered or a quarantined memory released),
/// the least useful live memories are archived until it fits: critical memories last, then
/// lowest confidence, then least recently used. Memories this cycle already decided on are left
/// out; quarantined ones stay held.
pub fn evictions(
    records: &HashMap<MemoryId, Arc<Memory>>,
    quota: Quota,
    decided: &BTreeSet<MemoryId>,
) -> Vec<Decision> {
    if quota.memories == 0 && quota.bytes == 0 {
        return vec![];
    }
    let mut live: Vec<&Arc<Memory>> = records
        .values()
        .filter(|m| !m.status.hidden_by_default())
        .collect();
    let excess = if quota.memories > 0 {
        live.len().saturating_sub(quota.memories as usize)
    } else {
        0
    };
    let held = held_bytes(records);
    let byte_excess = if quota.bytes > 0 {
        held.saturating_sub(quota.bytes)
    } else {
        0
    };
    if excess == 0 && byte_excess == 0 {
        return vec![];
    }
    live.retain(|m| !decided.contains(&m.id));
    let last_used = |m: &Memory| m.access.last_accessed_at.unwrap_or(m.recorded_at);
    live.sort_by(|a, b| {
        a.critical
            .cmp(&b.critical)
            .then(a.confidence.total_cmp(&b.confidence))
            .then(last_used(a).cmp(&last_used(b)))
            .then(a.id.cmp(&b.id))
    });
    let total = records
        .values()
        .filter(|m| !m.status.hidden_by_default())
        .count();
    let mut over = vec![];
    if excess > 0 {
        over.push(format!(
            "bank holds {total} live memories, over its quota of {}",
            quota.memories
        ));
    }
    if byte_excess > 0 {
        over.push(format!(
            "bank holds {held} bytes of memory content, over its byte quota of {}",
            quota.bytes
        ));
    }
    let over = over.join(" and ");
    let mut freed = 0u64;
    let mut out = vec![];
    for m in live {
        if out.len() >= excess && freed >= byte_excess {
            break;
        }
        freed += m.quota_bytes();
        out.push(Decision {
            action: Action::Archive(MemoryUpdate::of(m.id).status(Status::Archived)),
            judge: CAPACITY.to_string(),
            reason: format!(
                "{over}; confidence {:.2}, last used {}",
                m.confidence,
                last_used(m)
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: u128, confidence: f32, critical: bool) -> Arc<Memory> {
        let mut m = Memory::new(
            MemoryId(id),
            "t/bank".parse().unwrap(),
            format!("memory {id}"),
            Provenance::from_source(SourceKind::User),
            Timestamp(1_000_000 * id as i64),
        );
        m.confidence = confidence;
        m.critical = critical;
        Arc::new(m)
    }

    fn table(records: Vec<Arc<Memory>>) -> HashMap<MemoryId, Arc<Memory>> {
        records.into_iter().map(|m| (m.id, m)).collect()
    }

    #[test]
    fn a_bank_over_quota_archives_its_least_useful_memories_and_never_a_critical_one_first() {
        let records = table(vec![
            record(1, 0.2, true),
            record(2, 0.9, false),
            record(3, 0.3, false),
            record(4, 0.5, false),
        ]);
        let count = |memories| Quota { memories, bytes: 0 };
        let archived: Vec<MemoryId> = evictions(&records, count(2), &BTreeSet::new())
            .iter()
            .flat_map(|d| d.memories())
            .collect();
        assert_eq!(archived, vec![MemoryId(3), MemoryId(4)]);
        assert!(evictions(&records, count(4), &BTreeSet::new()).is_empty());
        assert!(evictions(&records, Quota::default(), &BTreeSet::new()).is_empty());
        assert!((capacity_used(4, 4) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_bank_over_its_byte_quota_archives_the_least_useful_until_it_fits() {
        // "memory N" is 8 bytes each: 32 held.
        let mut held = (*record(5, 0.1, false)).clone();
        held.status = Status::Quarantined {
            reason: "instruction aimed at the agent".into(),
        };
        let records = table(vec![
            record(1, 0.2, true),
            record(2, 0.9, false),
            record(3, 0.3, false),
            record(4, 0.5, false),
            Arc::new(held),
        ]);
        let bytes = |bytes| Quota { memories: 0, bytes };
        // 40 held with the quarantined one; a quota of 25 needs 15 freed: two live memories.
        let decisions = evictions(&records, bytes(25), &BTreeSet::new());
        let archived: Vec<MemoryId> = decisions.iter().flat_map(|d| d.memories()).collect();
        assert_eq!(archived, vec![MemoryId(3), MemoryId(4)]);
        assert!(
            decisions[0]
                .reason
                .starts_with("bank holds 40 bytes of memory content, over its byte quota of 25"),
            "{}",
            decisions[0].reason
        );
        assert!(evictions(&records, bytes(40), &BTreeSet::new()).is_empty());
        // Both quotas: enough goes for each.
        let both = Quota {
            memories: 3,
            bytes: 39,
        };
        let archived: Vec<MemoryId> = evictions(&records, both, &BTreeSet::new())
            .iter()
            .flat_map(|d| d.memories())
            .collect();
        assert_eq!(archived, vec![MemoryId(3)]);
    }

    #[test]
    fn archived_records_are_purged_only_after_their_retention() {
        let mut old = (*record(1, 0.05, false)).clone();
        old.status = Status::Archived;
        old.status_log.push(StatusChange {
            effective_at: Timestamp::parse_rfc3339("2026-01-01T00:00:00Z").unwrap(),
            status: Status::Archived,
            confidence: None,
        });
        let live = record(2, 0.5, false);
        let records = table(vec![Arc::new(old), live]);
        let day = |s: &str| Timestamp::parse_rfc3339(s).unwrap();
        assert!(purge_due(&records, day("2026-03-31T00:00:00Z"), 90).is_empty());
        assert_eq!(
            purge_due(&records, day("2026-04-01T00:00:00Z"), 90),
            vec![MemoryId(1)]
        );
    }
}
