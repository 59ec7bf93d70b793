//! How a [`BankConfig`] is encoded. Bank settings live inside Raft log entries and store records,
//! both bincode, which has neither field names nor defaults: a field added to the struct would make
//! every entry and record written before unreadable. So the binary form is versioned.
//!
//! - **v1** (the first release): the fields from `name` to `strategies`, in declaration order.
//!   Nothing marks it; it starts with the name's length (a `u64`, at most 128).
//! - **v2**: the marker `u64::MAX` where v1 has the name's length (no name is that long), a `u16`
//!   version, the v1 fields, then `require_corroboration` and `max_bytes`.
//!
//! A config whose v2 settings are all at their defaults is still written as v1, so that nodes of
//! the previous release read entries that do not use the new settings. A later version appends
//! its fields after v2's and raises the version; a reader refuses versions newer than it knows.
//!
//! Human-readable formats (the JSON of bank exports) carry field names; there the new fields are
//! simply optional.

use std::fmt;

use serde::de::{self, SeqAccess, Visitor};
use serde::ser::SerializeTuple;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::bank::{BankConfig, BankName, ScoringWeights};
use crate::strategy::Strategies;
use crate::time::Timestamp;

/// Where v1 has the bank name's length, v2 and later have this.
const MARKER: u64 = u64::MAX;
/// The newest layout this build writes and reads.
const VERSION: u16 = 2;
/// Elements of v1 after the name.
const V1_REST: usize = 10;
/// A v1 name longer than this is not a bank config at all (names are at most 128 bytes).
const MAX_STORED_NAME: u64 = 4096;

impl BankConfig {
    /// True when every setting v2 added is at its default, so that v1 can carry the config.
    fn fits_v1(&self) -> bool {
        !self.require_corroboration && self.max_bytes == 0
    }
}

impl Serialize for BankConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            return Named::from(self).serialize(serializer);
        }
        let v1 = self.fits_v1();
        let len = if v1 { 1 + V1_REST } else { 2 + 1 + V1_REST + 2 };
        let mut t = serializer.serialize_tuple(len)?;
        if !v1 {
            t.serialize_element(&MARKER)?;
            t.serialize_element(&VERSION)?;
        }
        t.serialize_element(&self.name)?;
        t.serialize_element(&self.description)?;
        t.serialize_element(&self.created_at)?;
        t.serialize_element(&self.updated_at)?;
        t.serialize_element(&self.weights)?;
        t.serialize_element(&self.min_confidence)?;
        t.serialize_element(&self.dedup_threshold)?;
        t.serialize_element(&self.working_ttl_secs)?;
        t.serialize_element(&self.collapse_threshold)?;
        t.serialize_element(&self.max_memories)?;
        t.serialize_element(&self.strategies)?;
        if !v1 {
            t.serialize_element(&self.require_corroboration)?;
            t.serialize_element(&self.max_bytes)?;
        }
        t.end()
    }
}

impl<'de> Deserialize<'de> for BankConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            return Named::deserialize(deserializer).map(BankConfig::from);
        }
        // The element count is not known before the first element says which layout this is;
        // bincode reads a tuple element by element and does not hold the reader to the count.
        deserializer.deserialize_tuple(usize::MAX, BinaryVisitor)
    }
}

struct BinaryVisitor;

impl<'de> Visitor<'de> for BinaryVisitor {
    type Value = BankConfig;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("bank settings (layout v1 or v2)")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<BankConfig, A::Error> {
        let head: u64 = next(&mut seq, "the layout marker or name length")?;
        let name = if head == MARKER {
            let version: u16 = next(&mut seq, "the layout version")?;
            if version != VERSION {
                return Err(de::Error::custom(format!(
                    "bank settings in layout v{version}, written by a newer release; this one \
                     reads up to v{VERSION}"
                )));
            }
            next::<BankName, _>(&mut seq, "name")?
        } else {
            if head > MAX_STORED_NAME {
                return Err(de::Error::custom(format!(
                    "bank settings start with a name of {head} bytes"
                )));
            }
            let mut bytes = Vec::with_capacity(head as usize);
            for _ in 0..head {
                bytes.push(next::<u8, _>(&mut seq, "name")?);
            }
            let name = String::from_utf8(bytes)
                .map_err(|_| de::Error::custom("the bank name in stored settings is not UTF-8"))?;
            BankName::stored(name)
        };
        let mut config = BankConfig {
            name,
            description: next(&mut seq, "description")?,
            created_at: next(&mut seq, "created_at")?,
            updated_at: next(&mut seq, "updated_at")?,
            weights: next(&mut seq, "weights")?,
            min_confidence: next(&mut seq, "min_confidence")?,
            dedup_threshold: next(&mut seq, "dedup_threshold")?,
            working_ttl_secs: next(&mut seq, "working_ttl_secs")?,
            collapse_threshold: next(&mut seq, "collapse_threshold")?,
            max_memories: next(&mut seq, "max_memories")?,
            strategies: next(&mut seq, "strategies")?,
            require_corroboration: false,
            max_bytes: 0,
        };
        if head == MARKER {
            config.require_corroboration = next(&mut seq, "require_corroboration")?;
            config.max_bytes = next(&mut seq, "max_bytes")?;
        }
        Ok(config)
    }
}

