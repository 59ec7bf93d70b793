//! Batched pair judging over a [`ChatClient`].

use std::collections::{HashMap, HashSet};

use parking_lot::Mutex;

use crate::answer::check_answer;
use crate::cache::{CachedVerdict, PairKey, VerdictCache};
use crate::consensus::combine;
use crate::prompt::judge_messages;
use crate::usage::count_prompt_tokens;
use crate::{
    ChatClient, ChatError, ChatMessage, ChatRequest, Deferred, JudgeConfig, JudgeItem,
    JudgeOutcome, TokenUsage, Verdict,
};

/// Most pairs in one prompt. Beyond this small models lose track of ids and one bad answer
/// wastes too much work.
pub const MAX_BATCH_ITEMS: usize = 10;

/// Asks an LLM how pairs of memories relate, one prompt per batch.
///
/// Answers are checked strictly (see the crate docs for the schema). An answer that is not
/// usable at all is asked for again; a partly valid one keeps its valid verdicts and the other
/// pairs are asked for again on their own. Both count against the client's `max_retries`, after
/// which the pairs still open come back as [`Deferred`] with the reason. Nothing the caller
/// passed in is ever missing from the outcome.
///
/// `Send + Sync`: one judge can serve every bank.
pub struct PairJudge {
    client: ChatClient,
    config: JudgeConfig,
    cache: Mutex<VerdictCache>,
}

/// The result of asking about some pairs once (with re-asks for invalid answers).
#[derive(Default)]
struct Round {
    verdicts: Vec<Verdict>,
    deferred: Vec<Deferred>,
    usage: TokenUsage,
    requests: u32,
    /// Set when the endpoint itself failed (after the client's retries), as opposed to the
    /// model answering badly.
    endpoint_failed: bool,
}

impl PairJudge {
    pub fn new(client: ChatClient, config: JudgeConfig) -> Result<Self, ChatError> {
        if config.consensus_samples == 0 || config.consensus_samples.is_multiple_of(2) {
            return Err(ChatError::Config(format!(
                "consensus_samples must be odd so a vote cannot tie, not {}",
                config.consensus_samples
            )));
        }
        if !config.consensus_temperature.is_finite() || config.consensus_temperature < 0.0 {
            return Err(ChatError::Config(format!(
                "consensus_temperature {} must be a number of at least 0",
                config.consensus_temperature
            )));
        }
        Ok(PairJudge {
            cache: Mutex::new(VerdictCache::new(config.cache_capacity)),
            client,
            config,
        })
    }

    pub fn client(&self) -> &ChatClient {
        &self.client
    }

    pub fn config(&self) -> &JudgeConfig {
        &self.config
    }

    /// Prompt tokens that [`judge`](Self::judge) would send for `items` right now: cached pairs
    /// cost nothing, and an all-cached batch estimates 0. Check it against a budget before
    /// calling. Each request may add up to `max_output_tokens` of completion, re-asks after
    /// invalid answers cost again, and [`consensus`](Self::consensus) sends up to
    /// `consensus_samples` prompts.
    pub fn estimate_prompt_tokens(&self, items: &[JudgeItem]) -> u64 {
        let model = self.client.model();
        let pending: Vec<&JudgeItem> = {
            let cache = self.cache.lock();
            items
                .iter()
                .filter(|item| !cache.contains(&PairKey::of(model, item).0))
                .collect()
        };
        if pending.is_empty() {
            return 0;
        }
        with_margin(count_prompt_tokens(&judge_messages(&pending)))
    }

    /// What one request may cost at most: its prompt (with the tokenizer margin) and the
    /// longest answer allowed.
    fn request_cost(&self, messages: &[ChatMessage]) -> u64 {
        with_margin(count_prompt_tokens(messages))
            + u64::from(self.client.config().max_output_tokens)
    }

