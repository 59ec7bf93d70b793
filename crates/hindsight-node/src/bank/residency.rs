//! Which loaded banks leave memory. A node serving a fleet holds far more banks than it can keep
//! loaded: a bank unused for a while is unloaded (its indexes dumped first, so the next request
//! loads it from the dump without embedding anything), and when the loaded banks together hold
//! more than the node's budget the least recently used go first.
//!
//! The decision is a pure function of what is loaded, so that it is tested without actors; the
//! supervisor carries it out.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use hindsight_core::BankName;
use ractor::ActorRef;

use crate::bank::registry::{uptime_millis, BankHandle, BankRegistry};
use crate::bank::supervisor::SupervisorMsg;

/// How often the loaded banks are looked over. Often, because the budget is to hold at every
/// moment and what the node takes between two looks has to fit in the headroom; a look recounts
/// only the banks whose view changed, so it costs little.
const LOOK_EVERY: Duration = Duration::from_millis(500);

/// How many looks back the largest rise of resident memory is remembered: about a minute.
const RISES_REMEMBERED: usize = 120;

/// Why a bank is unloaded; the label of `hindsight_bank_unloads_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnloadReason {
    Idle,
    Memory,
}

impl UnloadReason {
    pub fn label(self) -> &'static str {
        match self {
            UnloadReason::Idle => "idle",
            UnloadReason::Memory => "memory",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResidencyLimits {
    /// A bank unused for this long is unloaded; 0 never unloads for idleness.
    pub idle_after_millis: u64,
    /// Heap bytes all loaded banks may hold together; 0 sets no budget.
    pub budget_bytes: u64,
    /// A bank used this recently stays even over the budget: a request may still hold its view,
    /// and unloading it would only load it again at once.
    pub keep_recent_millis: u64,
}

/// One loaded bank as the decision sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resident {
    pub bank: BankName,
    pub last_used_millis: u64,
    pub heap_bytes: u64,
}

/// What to unload, and the heap the banks that stay hold.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct UnloadPlan {
    pub unload: Vec<(BankName, UnloadReason)>,
    pub kept_heap_bytes: u64,
}

/// The banks to unload at `now`: every idle one, then, while the rest hold more than the budget,
/// the least recently used that were not used within `keep_recent_millis`.
pub fn plan_unloads(mut loaded: Vec<Resident>, now: u64, limits: ResidencyLimits) -> UnloadPlan {
    loaded.sort_by(|a, b| {
        a.last_used_millis
            .cmp(&b.last_used_millis)
            .then_with(|| a.bank.cmp(&b.bank))
    });
    let idle_for = |r: &Resident| now.saturating_sub(r.last_used_millis);
    let mut plan = UnloadPlan::default();
    let mut staying = Vec::with_capacity(loaded.len());
    for resident in loaded {
        if limits.idle_after_millis > 0 && idle_for(&resident) >= limits.idle_after_millis {
            plan.unload.push((resident.bank, UnloadReason::Idle));
        } else {
            staying.push(resident);
        }
    }
    let mut held: u64 = staying.iter().map(|r| r.heap_bytes).sum();
    for resident in staying {
        let over = limits.budget_bytes > 0 && held > limits.budget_bytes;
        if over && idle_for(&resident) >= limits.keep_recent_millis {
            held -= resident.heap_bytes;
            plan.unload.push((resident.bank, UnloadReason::Memory));
        }
    }
    plan.kept_heap_bytes = held;
    plan
}

/// Heap bytes of each loaded bank, counted again only for banks whose view changed since the last
/// count: a node with a hundred thousand banks loaded would otherwise walk them all on every look.
#[derive(Default)]
pub struct HeapCounts {
    /// By bank: the log index the view showed when counted, and the count.
    counted: HashMap<BankName, (u64, u64)>,
}

impl HeapCounts {
    pub fn residents(&mut self, handles: &[BankHandle]) -> Vec<Resident> {
        let mut seen = HashMap::with_capacity(handles.len());
        let residents = handles
            .iter()
            .map(|handle| {
                let view = &handle.view;
                let through = view.indexed_through();
                let heap_bytes = match self.counted.get(&view.name) {
                    Some(&(counted_at, bytes)) if counted_at == through => bytes,
                    _ => view.heap_parts().iter().map(|(_, bytes)| bytes).sum(),
                };
                seen.insert(view.name.clone(), (through, heap_bytes));
                Resident {
                    bank: view.name.clone(),
                    last_used_millis: handle.last_used_millis(),
                    heap_bytes,
                }
            })
            .collect();
        self.counted = seen;
        residents
    }
}

