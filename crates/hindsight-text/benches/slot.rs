//! Slot and entity extraction over sentences shaped like agents' memories, in English and
//! Chinese: every memory written goes through both, and every replica turns each one into keyword
//! terms.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use hindsight_text::{extract_entities, extract_slot, Analyzer};

const SENTENCES: &[&str] = &[
    "I live in Austin.",
    "I just moved to Berlin last month.",
    "Project Vega's lead is Maria Garcia.",
    "The deadline for the Falcon launch is April 3.",
    "I always order a cappuccino when I get coffee.",
    "These days I've switched to an americano instead.",
    "Please reach me by SMS for anything urgent.",
    "We migrated the backend to Ruby on Rails last sprint.",
    "My laptop runs Ubuntu; I haven't used Windows in years.",
    "I'm not vegetarian at all, I eat chicken almost every day.",
    "Project Atlas uses Django for its API.",
    "CRM record: customer Initech is on the Gold support tier.",
    "We discussed a recipe for dumplings while working on a spreadsheet.",
    "Task T109: the flight search tool timed out.",
    "Maria Garcia prefers two-week agile sprints with a demo on Fridays.",
    "Alice no longer needs the quarterly report after lunch",
    "我最近改喝拿铁了。",
    "我们搬家了，现在住在柏林。",
    "Vega项目归平台组的陈杰负责。",
    "我的笔记本装的是 Ubuntu，好几年没用 Windows 了。",
    "已设置提醒：供应商电话之后跟进Kubernetes 升级。",
    "张伟上周安排了火车票，可能明天上午出发",
];

fn slots(c: &mut Criterion) {
    hindsight_text::warm_up();
    c.bench_function("extract_slot/22 sentences", |b| {
        b.iter(|| {
            for s in SENTENCES {
                black_box(extract_slot(black_box(s)));
            }
        })
    });
    c.bench_function("extract_entities/22 sentences", |b| {
        b.iter(|| {
            for s in SENTENCES {
                black_box(extract_entities(black_box(s)));
            }
        })
    });
    let analyzer = Analyzer::shared();
    c.bench_function("analyzer terms/22 sentences", |b| {
        b.iter(|| {
            for s in SENTENCES {
                black_box(analyzer.terms(black_box(s)));
            }
        })
    });
}

criterion_group!(benches, slots);
criterion_main!(benches);
