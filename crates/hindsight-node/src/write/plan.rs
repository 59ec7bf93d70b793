//! Planning a batch: each validated request becomes a memory with its fate (stored, merged into a
//! memory it restates, or not kept by the importance gate), decided from the batch's banks and
//! each request's neighbours alone. The node lends only what must stay its own ([`Intake`]): ids,
//! the guard's verdict with its window of recent writes, and signatures.

use hindsight_core::memory::{AccessStats, StatusChange};
use hindsight_core::write::{ImportanceScores, WriteOutcome, WriteRequest};
use hindsight_core::{
    BankConfig, BankName, Kind, Limits, Memory, MemoryId, Slot, Status, Support, Timestamp,
    ValidationError,
};
use hindsight_review::importance::{self, ImportanceConfig};

use super::banks::BatchBanks;
use super::duplicates::{neighbours, Hit};
use super::guarding::Held;
use crate::bank::BankView;
use crate::error::NodeError;

/// One request of the batch on its way through the write path.
pub(crate) struct Planned {
    /// The request's position in the batch.
    pub index: usize,
    pub memory: Memory,
    pub vector: Vec<f32>,
    pub fate: Fate,
    /// What the caller is told about this request, once the log entry's results are in.
    pub outcome: Option<WriteOutcome>,
}

/// What the planner decided for a request.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Fate {
    /// A record of its own; `held` names why the guard quarantines it.
    Create { held: Option<String> },
    /// Support for `target`, a memory of the bank or an earlier write of the batch it restates.
    Merge { target: MemoryId, similarity: f32 },
    /// Below the importance gate: not logged at all.
    NotKept { scores: ImportanceScores },
}

impl Planned {
    /// The record this write lands in: itself, or the memory it merges into; `None` when it is
    /// not kept.
    pub fn lands_in(&self) -> Option<MemoryId> {
        match &self.fate {
            Fate::Create { .. } => Some(self.memory.id),
            Fate::Merge { target, .. } => Some(*target),
            Fate::NotKept { .. } => None,
        }
    }
}

/// The planned batch.
pub(crate) struct Plan {
    /// Every request, in request order.
    pub items: Vec<Planned>,
    /// Earlier writes the guard holds along with this batch (the first halves of instructions
    /// split over two writes), with the reason, in request order.
    pub also_held: Vec<(MemoryId, String)>,
    /// Banks where a kept-or-not write looks like it contradicts a memory, each once.
    pub likely_conflicts: Vec<BankName>,
}

impl Plan {
    /// Whether anything of the batch goes into a log entry.
    pub fn logs_anything(&self) -> bool {
        self.items.iter().any(|p| p.lands_in().is_some())
    }
}

/// What planning takes from the node for each request, in request order.
pub(crate) trait Intake {
    fn new_id(&self, bank: &BankName, now: Timestamp) -> MemoryId;
    /// The guard's verdict when it holds `memory`. `view` and `earlier` (the batch's writes planned
    /// before it) hold the user's rules it may relax.
    fn guard(
        &self,
        memory: &mut Memory,
        confidence_given: bool,
        view: Option<&BankView>,
        earlier: &[Planned],
        vector: &[f32],
    ) -> Option<Held>;
    fn sign(&self, memory: &mut Memory);
}

/// The node's settings the planner reads.
pub(crate) struct Settings<'a> {
    /// Similarity at or above which a neighbour that says something else is a likely conflict.
    pub conflict_similarity: f32,
    pub importance: &'a ImportanceConfig,
}

/// Refuses an empty or oversized batch, and any invalid request; a batch's error names the item.
pub(crate) fn validate(limits: &Limits, requests: &mut [WriteRequest]) -> Result<(), NodeError> {
    if requests.is_empty() {
        return Err(ValidationError::Invalid("the batch holds no memories".into()).into());
    }
    if requests.len() > limits.max_batch {
        return Err(ValidationError::TooMany {
            field: "batch",
            len: requests.len(),
            max: limits.max_batch,
        }
        .into());
    }
    let single = requests.len() == 1;
    for (i, request) in requests.iter_mut().enumerate() {
        request.validate(limits).map_err(|e| {
            if single {
                NodeError::Invalid(e)
            } else {
                NodeError::Invalid(ValidationError::Invalid(format!("item {i}: {e}")))
            }
        })?;
    }
    Ok(())
}

