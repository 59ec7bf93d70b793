use crate::cli::StatusArgs;
use crate::json;
use crate::output::emit;
use crate::table::Table;

pub async fn run(args: StatusArgs) -> anyhow::Result<()> {
    let client = args.client.connect().await?;
    let status = client.status().await?;
    emit(
        args.client.json(),
        || json::status(&status),
        || {
            let n = &status.node;
            let leader = n
                .leader_id
                .map_or_else(|| "none".to_string(), |id| id.to_string());
            let mut t = Table::fields();
            t.row(["server", client.addr()])
                .row(["version", &status.version])
                .row(["node_id", &n.node_id.to_string()])
                .row(["ready", if status.ready { "yes" } else { "no" }])
                .row(["leader", &leader])
                .row(["term", &n.term.to_string()])
                .row(["last_log_index", &n.last_log_index.to_string()])
                .row(["applied_index", &n.applied_index.to_string()])
                .row(["banks_loaded", &n.banks_loaded.to_string()])
                .row(["embedding_model", &n.embedding_model])
                .row(["store_bytes", &n.store_bytes_on_disk.to_string()]);
            t.render()
        },
    );
    Ok(())
}