    /// Judges a batch of 1 to [`MAX_BATCH_ITEMS`] pairs with one prompt (plus re-asks).
    ///
    /// `Err` only for a batch that cannot be sent (empty, too large, blank or repeated ids);
    /// every failure after that is reported per pair in [`JudgeOutcome::deferred`].
    pub fn judge(&self, items: &[JudgeItem]) -> Result<JudgeOutcome, ChatError> {
        self.judge_within(items, u64::MAX)
    }

    /// Like [`judge`](Self::judge), spending at most `allowance` tokens: a request (the first
    /// or a re-ask) is sent only while its prompt estimate plus the longest answer allowed
    /// still fits, and the pairs left open are deferred.
    pub fn judge_within(
        &self,
        items: &[JudgeItem],
        allowance: u64,
    ) -> Result<JudgeOutcome, ChatError> {
        check_batch(items)?;
        let mut allowance = allowance;
        let model = self.client.model();
        let mut outcome = JudgeOutcome::default();
        let mut pending: Vec<&JudgeItem> = Vec::new();
        {
            let mut cache = self.cache.lock();
            for item in items {
                let (key, swapped) = PairKey::of(model, item);
                match cache.get(&key) {
                    Some(hit) => {
                        outcome.verdicts.push(hit.to_verdict(&item.id, swapped));
                        outcome.cache_hits += 1;
                    }
                    None => pending.push(item),
                }
            }
        }
        if !pending.is_empty() {
            let round = self.ask(&pending, None, &mut allowance);
            self.remember(&pending, &round.verdicts);
            outcome.verdicts.extend(round.verdicts);
            outcome.deferred.extend(round.deferred);
            outcome.usage += round.usage;
            outcome.requests += round.requests;
        }
        outcome.sort_like(items);
        Ok(outcome)
    }

    /// Judges a batch by majority over `consensus_samples` samples, for decisions that are
    /// costly to get wrong.
    ///
    /// Per pair, the relation (and for `update`/`inference_refuted` the winning side) needs
    /// more than half of the votes; a tie or split gives `undecidable`. Once a pair has a
    /// majority, later samples leave it out. A pair that no more than half of the samples
    /// answered validly is deferred. Cached verdicts are reused only when they came from at
    /// least as many samples; the verdicts reached here, ties included, are cached for later
    /// plain and consensus calls alike.
    pub fn consensus(&self, items: &[JudgeItem]) -> Result<JudgeOutcome, ChatError> {
        self.consensus_within(items, u64::MAX)
    }

    /// Like [`consensus`](Self::consensus), spending at most `allowance` tokens over all samples.
    pub fn consensus_within(
        &self,
        items: &[JudgeItem],
        allowance: u64,
    ) -> Result<JudgeOutcome, ChatError> {
        check_batch(items)?;
        let mut allowance = allowance;
        let samples = self.config.consensus_samples;
        let model = self.client.model();
        let mut outcome = JudgeOutcome::default();
        let mut pending: Vec<&JudgeItem> = Vec::new();
        {
            let mut cache = self.cache.lock();
            for item in items {
                let (key, swapped) = PairKey::of(model, item);
                match cache.get(&key).filter(|hit| hit.samples >= samples) {
                    Some(hit) => {
                        outcome.verdicts.push(hit.to_verdict(&item.id, swapped));
                        outcome.cache_hits += 1;
                    }
                    None => pending.push(item),
                }
            }
        }
        let mut votes: HashMap<&str, Vec<Verdict>> = HashMap::new();
        let mut misses: HashMap<&str, Vec<String>> = HashMap::new();
        for _ in 0..samples {
            let open: Vec<&JudgeItem> = pending
                .iter()
                .copied()
                .filter(|item| !has_majority(votes.get(item.id.as_str()), samples))
                .collect();
            if open.is_empty() {
                break;
            }
            let round = self.ask(
                &open,
                Some(self.config.consensus_temperature),
                &mut allowance,
            );
            outcome.usage += round.usage;
            outcome.requests += round.requests;
            for verdict in round.verdicts {
                let id = id_in(&open, &verdict.id);
                votes.entry(id).or_default().push(verdict);
            }
            for deferred in round.deferred {
                let id = id_in(&open, &deferred.id);
                misses.entry(id).or_default().push(deferred.reason);
            }
            // Every further sample would fail the same way and only add waiting.
            if round.endpoint_failed {
                break;
            }
        }
        let mut decided = Vec::new();
        for item in &pending {
            let id = item.id.as_str();
            match combine(id, votes.get(id).map_or(&[][..], Vec::as_slice), samples) {
                Ok(verdict) => decided.push(verdict),
                Err(reason) => {
                    let mut reasons: Vec<String> = misses.remove(id).unwrap_or_default();
                    reasons.dedup();
                    let detail = if reasons.is_empty() {
                        String::new()
                    } else {
                        format!("; {}", reasons.join("; "))
                    };
                    outcome.deferred.push(Deferred {
                        id: id.to_string(),
                        reason: format!("{reason}{detail}"),
                    });
                }
            }
        }
        self.remember(&pending, &decided);
        outcome.verdicts.extend(decided);
        outcome.sort_like(items);
        Ok(outcome)
    }

