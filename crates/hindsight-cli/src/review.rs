use hindsight_api::HindsightClient;
use hindsight_core::Timestamp;

use crate::cli::ReviewArgs;
use crate::json;
use crate::output::{emit, join};
use crate::table::Table;

pub async fn run(args: ReviewArgs) -> anyhow::Result<()> {
    let bank = args.bank.parse()?;
    let as_of = args
        .as_of
        .as_deref()
        .map(Timestamp::parse_rfc3339)
        .transpose()?;
    let client = HindsightClient::connect(&args.client.server).await?;
    let report = client.review(bank, as_of).await?;
    emit(
        args.client.json,
        || json::review(&report),
        || {
            let mut t = Table::fields();
            t.row(["bank", &report.bank])
                .row(["as_of", &report.as_of.to_string()])
                .row(["considered", &report.considered.to_string()])
                .row(["expired", &report.expired.len().to_string()]);
            if !report.expired.is_empty() {
                t.row(["expired_ids", &join(&report.expired)]);
            }
            t.row(["took", &format!("{} ms", report.took_micros / 1000)]);
            t.render()
        },
    );
    Ok(())
}