/// What the loaded banks may hold when the node's resident memory is to stay within `budget`:
/// the budget less `headroom` and less what the process holds outside the banks (the embedding
/// model, the store's caches, memory the allocator has not returned), measured as
/// `resident - loaded`. Never 0 for a positive budget, which would read as "no budget".
pub fn banks_budget(budget: u64, headroom: u64, resident: u64, loaded: u64) -> u64 {
    let outside = resident.saturating_sub(loaded);
    budget
        .saturating_sub(headroom)
        .saturating_sub(outside)
        .max(1)
}

/// What the banks leave free of the budget for what the node takes between two looks: banks that
/// writes load, pages of unloaded banks the allocator has not handed back yet, a burst of work
/// outside the banks. A fixed sixteenth of the budget was not always enough (at 100,000 banks, 13
/// of 800 samples were up to 6.6 % above it), so the headroom also covers the largest rise of
/// resident memory between two looks in the last minute, up to a quarter of the budget.
#[derive(Debug, Default)]
pub struct Headroom {
    last_resident: Option<u64>,
    rises: std::collections::VecDeque<u64>,
}

impl Headroom {
    /// Records the resident memory of this look and returns the headroom to keep under `budget`.
    pub fn observe(&mut self, budget: u64, resident: u64) -> u64 {
        let rise = self
            .last_resident
            .map_or(0, |last| resident.saturating_sub(last));
        self.last_resident = Some(resident);
        if self.rises.len() == RISES_REMEMBERED {
            self.rises.pop_front();
        }
        self.rises.push_back(rise);
        let largest_rise = self.rises.iter().copied().max().unwrap_or(0);
        largest_rise.max(budget / 16).min(budget / 4)
    }
}