    /// Number of pairs in the verdict cache.
    pub fn cached_pairs(&self) -> usize {
        self.cache.lock().len()
    }

    /// Forgets every cached verdict, e.g. after changing the prompt or the model's settings.
    pub fn clear_cache(&self) {
        self.cache.lock().clear();
    }

    fn remember(&self, items: &[&JudgeItem], verdicts: &[Verdict]) {
        let model = self.client.model();
        let mut cache = self.cache.lock();
        for verdict in verdicts {
            if let Some(item) = items.iter().find(|i| i.id == verdict.id) {
                let (key, swapped) = PairKey::of(model, item);
                cache.insert(key, CachedVerdict::from_verdict(verdict, swapped));
            }
        }
    }

    /// One judgement of `items`, re-asking for the pairs whose answer failed validation.
    fn ask(&self, items: &[&JudgeItem], temperature: Option<f32>, allowance: &mut u64) -> Round {
        let mut round = Round::default();
        let mut open: Vec<&JudgeItem> = items.to_vec();
        let mut why: HashMap<&str, String> = HashMap::new();
        let attempts = self.client.config().max_retries + 1;
        for attempt in 1..=attempts {
            if open.is_empty() {
                break;
            }
            let mut messages = judge_messages(&open);
            // Asked again, a deterministic model would repeat itself; tell it what was wrong.
            if let Some(problem) = open.iter().find_map(|item| why.get(item.id.as_str())) {
                if let Some(last) = messages.last_mut() {
                    last.content.push_str(&format!(
                        "\nYour previous answer could not be used: {problem}. Answer again with \
                         one JSON object {{\"verdicts\": [...]}} as the system message describes."
                    ));
                }
            }
            let cost = self.request_cost(&messages);
            if cost > *allowance {
                tracing::warn!(
                    attempt,
                    cost,
                    left = *allowance,
                    "token budget spent; deferring pairs"
                );
                round.deferred.extend(open.iter().map(|item| Deferred {
                    id: item.id.clone(),
                    reason: format!(
                        "the token budget left ({}) does not cover another request ({cost}){}",
                        *allowance,
                        why.get(item.id.as_str())
                            .map(|w| format!("; last answer: {w}"))
                            .unwrap_or_default()
                    ),
                }));
                return round;
            }
            let request = ChatRequest {
                messages,
                temperature,
                json_object: true,
            };
            round.requests += 1;
            let completion = match self.client.complete(&request) {
                Ok(completion) => completion,
                Err(error @ ChatError::Malformed { .. }) => {
                    for item in &open {
                        why.insert(&item.id, error.to_string());
                    }
                    tracing::warn!(attempt, %error, "unusable chat answer; asking again");
                    continue;
                }
                Err(error) => {
                    // The client has already retried what can be retried; the endpoint is
                    // down or refusing, and the pairs wait for the next cycle.
                    tracing::warn!(%error, pairs = open.len(), "chat endpoint failed; deferring pairs");
                    round.deferred.extend(open.iter().map(|item| Deferred {
                        id: item.id.clone(),
                        reason: error.to_string(),
                    }));
                    round.endpoint_failed = true;
                    return round;
                }
            };
            round.usage += completion.usage;
            *allowance = allowance.saturating_sub(completion.usage.total());
            let cut_off = if completion.hit_token_limit() {
                " (the answer was cut off at max_output_tokens)"
            } else {
                ""
            };
            let ids: Vec<&str> = open.iter().map(|i| i.id.as_str()).collect();
            match check_answer(&completion.content, &ids) {
                Ok(checked) => {
                    let notes = checked.notes.join("; ");
                    if !notes.is_empty() {
                        tracing::warn!(%notes, "chat answer had entries that were ignored");
                    }
                    let accepted: HashSet<String> =
                        checked.verdicts.iter().map(|v| v.id.clone()).collect();
                    round.verdicts.extend(checked.verdicts);
                    for (id, reason) in checked.rejected {
                        let also = if notes.is_empty() {
                            String::new()
                        } else {
                            format!("; the answer also had: {notes}")
                        };
                        why.insert(id_in(&open, &id), format!("{reason}{cut_off}{also}"));
                    }
                    open.retain(|item| !accepted.contains(&item.id));
                }
                Err(reason) => {
                    for item in &open {
                        why.insert(&item.id, format!("{reason}{cut_off}"));
                    }
                }
            }
            if !open.is_empty() && attempt < attempts {
                tracing::warn!(
                    attempt,
                    pairs = open.len(),
                    "pairs without a valid verdict; asking again"
                );
            }
        }
        round.deferred.extend(open.iter().map(|item| Deferred {
            id: item.id.clone(),
            reason: format!(
                "no valid verdict after {attempts} attempt(s): {}",
                why.get(item.id.as_str())
                    .map_or("no answer", String::as_str)
            ),
        }));
        round
    }
}

