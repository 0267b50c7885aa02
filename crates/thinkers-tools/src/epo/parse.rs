//! Reading an OPS `claims` answer into numbered claims, per language.

use super::Claim;
use crate::xml::{self, Element, XmlError};

/// The claims of one language.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClaimSet {
    /// The `lang` attribute of the `claims` element, upper case (`EN`, `DE`, `FR`).
    pub(crate) language: Option<String>,
    /// The claims, in document order.
    pub(crate) claims: Vec<Claim>,
}

/// Every `claims` element of the answer, wherever it sits under `world-patent-data`.
pub(crate) fn claim_sets(doc: &str) -> Result<Vec<ClaimSet>, XmlError> {
    let root = xml::parse(doc)?;
    let mut found = Vec::new();
    root.find_all("claims", &mut found);
    Ok(found.into_iter().map(claim_set).collect())
}

fn claim_set(claims: &Element) -> ClaimSet {
    // A claim is either a `claim` element with a `num` (one claim, possibly with nested
    // `claim-text` parts) or, in the text-only format, each `claim-text` child of a `claim`.
    let mut units: Vec<(Option<u32>, String)> = Vec::new();
    for claim in claims.children_named("claim") {
        let num = claim.attr("num").and_then(|n| n.trim().parse::<u32>().ok());
        if num.is_some() {
            units.push((num, claim.text()));
            continue;
        }
        let texts: Vec<&Element> = claim.children_named("claim-text").collect();
        if texts.is_empty() {
            units.push((None, claim.text()));
        } else {
            units.extend(texts.into_iter().map(|t| (None, t.text())));
        }
    }
    let mut out = Vec::with_capacity(units.len());
    for (i, (num, text)) in units.into_iter().enumerate() {
        if text.is_empty() {
            continue;
        }
        let (lead, body) = leading_number(&text);
        let position = u32::try_from(i + 1).unwrap_or(u32::MAX);
        out.push(Claim {
            number: lead.or(num).unwrap_or(position),
            text: body.to_owned(),
        });
    }
    ClaimSet {
        language: claims.attr("lang").map(str::to_ascii_uppercase),
        claims: out,
    }
}

/// A claim text's own number (`1. A device…`, `2) The device…`) and the text after it.
fn leading_number(text: &str) -> (Option<u32>, &str) {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 4 {
        return (None, text);
    }
    let rest = &text[digits..];
    let Some(after) = rest.strip_prefix(['.', ')']) else {
        return (None, text);
    };
    match text[..digits].parse() {
        Ok(n) => (Some(n), after.trim_start()),
        Err(_) => (None, text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_lead_the_text() {
        assert_eq!(leading_number("1. A device"), (Some(1), "A device"));
        assert_eq!(leading_number("12) The device"), (Some(12), "The device"));
        assert_eq!(leading_number("1990 was a year"), (None, "1990 was a year"));
        assert_eq!(leading_number("A device"), (None, "A device"));
    }
}
