//! `memory_list_banks`: where memories can be read from.

use hindsight_api::pb;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::backend::Backend;
use crate::caller::Caller;
use crate::render::put_nonempty;
use crate::tool_error::ToolError;

/// No arguments: the list is whatever the caller's key may read.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ListBanksArgs {}

impl ListBanksArgs {
    pub async fn run(self, backend: &dyn Backend, caller: &Caller) -> Result<Value, ToolError> {
        let response = backend
            .list_banks(caller.key(), pb::ListBanksRequest {})
            .await?;
        Ok(result(&response, caller.bank.as_deref()))
    }
}

/// Each bank with its size; the configured default is named, since tools use it when given no
/// bank and it need not exist before the first write.
fn result(r: &pb::ListBanksResponse, default: Option<&str>) -> Value {
    let banks: Vec<Value> = r
        .banks
        .iter()
        .filter_map(|info| {
            let bank = info.bank.as_ref()?;
            let mut out = Map::new();
            out.insert("name".into(), json!(bank.name));
            out.insert("memory_count".into(), json!(info.memory_count));
            put_nonempty(&mut out, "description", json!(bank.description));
            Some(Value::Object(out))
        })
        .collect();
    let mut out = Map::new();
    out.insert("count".into(), json!(banks.len()));
    out.insert("banks".into(), Value::Array(banks));
    put_nonempty(&mut out, "default_bank", json!(default));
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banks_list_with_their_counts_and_the_default() {
        let info = |name: &str, count| pb::BankInfo {
            bank: Some(pb::Bank {
                name: name.into(),
                ..Default::default()
            }),
            memory_count: count,
        };
        let v = result(
            &pb::ListBanksResponse {
                banks: vec![info("acme/a", 3), info("acme/b", 0)],
            },
            Some("acme/a"),
        );
        assert_eq!(
            v,
            json!({
                "count": 2,
                "banks": [{"name": "acme/a", "memory_count": 3}, {"name": "acme/b", "memory_count": 0}],
                "default_bank": "acme/a",
            })
        );
        let v = result(&pb::ListBanksResponse::default(), None);
        assert!(v.get("default_bank").is_none());
    }
}
