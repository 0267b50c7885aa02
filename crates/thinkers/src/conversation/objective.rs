//! [`Objective`]: a conversation's system content, made of named slots.
//!
//! A thinker writes what it authored into slots (its task, its guidance) and the runtime writes
//! what it derives (the preamble of loaded skills) into others, without either overwriting the
//! other. Rendering joins the slots in a fixed order: the well-known slots first, in the order of
//! [`Objective::WELL_KNOWN`], then any other slot in the order it was first written. The order
//! never depends on who wrote first, so the system content of two calls over the same slots is the
//! same bytes (which keeps a provider's prompt cache warm).

use serde::{Deserialize, Serialize};

/// One named piece of the objective.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    /// The slot's name, for example [`Objective::TASK`].
    pub name: String,
    /// The slot's text.
    pub text: String,
}

/// The system content of a conversation, as an ordered map of slot name → text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Objective {
    /// The slots in the order they were first written.
    slots: Vec<Slot>,
}

impl Objective {
    /// The task: what the conversation is for. Written by the thinker.
    pub const TASK: &'static str = "task";
    /// Guidance on how to work: conventions, notation legends, tool advice.
    pub const GUIDANCE: &'static str = "guidance";
    /// The preamble of the skills loaded into the conversation.
    pub const SKILLS: &'static str = "skills";
    /// Background material the model should read: facts, documents, the user's profile.
    pub(crate) const CONTEXT: &'static str = "context";

    /// The well-known slots, in the order they render. Stable material leads.
    pub const WELL_KNOWN: [&'static str; 4] =
        [Self::TASK, Self::GUIDANCE, Self::SKILLS, Self::CONTEXT];

    /// An empty objective.
    pub fn new() -> Self {
        Self::default()
    }

    /// An objective whose task slot holds `task`.
    #[cfg(test)]
    pub(crate) fn with_task(task: impl Into<String>) -> Self {
        let mut o = Self::new();
        o.put(Self::TASK, task);
        o
    }

    /// Write `text` into the slot `name`, returning what it held before.
    pub fn put(&mut self, name: impl Into<String>, text: impl Into<String>) -> Option<String> {
        let name = name.into();
        let text = text.into();
        match self.slots.iter_mut().find(|s| s.name == name) {
            Some(slot) => Some(std::mem::replace(&mut slot.text, text)),
            None => {
                self.slots.push(Slot { name, text });
                None
            }
        }
    }

    /// The text of the slot `name`, if it was written.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.slots
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.text.as_str())
    }

    /// Remove the slot `name`, returning its text.
    pub fn remove(&mut self, name: &str) -> Option<String> {
        let at = self.slots.iter().position(|s| s.name == name)?;
        Some(self.slots.remove(at).text)
    }

    /// Whether no slot holds any text.
    pub fn is_empty(&self) -> bool {
        self.slots.iter().all(|s| s.text.trim().is_empty())
    }

    /// The slots in render order.
    pub fn slots(&self) -> Vec<&Slot> {
        let mut ordered: Vec<&Slot> = self.slots.iter().collect();
        // A stable sort keeps the other slots in the order they were first written.
        ordered.sort_by_key(|s| rank(&s.name));
        ordered
    }

    /// The system content: every slot holding text, in render order, separated by a blank line.
    pub fn render(&self) -> String {
        self.render_with(None)
    }

    /// The system content as if slot `name` held `text` (written in place, or added), without
    /// changing this objective: how a thinker adds the guidance it derives at render time.
    pub(crate) fn render_replacing(&self, name: &str, text: &str) -> String {
        self.render_with(Some((name, text)))
    }

    /// At least the length of [`Self::render`]'s text, without rendering it.
    pub(crate) fn render_len_bound(&self) -> usize {
        self.slots.iter().map(|s| s.text.len() + 2).sum()
    }

    fn render_with(&self, replacing: Option<(&str, &str)>) -> String {
        let mut parts: Vec<(&str, &str)> = Vec::with_capacity(self.slots.len() + 1);
        parts.extend(self.slots.iter().map(|s| match replacing {
            Some((name, text)) if name == s.name => (name, text),
            _ => (s.name.as_str(), s.text.as_str()),
        }));
        if let Some((name, text)) = replacing
            && !self.slots.iter().any(|s| s.name == name)
        {
            parts.push((name, text));
        }
        // A stable sort keeps the other slots in the order they were first written.
        parts.sort_by_key(|(name, _)| rank(name));
        let mut out = String::with_capacity(parts.iter().map(|(_, t)| t.len() + 2).sum());
        for (_, text) in parts {
            let text = text.trim_end();
            if text.trim().is_empty() {
                continue;
            }
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(text);
        }
        out
    }
}

/// Where a slot renders: well-known slots by their place, every other slot after them.
fn rank(name: &str) -> usize {
    Objective::WELL_KNOWN
        .iter()
        .position(|w| *w == name)
        .unwrap_or(Objective::WELL_KNOWN.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendering_with_a_slot_replaced_matches_writing_it() {
        let mut o = Objective::new();
        o.put("house_rules", "Be brief.");
        o.put(Objective::TASK, "Find the answer.");
        // Added where it ranks, and written in place, as `put` then `render` would.
        let mut added = o.clone();
        added.put(Objective::GUIDANCE, "Use tools.");
        assert_eq!(
            o.render_replacing(Objective::GUIDANCE, "Use tools."),
            added.render()
        );
        o.put(Objective::GUIDANCE, "Old advice.");
        let mut replaced = o.clone();
        replaced.put(Objective::GUIDANCE, "New advice.");
        assert_eq!(
            o.render_replacing(Objective::GUIDANCE, "New advice."),
            replaced.render()
        );
        assert_eq!(
            o.get(Objective::GUIDANCE),
            Some("Old advice."),
            "left unchanged"
        );
        assert!(o.render_len_bound() >= o.render().len());
    }

    #[test]
    fn renders_in_a_fixed_order_whoever_writes_first() {
        let mut a = Objective::new();
        a.put("house_rules", "Be brief.");
        a.put(Objective::SKILLS, "Skill: tables.");
        a.put(Objective::TASK, "Find the answer.");
        a.put("extra", "Last.");
        let mut b = Objective::new();
        b.put(Objective::TASK, "Find the answer.");
        b.put(Objective::SKILLS, "Skill: tables.");
        b.put("house_rules", "Be brief.");
        b.put("extra", "Last.");
        let expected = "Find the answer.\n\nSkill: tables.\n\nBe brief.\n\nLast.";
        assert_eq!(a.render(), expected);
        assert_eq!(b.render(), expected);
    }

    #[test]
    fn put_replaces_and_empty_slots_are_skipped() {
        let mut o = Objective::with_task("one");
        assert_eq!(o.put(Objective::TASK, "two"), Some("one".to_owned()));
        o.put(Objective::GUIDANCE, "  \n");
        assert_eq!(o.render(), "two");
        assert_eq!(o.get(Objective::TASK), Some("two"));
        assert_eq!(o.remove(Objective::TASK), Some("two".to_owned()));
        assert!(o.is_empty());
    }

    #[test]
    fn serde_keeps_the_written_order() -> anyhow::Result<()> {
        let mut o = Objective::new();
        o.put("zeta", "z");
        o.put("alpha", "a");
        let text = serde_json::to_string(&o)?;
        assert_eq!(
            text,
            r#"[{"name":"zeta","text":"z"},{"name":"alpha","text":"a"}]"#
        );
        let back: Objective = serde_json::from_str(&text)?;
        assert_eq!(back, o);
        Ok(())
    }
}
