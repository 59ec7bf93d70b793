//! Strict checking of the judge's JSON answer.
//!
//! The expected shape is
//! `{"verdicts":[{"id":…,"relation":…,"newer_or_fact":"a"|"b"|null,"reason":…}]}`.
//! Small models invent ids, skip items and make up relations, so every field is checked and
//! each pair's verdict stands or falls on its own: one bad entry does not throw away the
//! good ones.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::{Relation, Side, Verdict};

/// The verdicts that passed, and why the other asked-for pairs did not.
#[derive(Debug, Default)]
pub(crate) struct CheckedAnswer {
    pub verdicts: Vec<Verdict>,
    /// Asked-for ids without a valid verdict, each with the reason.
    pub rejected: Vec<(String, String)>,
    /// Problems not tied to an asked-for id, such as verdicts for ids nobody asked about.
    pub notes: Vec<String>,
}

/// Checks `content` against the schema for the pairs named in `expected`. `Err` means nothing
/// in the answer is usable.
pub(crate) fn check_answer(content: &str, expected: &[&str]) -> Result<CheckedAnswer, String> {
    let value = parse_json(content)?;
    let Some(object) = value.as_object() else {
        return Err("the answer is JSON but not an object".into());
    };
    let Some(entries) = object.get("verdicts").and_then(Value::as_array) else {
        return Err("the answer has no \"verdicts\" array".into());
    };
    let mut checked = CheckedAnswer::default();
    let mut by_id: HashMap<&str, Vec<&Map<String, Value>>> = HashMap::new();
    for (i, entry) in entries.iter().enumerate() {
        let Some(fields) = entry.as_object() else {
            checked
                .notes
                .push(format!("verdicts[{i}] is not an object"));
            continue;
        };
        let Some(id) = fields.get("id").and_then(Value::as_str) else {
            checked
                .notes
                .push(format!("verdicts[{i}] has no string \"id\""));
            continue;
        };
        match expected.iter().find(|e| **e == id) {
            Some(known) => by_id.entry(known).or_default().push(fields),
            None => checked.notes.push(format!(
                "verdicts[{i}] is for {id:?}, which was not asked about"
            )),
        }
    }
    for id in expected {
        let outcome = match by_id.get(id).map(Vec::as_slice) {
            None | Some([]) => Err("the answer has no verdict for it".to_string()),
            Some([fields]) => check_verdict(id, fields),
            Some(several) => Err(format!(
                "the answer has {} verdicts for it, so none can be trusted",
                several.len()
            )),
        };
        match outcome {
            Ok(verdict) => checked.verdicts.push(verdict),
            Err(reason) => checked.rejected.push((id.to_string(), reason)),
        }
    }
    Ok(checked)
}

fn check_verdict(id: &str, fields: &Map<String, Value>) -> Result<Verdict, String> {
    let relation = match fields.get("relation") {
        Some(Value::String(name)) => Relation::parse(name).ok_or_else(|| {
            format!(
                "relation {name:?} is not one of {}",
                Relation::ALL.map(Relation::as_str).join(", ")
            )
        })?,
        _ => return Err("\"relation\" is missing or not a string".into()),
    };
    let side = match fields.get("newer_or_fact") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s == "a" => Some(Side::A),
        Some(Value::String(s)) if s == "b" => Some(Side::B),
        Some(other) => {
            return Err(format!(
                "newer_or_fact must be \"a\", \"b\" or null, not {other}"
            ))
        }
    };
    if relation.needs_side() && side.is_none() {
        return Err(format!(
            "newer_or_fact (\"a\" or \"b\") is required when the relation is {relation}"
        ));
    }
    let Some(reason) = fields.get("reason").and_then(Value::as_str) else {
        return Err("\"reason\" is missing or not a string".into());
    };
    Ok(Verdict {
        id: id.to_string(),
        relation,
        newer_or_fact: if relation.needs_side() { side } else { None },
        reason: reason.trim().to_string(),
        cached: false,
        votes: 1,
        samples: 1,
    })
}

