//! Conversions between the wire types and the domain model, both ways: the server reads requests and
//! writes responses, the client does the opposite. Reading fails with the domain's own
//! `ValidationError`, so a client sees the same message whichever interface it used. The free
//! functions are public for the server, which reads some request fields by themselves.

mod auth;
mod bank;
mod memory;
mod node;
mod recall;
pub use recall::consistency;
pub mod reflect;
pub mod retrieval;
mod write;

use hindsight_core::{MemoryId, Timestamp, ValidationError};

fn time(t: Timestamp) -> String {
    t.to_rfc3339()
}

fn parse_time(value: &str) -> Result<Timestamp, ValidationError> {
    Timestamp::parse_rfc3339(value)
}

/// An optional RFC 3339 time, as requests carry them.
pub fn opt_time(value: Option<&str>) -> Result<Option<Timestamp>, ValidationError> {
    value.map(parse_time).transpose()
}

fn ids(ids: &[MemoryId]) -> Vec<String> {
    ids.iter().map(ToString::to_string).collect()
}

fn parse_ids(ids: &[String]) -> Result<Vec<MemoryId>, ValidationError> {
    ids.iter().map(|id| id.parse()).collect()
}

/// A message field the sender must set; prost makes every message field optional.
fn required<T>(value: Option<T>, field: &str) -> Result<T, ValidationError> {
    value.ok_or_else(|| ValidationError::Invalid(format!("{field} is missing")))
}

