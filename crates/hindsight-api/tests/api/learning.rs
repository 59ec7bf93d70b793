//! What the node learns from use: reflecting on a task, feedback on recalls, recall intent and
//! context, and the gate on automatic writes.

use hindsight_api::pb;
use hindsight_core::retrieval::RetrievalQuery;
use hindsight_core::{
    Disposition, FeedbackOutcome, Kind, MemoryId, Provenance, RecallIntent, RecallRequest,
    SourceKind, Subtype,
};
use tonic::Code;

use crate::support::{bank, code, stored, wire_code, write_request, Harness};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflect_keeps_what_a_task_taught_and_nothing_from_a_routine_one() {
    use hindsight_review::reflect::{Outcome, TaskTrace, ToolCall};

    let h = Harness::start().await;
    let mut failing = ToolCall::new("kubectl", "apply -f billing.yaml");
    failing.error = Some("error: context \"prod\" not found".into());
    let mut fixed = ToolCall::new("kubectl", "--context production apply -f billing.yaml");
    fixed.result = Some("deployment.apps/billing configured".into());
    let mut check = ToolCall::new("curl", "https://billing.internal/health");
    check.result = Some("ok".into());
    let trace = TaskTrace {
        goal: "Deploy the billing service".into(),
        steps: vec![],
        tool_calls: vec![failing, fixed, check],
        outcome: Outcome::Succeeded,
        feedback: Some("Thanks. Never deploy on Fridays.".into()),
        lang: None,
    };
    let dry = h
        .client
        .reflect(bank("api/reflect"), &trace, None, true)
        .await
        .unwrap();
    assert!(
        !dry.memories.is_empty() && dry.memories.len() <= 5,
        "{dry:?}"
    );
    assert!(dry.memories.iter().all(|(_, w)| w.is_none()));
    assert_eq!(
        stored(&h, "api/reflect").await,
        0,
        "a dry run writes nothing"
    );

    let kept = h
        .client
        .reflect(bank("api/reflect"), &trace, Some("task-7".into()), false)
        .await
        .unwrap();
    assert_eq!(kept.reflector, "rules");
    assert_eq!(kept.memories.len(), dry.memories.len());
    let lesson = kept
        .memories
        .iter()
        .find(|(m, _)| m.content.contains("context"))
        .expect("the failure and its fix are kept");
    let id = lesson.1.as_ref().unwrap().id;
    let stored_lesson = h.client.get(id).await.unwrap();
    assert_eq!(stored_lesson.provenance.source, SourceKind::Reflection);
    assert_eq!(stored_lesson.provenance.task_id.as_deref(), Some("task-7"));
    let hits = h
        .client
        .recall(RecallRequest::new(
            vec![bank("api/reflect")],
            "how to deploy the billing service with kubectl",
            5,
        ))
        .await
        .unwrap();
    assert!(hits.hits.iter().any(|hit| hit.memory.id == id));

    let mut routine = ToolCall::new("weather", "Berlin");
    routine.result = Some("12°C".into());
    let routine = TaskTrace {
        goal: "Check the weather in Berlin".into(),
        steps: vec![],
        tool_calls: vec![routine],
        outcome: Outcome::Succeeded,
        feedback: None,
        lang: None,
    };
    let nothing = h
        .client
        .reflect(bank("api/reflect"), &routine, None, false)
        .await
        .unwrap();
    assert!(nothing.memories.is_empty(), "{nothing:?}");

    let mut bad = hindsight_api::pb::ReflectRequest {
        bank: "api/reflect".into(),
        goal: "x".into(),
        outcome: "done".into(),
        ..Default::default()
    };
    let (code, message) = wire_code(h.memory().reflect(bad.clone()).await);
    assert_eq!(code, Code::InvalidArgument);
    assert!(message.contains("outcome"), "{message}");
    bad.outcome = "succeeded".into();
    bad.goal = "  ".into();
    let (code, _) = wire_code(h.memory().reflect(bad).await);
    assert_eq!(code, Code::InvalidArgument);
    h.stop().await;
}

