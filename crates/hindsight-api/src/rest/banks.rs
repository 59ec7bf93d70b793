//! Banks as a whole: their catalogue and configuration, deletion, export and import.

use axum::extract::State;
use axum::routing::{delete, get, patch, post};
use schemars::JsonSchema;
use serde::Deserialize;

use super::extract::{Caller, JsonBody, PathArgs, QueryArgs};
use super::openapi::{DocumentedRouter, Operation};
use super::{answer, from_path, Answer, Services};

use crate::pb;
use crate::pb::bank_service_server::BankService;

/// The group these operations are listed under in the OpenAPI document.
const TAG: &str = "banks";

pub(super) fn routes(routes: DocumentedRouter<Services>) -> DocumentedRouter<Services> {
    routes
        .route(
            "get",
            "/v1/banks",
            Operation::new(TAG, "listBanks", "The banks the caller may read.")
                .answer::<pb::ListBanksResponse>(),
            get(list_banks),
        )
        .route(
            "post",
            "/v1/banks",
            Operation::new(TAG, "createBank", "Create a bank.")
                .body::<pb::CreateBankRequest>()
                .answer::<pb::CreateBankResponse>(),
            post(create_bank),
        )
        .route(
            "get",
            "/v1/banks/{bank}",
            Operation::new(TAG, "getBank", "A bank's configuration and size.")
                .answer::<pb::GetBankResponse>(),
            get(get_bank),
        )
        .route(
            "patch",
            "/v1/banks/{bank}",
            Operation::new(TAG, "updateBank", "Change a bank's configuration.")
                .body::<pb::UpdateBankRequest>()
                .answer::<pb::UpdateBankResponse>(),
            patch(update_bank),
        )
        .route(
            "delete",
            "/v1/banks/{bank}",
            Operation::new(TAG, "deleteBank", "Delete a bank and every memory in it.")
                .answer::<pb::DeleteBankResponse>(),
            delete(delete_bank),
        )
        .route(
            "get",
            "/v1/banks/{bank}/export",
            Operation::new(
                TAG,
                "exportBank",
                "One page of the bank's export as JSON lines (records with history, configuration, conflicts).",
            )
            .query::<ExportQuery>()
            .answer::<pb::ExportBankResponse>(),
            get(export_bank),
        )
        .route(
            "post",
            "/v1/banks/{bank}/import",
            Operation::new(
                TAG,
                "importBank",
                "Store exported lines in the bank; lines opening with the bank line create it.",
            )
            .body::<pb::ImportBankRequest>()
            .answer::<pb::ImportBankResponse>(),
            post(import_bank),
        )
}

async fn list_banks(State(s): State<Services>, caller: Caller) -> Answer<pb::ListBanksResponse> {
    answer(
        s.bank
            .list_banks(caller.request(pb::ListBanksRequest {}))
            .await,
    )
}

async fn create_bank(
    State(s): State<Services>,
    caller: Caller,
    JsonBody(body): JsonBody<pb::CreateBankRequest>,
) -> Answer<pb::CreateBankResponse> {
    answer(s.bank.create_bank(caller.request(body)).await)
}

async fn get_bank(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(name): PathArgs<String>,
) -> Answer<pb::GetBankResponse> {
    answer(
        s.bank
            .get_bank(caller.request(pb::GetBankRequest { name }))
            .await,
    )
}

async fn update_bank(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(name): PathArgs<String>,
    JsonBody(mut body): JsonBody<pb::UpdateBankRequest>,
) -> Answer<pb::UpdateBankResponse> {
    from_path("name", &name, &mut body.name)?;
    answer(s.bank.update_bank(caller.request(body)).await)
}

async fn delete_bank(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(name): PathArgs<String>,
) -> Answer<pb::DeleteBankResponse> {
    let request = pb::DeleteBankRequest { name };
    answer(s.bank.delete_bank(caller.request(request)).await)
}

/// `GET /v1/banks/{bank}/export` options.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
struct ExportQuery {
    /// The `next` of the previous page; unset for the first.
    after: Option<String>,
    /// Records per page; unset means 500, at most 5000.
    limit: Option<u32>,
}

async fn export_bank(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(name): PathArgs<String>,
    QueryArgs(query): QueryArgs<ExportQuery>,
) -> Answer<pb::ExportBankResponse> {
    let request = pb::ExportBankRequest {
        name,
        after: query.after,
        limit: query.limit,
    };
    answer(s.bank.export_bank(caller.request(request)).await)
}

async fn import_bank(
    State(s): State<Services>,
    caller: Caller,
    PathArgs(name): PathArgs<String>,
    JsonBody(mut body): JsonBody<pb::ImportBankRequest>,
) -> Answer<pb::ImportBankResponse> {
    from_path("name", &name, &mut body.name)?;
    answer(s.bank.import_bank(caller.request(body)).await)
}
