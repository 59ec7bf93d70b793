//! The MCP server: the ten memory tools, whatever the transport.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Extensions, Implementation, ServerCapabilities, ServerConfig,
};
use rmcp::{tool, tool_handler, tool_router, ServerHandler};
use serde_json::Value;

use crate::backend::Backend;
use crate::caller::{Caller, Defaults};
use crate::tool_error::ToolError;
use crate::tools::banks::ListBanksArgs;
use crate::tools::feedback::FeedbackArgs;
use crate::tools::forget::ForgetArgs;
use crate::tools::get::GetArgs;
use crate::tools::reflect::ReflectArgs;
use crate::tools::resolve::ResolveArgs;
use crate::tools::review::ReviewArgs;
use crate::tools::search::SearchArgs;
use crate::tools::trace::TraceArgs;
use crate::tools::write::WriteArgs;

/// What a host shows the model about the server as a whole; each tool's own description says when
/// to call it.
const INSTRUCTIONS: &str = "Hindsight is long-term memory that outlives this conversation. \
Search it before acting on anything the user may have told you before; write what is worth \
keeping; it reviews itself, superseding stale memories and flagging contradictions for the user \
to settle. Memories live in banks (e.g. \"acme/agent-7\"); tools use the configured bank unless \
given `bank`.";

/// The tools over one backend. Cheap to clone: each MCP session (and, over HTTP, each request)
/// gets its own.
#[derive(Clone)]
pub struct MemoryServer {
    backend: Arc<dyn Backend>,
    defaults: Defaults,
    tool_router: ToolRouter<MemoryServer>,
}

impl MemoryServer {
    pub fn new(backend: Arc<dyn Backend>, defaults: Defaults) -> Self {
        MemoryServer {
            backend,
            defaults,
            tool_router: Self::tool_router(),
        }
    }

    /// A tool's answer: its JSON as structured content and as text, or its failure as an error
    /// result the agent can read and recover from (never a protocol error, which hosts hide).
    fn answer(&self, tool: &str, outcome: Result<Value, ToolError>) -> CallToolResult {
        match outcome {
            Ok(value) => CallToolResult::structured(value),
            Err(e) => {
                if e.is_server_fault() {
                    tracing::warn!(tool, error = %e, "tool call failed");
                } else {
                    tracing::debug!(tool, error = %e, "tool call refused");
                }
                CallToolResult::error(vec![ContentBlock::text(e.to_string())])
            }
        }
    }

    fn caller(&self, extensions: &Extensions) -> Caller {
        Caller::of(&self.defaults, extensions)
    }
}

