//! Unit tests of the rules reflector, from traces in English and Chinese.

use hindsight_core::{Kind, Subtype};
use hindsight_text::Lang;

use super::reflection::MAX_TAG_BYTES;
use super::retell::third_person;
use super::*;

fn reflect(trace: &TaskTrace) -> Vec<Reflection> {
    RulesReflector.reflect(trace).expect("a valid trace")
}

fn contents(reflections: &[Reflection]) -> Vec<&str> {
    reflections.iter().map(|r| r.content.as_str()).collect()
}

fn ok(tool: &str, arguments: &str) -> ToolCall {
    ToolCall::new(tool, arguments).returning("ok")
}

fn err(tool: &str, arguments: &str, error: &str) -> ToolCall {
    ToolCall::new(tool, arguments).failing(error)
}

#[test]
fn english_feedback_becomes_preferences_and_constraints_about_the_user() {
    let trace = TaskTrace::new("Summarise the incident report", Outcome::Succeeded)
        .with_call(ok("read_file", "report.md"))
        .with_feedback(
            "Thanks, that works! I prefer short answers with bullet points. Please don't \
             use emojis. Always run the tests before pushing; never push to main directly. \
             Can you also send it to Maria?",
        );
    let found = reflect(&trace);
    assert_eq!(
        contents(&found),
        [
            "The user prefers short answers with bullet points.",
            "The user asked not to use emojis.",
            "The user asked to always run the tests before pushing.",
            "The user asked never to push to main directly.",
        ]
    );
    assert!(found.iter().all(|r| r.kind == Kind::Semantic));
    assert!(found.iter().all(|r| r.subtype == Some(Subtype::Preference)));
    assert_eq!(found[0].tags, ["preference"]);
    assert_eq!(found[1].tags, ["preference", "constraint"]);
    assert_eq!(found[1].why, "user feedback: \"Please don't use emojis\"");
}

#[test]
fn first_person_statements_are_retold_in_the_third_person() {
    let said = |text: &str| third_person(text);
    assert_eq!(said("I always use tabs"), "The user always uses tabs.");
    assert_eq!(
        said("I never want emojis in commit messages."),
        "The user never wants emojis in commit messages."
    );
    assert_eq!(
        said("I'm vegetarian, so never book steak houses"),
        "The user is vegetarian, so never book steak houses."
    );
    assert_eq!(
        said("I don't like long emails; keep them short."),
        "The user doesn't like long emails; keep them short."
    );
    assert_eq!(
        said("My favourite editor is Helix."),
        "The user's favourite editor is Helix."
    );
    assert_eq!(
        said("I prefer my coffee black"),
        "The user prefers their coffee black."
    );
    assert_eq!(
        said("Please don't email me after 6pm."),
        "The user asked not to email them after 6pm."
    );
    assert_eq!(
        said("From now on, use pnpm instead of npm."),
        "The user asked to use pnpm instead of npm from now on."
    );
    assert_eq!(
        said("Going forward, I'd rather get one summary a day"),
        "Going forward, the user would rather get one summary a day."
    );
    assert_eq!(
        said("We always deploy on Tuesdays."),
        "The user said: \"We always deploy on Tuesdays.\""
    );
    assert_eq!(
        said("I try to reply within a day"),
        "The user tries to reply within a day."
    );
    assert_eq!(
        said("I watch the logs while it runs"),
        "The user watches the logs while it runs."
    );
}

#[test]
fn stated_facts_about_the_user_are_kept_but_one_off_requests_and_questions_are_not() {
    let trace = TaskTrace::new("Find a hotel near the office", Outcome::Succeeded)
        .with_call(ok("search_hotels", "{\"near\":\"office\"}"))
        .with_feedback(
            "I live in Berlin. Please fix the typo in the title. Could you always book \
             refundable rooms? Great job.",
        );
    let found = reflect(&trace);
    assert_eq!(contents(&found), ["The user lives in Berlin."]);
    assert_eq!(found[0].subtype, Some(Subtype::Fact));
    assert_eq!(found[0].tags, ["fact"]);
}

#[test]
fn chinese_feedback_becomes_statements_about_the_user() {
    let trace = TaskTrace::new("整理本周的会议纪要", Outcome::Succeeded)
        .with_call(ok("read_notes", "week=12"))
        .with_feedback(
            "谢谢！我喜欢简洁的回答。请不要用表情符号！以后都用中文回复。我住在深圳。能再发一份给张伟吗？",
        );
    let found = reflect(&trace);
    assert_eq!(
        contents(&found),
        [
            "用户喜欢简洁的回答。",
            "用户要求不要用表情符号。",
            "用户要求以后都用中文回复。",
            "用户住在深圳。",
        ]
    );
    assert_eq!(found[0].subtype, Some(Subtype::Preference));
    assert_eq!(found[1].tags, ["preference", "constraint"]);
    assert_eq!(found[3].subtype, Some(Subtype::Fact));
}