/// `vectors` and `found` (each request's closest memories in its bank) are in request order.
pub(crate) fn plan(
    requests: Vec<WriteRequest>,
    vectors: Vec<Vec<f32>>,
    found: Vec<Vec<Hit>>,
    banks: &BatchBanks,
    settings: &Settings<'_>,
    intake: &impl Intake,
    now: Timestamp,
) -> Plan {
    let mut items: Vec<Planned> = Vec::with_capacity(requests.len());
    let mut also_held = vec![];
    let mut likely_conflicts: Vec<BankName> = vec![];
    let requests = requests.into_iter().zip(vectors).zip(found);
    for (index, ((request, vector), found)) in requests.enumerate() {
        let bank = &banks[&request.bank];
        let confidence_given = request.confidence.is_some();
        let id = intake.new_id(&request.bank, now);
        let mut memory = build_memory(request, &bank.config, id, now);
        let held = intake.guard(
            &mut memory,
            confidence_given,
            bank.view.as_deref(),
            &items,
            &vector,
        );
        if let Some(held) = &held {
            tracing::warn!(bank = %memory.bank, id = %memory.id, reason = %held.reason, "write quarantined");
            if let Some(first_half) = held.first_half {
                also_held.push((
                    first_half,
                    format!(
                        "first half of an instruction split over two writes (the second: memory {}): {}",
                        memory.id, held.reason
                    ),
                ));
            }
        }
        intake.sign(&mut memory);
        let near = neighbours(
            found,
            &items,
            &memory,
            &vector,
            &bank.config,
            settings.conflict_similarity,
        );
        if near.likely_conflict && held.is_none() && !likely_conflicts.contains(&memory.bank) {
            likely_conflicts.push(memory.bank.clone());
        }
        let fate = match (held, near.duplicate) {
            // A held write stands alone: merged into a live memory it would lend it support.
            (Some(held), _) => Fate::Create {
                held: Some(held.reason),
            },
            (None, Some((target, similarity))) => Fate::Merge { target, similarity },
            (None, None) => {
                match importance_shortfall(settings.importance, &memory, near.nearest) {
                    Some(scores) => {
                        tracing::info!(bank = %memory.bank, %scores, "write not kept");
                        Fate::NotKept { scores }
                    }
                    None => Fate::Create { held: None },
                }
            }
        };
        items.push(Planned {
            index,
            memory,
            vector,
            fate,
            outcome: None,
        });
    }
    Plan {
        items,
        also_held,
        likely_conflicts,
    }
}

pub(crate) fn build_memory(
    request: WriteRequest,
    config: &BankConfig,
    id: MemoryId,
    now: Timestamp,
) -> Memory {
    let occurred_at = request.occurred_at.unwrap_or(now);
    let ttl = request.ttl_secs.or(match request.kind {
        Kind::Working => Some(config.working_ttl_secs),
        _ => None,
    });
    let entities = hindsight_text::extract_entities(&request.content);
    let slot = hindsight_text::extract_slot(&request.content).map(|s| Slot {
        subject: s.subject,
        attribute: s.attribute,
        value: s.value,
    });
    let confidence = request
        .confidence
        .unwrap_or_else(|| request.provenance.source.initial_confidence());
    Memory {
        id,
        bank: request.bank,
        kind: request.kind,
        subtype: request.subtype,
        content: request.content,
        entities,
        slot,
        provenance: request.provenance,
        occurred_at,
        recorded_at: now,
        valid_from: occurred_at,
        valid_to: None,
        expires_at: ttl.map(|secs| occurred_at.plus_secs(secs)),
        confidence,
        importance: request.importance.unwrap_or(0.5),
        critical: request.critical,
        status: Status::Active,
        status_log: vec![StatusChange {
            effective_at: occurred_at,
            status: Status::Active,
            confidence: Some(confidence),
        }],
        support: Support {
            count: 1,
            ..Support::default()
        },
        access: AccessStats::default(),
        tags: request.tags,
        metadata: request.metadata,
        signature: None,
        version: 1,
        updated_at: now,
        updated_index: 0,
    }
}

