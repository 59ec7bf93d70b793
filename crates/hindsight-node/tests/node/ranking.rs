//! Ranking: questions about the user, the person a bank serves, and the present moment.

use hindsight_core::{Kind, Provenance, RecallRequest, SourceKind};
use hindsight_node::Node;

use crate::harness::{bank, config, recall_ids, ts, write};

async fn semantic_score(node: &Node, query: &str, content: &str) -> f32 {
    let request = RecallRequest::new(vec![bank("a/voice")], query, 10);
    let hits = node.recall(request).await.unwrap().hits;
    let hit = hits
        .iter()
        .find(|h| h.memory.content == content)
        .unwrap_or_else(|| panic!("{content:?} not recalled for {query:?}"));
    hit.explain
        .arms
        .iter()
        .find(|a| a.arm == "semantic")
        .expect("semantic arm hit")
        .score
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_about_the_user_meets_the_users_own_words_in_the_first_person() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    let said = "My favourite drink is jasmine tea";
    let noted = "The user's favourite snack is a pretzel";
    node.write(write("a/voice", said)).await.unwrap();
    let mut agent_note = write("a/voice", noted);
    agent_note.provenance = Provenance::from_source(SourceKind::Agent);
    node.write(agent_note).await.unwrap();

    let asked = "What is the user's favourite drink?";
    let in_voice = "What is my favourite drink?";
    // The user's statement is compared with the question as the user would ask it...
    let user_score = semantic_score(&node, asked, said).await;
    assert!((user_score - semantic_score(&node, in_voice, said).await).abs() < 1e-5);
    // ...the agent's own third-person note with the question as asked.
    let agent_score = semantic_score(&node, asked, noted).await;
    assert!((agent_score - semantic_score(&node, in_voice, noted).await).abs() > 1e-3);
    node.shutdown().await;
}

/// An agent asks about the person it serves by name ("What is Lucy's favourite drink?"),
/// while what that person said is in the first person: recall compares their own statements
/// with the question as they would have asked it. Whom a bank serves is read from it: the
/// agent's notes name them, tools' records are not most of what does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_person_a_bank_serves_asked_about_by_name_meets_their_own_words() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    let said = "My favourite drink is jasmine tea";
    let score = |bank_name: &'static str, query: &'static str| {
        let node = &node;
        async move {
            let hits = node
                .recall(RecallRequest::new(vec![bank(bank_name)], query, 10))
                .await
                .unwrap()
                .hits;
            let hit = hits.iter().find(|h| h.memory.content == said).unwrap();
            hit.explain
                .arms
                .iter()
                .find(|a| a.arm == "semantic")
                .unwrap()
                .score
        }
    };
    let by = |source: SourceKind, bank_name: &str, content: &str| {
        let mut request = write(bank_name, content);
        request.provenance = Provenance::from_source(source);
        request
    };
    for (bank_name, notes_by) in [
        ("a/serves", SourceKind::Agent),
        ("a/tracks", SourceKind::Tool),
    ] {
        node.write(write(bank_name, said)).await.unwrap();
        for note in [
            "Booked a table at the noodle bar for Lucy on Friday",
            "Drafted a reply for Lucy to the landlord about the boiler",
            "Sent the bus times for the airport to Lucy",
        ] {
            node.write(by(notes_by, bank_name, note)).await.unwrap();
        }
    }
    let asked = "What is Lucy's favourite drink?";
    let in_voice = "What is my favourite drink?";
    // The bank the agent keeps for Lucy: her words meet the question in her voice...
    let served = score("a/serves", asked).await;
    assert!((served - score("a/serves", in_voice).await).abs() < 1e-5);
    // ...not in a bank where only a tool's records name her.
    let tracked = score("a/tracks", asked).await;
    assert!((tracked - score("a/tracks", in_voice).await).abs() > 1e-3);
    // Every memory of her bank is about her: her name singles none out.
    let entity_hits = |bank_name: &'static str| {
        let node = &node;
        async move {
            node.recall(RecallRequest::new(vec![bank(bank_name)], asked, 10))
                .await
                .unwrap()
                .hits
                .iter()
                .filter(|h| h.explain.arms.iter().any(|a| a.arm == "entity"))
                .count()
        }
    };
    assert_eq!(entity_hits("a/serves").await, 0);
    assert_eq!(entity_hits("a/tracks").await, 3);
    node.shutdown().await;
}

/// "Can she take a call right now?" shares no word with "audit meeting until four, phone
/// off", yet that is the answer while it lasts: the present arm brings the short-lived state
/// alive at the question's `as_of`, and nothing that has expired or is not yet true.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_about_the_present_finds_the_state_alive_at_that_moment() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    let name = "a/present";
    let at = |content: &str, when: &str, ttl_secs: Option<u64>| {
        let mut request = write(name, content);
        request.occurred_at = Some(ts(when));
        if ttl_secs.is_some() {
            request.kind = Kind::Working;
            request.ttl_secs = ttl_secs;
        }
        request
    };
    let alive = "audit meeting with the auditors until four, phone off";
    let expired = "dentist appointment this morning, back by eleven";
    for request in [
        at(
            "Sunita looks after payroll and the VAT returns",
            "2026-03-02T09:00:00Z",
            None,
        ),
        at(
            "Sunita prefers short emails with the figures first",
            "2026-03-03T09:00:00Z",
            None,
        ),
        at(expired, "2026-03-10T08:00:00Z", Some(3 * 3600)),
        at(alive, "2026-03-10T13:00:00Z", Some(4 * 3600)),
    ] {
        node.write(request).await.unwrap();
    }
    let asked = "Can Sunita take a call right now?";
    let during = recall_ids(&node, &[name], asked, Some(ts("2026-03-10T14:30:00Z"))).await;
    assert!(during.iter().any(|c| c == alive), "{during:?}");
    assert!(!during.iter().any(|c| c == expired), "{during:?}");
    let before = recall_ids(&node, &[name], asked, Some(ts("2026-03-10T12:00:00Z"))).await;
    assert!(
        !before.iter().any(|c| c == alive),
        "not begun yet: {before:?}"
    );
    let after = recall_ids(&node, &[name], asked, Some(ts("2026-03-10T18:00:00Z"))).await;
    assert!(!after.iter().any(|c| c == alive), "over: {after:?}");

    let mut request = RecallRequest::new(vec![bank(name)], asked, 10);
    request.as_of = Some(ts("2026-03-10T14:30:00Z"));
    let hits = node.recall(request).await.unwrap().hits;
    let hit = hits.iter().find(|h| h.memory.content == alive).unwrap();
    assert!(
        hit.explain.arms.iter().any(|a| a.arm == "present"),
        "{hit:#?}"
    );
    node.shutdown().await;
}