/// Looks over the loaded banks every [`LOOK_EVERY`] for as long as the node runs, and has the
/// supervisor unload what [`plan_unloads`] picks; `on_unload` hears of each (the bank's reviewer
/// goes with it).
pub async fn keep_within(
    registry: Arc<BankRegistry>,
    supervisor: ActorRef<SupervisorMsg>,
    limits: ResidencyLimits,
    on_unload: impl Fn(&BankName),
) {
    let mut counts = HeapCounts::default();
    let mut tick = tokio::time::interval(LOOK_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut trim_next = false;
    let mut warned = false;
    let mut headroom = Headroom::default();
    loop {
        tick.tick().await;
        if std::mem::take(&mut trim_next) {
            crate::allocator::release_freed_memory();
        }
        let handles = registry.handles();
        let residents = counts.residents(&handles);
        let mut limits = limits;
        if limits.budget_bytes > 0 {
            let loaded: u64 = residents.iter().map(|r| r.heap_bytes).sum();
            let mut resident = crate::metrics::resident_bytes().unwrap_or(loaded);
            let keep_free = headroom.observe(limits.budget_bytes, resident);
            if resident > limits.budget_bytes.saturating_sub(keep_free) {
                // Pages already freed count against the budget until the allocator hands them
                // back, which its background thread does only after a second: before unloading
                // banks for room, take back what is free.
                crate::allocator::release_freed_memory();
                resident = crate::metrics::resident_bytes().unwrap_or(resident);
            }
            let outside = resident.saturating_sub(loaded);
            if outside > limits.budget_bytes && !std::mem::replace(&mut warned, true) {
                tracing::warn!(
                    outside_banks_mib = outside >> 20,
                    budget_mib = limits.budget_bytes >> 20,
                    "the node's memory outside its banks (model, caches) alone exceeds index.memory_budget_mb: only banks in use stay loaded"
                );
            }
            limits.budget_bytes = banks_budget(limits.budget_bytes, keep_free, resident, loaded);
        }
        let plan = plan_unloads(residents, uptime_millis(), limits);
        crate::metrics::banks_loaded_heap(plan.kept_heap_bytes);
        trim_next = plan
            .unload
            .iter()
            .any(|(_, reason)| *reason == UnloadReason::Memory);
        for (bank, reason) in plan.unload {
            on_unload(&bank);
            if supervisor
                .send_message(SupervisorMsg::Unload(bank, reason))
                .is_err()
            {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bank(name: &str, last_used_millis: u64, heap_bytes: u64) -> Resident {
        Resident {
            bank: name.parse().unwrap(),
            last_used_millis,
            heap_bytes,
        }
    }

    fn names(plan: &UnloadPlan) -> Vec<(String, UnloadReason)> {
        plan.unload
            .iter()
            .map(|(b, r)| (b.to_string(), *r))
            .collect()
    }

    const LIMITS: ResidencyLimits = ResidencyLimits {
        idle_after_millis: 10_000,
        budget_bytes: 0,
        keep_recent_millis: 1_000,
    };

    #[test]
    fn the_banks_get_what_the_rest_of_the_node_leaves_of_the_budget() {
        // 1,600 resident, 960 of it banks: 640 outside, so banks may hold 960 of a 1,600 budget,
        // less the 100 kept free for what comes before the next look.
        assert_eq!(banks_budget(1_600, 100, 1_600, 960), 860);
        // Outside the banks already over the budget: the banks get (almost) nothing.
        assert_eq!(banks_budget(1_600, 100, 2_500, 200), 1);
        // A count above the measured resident memory (pages not touched yet) leaves it all.
        assert_eq!(banks_budget(1_600, 100, 500, 700), 1_500);
    }

    #[test]
    fn the_headroom_covers_the_largest_recent_rise_within_a_quarter_of_the_budget() {
        let mut headroom = Headroom::default();
        // Steady: a sixteenth of the budget.
        assert_eq!(headroom.observe(1_600, 1_000), 100);
        assert_eq!(headroom.observe(1_600, 1_050), 100);
        // A burst of 250 between two looks: that much is kept free from now on.
        assert_eq!(headroom.observe(1_600, 1_300), 250);
        assert_eq!(headroom.observe(1_600, 1_100), 250);
        // Never more than a quarter of the budget, however large the rise.
        assert_eq!(headroom.observe(1_600, 2_000), 400);
        // A minute of quiet looks later the burst is forgotten.
        for _ in 0..RISES_REMEMBERED {
            headroom.observe(1_600, 1_000);
        }
        assert_eq!(headroom.observe(1_600, 1_000), 100);
    }

    #[test]
    fn banks_unused_for_the_idle_time_are_unloaded_and_the_rest_stay() {
        let plan = plan_unloads(
            vec![
                bank("a", 0, 10),
                bank("b", 5_000, 10),
                bank("c", 6_000, 10),
                bank("d", 15_000, 10),
            ],
            15_000,
            LIMITS,
        );
        // b was unused for exactly the idle time, c for a second less.
        assert_eq!(
            names(&plan),
            vec![
                ("a".to_string(), UnloadReason::Idle),
                ("b".to_string(), UnloadReason::Idle)
            ]
        );
        assert_eq!(plan.kept_heap_bytes, 20);
    }

    #[test]
    fn over_the_budget_the_least_recently_used_go_first_until_it_fits() {
        let limits = ResidencyLimits {
            idle_after_millis: 0,
            budget_bytes: 250,
            ..LIMITS
        };
        let plan = plan_unloads(
            vec![
                bank("newest", 9_000, 100),
                bank("oldest", 1_000, 100),
                bank("middle", 5_000, 100),
                bank("older", 2_000, 100),
            ],
            10_000,
            limits,
        );
        assert_eq!(
            names(&plan),
            vec![
                ("oldest".to_string(), UnloadReason::Memory),
                ("older".to_string(), UnloadReason::Memory),
            ]
        );
        assert_eq!(plan.kept_heap_bytes, 200);
    }

    #[test]
    fn a_bank_in_use_right_now_stays_even_over_the_budget() {
        let limits = ResidencyLimits {
            idle_after_millis: 0,
            budget_bytes: 50,
            keep_recent_millis: 1_000,
        };
        let plan = plan_unloads(
            vec![bank("busy", 9_500, 100), bank("quiet", 1_000, 100)],
            10_000,
            limits,
        );
        assert_eq!(
            names(&plan),
            vec![("quiet".to_string(), UnloadReason::Memory)]
        );
        assert_eq!(plan.kept_heap_bytes, 100);
    }

    #[test]
    fn idle_banks_count_towards_the_budget_no_more() {
        let limits = ResidencyLimits {
            idle_after_millis: 10_000,
            budget_bytes: 150,
            keep_recent_millis: 0,
        };
        let plan = plan_unloads(
            vec![bank("idle", 0, 1_000), bank("used", 19_000, 100)],
            20_000,
            limits,
        );
        assert_eq!(names(&plan), vec![("idle".to_string(), UnloadReason::Idle)]);
        assert_eq!(plan.kept_heap_bytes, 100);
    }

    #[test]
    fn without_limits_nothing_leaves() {
        let limits = ResidencyLimits {
            idle_after_millis: 0,
            budget_bytes: 0,
            keep_recent_millis: 0,
        };
        let plan = plan_unloads(vec![bank("a", 0, u64::MAX / 4)], u64::MAX / 2, limits);
        assert!(plan.unload.is_empty());
    }
}