/// Tokenizers differ between models (the prompt is counted with cl100k; a small model's own
/// tokenizer was seen counting 15 % more), so budgets are planned with a 30 % margin and a
/// recorded usage stays within them.
pub const TOKENIZER_MARGIN: f64 = 1.3;

fn with_margin(tokens: u64) -> u64 {
    (tokens as f64 * TOKENIZER_MARGIN).ceil() as u64
}

/// Whether some (relation, side) already has more than half of `samples` votes, so further
/// samples cannot change the outcome.
fn has_majority(votes: Option<&Vec<Verdict>>, samples: u32) -> bool {
    let Some(votes) = votes else {
        return false;
    };
    let mut counts: HashMap<_, u32> = HashMap::new();
    for vote in votes {
        *counts
            .entry((vote.relation, vote.newer_or_fact))
            .or_default() += 1;
    }
    counts.values().any(|&n| n * 2 > samples)
}

/// The batch's own copy of `id`, so maps can borrow from the batch.
fn id_in<'a>(items: &[&'a JudgeItem], id: &str) -> &'a str {
    items
        .iter()
        .find(|i| i.id == id)
        .map(|i| i.id.as_str())
        .expect("answers are only accepted for ids in the batch")
}

fn check_batch(items: &[JudgeItem]) -> Result<(), ChatError> {
    if items.is_empty() || items.len() > MAX_BATCH_ITEMS {
        return Err(ChatError::InvalidBatch(format!(
            "a batch holds 1 to {MAX_BATCH_ITEMS} pairs, this one has {}",
            items.len()
        )));
    }
    let mut seen = HashSet::new();
    for item in items {
        if item.id.trim().is_empty() {
            return Err(ChatError::InvalidBatch(
                "every pair needs a non-blank id".into(),
            ));
        }
        if !seen.insert(item.id.as_str()) {
            return Err(ChatError::InvalidBatch(format!(
                "pair id {:?} appears more than once; verdicts could not be told apart",
                item.id
            )));
        }
    }
    Ok(())
}