#[test]
fn descriptions_and_one_off_remarks_are_not_taken_for_rules() {
    let trace = TaskTrace::new(
        "Fix the bug where the cache never expires",
        Outcome::Succeeded,
    )
    .with_call(ok("edit", "cache.rs"))
    .with_feedback(
        "Never mind the warning. Don't worry about the old branch. It always takes a \
         minute. Stop. 3天以后提醒我一下。开完会以后再说。",
    );
    assert!(
        reflect(&trace).is_empty(),
        "{:?}",
        contents(&reflect(&trace))
    );
    let trace = TaskTrace::new("整理文档", Outcome::Succeeded)
        .with_call(ok("edit", "doc.md"))
        .with_feedback("你以后别用英文回复。我们总是周二发布。");
    assert_eq!(
        contents(&reflect(&trace)),
        ["用户要求以后别用英文回复。", "用户说：“我们总是周二发布。”"]
    );
}

#[test]
fn preferences_in_the_goal_count_too() {
    let trace = TaskTrace::new(
        "Draft the weekly status report. I prefer tables over prose.",
        Outcome::Succeeded,
    )
    .with_call(ok("write_doc", "status.md"));
    let found = reflect(&trace);
    assert_eq!(contents(&found), ["The user prefers tables over prose."]);
    assert_eq!(found[0].why, "task goal: \"I prefer tables over prose\"");
}

#[test]
fn a_plain_successful_one_tool_task_leaves_nothing_worth_keeping() {
    let trace = TaskTrace::new("What time is it in Tokyo?", Outcome::Succeeded)
        .with_step("Look up the time zone")
        .with_call(ok("clock", "Asia/Tokyo"));
    assert!(reflect(&trace).is_empty());
    // Two calls of one tool are not a sequence either.
    let trace = TaskTrace::new("Fetch both pages", Outcome::Succeeded)
        .with_call(ok("fetch", "a"))
        .with_call(ok("fetch", "b"));
    assert!(reflect(&trace).is_empty());
}

#[test]
fn a_successful_task_yields_its_lessons_and_its_procedure() {
    let trace = TaskTrace::new("Summarise the latest release notes", Outcome::Succeeded)
        .with_call(ok("search", "release notes v2.3"))
        .with_call(err(
            "fetch",
            "https://example.com/notes",
            "timeout after 30s\nat fetch.rs:12",
        ))
        .with_call(err(
            "fetch",
            "https://example.com/notes",
            "  timeout after 30s  ",
        ))
        .with_call(ok("fetch", "https://example.com/notes --timeout 90"))
        .with_call(ok("fetch", "https://example.com/notes/page2"))
        .with_call(err("lint", "summary.md", "lint: command not found"))
        .with_call(ok("summarize", "notes.txt"));
    let found = reflect(&trace);
    assert_eq!(
        contents(&found),
        [
            "When trying to summarise the latest release notes, fetch failed with 'timeout \
             after 30s'; fetch worked with `https://example.com/notes --timeout 90`.",
            "When trying to summarise the latest release notes, lint failed with 'lint: \
             command not found'; summarize `notes.txt` worked next.",
            "To summarise the latest release notes: search → fetch → summarize",
        ]
    );
    assert_eq!(found[0].subtype, Some(Subtype::Lesson));
    assert_eq!(found[0].tags, ["lesson", "tool:fetch"]);
    assert_eq!(
        found[0].why,
        "tool call #2 (fetch) failed; call #4 succeeded"
    );
    assert_eq!(found[1].tags, ["lesson", "tool:lint", "tool:summarize"]);
    assert_eq!(found[2].subtype, Some(Subtype::Procedure));
    assert_eq!(
        found[2].tags,
        ["procedure", "tool:search", "tool:fetch", "tool:summarize"]
    );
    assert_eq!(
        found[2].why,
        "tool calls #1, #4, #5, #7 succeeded in a task that succeeded; failed calls left out"
    );
}

#[test]
fn a_retry_with_the_same_arguments_is_named_as_such() {
    let trace = TaskTrace::new("Sync the calendar", Outcome::Succeeded)
        .with_call(err("caldav", "PUT /cal", "503 Service Unavailable"))
        .with_call(ok("caldav", "PUT /cal"));
    assert_eq!(
        contents(&reflect(&trace)),
        [
            "When trying to sync the calendar, caldav failed with '503 Service Unavailable'; \
          retrying the same call worked."
        ]
    );
}