/// Parses the answer as JSON. Servers without JSON mode often wrap the object in a Markdown
/// fence or a sentence; the object inside is still taken, since the schema check that follows
/// is what guards quality.
pub(crate) fn parse_json(content: &str) -> Result<Value, String> {
    let text = content.trim();
    let first_error = match serde_json::from_str(text) {
        Ok(value) => return Ok(value),
        Err(e) => e,
    };
    if let (Some(start), Some(end)) = (text.find('{'), text.rfind('}')) {
        if start < end {
            if let Ok(value) = serde_json::from_str(&text[start..=end]) {
                return Ok(value);
            }
        }
    }
    let shown: String = text.chars().take(120).collect();
    Err(format!(
        "the answer is not JSON ({first_error}); it starts with {shown:?}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(content: &str) -> CheckedAnswer {
        check_answer(content, &["p1", "p2", "p3"]).unwrap()
    }

    #[test]
    fn accepts_a_complete_answer() {
        let c = check(
            r#"{"verdicts":[
            {"id":"p1","relation":"update","newer_or_fact":"b","reason":"moved"},
            {"id":"p2","relation":"duplicate","newer_or_fact":"a","reason":" same "},
            {"id":"p3","relation":"inference_refuted","newer_or_fact":"a","reason":"user said"}]}"#,
        );
        assert!(c.rejected.is_empty() && c.notes.is_empty());
        assert_eq!(c.verdicts.len(), 3);
        assert_eq!(c.verdicts[0].newer_or_fact, Some(Side::B));
        assert_eq!(c.verdicts[1].newer_or_fact, None, "no side for duplicates");
        assert_eq!(c.verdicts[1].reason, "same");
    }

    #[test]
    fn judges_each_entry_on_its_own() {
        let c = check(
            r#"{"verdicts":[
            {"id":"p1","relation":"Update","newer_or_fact":"b","reason":"x"},
            {"id":"p2","relation":"update","newer_or_fact":null,"reason":"x"},
            {"id":"p2","relation":"unrelated","newer_or_fact":null,"reason":"x"},
            {"id":"p9","relation":"unrelated","newer_or_fact":null,"reason":"x"},
            {"id":"p3","relation":"unrelated","newer_or_fact":"c","reason":"x"},
            "junk"]}"#,
        );
        assert!(c.verdicts.is_empty());
        let reasons: HashMap<_, _> = c.rejected.into_iter().collect();
        assert!(
            reasons["p1"].contains("\"Update\" is not one of"),
            "{reasons:?}"
        );
        assert!(reasons["p2"].contains("2 verdicts"), "{reasons:?}");
        assert!(
            reasons["p3"].contains("newer_or_fact must be"),
            "{reasons:?}"
        );
        assert_eq!(c.notes.len(), 2, "{:?}", c.notes);
    }

    #[test]
    fn requires_side_and_reason() {
        let c = check(
            r#"{"verdicts":[
            {"id":"p1","relation":"update","reason":"x"},
            {"id":"p2","relation":"unrelated","newer_or_fact":null},
            {"id":"p3","relation":"source_conflict","newer_or_fact":null,"reason":"x"}]}"#,
        );
        assert_eq!(c.verdicts.len(), 1);
        assert!(c.rejected[0]
            .1
            .contains("required when the relation is update"));
        assert!(c.rejected[1].1.contains("\"reason\""));
    }

    #[test]
    fn takes_json_out_of_a_fence_but_rejects_prose() {
        let fenced = "```json\n{\"verdicts\":[]}\n```";
        let c = check_answer(fenced, &["p1"]).unwrap();
        assert_eq!(c.rejected[0].1, "the answer has no verdict for it");
        assert!(check_answer("I think they are duplicates.", &["p1"])
            .unwrap_err()
            .contains("not JSON"));
        assert!(check_answer("[1,2]", &["p1"])
            .unwrap_err()
            .contains("not an object"));
        assert!(check_answer(r#"{"verdict":[]}"#, &["p1"])
            .unwrap_err()
            .contains("\"verdicts\""));
    }
}
