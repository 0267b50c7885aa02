//! The tool hub: a deployment's registry of tool providers and skills, with admission rules.
//!
//! A [`ToolHub`] holds providers by name (typed tools, MCP toolsets' providers, dynamic ones),
//! [`Skill`]s, and the rules that decide whether a thinker may take a tool or a skill in its
//! scope ([`ToolHub::tool_admission`], [`ToolHub::skill_admission`]). Thinkers reach it as a
//! dispatcher service (`RuntimeBuilder::service(Arc<ToolHub>)`) or through their own builder;
//! with a hub in reach every thinker gets the catalog doors `request_tools` and `request_skill`
//! over its compatible catalogs (`sub_thinker`, hub or not, is on a thinker built with
//! `delegating()`; see [`crate::thinker`]).
//!
//! The hub is shared and may change while thinkers run (a dynamic tool registered, a skill
//! folder reloaded): a thinker reconciles its catalogs against what the hub holds at the start
//! of each turn.
//!
//! **Grants.** A request names tools (or skills); each name is granted or refused on its
//! own. A name the hub does not hold is refused; then every registered rule must admit it.
//! [`rules::side_effects_need_axis`] is the usual tool rule: a tool with side effects needs an
//! identity axis (such as `ticket`) bound in the requesting scope.

mod skill;

pub mod rules;

pub use skill::Skill;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::Result;
use crate::job::ScopeGuard;
use crate::tool::{Tool, ToolProvider, TypedToolProvider};

/// What a grant rule decides about one tool or skill a thinker asks the hub for (distinct from
/// `dispatch::Admission`, which admits jobs against provider limits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    /// Admitted (as far as this rule goes).
    Admit,
    /// Refused; the reason is told to the model.
    Refuse(String),
}

impl Grant {
    /// A refusal with a reason.
    pub fn refuse(reason: impl Into<String>) -> Self {
        Self::Refuse(reason.into())
    }
}

/// A rule over tools requested in a scope.
pub(crate) type ToolRule = Arc<dyn Fn(&dyn ToolProvider, &ScopeGuard) -> Grant + Send + Sync>;
/// A rule over skills requested in a scope.
pub(crate) type SkillRule = Arc<dyn Fn(&Skill, &ScopeGuard) -> Grant + Send + Sync>;

/// Which names of the hub a thinker is compatible with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Compatible {
    /// Everything the hub holds (the default).
    #[default]
    All,
    /// Only these names (ones the hub does not hold are simply not offered).
    Only(BTreeSet<String>),
}

impl Compatible {
    /// Compatible with exactly these names.
    pub(crate) fn only<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::Only(names.into_iter().map(Into::into).collect())
    }

    /// Whether `name` is compatible.
    pub(crate) fn allows(&self, name: &str) -> bool {
        match self {
            Self::All => true,
            Self::Only(names) => names.contains(name),
        }
    }
}

/// One entry of a catalog a door offers: a name and what it is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogEntry {
    /// The snake_case name.
    pub name: String,
    /// The description the model reads.
    pub description: String,
}

/// The outcome of a request for one name.
#[derive(Debug, Clone)]
pub enum Granted<T> {
    /// Admitted: the provider or skill.
    Admitted(T),
    /// Refused, with the reason.
    Refused(String),
}

#[derive(Default)]
struct Inner {
    tools: Vec<Arc<dyn ToolProvider>>,
    skills: Vec<Arc<Skill>>,
    tool_rules: Vec<ToolRule>,
    skill_rules: Vec<SkillRule>,
}

/// The deployment's registry of tool providers and skills (see the module docs).
#[derive(Default)]
pub struct ToolHub {
    inner: RwLock<Inner>,
}

impl std::fmt::Debug for ToolHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.read();
        f.debug_struct("ToolHub")
            .field(
                "tools",
                &inner.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .field(
                "skills",
                &inner.skills.iter().map(|s| s.name()).collect::<Vec<_>>(),
            )
            .field("tool_rules", &inner.tool_rules.len())
            .field("skill_rules", &inner.skill_rules.len())
            .finish()
    }
}