#[tool_router]
impl MemoryServer {
    #[tool(
        name = "memory_write",
        description = "Store one memory. Call when a tool result or the user reveals something \
        worth keeping beyond this task: a preference, a fact, a decision, a lesson from a \
        failure. Not for scratch notes or what only this task needs. One statement per call; \
        say source \"user\" when the user stated it. Returns the memory id and whether it was \
        created, merged into an equivalent memory, quarantined, or not kept."
    )]
    async fn memory_write(
        &self,
        Parameters(args): Parameters<WriteArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        let caller = self.caller(&extensions);
        self.answer(
            "memory_write",
            args.run(self.backend.as_ref(), &caller).await,
        )
    }

    #[tool(
        name = "memory_search",
        description = "Find what is remembered. Call before acting on a task that may depend on \
        what the user said before (preferences, facts about them or their systems, earlier \
        decisions) or on how a similar task went, and whenever the user refers to something \
        from the past. `as_of` searches the bank as it was at an earlier moment. Returns hits \
        best first, each a memory with its status, score and flags, and a recall_id for \
        memory_feedback; treat disputed ones with care.",
        annotations(read_only_hint = true)
    )]
    async fn memory_search(
        &self,
        Parameters(args): Parameters<SearchArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        let caller = self.caller(&extensions);
        self.answer(
            "memory_search",
            args.run(self.backend.as_ref(), &caller).await,
        )
    }

    #[tool(
        name = "memory_feedback",
        description = "Say how a memory from a search turned out. Call after acting on a memory \
        memory_search returned: \"helpful\" when it was right and helped, \"used\" when you \
        relied on it without knowing yet, \"wrong\" when it turned out false, \"harmful\" when \
        acting on it did damage. Its confidence follows (helpful raises it, wrong and harmful \
        lower it); returns the confidence before and after."
    )]
    async fn memory_feedback(
        &self,
        Parameters(args): Parameters<FeedbackArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        let caller = self.caller(&extensions);
        self.answer(
            "memory_feedback",
            args.run(self.backend.as_ref(), &caller).await,
        )
    }

    #[tool(
        name = "memory_get",
        description = "Read one memory by its id. Call when a result, a conflict or the user \
        names a memory id and you need what it says and where it stands now; memory_trace \
        gives its history as well.",
        annotations(read_only_hint = true)
    )]
    async fn memory_get(
        &self,
        Parameters(args): Parameters<GetArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        let caller = self.caller(&extensions);
        self.answer("memory_get", args.run(self.backend.as_ref(), &caller).await)
    }

    #[tool(
        name = "memory_list_banks",
        description = "List the memory banks you can read, with how many memories each holds. \
        Call to find which bank to search or write to (e.g. a shared team bank beside your \
        own), or when a bank name is refused.",
        annotations(read_only_hint = true)
    )]
    async fn memory_list_banks(
        &self,
        Parameters(args): Parameters<ListBanksArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        let caller = self.caller(&extensions);
        self.answer(
            "memory_list_banks",
            args.run(self.backend.as_ref(), &caller).await,
        )
    }

    #[tool(
        name = "memory_review",
        description = "Run the hindsight review of a bank now: supersede stale memories, expire \
        old ones, and detect contradictions. Call after a batch of writes, or when a search \
        shows contradictory memories. Returns what changed and the open conflicts, each with \
        both memories' text, for the user to settle."
    )]
    async fn memory_review(
        &self,
        Parameters(args): Parameters<ReviewArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        let caller = self.caller(&extensions);
        self.answer(
            "memory_review",
            args.run(self.backend.as_ref(), &caller).await,
        )
    }

    #[tool(
        name = "memory_resolve_conflict",
        description = "Settle a conflict between two memories. Call when memory_search or \
        memory_review reports a conflict and the user has said which memory holds; do not \
        guess for them.",
        annotations(idempotent_hint = true)
    )]
    async fn memory_resolve_conflict(
        &self,
        Parameters(args): Parameters<ResolveArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        let caller = self.caller(&extensions);
        self.answer(
            "memory_resolve_conflict",
            args.run(self.backend.as_ref(), &caller).await,
        )
    }

    #[tool(
        name = "memory_trace",
        description = "Explain a memory. Call to see why a memory is believed before relying on \
        it or when the user questions it: its history, its source, what it superseded or was \
        superseded by, and what it was derived from.",
        annotations(read_only_hint = true)
    )]
    async fn memory_trace(
        &self,
        Parameters(args): Parameters<TraceArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        let caller = self.caller(&extensions);
        self.answer(
            "memory_trace",
            args.run(self.backend.as_ref(), &caller).await,
        )
    }

    #[tool(
        name = "memory_forget",
        description = "Forget a memory. Call when the user asks to forget something, or when a \
        memory is wrong and should not be used again. Archives it by default (hidden from \
        search, kept for tracing); `hard` deletes it for good.",
        annotations(destructive_hint = true, idempotent_hint = true)
    )]
    async fn memory_forget(
        &self,
        Parameters(args): Parameters<ForgetArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        let caller = self.caller(&extensions);
        self.answer(
            "memory_forget",
            args.run(self.backend.as_ref(), &caller).await,
        )
    }

    #[tool(
        name = "memory_reflect",
        description = "Learn from a finished task. Call at the end of a task, with its goal, \
        steps, tool calls and outcome, to keep its lessons: the user's stated preferences, the \
        tool sequence that worked, what failed and why. Stores at most five memories, none when \
        nothing is worth keeping."
    )]
    async fn memory_reflect(
        &self,
        Parameters(args): Parameters<ReflectArgs>,
        extensions: Extensions,
    ) -> CallToolResult {
        let caller = self.caller(&extensions);
        self.answer(
            "memory_reflect",
            args.run(self.backend.as_ref(), &caller).await,
        )
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MemoryServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("hindsight", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS.to_string())
    }
}
