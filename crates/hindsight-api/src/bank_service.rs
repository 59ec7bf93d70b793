use hindsight_core::{BankName, MemoryId};
use hindsight_node::transfer::{ImportOptions, DEFAULT_PAGE};
use hindsight_node::Node;
use tonic::{Request, Response, Status};

use hindsight_core::auth::Right;

use crate::access::{principal, require};
use crate::gateway::{bank_partition, forward_to_owners};
use crate::pb;
use crate::pb::bank_service_client::BankServiceClient;
use crate::pb::bank_service_server::BankService;
use crate::status::{from_node, invalid};

/// `hindsight.v1.BankService` over a node.
#[derive(Clone)]
pub struct BankApi {
    node: Node,
}

impl BankApi {
    pub fn new(node: Node) -> Self {
        BankApi { node }
    }
}

fn bank_name(name: &str) -> Result<BankName, Status> {
    name.parse().map_err(invalid)
}

#[tonic::async_trait]
impl BankService for BankApi {
    async fn create_bank(
        &self,
        request: Request<pb::CreateBankRequest>,
    ) -> Result<Response<pb::CreateBankResponse>, Status> {
        forward_to_owners!(
            self,
            request,
            bank_partition(&self.node, &request.get_ref().name),
            Changes,
            BankServiceClient::create_bank
        );
        let caller = principal(&self.node, &request)?;
        let request = request.into_inner();
        let name = bank_name(&request.name)?;
        require(&caller, Right::Admin, &name)?;
        let patch = request
            .settings
            .unwrap_or_default()
            .try_into()
            .map_err(invalid)?;
        let bank = self
            .node
            .create_bank(name, patch)
            .await
            .map_err(from_node)?;
        Ok(Response::new(pb::CreateBankResponse {
            bank: Some((&bank).into()),
        }))
    }

    async fn get_bank(
        &self,
        request: Request<pb::GetBankRequest>,
    ) -> Result<Response<pb::GetBankResponse>, Status> {
        forward_to_owners!(
            self,
            request,
            bank_partition(&self.node, &request.get_ref().name),
            Reads,
            BankServiceClient::get_bank
        );
        let caller = principal(&self.node, &request)?;
        let name = bank_name(&request.into_inner().name)?;
        require(&caller, Right::Read, &name)?;
        let info = self.node.get_bank(name).await.map_err(from_node)?;
        Ok(Response::new(pb::GetBankResponse {
            info: Some((&info).into()),
        }))
    }

    async fn list_banks(
        &self,
        request: Request<pb::ListBanksRequest>,
    ) -> Result<Response<pb::ListBanksResponse>, Status> {
        let caller = principal(&self.node, &request)?;
        let mut banks = self.node.list_banks().await.map_err(from_node)?;
        banks.retain(|b| caller.may(Right::Read, &b.config.name));
        let mut banks: Vec<pb::BankInfo> = banks.iter().map(pb::BankInfo::from).collect();
        // With partitions, the banks of the partitions held elsewhere come from their owners
        // (who check the caller's rights themselves).
        for listed in
            crate::gateway::from_other_partitions(
                &self.node,
                &request,
                |channel, handed| async move {
                    BankServiceClient::new(channel).list_banks(handed).await
                },
            )
            .await?
        {
            banks.extend(listed.into_inner().banks);
        }
        let name = |info: &pb::BankInfo| info.bank.as_ref().map(|b| b.name.clone());
        banks.sort_by_key(name);
        banks.dedup_by(|a, b| name(a) == name(b));
        Ok(Response::new(pb::ListBanksResponse { banks }))
    }

    async fn update_bank(
        &self,
        request: Request<pb::UpdateBankRequest>,
    ) -> Result<Response<pb::UpdateBankResponse>, Status> {
        forward_to_owners!(
            self,
            request,
            bank_partition(&self.node, &request.get_ref().name),
            Changes,
            BankServiceClient::update_bank
        );
        let caller = principal(&self.node, &request)?;
        let request = request.into_inner();
        let name = bank_name(&request.name)?;
        require(&caller, Right::Admin, &name)?;
        let patch = request
            .patch
            .unwrap_or_default()
            .try_into()
            .map_err(invalid)?;
        let bank = self
            .node
            .update_bank(name, patch)
            .await
            .map_err(from_node)?;
        Ok(Response::new(pb::UpdateBankResponse {
            bank: Some((&bank).into()),
        }))
    }

    async fn delete_bank(
        &self,
        request: Request<pb::DeleteBankRequest>,
    ) -> Result<Response<pb::DeleteBankResponse>, Status> {
        forward_to_owners!(
            self,
            request,
            bank_partition(&self.node, &request.get_ref().name),
            Changes,
            BankServiceClient::delete_bank
        );
        let caller = principal(&self.node, &request)?;
        let name = bank_name(&request.into_inner().name)?;
        require(&caller, Right::Admin, &name)?;
        let removed = self.node.delete_bank(name).await.map_err(from_node)?;
        Ok(Response::new(pb::DeleteBankResponse {
            memories_removed: removed as u64,
        }))
    }

    async fn export_bank(
        &self,
        request: Request<pb::ExportBankRequest>,
    ) -> Result<Response<pb::ExportBankResponse>, Status> {
        forward_to_owners!(
            self,
            request,
            bank_partition(&self.node, &request.get_ref().name),
            Reads,
            BankServiceClient::export_bank
        );
        let caller = principal(&self.node, &request)?;
        let request = request.into_inner();
        let name = bank_name(&request.name)?;
        // Everything goes out, quarantined records included: an administrator's view.
        require(&caller, Right::Admin, &name)?;
        let after = request
            .after
            .map(|id| id.parse::<MemoryId>())
            .transpose()
            .map_err(invalid)?;
        let limit = request.limit.map_or(DEFAULT_PAGE, |l| l as usize);
        let page = self
            .node
            .export_bank(&name, after, limit)
            .await
            .map_err(from_node)?;
        Ok(Response::new(pb::ExportBankResponse {
            lines: page.lines,
            next: page.next.map(|id| id.to_string()),
        }))
    }

    async fn import_bank(
        &self,
        request: Request<pb::ImportBankRequest>,
    ) -> Result<Response<pb::ImportBankResponse>, Status> {
        forward_to_owners!(
            self,
            request,
            bank_partition(&self.node, &request.get_ref().name),
            Changes,
            BankServiceClient::import_bank
        );
        let caller = principal(&self.node, &request)?;
        let request = request.into_inner();
        let name = bank_name(&request.name)?;
        require(&caller, Right::Admin, &name)?;
        let report = self
            .node
            .import_bank(
                &request.lines,
                &name,
                ImportOptions {
                    resign: request.resign,
                },
            )
            .await
            .map_err(from_node)?;
        Ok(Response::new(pb::ImportBankResponse {
            memories: report.memories as u64,
            conflicts: report.conflicts as u64,
        }))
    }
}