impl ToolHub {
    /// An empty hub.
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Register a provider (a typed tool's, an MCP tool's, a dynamic one). A provider of the
    /// same name is replaced. A name that is not snake_case, or that a built-in orchestrator
    /// uses, is refused, naming it.
    pub fn register(&self, provider: Arc<dyn ToolProvider>) -> Result<()> {
        skill::check_name("tool.name", provider.name())?;
        if RESERVED.contains(&provider.name()) {
            return Err(crate::Error::invalid_input(
                "tool.name",
                Some(provider.name().to_owned()),
                "this name belongs to a built-in orchestrator of every thinker",
            ));
        }
        let mut inner = self.write();
        match inner.tools.iter_mut().find(|t| t.name() == provider.name()) {
            Some(slot) => *slot = provider,
            None => inner.tools.push(provider),
        }
        Ok(())
    }

    /// Register a typed tool.
    pub fn register_tool<T: Tool>(&self, tool: T) -> Result<()> {
        self.register(Arc::new(TypedToolProvider::new(tool)))
    }

    /// Register several providers (for example an MCP toolset's `providers()`).
    pub fn register_all(
        &self,
        providers: impl IntoIterator<Item = Arc<dyn ToolProvider>>,
    ) -> Result<()> {
        providers.into_iter().try_for_each(|p| self.register(p))
    }

    /// Remove a tool; `false` when the hub did not hold it.
    pub fn unregister(&self, name: &str) -> bool {
        let mut inner = self.write();
        let before = inner.tools.len();
        inner.tools.retain(|t| t.name() != name);
        before != inner.tools.len()
    }

    /// The provider registered under `name`.
    pub fn tool(&self, name: &str) -> Option<Arc<dyn ToolProvider>> {
        self.read().tools.iter().find(|t| t.name() == name).cloned()
    }

    /// Every tool name, in registration order.
    #[cfg(test)]
    pub(crate) fn tool_names(&self) -> Vec<String> {
        self.read()
            .tools
            .iter()
            .map(|t| t.name().to_owned())
            .collect()
    }

    /// Register a skill; one of the same name is replaced.
    pub fn register_skill(&self, skill: Skill) {
        let mut inner = self.write();
        let skill = Arc::new(skill);
        match inner.skills.iter_mut().find(|s| s.name() == skill.name()) {
            Some(slot) => *slot = skill,
            None => inner.skills.push(skill),
        }
    }

    /// Load every skill file of a folder (see [`Skill::load_dir`]) and register them; returns how
    /// many were loaded. Nothing is registered when a file is malformed.
    pub fn load_skills(&self, dir: impl AsRef<Path>) -> Result<usize> {
        let skills = Skill::load_dir(dir)?;
        let n = skills.len();
        skills.into_iter().for_each(|s| self.register_skill(s));
        Ok(n)
    }

    /// The skill registered under `name`.
    pub fn skill(&self, name: &str) -> Option<Arc<Skill>> {
        self.read()
            .skills
            .iter()
            .find(|s| s.name() == name)
            .cloned()
    }

    /// Add a tool admission rule; every rule must admit a requested tool.
    pub fn tool_admission(
        &self,
        rule: impl Fn(&dyn ToolProvider, &ScopeGuard) -> Grant + Send + Sync + 'static,
    ) {
        self.write().tool_rules.push(Arc::new(rule));
    }

    /// Add a skill admission rule; every rule must admit a requested skill.
    pub fn skill_admission(
        &self,
        rule: impl Fn(&Skill, &ScopeGuard) -> Grant + Send + Sync + 'static,
    ) {
        self.write().skill_rules.push(Arc::new(rule));
    }