fn convert_all<W, T>(items: Vec<W>) -> Result<Vec<T>, ValidationError>
where
    T: TryFrom<W, Error = ValidationError>,
{
    items.into_iter().map(T::try_from).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use hindsight_core::history::FieldChange;
    use hindsight_core::memory::{AccessStats, Signature, StatusChange};
    use hindsight_core::recall::{ArmHit, Explain, RecallFilters, RecallHit};
    use hindsight_core::{
        BankConfig, BankInfo, BankPatch, Consistency, Disposition, HistoryEntry, HistoryKind, Kind,
        Memory, Provenance, RecallRequest, RecallResponse, ReviewReport, Slot, SourceKind, Status,
        Subtype, Support, Trace, WriteOutcome, WriteRequest,
    };

    use super::*;
    use crate::pb;

    fn t(s: &str) -> Timestamp {
        Timestamp::parse_rfc3339(s).unwrap()
    }

    fn id(n: u128) -> MemoryId {
        MemoryId::new(1_772_000_000_000, n)
    }

    /// A record with every optional field set, so a dropped field shows up as a difference.
    fn full_memory() -> Memory {
        Memory {
            id: id(1),
            bank: "acme/agent-7".parse().unwrap(),
            kind: Kind::Semantic,
            subtype: Some(Subtype::Preference),
            content: "用户喜欢绿茶 / likes green tea".into(),
            entities: vec!["user".into(), "green tea".into()],
            slot: Some(Slot {
                subject: "user".into(),
                attribute: "tea".into(),
                value: "green".into(),
            }),
            provenance: Provenance {
                source: SourceKind::Tool,
                tool: Some("crm".into()),
                agent_id: Some("agent-7".into()),
                session_id: Some("s1".into()),
                task_id: Some("t1".into()),
                tool_call_id: Some("c1".into()),
            },
            occurred_at: t("2026-03-01T08:00:00.123Z"),
            recorded_at: t("2026-03-01T08:00:01Z"),
            valid_from: t("2026-03-01T08:00:00.123Z"),
            valid_to: Some(t("2026-03-05T00:00:00Z")),
            expires_at: Some(t("2026-04-01T00:00:00Z")),
            confidence: 0.8,
            importance: 0.25,
            critical: true,
            status: Status::Superseded { by: id(2) },
            status_log: vec![
                StatusChange {
                    effective_at: t("2026-03-01T08:00:00.123Z"),
                    status: Status::Active,
                    confidence: None,
                },
                StatusChange {
                    effective_at: t("2026-03-05T00:00:00Z"),
                    status: Status::Superseded { by: id(2) },
                    confidence: None,
                },
            ],
            support: Support {
                count: 3,
                merged: vec![id(3), id(4)],
                derived_from: vec![id(5)],
            },
            access: AccessStats {
                count: 9,
                last_accessed_at: Some(t("2026-03-06T00:00:00Z")),
            },
            tags: vec!["drinks".into()],
            metadata: BTreeMap::from([("k".to_string(), "v".to_string())]),
            signature: Some(Signature {
                key_id: "key-1".into(),
                mac: "abcd".into(),
            }),
            version: 4,
            updated_at: t("2026-03-05T00:00:00Z"),
            updated_index: 17,
        }
    }

    fn round_trip<T, W>(value: &T) -> T
    where
        for<'a> W: From<&'a T>,
        T: TryFrom<W, Error = ValidationError>,
    {
        T::try_from(W::from(value)).expect("reads back")
    }

    #[test]
    fn records_and_traces_survive_the_wire() {
        let memory = full_memory();
        assert_eq!(round_trip::<_, pb::Memory>(&memory), memory);
        for status in [
            Status::Active,
            Status::Falsified,
            Status::Disputed,
            Status::PendingReview,
            Status::Quarantined {
                reason: "instruction aimed at the agent".into(),
            },
            Status::Archived,
            Status::Expired,
            Status::Deleted,
        ] {
            assert_eq!(round_trip::<_, pb::MemoryStatus>(&status), status);
        }
        let trace = Trace {
            memory: memory.clone(),
            history: vec![HistoryEntry {
                memory: memory.id,
                version: 2,
                kind: HistoryKind::StatusChanged,
                effective_at: t("2026-03-05T00:00:00Z"),
                recorded_at: t("2026-03-05T00:00:01Z"),
                log_index: 17,
                actor: "review".into(),
                reason: "newer preference".into(),
                changes: vec![FieldChange::new("status", "active", "superseded")],
            }],
            related: vec![Memory {
                id: id(2),
                status: Status::Active,
                ..memory
            }],
            integrity: "verified (key local)".into(),
        };
        assert_eq!(round_trip::<_, pb::TraceResponse>(&trace), trace);
    }

    #[test]
    fn requests_and_answers_survive_the_wire() {
        let mut write = WriteRequest::new(
            "acme/agent-7".parse().unwrap(),
            "x",
            Provenance::from_source(SourceKind::Agent),
        );
        write.kind = Kind::Working;
        write.occurred_at = Some(t("2026-03-01T00:00:00Z"));
        write.ttl_secs = Some(60);
        write.confidence = Some(0.4);
        write.tags = vec!["a".into()];
        assert_eq!(round_trip::<_, pb::WriteRequest>(&write), write);

        for disposition in [
            Disposition::Created,
            Disposition::MergedInto {
                target: id(9),
                similarity: 0.95,
            },
            Disposition::Quarantined {
                reason: "hidden markup".into(),
            },
        ] {
            let outcome = WriteOutcome {
                id: id(1),
                disposition,
            };
            assert_eq!(round_trip::<_, pb::WriteResponse>(&outcome), outcome);
        }

        let mut recall =
            RecallRequest::new(vec!["a".parse().unwrap(), "b/c".parse().unwrap()], "tea", 7);
        recall.max_tokens = Some(300);
        recall.as_of = Some(t("2026-03-10T00:00:00Z"));
        recall.include_history = true;
        recall.consistency = Consistency::Eventual;
        recall.filters = RecallFilters {
            kinds: vec![Kind::Episodic],
            tags: vec!["x".into()],
            occurred_from: Some(t("2026-01-01T00:00:00Z")),
            occurred_to: Some(t("2026-02-01T00:00:00Z")),
            min_confidence: Some(0.2),
        };
        assert_eq!(round_trip::<_, pb::RecallRequest>(&recall), recall);
        let mut with_intent = recall.clone();
        with_intent.intent = hindsight_core::RecallIntent::HowTo;
        with_intent.agent_role = Some("support agent".into());
        with_intent.context = BTreeMap::from([("user_id".into(), "42".into())]);
        assert_eq!(
            round_trip::<_, pb::RecallRequest>(&with_intent),
            with_intent
        );

        let response = RecallResponse {
            hits: vec![RecallHit {
                memory: full_memory(),
                status: Status::Active,
                score: 0.7,
                explain: Explain {
                    arms: vec![ArmHit {
                        arm: "keyword".into(),
                        rank: 1,
                        score: 2.5,
                    }],
                    relevance: 1.0,
                    confidence: 0.8,
                    freshness: 0.9,
                    score: 0.7,
                    status: "active".into(),
                    flags: vec!["uncorroborated".into()],
                    collapsed: vec![id(3).to_string()],
                    adjustments: vec!["intent how_to: lesson ×1.60".into()],
                },
            }],
            time_window: Some((t("2026-03-02T00:00:00Z"), t("2026-03-09T00:00:00Z"))),
            tokens_used: 12,
            took_micros: 345,
            recall_id: Some(hindsight_core::RecallId::new(1_800_000_000_000, 5)),
        };
        assert_eq!(round_trip::<_, pb::RecallResponse>(&response), response);

        let report = ReviewReport {
            bank: "a".into(),
            as_of: t("2026-03-10T00:00:00Z"),
            considered: 4,
            expired: vec![id(1)],
            updated: vec![id(2), id(3)],
            conflicts_opened: vec![7],
            created: vec![id(8)],
            backlog: 3,
            purged: vec![id(9)],
            cycle: hindsight_core::review::CycleReport {
                cycle: 3,
                as_of: t("2026-03-10T00:00:00Z"),
                started_at: t("2026-03-10T00:00:01Z"),
                took_micros: 10,
                changed: 5,
                pairs_considered: 6,
                all_pairs: 6,
                pairs_judged: 6,
                pairs_deferred: 0,
                tokens_used: 0,
                token_budget: 0,
                judge: "rules".into(),
                decisions: [("supersede".to_string(), 1)].into_iter().collect(),
                expired: 1,
            },
            phases: vec![],
        };
        assert_eq!(round_trip::<_, pb::ReviewResponse>(&report), report);
    }

    #[test]
    fn banks_survive_the_wire() {
        let mut config = BankConfig::new("acme/team".parse().unwrap(), t("2026-03-01T00:00:00Z"));
        config.description = "team memory".into();
        config.working_ttl_secs = 3600;
        config.max_memories = 10_000;
        config.max_bytes = 1 << 20;
        config.require_corroboration = true;
        config.strategies = Some(hindsight_core::strategy::Strategies {
            temporal: hindsight_core::strategy::TemporalStrategy::PendingReview,
            dispute_factor: 0.5,
            ..Default::default()
        });
        let info = BankInfo {
            config,
            memory_count: 5,
        };
        assert_eq!(round_trip::<_, pb::BankInfo>(&info), info);
        let patch = BankPatch {
            description: Some("d".into()),
            min_confidence: Some(0.1),
            dedup_threshold: None,
            working_ttl_secs: Some(5),
            collapse_threshold: None,
            weights: Some(Default::default()),
            max_memories: Some(50),
            strategies: Some(Default::default()),
            require_corroboration: Some(true),
            max_bytes: Some(65_536),
        };
        assert_eq!(
            BankPatch::try_from(pb::BankPatch::from(&patch)).unwrap(),
            patch
        );
        let mut unknown = pb::BankPatch::from(&patch);
        unknown.strategies.as_mut().unwrap().source = "overwrite".into();
        let refused = BankPatch::try_from(unknown).unwrap_err().to_string();
        assert!(refused.contains("strategies.source"), "{refused}");
    }

    #[test]
    fn malformed_wire_values_are_refused_with_the_domain_message() {
        let write = pb::WriteRequest {
            bank: "a".into(),
            content: "x".into(),
            kind: Some("fact".into()),
            ..Default::default()
        };
        let error = WriteRequest::try_from(write).unwrap_err().to_string();
        assert!(error.contains("unknown kind \"fact\""), "{error}");

        let unattributed = pb::WriteRequest {
            bank: "a".into(),
            content: "x".into(),
            ..Default::default()
        };
        let read = WriteRequest::try_from(unattributed).unwrap();
        assert_eq!(read.provenance.source, SourceKind::Agent);
        assert_eq!(read.kind, Kind::Semantic);

        let recall = pb::RecallRequest {
            banks: vec!["a".into()],
            query: "q".into(),
            as_of: Some("soon".into()),
            ..Default::default()
        };
        let error = RecallRequest::try_from(recall).unwrap_err().to_string();
        assert!(error.contains("invalid timestamp \"soon\""), "{error}");

        let unset_top_k = pb::RecallRequest {
            banks: vec!["a".into()],
            query: "q".into(),
            ..Default::default()
        };
        assert_eq!(RecallRequest::try_from(unset_top_k).unwrap().top_k, 10);

        let status = pb::MemoryStatus {
            name: "superseded".into(),
            ..Default::default()
        };
        assert!(
            Status::try_from(status).is_err(),
            "superseded needs its successor"
        );
    }
}