async fn ranked(h: &Harness, request: &RecallRequest) -> (Vec<MemoryId>, hindsight_core::RecallId) {
    let response = h.client.recall(request.clone()).await.unwrap();
    let id = response
        .recall_id
        .expect("every recall is logged by default");
    (response.hits.iter().map(|hit| hit.memory.id).collect(), id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feedback_reranks_a_query_and_is_traced_and_logged() {
    let h = Harness::start().await;
    let x = h
        .client
        .write(write_request(
            "a/learn",
            "The deploy checklist for the payments service lives in the wiki.",
        ))
        .await
        .unwrap()
        .id;
    let y = h
        .client
        .write(write_request(
            "a/learn",
            "The payments service deploy checklist was reviewed by the SRE team.",
        ))
        .await
        .unwrap()
        .id;
    let request = RecallRequest::new(
        vec![bank("a/learn")],
        "deploy checklist for the payments service",
        5,
    );
    let (before, first_recall) = ranked(&h, &request).await;
    assert_eq!(before.len(), 2, "{before:?}");
    let (top, second) = (before[0], before[1]);
    assert!([x, y].contains(&top) && [x, y].contains(&second));

    let helped = h
        .client
        .feedback(first_recall, second, FeedbackOutcome::Helpful)
        .await
        .unwrap();
    assert!(helped.applied && helped.confidence_after > helped.confidence_before);
    let wrong = h
        .client
        .feedback(first_recall, top, FeedbackOutcome::Wrong)
        .await
        .unwrap();
    assert!(wrong.confidence_after < wrong.confidence_before);
    // The same feedback again changes nothing.
    let again = h
        .client
        .feedback(first_recall, top, FeedbackOutcome::Wrong)
        .await
        .unwrap();
    assert!(!again.applied);
    assert_eq!(again.memory.confidence, wrong.confidence_after);

    let (after, _) = ranked(&h, &request).await;
    assert_eq!(after, vec![second, top], "feedback reorders the results");

    for (id, outcome) in [(second, "helpful"), (top, "wrong")] {
        let trace = h.client.trace(id).await.unwrap();
        let entry = trace
            .history
            .iter()
            .find(|e| e.actor == "feedback")
            .unwrap_or_else(|| panic!("no feedback in the history of {id}: {trace:?}"));
        assert!(
            entry.reason.contains(outcome) && entry.reason.contains(&first_recall.to_string()),
            "{entry:?}"
        );
    }

    // The log answers what the bank returned for the query, and what was said about it.
    let query = RetrievalQuery {
        bank: Some(bank("a/learn")),
        query_contains: Some("Deploy Checklist".into()),
        limit: 10,
        ..Default::default()
    };
    let logged = h.client.recalls(&query).await.unwrap();
    assert_eq!(logged.len(), 2, "both recalls are logged");
    let first = logged.iter().find(|r| r.id == first_recall).unwrap();
    assert_eq!(first.hits.len(), 2);
    assert_eq!(first.hits[0].memory, top);
    assert!(!first.hits[0].explain.arms.is_empty());
    assert_eq!(first.feedback.len(), 2);
    assert_eq!(h.client.recall_record(first_recall).await.unwrap(), *first);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feedback_that_names_no_logged_result_is_refused() {
    let h = Harness::start().await;
    let kept = h
        .client
        .write(write_request(
            "a/refuse",
            "The office closes at six on Fridays.",
        ))
        .await
        .unwrap()
        .id;
    let other = h
        .client
        .write(write_request("a/refuse", "Parking is free after eight."))
        .await
        .unwrap()
        .id;
    let mut request = RecallRequest::new(vec![bank("a/refuse")], "office closes Friday", 1);
    request.filters.min_confidence = Some(0.0);
    let (hits, recall) = ranked(&h, &request).await;
    assert_eq!(hits, vec![kept]);
    let unknown = hindsight_core::RecallId::new(1_700_000_000_000, 1);
    assert_eq!(
        code(
            h.client
                .feedback(unknown, kept, FeedbackOutcome::Helpful)
                .await
        ),
        Code::NotFound
    );
    let not_returned = h
        .client
        .feedback(recall, other, FeedbackOutcome::Helpful)
        .await
        .unwrap_err();
    assert_eq!(not_returned.code(), Some(Code::InvalidArgument));
    assert!(
        not_returned.to_string().contains("not among"),
        "{not_returned}"
    );
    let (c, message) = wire_code(
        h.memory()
            .feedback(pb::FeedbackRequest {
                recall_id: recall.to_string(),
                memory_id: kept.to_string(),
                outcome: "great".into(),
            })
            .await,
    );
    assert_eq!(c, Code::InvalidArgument);
    assert!(message.contains("used helpful wrong harmful"), "{message}");
    let untouched = h.client.get(kept).await.unwrap();
    assert_eq!(
        untouched.confidence, 0.9,
        "refused feedback changes nothing"
    );

    // Harmful: down-weighted and held by the guard, so a plain recall no longer returns it.
    let harmed = h
        .client
        .feedback(recall, kept, FeedbackOutcome::Harmful)
        .await
        .unwrap();
    assert_eq!(harmed.memory.status.name(), "quarantined");
    let (hits, _) = ranked(&h, &request).await;
    assert!(!hits.contains(&kept), "{hits:?}");
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn intent_how_to_puts_a_lesson_above_a_closer_fact() {
    let h = Harness::start().await;
    let fact = h
        .client
        .write(write_request(
            "a/intent",
            "The invoice upload page shows the invoice file list and an upload button.",
        ))
        .await
        .unwrap()
        .id;
    let mut lesson = write_request(
        "a/intent",
        "When the tool call timed out on large attachments, splitting them into parts fixed it.",
    );
    lesson.subtype = Some(Subtype::Lesson);
    lesson.tags = vec!["upload".into(), "invoice".into()];
    lesson.metadata.insert("task_type".into(), "upload".into());
    let lesson = h.client.write(lesson).await.unwrap().id;

    let mut request = RecallRequest::new(vec![bank("a/intent")], "upload the invoice file", 5);
    let (plain, _) = ranked(&h, &request).await;
    assert_eq!(
        plain.first(),
        Some(&fact),
        "the fact is the closer match: {plain:?}"
    );

    request.intent = RecallIntent::HowTo;
    let response = h.client.recall(request.clone()).await.unwrap();
    let ids: Vec<MemoryId> = response.hits.iter().map(|hit| hit.memory.id).collect();
    assert_eq!(ids.first(), Some(&lesson), "{ids:?}");
    let explain = &response.hits[0].explain;
    assert!(explain.arms.iter().any(|a| a.arm == "task"), "{explain:?}");
    assert!(
        explain.adjustments.iter().any(|a| a.contains("how_to")),
        "{explain:?}"
    );

    request.intent = RecallIntent::Facts;
    let (facts, _) = ranked(&h, &request).await;
    assert_eq!(facts.first(), Some(&fact), "{facts:?}");

    // Context: a memory about another case is left out, one about this case counts more.
    let mut theirs = write_request(
        "a/intent",
        "Invoice uploads for this customer go to the EU region.",
    );
    theirs.metadata.insert("customer".into(), "acme".into());
    let theirs = h.client.write(theirs).await.unwrap().id;
    request.intent = RecallIntent::Any;
    request.context.insert("customer".into(), "globex".into());
    let (with_context, _) = ranked(&h, &request).await;
    assert!(!with_context.contains(&theirs), "{with_context:?}");
    request.context.insert("customer".into(), "acme".into());
    let response = h.client.recall(request).await.unwrap();
    let hit = response
        .hits
        .iter()
        .find(|hit| hit.memory.id == theirs)
        .unwrap();
    assert!(hit
        .explain
        .adjustments
        .iter()
        .any(|a| a.contains("customer=acme")));
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn automatic_writes_must_be_worth_keeping_and_user_statements_are_kept() {
    let h = Harness::start().await;
    let mut chatter = write_request("a/gate", "The user said thanks.");
    chatter.provenance = Provenance::from_source(SourceKind::Reflection);
    chatter.kind = Kind::Episodic;
    let outcome = h.client.write(chatter).await.unwrap();
    let Disposition::RejectedLowImportance { scores } = outcome.disposition else {
        panic!("small talk from a reflection is not kept: {outcome:?}");
    };
    assert!(scores.total < 0.4 && scores.reuse < 0.2, "{scores:?}");
    assert_eq!(stored(&h, "a/gate").await, 0, "nothing was stored");

    let mut lesson = write_request(
        "a/gate",
        "The export tool fails on files over 2 GB; split them before exporting.",
    );
    lesson.provenance = Provenance::from_source(SourceKind::Agent);
    lesson.subtype = Some(Subtype::Lesson);
    let kept = h.client.write(lesson).await.unwrap();
    assert_eq!(kept.disposition, Disposition::Created);

    let mut said = write_request("a/gate", "The user said thanks.");
    said.kind = Kind::Episodic;
    let said = h.client.write(said).await.unwrap();
    assert_eq!(
        said.disposition,
        Disposition::Created,
        "a user's own words bypass the gate"
    );
    assert_eq!(stored(&h, "a/gate").await, 2);
    h.stop().await;
}