fn next<'de, T: Deserialize<'de>, A: SeqAccess<'de>>(
    seq: &mut A,
    field: &'static str,
) -> Result<T, A::Error> {
    seq.next_element()?
        .ok_or_else(|| de::Error::custom(format!("bank settings end before {field}")))
}

/// The named form, for JSON. Settings added after the first release are optional.
#[derive(Serialize, Deserialize)]
struct Named {
    name: BankName,
    description: String,
    created_at: Timestamp,
    updated_at: Timestamp,
    weights: ScoringWeights,
    min_confidence: f32,
    dedup_threshold: f32,
    working_ttl_secs: u64,
    collapse_threshold: f32,
    max_memories: u64,
    strategies: Option<Strategies>,
    #[serde(default)]
    require_corroboration: bool,
    #[serde(default)]
    max_bytes: u64,
}

impl From<&BankConfig> for Named {
    fn from(c: &BankConfig) -> Self {
        let c = c.clone();
        Named {
            name: c.name,
            description: c.description,
            created_at: c.created_at,
            updated_at: c.updated_at,
            weights: c.weights,
            min_confidence: c.min_confidence,
            dedup_threshold: c.dedup_threshold,
            working_ttl_secs: c.working_ttl_secs,
            collapse_threshold: c.collapse_threshold,
            max_memories: c.max_memories,
            strategies: c.strategies,
            require_corroboration: c.require_corroboration,
            max_bytes: c.max_bytes,
        }
    }
}