    /// The tools a thinker compatible with `compatible` may request, by name.
    pub(crate) fn tool_catalog(&self, compatible: &Compatible) -> Vec<CatalogEntry> {
        let mut out: Vec<CatalogEntry> = self
            .read()
            .tools
            .iter()
            .filter(|t| compatible.allows(t.name()))
            .map(|t| CatalogEntry {
                name: t.name().to_owned(),
                description: t.description().to_owned(),
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// The skills a thinker compatible with `compatible` may request, by name.
    pub(crate) fn skill_catalog(&self, compatible: &Compatible) -> Vec<CatalogEntry> {
        let mut out: Vec<CatalogEntry> = self
            .read()
            .skills
            .iter()
            .filter(|s| compatible.allows(s.name()))
            .map(|s| CatalogEntry {
                name: s.name().to_owned(),
                description: s.description().to_owned(),
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// Run the tool admission for each name in `scope`: the provider, or why it was refused.
    pub(crate) fn request_tools(
        &self,
        names: &[String],
        scope: &ScopeGuard,
    ) -> Vec<(String, Granted<Arc<dyn ToolProvider>>)> {
        let inner = self.read();
        names
            .iter()
            .map(|name| {
                let granted = match inner.tools.iter().find(|t| t.name() == name) {
                    None => Granted::Refused("the hub no longer holds this tool".into()),
                    Some(p) => match first_refusal(inner.tool_rules.iter().map(|r| r(&**p, scope)))
                    {
                        Some(reason) => Granted::Refused(reason),
                        None => Granted::Admitted(p.clone()),
                    },
                };
                (name.clone(), granted)
            })
            .collect()
    }

    /// Run the skill admission for each name in `scope`: the skill, or why it was refused.
    pub(crate) fn request_skills(
        &self,
        names: &[String],
        scope: &ScopeGuard,
    ) -> Vec<(String, Granted<Arc<Skill>>)> {
        let inner = self.read();
        names
            .iter()
            .map(|name| {
                let granted = match inner.skills.iter().find(|s| s.name() == name) {
                    None => Granted::Refused("the hub no longer holds this skill".into()),
                    Some(s) => match first_refusal(inner.skill_rules.iter().map(|r| r(s, scope))) {
                        Some(reason) => Granted::Refused(reason),
                        None => Granted::Admitted(s.clone()),
                    },
                };
                (name.clone(), granted)
            })
            .collect()
    }
}

/// The names of the built-in orchestrators, which no hub tool may take.
const RESERVED: [&str; 3] = ["request_tools", "request_skill", "sub_thinker"];

fn first_refusal(verdicts: impl Iterator<Item = Grant>) -> Option<String> {
    verdicts.into_iter().find_map(|v| match v {
        Grant::Admit => None,
        Grant::Refuse(reason) => Some(reason),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::ScopeGuard;

    struct Named(&'static str, bool);
    impl ToolProvider for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn description(&self) -> &str {
            "a test tool"
        }
        fn input_schema(&self) -> &serde_json::Value {
            &serde_json::Value::Null
        }
        fn read_only(&self) -> bool {
            self.1
        }
        fn instantiate(
            &self,
            _: &serde_json::Value,
            _: &crate::tool::ToolCallContext,
        ) -> Result<crate::job::BoxJob<crate::tool::ToolOutput>> {
            Err(crate::Error::system("test", "not callable"))
        }
    }

    #[test]
    fn names_are_checked_and_replaced_in_place() {
        let hub = ToolHub::new();
        for bad in ["Bad", "sub_thinker", "request_tools", ""] {
            let err = hub.register(Arc::new(Named(bad, true))).unwrap_err();
            assert!(err.to_string().contains("tool.name"), "{bad}: {err}");
        }
        hub.register(Arc::new(Named("b_tool", true))).unwrap();
        hub.register(Arc::new(Named("a_tool", false))).unwrap();
        hub.register(Arc::new(Named("b_tool", false))).unwrap();
        assert_eq!(hub.tool_names(), ["b_tool", "a_tool"]);
        assert!(hub.tool("b_tool").is_some_and(|t| !t.read_only()));
        let catalog = hub.tool_catalog(&Compatible::only(["b_tool", "c_tool"]));
        assert_eq!(catalog.len(), 1);
        assert!(hub.unregister("b_tool"));
        assert!(!hub.unregister("b_tool"));
    }

    #[test]
    fn every_rule_must_admit_and_unknown_names_are_refused() {
        let hub = ToolHub::new();
        hub.register(Arc::new(Named("reader", true))).unwrap();
        hub.register(Arc::new(Named("writer", false))).unwrap();
        hub.tool_admission(rules::side_effects_need_axis("ticket"));
        let names: Vec<String> = ["reader", "writer", "ghost"].map(String::from).to_vec();
        let verdicts = |scope: &ScopeGuard| {
            hub.request_tools(&names, scope)
                .into_iter()
                .map(|(n, g)| (n, matches!(g, Granted::Admitted(_))))
                .collect::<Vec<_>>()
        };
        let unbound = verdicts(&ScopeGuard::unbound());
        assert_eq!(
            unbound,
            [
                ("reader".to_owned(), true),
                ("writer".to_owned(), false),
                ("ghost".to_owned(), false)
            ]
        );
        let ticketed = verdicts(&ScopeGuard::unbound().with_axis("ticket", "T-1"));
        assert!(ticketed[1].1);
        hub.tool_admission(|t, _| {
            if t.name() == "reader" {
                Grant::refuse("closed today")
            } else {
                Grant::Admit
            }
        });
        let after = hub.request_tools(&names[..1], &ScopeGuard::unbound());
        assert!(matches!(&after[0].1, Granted::Refused(r) if r == "closed today"));
    }
}
