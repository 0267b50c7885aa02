//! A small element tree read with quick-xml, for the XML the service tools receive.
//!
//! The services answer with documents whose text fields carry inline markup (`<i>` inside a
//! PubMed title, `<b>` or a nested `<claim-text>` inside an EPO claim). A serde mapping cannot
//! hold such mixed content without a type per inline element, so the tools read the document into
//! this tree once and walk it: [`Element::text`] flattens an element's descendants into plain
//! text. Names are stored without their namespace prefix, which is what the tools match on.

use std::borrow::Cow;

use quick_xml::events::{BytesRef, BytesStart, Event};
use quick_xml::{Reader, XmlVersion};

/// One node of the tree.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// A child element.
    Element(Element),
    /// Character data (entities and character references resolved).
    Text(String),
}

/// An element: its local name, its attributes and its children, in document order.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Element {
    pub(crate) name: String,
    pub(crate) attrs: Vec<(String, String)>,
    pub(crate) children: Vec<Node>,
}

/// Why a document could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum XmlError {
    /// The reader rejected the document.
    #[error("malformed XML: {0}")]
    Malformed(#[from] quick_xml::Error),
    /// An attribute could not be read.
    #[error("malformed XML attribute: {0}")]
    Attribute(#[from] quick_xml::events::attributes::AttrError),
    /// The document has no root element, or ends inside one.
    #[error("malformed XML: {0}")]
    Structure(&'static str),
}

/// Read a whole document and return its root element.
pub(crate) fn parse(text: &str) -> Result<Element, XmlError> {
    let mut reader = Reader::from_str(text);
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    loop {
        match reader.read_event()? {
            Event::Start(start) => stack.push(open(&start)?),
            Event::Empty(start) => {
                let element = open(&start)?;
                close(&mut stack, &mut root, element);
            }
            Event::End(_) => {
                let element = stack
                    .pop()
                    .ok_or(XmlError::Structure("an end tag without a start"))?;
                close(&mut stack, &mut root, element);
            }
            Event::Text(t) => push_text(&mut stack, &t.xml_content(XmlVersion::Implicit1_0)),
            Event::CData(t) => push_text(&mut stack, &t.xml_content(XmlVersion::Implicit1_0)),
            Event::GeneralRef(r) => push_text(&mut stack, &resolve(&r)),
            Event::Eof => break,
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
        }
    }
    if !stack.is_empty() {
        return Err(XmlError::Structure("the document ends inside an element"));
    }
    root.ok_or(XmlError::Structure("the document has no root element"))
}

fn open(start: &BytesStart<'_>) -> Result<Element, XmlError> {
    let mut attrs = Vec::new();
    for attr in start.attributes() {
        let attr = attr?;
        let key = attr.key.local_name().as_ref().to_owned();
        let value = attr.normalized_value(XmlVersion::Implicit1_0)?.into_owned();
        attrs.push((key, value));
    }
    Ok(Element {
        name: start.local_name().as_ref().to_owned(),
        attrs,
        children: Vec::new(),
    })
}

fn close(stack: &mut [Element], root: &mut Option<Element>, element: Element) {
    match stack.last_mut() {
        Some(parent) => parent.children.push(Node::Element(element)),
        // A second root cannot occur in well-formed XML; keep the first.
        None => {
            root.get_or_insert(element);
        }
    }
}

fn push_text(stack: &mut [Element], text: &str) {
    let Some(parent) = stack.last_mut() else {
        return; // whitespace between the prolog and the root
    };
    if let Some(Node::Text(last)) = parent.children.last_mut() {
        last.push_str(text);
    } else {
        parent.children.push(Node::Text(text.to_owned()));
    }
}

/// A general reference as text: predefined entities and character references are resolved; an
/// entity the document's DTD would define is kept as written.
fn resolve(r: &BytesRef<'_>) -> Cow<'static, str> {
    if let Ok(Some(c)) = r.resolve_char_ref() {
        return Cow::Owned(c.to_string());
    }
    let name = r.clone().into_inner();
    match quick_xml::escape::resolve_predefined_entity(&name) {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(format!("&{name};")),
    }
}

impl Element {
    /// The value of an attribute, by local name.
    pub(crate) fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The child elements, in order.
    pub(crate) fn elements(&self) -> impl Iterator<Item = &Self> {
        self.children.iter().filter_map(|n| match n {
            Node::Element(e) => Some(e),
            Node::Text(_) => None,
        })
    }

    /// The first child element of this name.
    pub(crate) fn child(&self, name: &str) -> Option<&Self> {
        self.elements().find(|e| e.name == name)
    }

    /// Every child element of this name.
    pub(crate) fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Self> {
        self.elements().filter(move |e| e.name == name)
    }

    /// The element reached by following child names from this one.
    pub(crate) fn path(&self, names: &[&str]) -> Option<&Self> {
        names.iter().try_fold(self, |e, name| e.child(name))
    }

    /// Every descendant element of this name, depth first, not descending into a match.
    pub(crate) fn find_all<'a>(&'a self, name: &str, out: &mut Vec<&'a Self>) {
        for e in self.elements() {
            if e.name == name {
                out.push(e);
            } else {
                e.find_all(name, out);
            }
        }
    }

    /// The text of the element and its descendants, with runs of whitespace collapsed to one
    /// space and the ends trimmed.
    pub(crate) fn text(&self) -> String {
        let mut raw = String::new();
        self.collect_text(&mut raw);
        collapse_whitespace(&raw)
    }

    fn collect_text(&self, out: &mut String) {
        for node in &self.children {
            match node {
                Node::Text(t) => out.push_str(t),
                Node::Element(e) => {
                    if e.name == "br" {
                        out.push(' ');
                    }
                    e.collect_text(out);
                }
            }
        }
    }
}

/// Collapse runs of whitespace to one space and trim the ends.
pub(crate) fn collapse_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_content_flattens_to_text() {
        let doc = r#"<?xml version="1.0"?>
            <ns:root xmlns:ns="urn:x" a="1 &amp; 2">
              <title>The <i>E. coli</i> &lt;genome&gt; &#x3b1;</title>
              <empty/><empty/>
            </ns:root>"#;
        let root = parse(doc).unwrap();
        assert_eq!(root.name, "root");
        assert_eq!(root.attr("a"), Some("1 & 2"));
        assert_eq!(
            root.child("title").unwrap().text(),
            "The E. coli <genome> α"
        );
        assert_eq!(root.children_named("empty").count(), 2);
    }

    #[test]
    fn broken_documents_are_errors() {
        assert!(parse("<a><b></a>").is_err());
        assert!(parse("<a>").is_err());
        assert!(parse("just text").is_err());
    }
}