#[test]
fn a_failed_task_says_why_and_has_no_procedure() {
    let trace = TaskTrace::new("Deploy the billing service.", Outcome::Failed)
        .with_call(ok("git", "pull"))
        .with_call(err("docker", "build .", "no space left on device"))
        .with_call(ok("docker", "system prune -f && docker build ."))
        .with_call(err(
            "kubectl",
            "apply -f billing.yaml",
            "error: You must be logged in to the server (Unauthorized)",
        ))
        .with_feedback("It still isn't deployed.");
    let found = reflect(&trace);
    assert_eq!(
        contents(&found),
        [
            "Task \"Deploy the billing service\" failed: kubectl reported 'error: You must be \
             logged in to the server (Unauthorized)'.",
            "When trying to deploy the billing service, docker failed with 'no space left on \
             device'; docker worked with `system prune -f && docker build .`.",
        ]
    );
    assert_eq!(found[0].tags, ["lesson", "outcome:failed", "tool:kubectl"]);
    assert_eq!(
        found[0].why,
        "task outcome failed; tool call #4 (kubectl) failed and was not retried successfully"
    );
}

#[test]
fn a_partial_task_names_what_stopped_it() {
    let trace = TaskTrace::new("Migrate all three databases", Outcome::Partial)
        .with_call(ok("migrate", "db1"))
        .with_call(ok("migrate", "db2"))
        .with_call(err("backup", "db3", "permission denied: /backups"));
    assert_eq!(
        contents(&reflect(&trace)),
        [
            "Task \"Migrate all three databases\" only partly succeeded: backup reported \
          'permission denied: /backups'."
        ]
    );
}

#[test]
fn chinese_traces_get_chinese_lessons_and_procedures() {
    let trace = TaskTrace::new("生成上个月的销售报表", Outcome::Succeeded)
        .with_call(ok("sql_query", "select * from sales where month = 5"))
        .with_call(err("excel_export", "report.xlsx", "磁盘已满"))
        .with_call(ok("excel_export", "/tmp/report.xlsx"))
        .with_call(ok("send_mail", "to=boss"))
        .with_feedback("以后报表都用 PDF 格式。");
    let found = reflect(&trace);
    assert_eq!(
        contents(&found),
        [
            "用户要求以后报表都用 PDF 格式。",
            "在“生成上个月的销售报表”时，excel_export 报错“磁盘已满”；改用参数 `/tmp/report.xlsx` 后 excel_export 成功。",
            "完成“生成上个月的销售报表”的做法：sql_query → excel_export → send_mail",
        ]
    );
    let failed = TaskTrace::new("部署计费服务", Outcome::Failed).with_call(err(
        "kubectl",
        "apply",
        "连接被拒绝",
    ));
    assert_eq!(
        contents(&reflect(&failed)),
        ["任务“部署计费服务”失败：kubectl 报错“连接被拒绝”。"]
    );
}

#[test]
fn the_language_hint_chooses_the_templates() {
    let trace = TaskTrace::new("Deploy billing", Outcome::Failed)
        .with_call(err("kubectl", "apply", "connection refused"))
        .with_lang(Lang::Zh);
    assert_eq!(
        contents(&reflect(&trace)),
        ["任务“Deploy billing”失败：kubectl 报错“connection refused”。"]
    );
}

#[test]
fn at_most_five_with_facts_first_then_lessons_then_the_procedure() {
    let trace = TaskTrace::new("Book the team offsite", Outcome::Succeeded)
        .with_call(err("calendar", "find_slot", "quota exceeded"))
        .with_call(ok("calendar", "find_slot --week 23"))
        .with_call(err("booking", "venue=A", "venue A is full"))
        .with_call(ok("booking", "venue=B"))
        .with_call(ok("email", "team"))
        .with_feedback(
            "I prefer venues near a train station. Never book Fridays. Always CC my \
             manager. I like vegetarian catering.",
        );
    let found = reflect(&trace);
    assert_eq!(found.len(), MAX_REFLECTIONS);
    assert_eq!(
        contents(&found),
        [
            "The user prefers venues near a train station.",
            "The user asked never to book Fridays.",
            "The user asked to always CC their manager.",
            "The user likes vegetarian catering.",
            "When trying to book the team offsite, calendar failed with 'quota exceeded'; \
             calendar worked with `find_slot --week 23`.",
        ]
    );
}