impl From<Named> for BankConfig {
    fn from(n: Named) -> Self {
        BankConfig {
            name: n.name,
            description: n.description,
            created_at: n.created_at,
            updated_at: n.updated_at,
            weights: n.weights,
            min_confidence: n.min_confidence,
            dedup_threshold: n.dedup_threshold,
            working_ttl_secs: n.working_ttl_secs,
            collapse_threshold: n.collapse_threshold,
            max_memories: n.max_memories,
            strategies: n.strategies,
            require_corroboration: n.require_corroboration,
            max_bytes: n.max_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::command::Command;
    use crate::memory::{Memory, Provenance, SourceKind};
    use crate::MemoryId;

    use super::*;

    /// `bincode::serialize` of a `Command::Batch` of CreateBank, UpdateBank (with strategies),
    /// ImportBank (with a config) and DeleteBank, made by the release before v2 existed. The
    /// configs: `acme/agent-7` created 2026-01-01 with description "support desk", min_confidence
    /// 0.25 and max_memories 5000; the same updated a day later with working_ttl 3600 and the
    /// default strategies; `restored/bank` with the defaults, created 2026-01-03.
    const V1_COMMAND: &str = "070000000400000000000000000000000c0000000000000061636d652f6167656e742d370c00000000000000737570706f7274206465736b00a8da769b01000000a8da769b0100009a99193f9a99993ecdcccc3d0000f0410080b6430000803e1f856b3f8051010000000000ec51783f881300000000000000010000000c0000000000000061636d652f6167656e742d370c00000000000000737570706f7274206465736b00a8da769b0100000004017c9b0100009a99193f9a99993ecdcccc3d0000f0410080b6430000803e1f856b3f100e000000000000ec51783f88130000000000000100000000000000000000000000000000000000009a99993fcdcc4c3d3333333fcdcc4c3f0d0000000d00000000000000726573746f7265642f62616e6b010d00000000000000726573746f7265642f62616e6b0000000000000000006027819b010000006027819b0100009a99193f9a99993ecdcccc3d0000f0410080b6439a99993e1f856b3f8051010000000000ec51783f00000000000000000000000000000000000000000000000000000000000000000002000000080000000000000061636d652f6f6c64";

    /// The updated config of [`V1_COMMAND`] alone, as the store keeps a bank's record.
    const V1_RECORD: &str = "0c0000000000000061636d652f6167656e742d370c00000000000000737570706f7274206465736b00a8da769b0100000004017c9b0100009a99193f9a99993ecdcccc3d0000f0410080b6430000803e1f856b3f100e000000000000ec51783f88130000000000000100000000000000000000000000000000000000009a99993fcdcc4c3d3333333fcdcc4c3f";

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn acme(at: i64) -> BankConfig {
        let mut c = BankConfig::new("acme/agent-7".parse().unwrap(), Timestamp(at));
        c.description = "support desk".into();
        c.max_memories = 5_000;
        c.min_confidence = 0.25;
        c
    }

    fn v1_configs() -> Vec<BankConfig> {
        let created = acme(1_767_225_600_000);
        let mut updated = created.clone();
        updated.updated_at = Timestamp(1_767_312_000_000);
        updated.strategies = Some(Strategies::default());
        updated.working_ttl_secs = 3600;
        let restored = BankConfig::new(
            "restored/bank".parse().unwrap(),
            Timestamp(1_767_398_400_000),
        );
        vec![created, updated, restored]
    }

    #[test]
    fn log_entries_written_before_v2_still_read() {
        let command: Command = bincode::deserialize(&unhex(V1_COMMAND)).unwrap();
        let [created, updated, restored] = <[BankConfig; 3]>::try_from(v1_configs()).unwrap();
        let Command::Batch(commands) = &command else {
            panic!("{command:?}")
        };
        assert_eq!(commands.len(), 4);
        assert_eq!(commands[0], Command::CreateBank { config: created });
        assert_eq!(commands[1], Command::UpdateBank { config: updated });
        let Command::ImportBank {
            bank,
            config,
            memories,
            ..
        } = &commands[2]
        else {
            panic!("{:?}", commands[2])
        };
        assert_eq!(bank.as_str(), "restored/bank");
        assert_eq!(config.as_ref(), Some(&restored));
        assert!(memories.is_empty());
        // What follows a config in the entry still lines up.
        assert_eq!(
            commands[3],
            Command::DeleteBank {
                name: "acme/old".parse().unwrap()
            }
        );
        for config in [&commands[0], &commands[1]] {
            let (Command::CreateBank { config } | Command::UpdateBank { config }) = config else {
                unreachable!()
            };
            assert!(!config.require_corroboration);
            assert_eq!(config.max_bytes, 0);
        }
    }

    #[test]
    fn a_stored_bank_record_written_before_v2_still_reads() {
        let config: BankConfig = bincode::deserialize(&unhex(V1_RECORD)).unwrap();
        assert_eq!(config, v1_configs()[1]);
    }

    #[test]
    fn settings_without_v2_values_are_written_exactly_as_before() {
        let command = Command::Batch(vec![
            Command::CreateBank {
                config: v1_configs()[0].clone(),
            },
            Command::UpdateBank {
                config: v1_configs()[1].clone(),
            },
            Command::ImportBank {
                bank: "restored/bank".parse().unwrap(),
                config: Some(v1_configs()[2].clone()),
                memories: vec![],
                history: vec![],
                conflicts: vec![],
            },
            Command::DeleteBank {
                name: "acme/old".parse().unwrap(),
            },
        ]);
        assert_eq!(bincode::serialize(&command).unwrap(), unhex(V1_COMMAND));
        assert_eq!(
            bincode::serialize(&v1_configs()[1]).unwrap(),
            unhex(V1_RECORD)
        );
    }

    #[test]
    fn v2_settings_round_trip_inside_entries_with_more_after_them() {
        let mut strict = acme(1_767_225_600_000);
        strict.require_corroboration = true;
        let mut small = v1_configs()[2].clone();
        small.max_bytes = 1 << 20;
        small.strategies = Some(Strategies::default());
        let memory = Memory::new(
            MemoryId(7),
            small.name.clone(),
            "kept after the config",
            Provenance::from_source(SourceKind::User),
            Timestamp(1),
        );
        let command = Command::Batch(vec![
            Command::CreateBank {
                config: strict.clone(),
            },
            Command::ImportBank {
                bank: small.name.clone(),
                config: Some(small.clone()),
                memories: vec![memory],
                history: vec![],
                conflicts: vec![],
            },
            Command::UpdateBank {
                config: v1_configs()[1].clone(),
            },
        ]);
        let bytes = bincode::serialize(&command).unwrap();
        assert_eq!(bincode::deserialize::<Command>(&bytes).unwrap(), command);
        let record = bincode::serialize(&small).unwrap();
        assert_eq!(&record[..8], &u64::MAX.to_le_bytes());
        assert_eq!(bincode::deserialize::<BankConfig>(&record).unwrap(), small);
    }

    #[test]
    fn a_layout_newer_than_this_release_is_refused_with_the_reason() {
        let mut config = acme(1);
        config.max_bytes = 10;
        let mut bytes = bincode::serialize(&config).unwrap();
        bytes[8..10].copy_from_slice(&3u16.to_le_bytes());
        let error = bincode::deserialize::<BankConfig>(&bytes)
            .unwrap_err()
            .to_string();
        assert!(error.contains("layout v3"), "{error}");
    }

    #[test]
    fn json_settings_without_the_v2_fields_read_with_their_defaults() {
        let mut config = acme(1);
        config.require_corroboration = true;
        config.max_bytes = 4096;
        let json = serde_json::to_value(&config).unwrap();
        assert_eq!(json["max_bytes"], 4096);
        assert_eq!(
            serde_json::from_value::<BankConfig>(json.clone()).unwrap(),
            config
        );
        let mut old = json;
        let fields = old.as_object_mut().unwrap();
        fields.remove("require_corroboration");
        fields.remove("max_bytes");
        let read: BankConfig = serde_json::from_value(old).unwrap();
        assert!(!read.require_corroboration);
        assert_eq!(read.max_bytes, 0);
    }
}