/// The scores of a write the importance gate does not keep; `None` when it is kept or not
/// gated (a user's own words, unless `importance.gate_user_writes`).
fn importance_shortfall(
    gate: &ImportanceConfig,
    memory: &Memory,
    nearest: Option<f32>,
) -> Option<ImportanceScores> {
    let automatic = memory.provenance.source.is_inference();
    // Working memory is task state with a short life of its own: not a long-term candidate.
    if !gate.enabled
        || !(automatic || gate.gate_user_writes)
        || memory.critical
        || memory.kind == Kind::Working
    {
        return None;
    }
    let scores = importance::score(&importance::Candidate {
        content: &memory.content,
        kind: memory.kind,
        subtype: memory.subtype,
        expires: memory.expires_at.is_some(),
        nearest,
    });
    (scores.total < gate.threshold).then_some(scores)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::cell::Cell;
    use std::sync::Arc;

    use hindsight_core::{Provenance, SourceKind};
    use hindsight_index::dot;

    use super::*;
    use crate::write::banks::BatchBank;

    pub(crate) const NOW: Timestamp = Timestamp(1_700_000_000_000);

    /// Ids counted from 1 in request order; the guard holds what mentions `#held#`, naming memory
    /// 99 as the first half of a split instruction.
    #[derive(Default)]
    struct Desk {
        next: Cell<u128>,
    }

    impl Intake for Desk {
        fn new_id(&self, _: &BankName, _: Timestamp) -> MemoryId {
            self.next.set(self.next.get() + 1);
            MemoryId(self.next.get())
        }

        fn guard(
            &self,
            memory: &mut Memory,
            _: bool,
            _: Option<&BankView>,
            _: &[Planned],
            _: &[f32],
        ) -> Option<Held> {
            memory.content.contains("#held#").then(|| Held {
                reason: "held by the test".into(),
                first_half: Some(MemoryId(99)),
            })
        }

        fn sign(&self, _: &mut Memory) {}
    }

    pub(crate) fn bank() -> BankName {
        "t/plan".parse().unwrap()
    }

    pub(crate) fn request(content: &str, source: SourceKind) -> WriteRequest {
        WriteRequest::new(bank(), content, Provenance::from_source(source))
    }

    /// A unit vector at `similarity` to [`toward`]`(1.0)`, in the plane of the first two axes.
    pub(crate) fn toward(similarity: f32) -> Vec<f32> {
        vec![similarity, (1.0 - similarity * similarity).sqrt(), 0.0, 0.0]
    }

    /// A vector unrelated to every [`toward`].
    pub(crate) fn elsewhere() -> Vec<f32> {
        vec![0.0, 0.0, 1.0, 0.0]
    }

    fn batch_banks() -> BatchBanks {
        BatchBanks::from([(
            bank(),
            BatchBank {
                config: BankConfig::new(bank(), NOW),
                view: None,
            },
        )])
    }

    /// Plans `writes` (each with its vector) against a bank whose index found `found` for each.
    pub(crate) fn plan_with(
        writes: Vec<(WriteRequest, Vec<f32>)>,
        found: Vec<Vec<Hit>>,
        importance: &ImportanceConfig,
    ) -> Plan {
        let (requests, vectors): (Vec<_>, Vec<_>) = writes.into_iter().unzip();
        let settings = Settings {
            conflict_similarity: 0.85,
            importance,
        };
        plan(
            requests,
            vectors,
            found,
            &batch_banks(),
            &settings,
            &Desk::default(),
            NOW,
        )
    }

    pub(crate) fn plan_of(writes: Vec<(WriteRequest, Vec<f32>)>) -> Plan {
        let found = vec![vec![]; writes.len()];
        plan_with(writes, found, &ImportanceConfig::default())
    }

    fn fates(plan: &Plan) -> Vec<Fate> {
        plan.items.iter().map(|p| p.fate.clone()).collect()
    }

    fn created() -> Fate {
        Fate::Create { held: None }
    }

    /// A memory the bank holds, found at `similarity`.
    pub(crate) fn stored(id: u128, content: &str, similarity: f32) -> Hit {
        let memory = build_memory(
            request(content, SourceKind::User),
            &BankConfig::new(bank(), NOW),
            MemoryId(id),
            NOW,
        );
        Hit {
            id: MemoryId(id),
            similarity,
            record: Some(Arc::new(memory)),
        }
    }

    #[test]
    fn a_restatement_later_in_the_batch_merges_into_the_first() {
        let line = "The staging cluster runs in Frankfurt.";
        let plan = plan_of(vec![
            (request(line, SourceKind::User), toward(1.0)),
            (request(line, SourceKind::Tool), toward(1.0)),
            (request("Lunch is at noon.", SourceKind::User), elsewhere()),
        ]);
        let first = plan.items[0].memory.id;
        assert_eq!(
            fates(&plan),
            [
                created(),
                Fate::Merge {
                    target: first,
                    similarity: 1.0
                },
                created()
            ]
        );
        assert_eq!(plan.items[1].lands_in(), Some(first));
        let indexes: Vec<usize> = plan.items.iter().map(|p| p.index).collect();
        assert_eq!(indexes, [0, 1, 2]);
    }

    #[test]
    fn a_write_restating_a_merged_one_lands_in_the_record_that_one_landed_in() {
        let line = "The staging cluster runs in Frankfurt.";
        // The third is close to the second only: the second is its duplicate, and the second is
        // no record of its own but support for the first.
        let plan = plan_of(vec![
            (request(line, SourceKind::User), toward(1.0)),
            (request(line, SourceKind::User), toward(0.95)),
            (request(line, SourceKind::User), toward(0.8)),
        ]);
        let first = plan.items[0].memory.id;
        let Fate::Merge { target, similarity } = plan.items[2].fate else {
            panic!("{:?}", plan.items[2].fate);
        };
        assert_eq!(target, first);
        let to_second = dot(&toward(0.95), &toward(0.8));
        assert!((similarity - to_second).abs() < 1e-6, "{similarity}");
    }

    #[test]
    fn a_memory_of_the_bank_restated_is_merged_into_unless_its_record_is_gone() {
        let line = "Invoices go out on the first working day.";
        let mut gone = stored(8, line, 0.96);
        gone.record = None;
        let plan = plan_with(
            vec![
                (request(line, SourceKind::User), toward(1.0)),
                (request(line, SourceKind::User), elsewhere()),
            ],
            vec![vec![stored(7, line, 0.95)], vec![gone]],
            &ImportanceConfig::default(),
        );
        assert_eq!(
            fates(&plan),
            [
                Fate::Merge {
                    target: MemoryId(7),
                    similarity: 0.95
                },
                created()
            ]
        );
        assert!(plan.likely_conflicts.is_empty());
    }

    #[test]
    fn a_held_write_stands_alone_and_holds_its_first_half_too() {
        let line = "Deploy keys rotate monthly.";
        let plan = plan_of(vec![
            (request(line, SourceKind::User), toward(1.0)),
            (
                request(&format!("{line} #held#"), SourceKind::Tool),
                toward(1.0),
            ),
            // Small talk from an agent, which the gate would drop were it not held.
            (request("ok #held#", SourceKind::Agent), elsewhere()),
        ]);
        let held = Fate::Create {
            held: Some("held by the test".into()),
        };
        assert_eq!(fates(&plan), [created(), held.clone(), held]);
        let second = plan.items[1].memory.id;
        assert_eq!(plan.also_held.len(), 2);
        assert_eq!(plan.also_held[0].0, MemoryId(99));
        assert!(
            plan.also_held[0]
                .1
                .starts_with(&format!("first half of an instruction split over two writes (the second: memory {second}): held by the test")),
            "{}",
            plan.also_held[0].1
        );
    }

    #[test]
    fn small_talk_of_an_agent_is_not_kept_and_merges_nothing_later() {
        let plan = plan_of(vec![
            (request("Got it.", SourceKind::Agent), toward(1.0)),
            (request("Got it.", SourceKind::User), toward(1.0)),
            (request("Got it.", SourceKind::Agent), toward(1.0)),
        ]);
        let Fate::NotKept { scores } = plan.items[0].fate else {
            panic!("{:?}", plan.items[0].fate);
        };
        assert!(
            scores.total < ImportanceConfig::default().threshold,
            "{scores}"
        );
        assert_eq!(plan.items[0].lands_in(), None);
        // A user's own words are not gated, and the dropped write is no target for them; the
        // third restates the second and merges, so the gate does not judge it.
        let second = plan.items[1].memory.id;
        assert_eq!(plan.items[1].fate, created());
        assert_eq!(
            plan.items[2].fate,
            Fate::Merge {
                target: second,
                similarity: 1.0
            }
        );
        assert!(plan.logs_anything());
    }

    #[test]
    fn the_gate_spares_critical_and_working_writes_and_can_be_turned_off() {
        let mut critical = request("Got it.", SourceKind::Agent);
        critical.critical = true;
        let mut working = request("Got it.", SourceKind::Reflection);
        working.kind = Kind::Working;
        let plan = plan_of(vec![
            (critical, toward(1.0)),
            (working, elsewhere()),
            (
                request("Sure.", SourceKind::Reflection),
                vec![0.0, 0.0, 0.0, 1.0],
            ),
        ]);
        assert_eq!(plan.items[0].fate, created());
        assert_eq!(plan.items[1].fate, created());
        assert!(matches!(plan.items[2].fate, Fate::NotKept { .. }));

        let off = ImportanceConfig {
            enabled: false,
            ..ImportanceConfig::default()
        };
        let alone = plan_with(
            vec![(request("Sure.", SourceKind::Agent), toward(1.0))],
            vec![vec![]],
            &off,
        );
        assert_eq!(alone.items[0].fate, created());
        let gated = ImportanceConfig {
            gate_user_writes: true,
            ..ImportanceConfig::default()
        };
        let user = plan_with(
            vec![(request("Sure.", SourceKind::User), toward(1.0))],
            vec![vec![]],
            &gated,
        );
        assert!(!user.logs_anything());
    }

    #[test]
    fn another_value_for_a_slot_of_the_bank_is_a_likely_conflict_unless_held() {
        let plan = plan_with(
            vec![
                (request("I live in Denver.", SourceKind::User), toward(1.0)),
                (
                    request("I live in Denver. #held#", SourceKind::User),
                    toward(1.0),
                ),
            ],
            // Below the conflict similarity: the slot alone makes it a likely conflict.
            vec![
                vec![stored(5, "I live in Austin.", 0.5)],
                vec![stored(5, "I live in Austin.", 0.5)],
            ],
            &ImportanceConfig::default(),
        );
        assert_eq!(plan.likely_conflicts, [bank()]);
        let held = plan_with(
            vec![(
                request("I live in Denver. #held#", SourceKind::User),
                toward(1.0),
            )],
            vec![vec![stored(5, "I live in Austin.", 0.99)]],
            &ImportanceConfig::default(),
        );
        assert!(held.likely_conflicts.is_empty());
    }

    #[test]
    fn a_memory_is_built_with_the_defaults_of_its_request_and_bank() {
        let config = BankConfig::new(bank(), NOW);
        let build = |request| build_memory(request, &config, MemoryId(1), NOW);
        let plain = build(request("I live in Austin.", SourceKind::Tool));
        assert_eq!(plain.occurred_at, NOW);
        assert_eq!(plain.valid_from, NOW);
        assert_eq!(plain.recorded_at, NOW);
        assert_eq!(plain.expires_at, None);
        assert_eq!(plain.confidence, 0.8);
        assert_eq!(plain.status_log[0].confidence, Some(0.8));
        assert_eq!(plain.status_log[0].effective_at, NOW);
        assert_eq!(plain.importance, 0.5);
        assert_eq!(plain.support.count, 1);
        assert_eq!(plain.status, Status::Active);
        assert_eq!(plain.slot.map(|s| s.value).as_deref(), Some("austin"));

        let earlier = Timestamp(NOW.0 - 60_000);
        let mut working = request("Step two of the migration is running.", SourceKind::Agent);
        working.kind = Kind::Working;
        working.occurred_at = Some(earlier);
        let working = build(working);
        assert_eq!(working.valid_from, earlier);
        assert_eq!(working.recorded_at, NOW);
        assert_eq!(
            working.expires_at,
            Some(earlier.plus_secs(config.working_ttl_secs))
        );
        assert_eq!(working.confidence, 0.6);

        let mut given = request("The office closes at six.", SourceKind::Agent);
        given.ttl_secs = Some(3_600);
        given.confidence = Some(0.3);
        given.importance = Some(0.9);
        let given = build(given);
        assert_eq!(given.expires_at, Some(NOW.plus_secs(3_600)));
        assert_eq!(given.confidence, 0.3);
        assert_eq!(given.status_log[0].confidence, Some(0.3));
        assert_eq!(given.importance, 0.9);
    }

    #[test]
    fn a_batch_is_refused_whole_with_the_item_named() {
        let limits = Limits::default();
        let empty = validate(&limits, &mut []).unwrap_err();
        assert!(
            empty.to_string().contains("the batch holds no memories"),
            "{empty}"
        );
        let mut batch = vec![
            request("The printer is on floor two.", SourceKind::User),
            request("   ", SourceKind::User),
        ];
        let named = validate(&limits, &mut batch).unwrap_err();
        assert!(named.to_string().contains("item 1: "), "{named}");
        let single = validate(&limits, &mut batch[1..]).unwrap_err();
        assert!(!single.to_string().contains("item "), "{single}");
        let mut padded = vec![request("  Keys are in the drawer. ", SourceKind::User)];
        validate(&limits, &mut padded).unwrap();
        assert_eq!(padded[0].content, "Keys are in the drawer.");
    }
}
