//! Skills: named texts with a description, attached to a conversation on request.
//!
//! A skill lives in a markdown file that opens with front matter between two `---` lines:
//!
//! ```text
//! ---
//! name: house_style
//! description: How answers are worded in this deployment.
//! ---
//! Write in short sentences. ...
//! ```
//!
//! Only the two keys are read (`name`, `description`; a value may be quoted); other keys are
//! ignored so files written for other tools load too. The parser is a few lines by hand: the
//! format is two flat `key: value` lines, and a YAML crate would bring a deprecated or heavy
//! dependency for nothing more.

use std::path::Path;

use crate::{Error, Result};

/// A named text a thinker can load into its conversation with `request_skill`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    name: String,
    description: String,
    text: String,
}

impl Skill {
    /// A skill. The name must be snake_case (`[a-z0-9_]`, starting with a letter); the
    /// description and text must not be empty. Errors name the field and the skill.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        text: impl Into<String>,
    ) -> Result<Self> {
        let name = name.into();
        let description = description.into();
        let text = text.into();
        check_name("skill.name", &name)?;
        if description.trim().is_empty() {
            return Err(Error::invalid_input(
                "skill.description",
                None,
                format!("skill {name:?} has an empty description"),
            ));
        }
        if text.trim().is_empty() {
            return Err(Error::invalid_input(
                "skill.text",
                None,
                format!("skill {name:?} has no text after its front matter"),
            ));
        }
        Ok(Self {
            name,
            description: description.trim().to_owned(),
            text: text.trim().to_owned(),
        })
    }

    /// Parse a skill from markdown with front matter; `origin` names the source in errors.
    pub fn parse(origin: &str, markdown: &str) -> Result<Self> {
        let (name, description, body) = split_front_matter(origin, markdown)?;
        Self::new(name, description, body).map_err(|e| match e {
            Error::InvalidInput {
                parameter,
                value,
                reason,
                ..
            } => {
                let at = match value {
                    Some(v) => format!("{origin}: {v}"),
                    None => origin.to_owned(),
                };
                Error::invalid_input(parameter, Some(at), reason)
            }
            other => other,
        })
    }

    /// Load every `*.md` file of a folder (not recursive), in file-name order. A malformed file
    /// fails the load with an error naming the file and the field.
    pub fn load_dir(dir: impl AsRef<Path>) -> Result<Vec<Self>> {
        let dir = dir.as_ref();
        let entries = std::fs::read_dir(dir).map_err(|e| {
            Error::invalid_input(
                "skills.dir",
                Some(dir.display().to_string()),
                format!("cannot read the skills folder: {e}"),
            )
        })?;
        let mut paths = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| {
                Error::invalid_input(
                    "skills.dir",
                    Some(dir.display().to_string()),
                    format!("cannot list the skills folder: {e}"),
                )
            })?;
            let path = entry.path();
            if path.extension().is_some_and(|x| x == "md") && path.is_file() {
                paths.push(path);
            }
        }
        paths.sort();
        let mut skills = Vec::with_capacity(paths.len());
        for path in paths {
            let origin = path.display().to_string();
            let text = std::fs::read_to_string(&path).map_err(|e| {
                Error::invalid_input("skill.file", Some(origin.clone()), e.to_string())
            })?;
            skills.push(Self::parse(&origin, &text)?);
        }
        Ok(skills)
    }

    /// The snake_case name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the skill is for (offered to the model in `request_skill`).
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The text attached to the conversation.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// Refuse a name that is not snake_case, naming `field` and the name.
pub(crate) fn check_name(field: &str, name: &str) -> Result<()> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid_input(
            field,
            Some(name.to_owned()),
            "names are snake_case: lower-case letters, digits and `_`, starting with a letter",
        ))
    }
}

fn split_front_matter<'a>(origin: &str, markdown: &'a str) -> Result<(String, String, &'a str)> {
    let malformed = |field: &str, reason: &str| {
        Error::invalid_input(field, Some(origin.to_owned()), reason.to_owned())
    };
    let text = markdown.strip_prefix('\u{feff}').unwrap_or(markdown);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    if first.trim_end() != "---" {
        return Err(malformed(
            "front_matter",
            "a skill file starts with a `---` line, then `name:` and `description:`, then `---`",
        ));
    }
    let mut consumed = first.len();
    let mut name = None;
    let mut description = None;
    let mut closed = false;
    for line in lines {
        consumed += line.len();
        let trimmed = line.trim();
        if trimmed == "---" {
            closed = true;
            break;
        }
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let Some((key, value)) = trimmed.split_once(':') else {
            return Err(malformed(
                "front_matter",
                "every front-matter line is `key: value`",
            ));
        };
        let value = unquote(value.trim()).to_owned();
        match key.trim() {
            "name" => name = Some(value),
            "description" => description = Some(value),
            _ => {}
        }
    }
    if !closed {
        return Err(malformed(
            "front_matter",
            "the front matter is not closed by a `---` line",
        ));
    }
    let name = name
        .filter(|n| !n.is_empty())
        .ok_or_else(|| malformed("name", "the front matter has no `name:`"))?;
    let description = description
        .filter(|d| !d.is_empty())
        .ok_or_else(|| malformed("description", "the front matter has no `description:`"))?;
    Ok((name, description, &text[consumed..]))
}

fn unquote(value: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner;
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_front_matter_and_body() {
        let s = Skill::parse(
            "a.md",
            "---\nname: house_style\ndescription: \"How we write.\"\nlicense: MIT\n---\n\nBe brief.\n",
        )
        .unwrap();
        assert_eq!(s.name(), "house_style");
        assert_eq!(s.description(), "How we write.");
        assert_eq!(s.text(), "Be brief.");
    }

    #[test]
    fn malformed_files_name_the_file_and_the_field() {
        let cases = [
            ("no front matter", "Just text", "front_matter"),
            (
                "unclosed",
                "---\nname: a\ndescription: b\nbody",
                "front_matter",
            ),
            ("no name", "---\ndescription: b\n---\nbody", "name"),
            ("no description", "---\nname: a\n---\nbody", "description"),
            (
                "bad name",
                "---\nname: Bad Name\ndescription: b\n---\nbody",
                "skill.name",
            ),
            (
                "empty body",
                "---\nname: a\ndescription: b\n---\n  \n",
                "skill.text",
            ),
        ];
        for (what, text, field) in cases {
            let err = Skill::parse("skills/x.md", text).unwrap_err().to_string();
            assert!(err.contains(field), "{what}: {err}");
            assert!(err.contains("skills/x.md"), "{what}: {err}");
        }
    }
}
