use std::collections::BTreeMap;
use std::fmt;

use hindsight_core::{Provenance, SourceKind};
use serde::{Deserialize, Serialize};

/// How far a source is trusted. `External` has no `SourceKind` of its own: it is content a tool
/// fetched from outside (web pages, search results), which anyone on the internet can write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    User,
    Tool,
    Agent,
    Reflection,
    Import,
    External,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::User => "user",
            Tier::Tool => "tool",
            Tier::Agent => "agent",
            Tier::Reflection => "reflection",
            Tier::Import => "import",
            Tier::External => "external",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a tier grants.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TierSetting {
    /// Confidence a new memory from this tier starts with.
    pub initial_confidence: f32,
    /// Weight in [0, 1] of this tier's memories when they compete with others (ranking, conflict
    /// resolution, review); low influence keeps a planted memory from outvoting the user.
    pub influence: f32,
    /// Screen with the extra rules meant for untrusted content.
    pub untrusted: bool,
}

impl Default for TierSetting {
    fn default() -> Self {
        TierSetting {
            initial_confidence: 0.5,
            influence: 0.5,
            untrusted: false,
        }
    }
}

impl TierSetting {
    const fn new(initial_confidence: f32, influence: f32, untrusted: bool) -> Self {
        TierSetting {
            initial_confidence,
            influence,
            untrusted,
        }
    }
}

/// The trust a provenance earns.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trust {
    pub tier: Tier,
    pub initial_confidence: f32,
    pub influence: f32,
    pub untrusted: bool,
}

impl Trust {
    /// Whether the text is screened with the rules for someone else's words. A tool's output
    /// relays what others wrote (messages, tickets, e-mails, logs) even when the tool itself is
    /// trusted: an order to the agent in it is not the principal's.
    pub fn screens_as_relayed(&self) -> bool {
        self.untrusted || self.tier == Tier::Tool
    }
}

/// Provenance → trust. User, agent and the other direct sources keep the confidences of
/// `SourceKind::initial_confidence`; tool output is split by tool name, because a calculator and a
/// web fetcher deserve different trust.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrustTiers {
    pub user: TierSetting,
    /// Tools not otherwise classified.
    pub tool: TierSetting,
    pub agent: TierSetting,
    pub reflection: TierSetting,
    pub import: TierSetting,
    pub external: TierSetting,
    /// Exact tool name (case-insensitive) → tier; wins over `external_tool_markers`.
    pub tools: BTreeMap<String, Tier>,
    /// A tool whose name contains one of these (case-insensitive) brings outside content and is
    /// put in the `external` tier.
    pub external_tool_markers: Vec<String>,
}

impl Default for TrustTiers {
    fn default() -> Self {
        TrustTiers {
            user: TierSetting::new(0.9, 1.0, false),
            tool: TierSetting::new(0.8, 0.8, false),
            agent: TierSetting::new(0.6, 0.6, false),
            reflection: TierSetting::new(0.6, 0.6, false),
            import: TierSetting::new(0.7, 0.7, false),
            external: TierSetting::new(0.3, 0.2, true),
            tools: BTreeMap::new(),
            external_tool_markers: [
                "web", "fetch", "browse", "browser", "search", "crawl", "scrape", "http", "url",
                "rss", "mail", "inbox",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
        }
    }
}

impl TrustTiers {
    pub fn tier_of(&self, provenance: &Provenance) -> Tier {
        match provenance.source {
            SourceKind::User => Tier::User,
            SourceKind::Agent => Tier::Agent,
            SourceKind::Reflection => Tier::Reflection,
            SourceKind::Import => Tier::Import,
            SourceKind::Tool => provenance
                .tool
                .as_deref()
                .map_or(Tier::Tool, |name| self.tool_tier(name)),
        }
    }

    pub fn of(&self, provenance: &Provenance) -> Trust {
        let tier = self.tier_of(provenance);
        let setting = self.setting(tier);
        Trust {
            tier,
            initial_confidence: setting.initial_confidence,
            influence: setting.influence,
            untrusted: setting.untrusted,
        }
    }

    pub fn setting(&self, tier: Tier) -> &TierSetting {
        match tier {
            Tier::User => &self.user,
            Tier::Tool => &self.tool,
            Tier::Agent => &self.agent,
            Tier::Reflection => &self.reflection,
            Tier::Import => &self.import,
            Tier::External => &self.external,
        }
    }

    fn tool_tier(&self, name: &str) -> Tier {
        let name = name.trim().to_lowercase();
        if let Some((_, tier)) = self.tools.iter().find(|(k, _)| k.to_lowercase() == name) {
            return *tier;
        }
        let external = self
            .external_tool_markers
            .iter()
            .any(|m| !m.is_empty() && name.contains(&m.to_lowercase()));
        if external {
            Tier::External
        } else {
            Tier::Tool
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Provenance {
        let mut p = Provenance::from_source(SourceKind::Tool);
        p.tool = Some(name.to_string());
        p
    }

    #[test]
    fn direct_sources_keep_the_core_confidences() {
        let tiers = TrustTiers::default();
        for source in SourceKind::ALL {
            let trust = tiers.of(&Provenance::from_source(*source));
            assert_eq!(
                trust.initial_confidence,
                source.initial_confidence(),
                "{source}"
            );
            assert!(!trust.untrusted);
        }
        assert_eq!(
            tiers
                .of(&Provenance::from_source(SourceKind::User))
                .influence,
            1.0
        );
    }

    #[test]
    fn web_tools_are_external_and_other_tools_are_tools() {
        let tiers = TrustTiers::default();
        for name in [
            "web-fetch",
            "WebSearch",
            "browse_page",
            "url_reader",
            "gmail_inbox",
        ] {
            let trust = tiers.of(&tool(name));
            assert_eq!(trust.tier, Tier::External, "{name}");
            assert!(trust.untrusted);
            assert!(trust.initial_confidence < 0.5);
        }
        assert_eq!(tiers.of(&tool("calculator")).tier, Tier::Tool);
        assert_eq!(
            tiers.of(&Provenance::from_source(SourceKind::Tool)).tier,
            Tier::Tool
        );
    }

    #[test]
    fn explicit_tool_entries_win_over_markers() {
        let mut tiers = TrustTiers::default();
        tiers.tools.insert("Company-Search".into(), Tier::Tool);
        tiers.tools.insert("pdf_reader".into(), Tier::External);
        assert_eq!(tiers.of(&tool("company-search")).tier, Tier::Tool);
        assert_eq!(tiers.of(&tool("pdf_reader")).tier, Tier::External);
        assert_eq!(tiers.of(&tool("web_search")).tier, Tier::External);
    }

    #[test]
    fn a_user_source_stays_user_whatever_the_tool_field_says() {
        let mut p = tool("web-fetch");
        p.source = SourceKind::User;
        assert_eq!(TrustTiers::default().of(&p).tier, Tier::User);
    }
}
