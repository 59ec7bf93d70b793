//! `hindsight key`: API keys and their grants.

use hindsight_core::auth::{ApiKey, Grant};
use serde_json::json;

use crate::cli::KeyCommand;
use crate::output::emit;
use crate::table::Table;

pub async fn run(command: KeyCommand) -> anyhow::Result<()> {
    match command {
        KeyCommand::Create(args) => {
            let grants = args
                .grants
                .iter()
                .map(|g| g.parse::<Grant>())
                .collect::<Result<Vec<_>, _>>()?;
            let client = args.client.connect().await?;
            let (key, info) = client.create_api_key(&args.principal, &grants).await?;
            emit(
                args.client.json(),
                || json!({ "key": key, "info": info_json(&info) }),
                || {
                    format!(
                        "{key}\n\nThe key for {} ({}). It is shown this once and stored only as a hash: keep it now.\n",
                        info.principal,
                        grants_text(&info)
                    )
                },
            );
        }
        KeyCommand::List(args) => {
            let client = args.client.connect().await?;
            let keys = client.api_keys().await?;
            emit(
                args.client.json(),
                || keys.iter().map(info_json).collect::<Vec<_>>(),
                || {
                    if keys.is_empty() {
                        return "no API keys\n".to_string();
                    }
                    let mut t =
                        Table::with_header(["ID", "PRINCIPAL", "GRANTS", "CREATED", "STATE"]);
                    for k in &keys {
                        t.row([
                            k.id.clone(),
                            k.principal.clone(),
                            grants_text(k),
                            k.created_at.to_rfc3339(),
                            k.revoked_at
                                .map_or("active".to_string(), |t| format!("revoked {t}")),
                        ]);
                    }
                    t.render()
                },
            );
        }
        KeyCommand::Revoke(args) => {
            let client = args.client.connect().await?;
            let key = client.revoke_api_key(&args.id).await?;
            emit(
                args.client.json(),
                || info_json(&key),
                || format!("API key {} of {} revoked\n", key.id, key.principal),
            );
        }
    }
    Ok(())
}

fn grants_text(key: &ApiKey) -> String {
    key.grants
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

fn info_json(key: &ApiKey) -> serde_json::Value {
    json!({
        "id": key.id,
        "principal": key.principal,
        "grants": key.grants.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "created_at": key.created_at.to_rfc3339(),
        "revoked_at": key.revoked_at.map(|t| t.to_rfc3339()),
    })
}