#[test]
fn invalid_traces_are_refused_with_a_clear_reason() {
    let error = |trace: TaskTrace| match RulesReflector.reflect(&trace) {
        Err(ReflectError::Invalid(reason)) => reason,
        other => panic!("expected Invalid, got {other:?}"),
    };
    assert!(error(TaskTrace::new("  \n", Outcome::Succeeded)).contains("the goal is empty"));
    let mut many = TaskTrace::new("x", Outcome::Succeeded);
    many.tool_calls = vec![ok("t", ""); MAX_TRACE_TOOL_CALLS + 1];
    assert_eq!(
        error(many),
        "the trace has 201 tool calls; at most 200 are accepted"
    );
    let big = TaskTrace::new("x", Outcome::Succeeded)
        .with_call(ok("t", ""))
        .with_call(ToolCall::new("t", "").returning("y".repeat(MAX_TRACE_TEXT_BYTES + 1)));
    assert_eq!(
        error(big),
        "tool_calls[1].result is 16385 bytes; the limit is 16384 bytes (16 KiB)"
    );
    let nameless = TaskTrace::new("x", Outcome::Succeeded).with_call(ok(" ", ""));
    assert_eq!(error(nameless), "tool_calls[0] has no tool name");
    let mut steps = TaskTrace::new("x", Outcome::Succeeded);
    steps.steps = vec!["s".into(); MAX_TRACE_STEPS + 1];
    assert!(error(steps).contains("201 steps"));
    let feedback = TaskTrace::new("x", Outcome::Failed)
        .with_feedback("字".repeat(MAX_TRACE_TEXT_BYTES / 3 + 1));
    assert!(error(feedback).starts_with("feedback is 16386 bytes"));
    let message = RulesReflector
        .reflect(&TaskTrace::new("", Outcome::Failed))
        .unwrap_err()
        .to_string();
    assert!(
        message.starts_with("invalid task trace: the goal is empty"),
        "{message}"
    );
}

#[test]
fn traces_read_from_json_with_lowercase_outcomes_and_defaults() {
    let trace: TaskTrace =
        serde_json::from_str(r#"{"goal":"Rename the branch","outcome":"partial"}"#).unwrap();
    assert_eq!(trace.outcome, Outcome::Partial);
    assert!(trace.steps.is_empty() && trace.tool_calls.is_empty());
    assert_eq!((trace.feedback, trace.lang), (None, None));
    let full: TaskTrace = serde_json::from_value(serde_json::json!({
        "goal": "g", "outcome": "failed", "lang": "zh", "feedback": "f",
        "steps": ["s"],
        "tool_calls": [{"tool": "t", "arguments": "{}", "error": "boom"}]
    }))
    .unwrap();
    assert_eq!(full.lang, Some(Lang::Zh));
    assert_eq!(full.tool_calls[0].error_line(), Some("boom"));
    assert_eq!(full.tool_calls[0].result, None);
    let back: TaskTrace = serde_json::from_value(serde_json::to_value(&full).unwrap()).unwrap();
    assert_eq!(back, full);
    for outcome in Outcome::ALL {
        assert_eq!(
            serde_json::to_value(outcome).unwrap(),
            serde_json::json!(outcome.as_str())
        );
    }
    assert!(serde_json::from_str::<Outcome>("\"Succeeded\"").is_err());
    let reflection = Reflection::semantic(Subtype::Lesson, "c", "w");
    let json = serde_json::to_string(&reflection).unwrap();
    assert_eq!(
        serde_json::from_str::<Reflection>(&json).unwrap(),
        reflection
    );
}

#[test]
fn blank_errors_do_not_count_as_failures() {
    let call = ToolCall::new("t", "").failing("  \n ");
    assert!(!call.failed());
    assert_eq!(call.error_line(), None);
}

#[test]
fn long_procedures_are_clipped_and_tags_stay_short() {
    let long = "t".repeat(100);
    let mut trace =
        TaskTrace::new("Walk the whole tree", Outcome::Succeeded).with_call(ok(&long, ""));
    for i in 0..20 {
        trace = trace.with_call(ok(&format!("step_{i}"), ""));
    }
    let found = reflect(&trace);
    assert_eq!(found.len(), 1);
    assert!(
        found[0].content.ends_with("step_13 → … (+6 more)"),
        "{}",
        found[0].content
    );
    assert_eq!(found[0].tags[1].len(), MAX_TAG_BYTES);
    assert!(found[0].tags.iter().all(|t| t.len() <= MAX_TAG_BYTES));
    assert_eq!(
        found[0].why,
        "21 tool calls succeeded in a task that succeeded; failed calls left out"
    );
}
