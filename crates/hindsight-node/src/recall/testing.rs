//! What the stages' tests build their cases from: a plan with a bank's default settings and the
//! node's default recall settings, memories of one user, and candidates the arms found.

use std::sync::Arc;

use hindsight_core::intent::IntentProfile;
use hindsight_core::recall::ArmHit;
use hindsight_core::scoring::DEFAULT_MIN_RELEVANCE;
use hindsight_core::time::MILLIS_PER_DAY;
use hindsight_core::{
    BankConfig, BankName, Memory, MemoryId, Provenance, RecallRequest, SourceKind, Status,
    Timestamp,
};

use super::fuse::Candidate;
use super::score::ScoredHit;
use super::search::Plan;
use crate::config::RecallArms;

/// When the tests' recalls run; their memories were stated a day before.
pub(super) const NOW: Timestamp = Timestamp(100 * MILLIS_PER_DAY);

fn bank() -> BankName {
    "test/bank".parse().unwrap()
}

/// A recall of `top_k` hits from one bank, as the node plans it by default.
pub(super) fn plan(top_k: u32) -> Plan {
    let request = RecallRequest::new(vec![bank()], "query", top_k);
    Plan {
        profile: IntentProfile::new(request.intent),
        configs: vec![BankConfig::new(bank(), Timestamp(0))],
        request,
        as_of: NOW,
        now: NOW,
        window: None,
        present: false,
        asks_leave: false,
        terms: vec![],
        entities: vec![],
        singling_out: vec![vec![]],
        min_relevance: DEFAULT_MIN_RELEVANCE,
        arms: RecallArms::default(),
        shadow_alike: true,
        screener: None,
    }
}

/// An active statement of the user's, made a day before [`NOW`].
pub(super) fn memory(id: u128) -> Memory {
    Memory::new(
        MemoryId(id),
        bank(),
        format!("memory {id}"),
        Provenance::from_source(SourceKind::User),
        Timestamp(NOW.0 - MILLIS_PER_DAY),
    )
}

/// `memory` found in the first bank by each of `arms` (name, evidence) at rank 1.
pub(super) fn found(memory: Memory, arms: &[(&str, f32)]) -> Candidate {
    Candidate {
        bank: 0,
        status: memory.status.clone(),
        memory: Arc::new(memory),
        arms: arms
            .iter()
            .map(|&(arm, evidence)| ArmHit {
                arm: arm.to_string(),
                rank: 1,
                score: evidence,
            })
            .collect(),
        evidence: arms.iter().map(|&(_, evidence)| evidence).collect(),
        in_window: false,
    }
}

/// [`memory`] `id` found by the semantic arm with `evidence`.
pub(super) fn candidate(id: u128, evidence: f32) -> Candidate {
    found(memory(id), &[("semantic", evidence)])
}

/// The scored hits of `plan` for `candidates`, best first.
pub(super) fn scored(plan: &Plan, candidates: Vec<Candidate>) -> Vec<ScoredHit> {
    plan.score(candidates.into_iter().map(|c| (c.memory.id, c)).collect())
}

/// The memory ids of `hits`, in order.
pub(super) fn ids(hits: &[ScoredHit]) -> Vec<u128> {
    hits.iter().map(|h| h.candidate.memory.id.0).collect()
}

/// `id` superseded by `by` at the time it was stated.
pub(super) fn superseded(id: u128, by: u128) -> Memory {
    let mut m = memory(id);
    m.status = Status::Superseded { by: MemoryId(by) };
    m.status_log.last_mut().unwrap().status = m.status.clone();
    m
}
