//! The rules judge on pairs it has never read: a review cycle reads each changed memory and the
//! neighbours it meets, so this is the judge's cost per pair before any reading is kept.

use std::sync::Arc;

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use hindsight_core::{Memory, MemoryId, Provenance, SourceKind, Timestamp};
use hindsight_review::{Pair, RulesConfig, RulesJudge};

const SENTENCES: &[&str] = &[
    "The user prefers green tea on Monday (case alpha-bravo-charlie-delta)",
    "The user prefers dark mode every Friday (case echo-golf-hotel-india)",
    "Alice no longer needs the quarterly report after lunch",
    "Alice needs the quarterly report before the launch",
    "Bob switched to dark mode last week, he doesn't like the light theme anymore",
    "Project Falcon probably cancelled the Kubernetes upgrade before the launch",
    "用户不再喜欢绿茶，改成了咖啡",
    "用户喜欢绿茶",
    "张伟上周安排了火车票，可能明天上午出发",
    "财务部其实不是负责预算削减的部门",
];

fn memory(id: u128, content: &str) -> Arc<Memory> {
    Arc::new(Memory::new(
        MemoryId(id),
        "bench/judge".parse().expect("valid bank name"),
        content,
        Provenance::from_source(SourceKind::User),
        Timestamp(1_700_000_000_000 + id as i64 * 86_400_000),
    ))
}

fn judge(c: &mut Criterion) {
    let judge = RulesJudge::new(RulesConfig::default());
    let pairs: Vec<Pair> = SENTENCES
        .chunks(2)
        .enumerate()
        .map(|(n, two)| {
            let id = n as u128 * 2;
            Pair::new(memory(id, two[0]), memory(id + 1, two[1]), Some(0.9))
        })
        .collect();
    c.bench_function("rules judge_pair/5 pairs, unread", |b| {
        b.iter(|| {
            for pair in &pairs {
                black_box(judge.judge_pair(black_box(pair)));
            }
        })
    });
}

criterion_group!(benches, judge);
criterion_main!(benches);
