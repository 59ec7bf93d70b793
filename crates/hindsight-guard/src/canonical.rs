use hindsight_core::Memory;

/// Version tag at the start of [`canonical_bytes`]; bump it if the layout ever changes, so old and
/// new signatures can never be confused.
pub const CANONICAL_VERSION: &[u8] = b"hindsight.memory.v2\0";

/// The bytes a record signature covers: the statement and who made it.
///
/// Covered: `id` and `bank` (a record cannot be replayed into another bank or under another id),
/// `kind`, `content`, the whole `provenance` (who said it: raising a web page to "user" is the
/// obvious forgery), `occurred_at` and `critical`. These are fixed when the record is written.
///
/// Left out: what the replicated lifecycle changes afterwards (`confidence`, `status`,
/// `valid_to`, `status_log`, by review, feedback, expiry and conflict resolution, which replicas
/// apply deterministically without holding the key, and which the Raft log records), fields that
/// change on reads or bookkeeping (`access`, `updated_at`, `updated_index`, `version`), derived
/// data rebuilt from the content (`entities`, `slot`, `support`), and presentation aids
/// (`subtype`, `tags`, `metadata`, `importance`).
///
/// The layout is explicit and length-prefixed rather than a serde format, because a change in a
/// serialiser's output (field order, float printing) would silently invalidate every stored
/// signature: strings are a `u32` big-endian byte length then UTF-8; optional values a `0`/`1`
/// byte then the value; integers big-endian.
pub fn canonical_bytes(memory: &Memory) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + memory.content.len());
    out.extend_from_slice(CANONICAL_VERSION);
    out.extend_from_slice(&memory.id.to_bytes());
    put_str(&mut out, memory.bank.as_str());
    put_str(&mut out, memory.kind.as_str());
    put_str(&mut out, &memory.content);
    let p = &memory.provenance;
    put_str(&mut out, p.source.as_str());
    for field in [
        &p.tool,
        &p.agent_id,
        &p.session_id,
        &p.task_id,
        &p.tool_call_id,
    ] {
        put_opt_str(&mut out, field.as_deref());
    }
    out.extend_from_slice(&memory.occurred_at.millis().to_be_bytes());
    out.push(u8::from(memory.critical));
    out
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    // Field limits keep every string far below 4 GiB; saturate rather than wrap if one ever isn't.
    let len = u32::try_from(s.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        None => out.push(0),
        Some(s) => {
            out.push(1);
            put_str(out, s);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use hindsight_core::{MemoryId, Provenance, SourceKind, Status, Timestamp};

    pub(crate) fn sample() -> Memory {
        Memory::new(
            MemoryId(0x0123_4567_89ab_cdef),
            "acme/agent-1".parse().unwrap(),
            "The quarterly report is due on the 15th.",
            Provenance::from_source(SourceKind::User),
            Timestamp(1_767_225_600_000),
        )
    }

    type Change = (&'static str, fn(&mut Memory));

    #[test]
    fn covered_fields_change_the_bytes() {
        let base = canonical_bytes(&sample());
        let changes: [Change; 8] = [
            ("content", |m| m.content.push('!')),
            ("bank", |m| m.bank = "acme/agent-2".parse().unwrap()),
            ("id", |m| m.id = MemoryId(7)),
            ("source", |m| m.provenance.source = SourceKind::Tool),
            ("tool", |m| m.provenance.tool = Some(String::new())),
            ("occurred_at", |m| m.occurred_at = Timestamp(1)),
            ("critical", |m| m.critical = true),
            ("kind", |m| m.kind = hindsight_core::Kind::Episodic),
        ];
        for (field, change) in changes {
            let mut m = sample();
            change(&mut m);
            assert_ne!(canonical_bytes(&m), base, "{field}");
        }
    }

    #[test]
    fn bookkeeping_fields_do_not_change_the_bytes() {
        let base = canonical_bytes(&sample());
        let mut m = sample();
        m.access.count = 12;
        m.version = 9;
        m.updated_at = Timestamp(5);
        m.tags.push("travel".into());
        m.importance = 0.1;
        // The lifecycle moves these after the write, without the key.
        m.confidence = 0.2;
        m.status = Status::Quarantined { reason: "x".into() };
        assert_eq!(canonical_bytes(&m), base);
    }

    #[test]
    fn adjacent_strings_cannot_be_shifted_into_each_other() {
        let mut a = sample();
        a.provenance.agent_id = Some("ab".into());
        a.provenance.session_id = Some("c".into());
        let mut b = sample();
        b.provenance.agent_id = Some("a".into());
        b.provenance.session_id = Some("bc".into());
        assert_ne!(canonical_bytes(&a), canonical_bytes(&b));
    }
}
