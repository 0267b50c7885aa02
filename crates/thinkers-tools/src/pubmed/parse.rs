//! Reading an efetch `PubmedArticleSet` document into [`PubmedArticle`]s.

use super::PubmedArticle;
use crate::xml::{self, Element, XmlError};

/// Every article (journal articles and book records) in an efetch answer, in document order.
pub(crate) fn articles(doc: &str) -> Result<Vec<PubmedArticle>, XmlError> {
    let root = xml::parse(doc)?;
    if root.name != "PubmedArticleSet" {
        return Err(XmlError::Structure(
            "the answer is not a PubmedArticleSet document",
        ));
    }
    let mut out = Vec::new();
    for record in root.elements() {
        match record.name.as_str() {
            "PubmedArticle" => out.extend(journal_article(record)),
            "PubmedBookArticle" => out.extend(book_article(record)),
            _ => {}
        }
    }
    Ok(out)
}

fn journal_article(record: &Element) -> Option<PubmedArticle> {
    let citation = record.child("MedlineCitation")?;
    let pmid = citation.child("PMID")?.text();
    let article = citation.child("Article")?;
    let journal = article.child("Journal");
    let year = journal
        .and_then(|j| j.path(&["JournalIssue", "PubDate"]))
        .and_then(pub_year)
        .or_else(|| article.child("ArticleDate").and_then(pub_year));
    let doi = article
        .children_named("ELocationID")
        .find(|e| e.attr("EIdType") == Some("doi"))
        .map(Element::text)
        .or_else(|| article_id(record, "doi"));
    Some(PubmedArticle {
        pmid,
        title: article
            .child("ArticleTitle")
            .map(Element::text)
            .unwrap_or_default(),
        abstract_text: article.child("Abstract").and_then(abstract_text),
        authors: article.child("AuthorList").map(authors).unwrap_or_default(),
        journal: journal
            .and_then(|j| j.child("Title"))
            .map(Element::text)
            .filter(|t| !t.is_empty()),
        year,
        doi,
    })
}

fn book_article(record: &Element) -> Option<PubmedArticle> {
    let doc = record.child("BookDocument")?;
    let book = doc.child("Book");
    let title = doc
        .child("ArticleTitle")
        .or_else(|| book.and_then(|b| b.child("BookTitle")))
        .map(Element::text)
        .unwrap_or_default();
    Some(PubmedArticle {
        pmid: doc.child("PMID")?.text(),
        title,
        abstract_text: doc.child("Abstract").and_then(abstract_text),
        authors: doc
            .child("AuthorList")
            .or_else(|| book.and_then(|b| b.child("AuthorList")))
            .map(authors)
            .unwrap_or_default(),
        journal: book
            .and_then(|b| b.path(&["Publisher", "PublisherName"]))
            .map(Element::text),
        year: book.and_then(|b| b.child("PubDate")).and_then(pub_year),
        doi: article_id(record, "doi"),
    })
}

/// The year of a `PubDate`-like element: its `Year`, or the first four-digit run of a
/// `MedlineDate` such as `1998 Dec-1999 Jan`.
fn pub_year(date: &Element) -> Option<i32> {
    if let Some(y) = date.child("Year") {
        return y.text().parse().ok();
    }
    let medline = date.child("MedlineDate")?.text();
    medline
        .split(|c: char| !c.is_ascii_digit())
        .find(|run| run.len() == 4)
        .and_then(|run| run.parse().ok())
}

/// The abstract's sections, each prefixed with its label when it has one, separated by blank
/// lines.
fn abstract_text(abs: &Element) -> Option<String> {
    let parts: Vec<String> = abs
        .children_named("AbstractText")
        .map(|t| {
            let text = t.text();
            match t.attr("Label") {
                Some(label) if !label.is_empty() => format!("{label}: {text}"),
                _ => text,
            }
        })
        .filter(|t| !t.is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// Authors as `Last First` (or `Last Initials`), collective names as written.
fn authors(list: &Element) -> Vec<String> {
    list.children_named("Author")
        .filter_map(|a| {
            if let Some(c) = a.child("CollectiveName") {
                return Some(c.text());
            }
            let last = a.child("LastName")?.text();
            let first = a
                .child("ForeName")
                .or_else(|| a.child("Initials"))
                .map(Element::text);
            Some(match first {
                Some(f) if !f.is_empty() => format!("{last} {f}"),
                _ => last,
            })
        })
        .collect()
}

/// An id of the record from `PubmedData/ArticleIdList`, by type.
fn article_id(record: &Element, kind: &str) -> Option<String> {
    record
        .path(&["PubmedData", "ArticleIdList"])?
        .children_named("ArticleId")
        .find(|e| e.attr("IdType") == Some(kind))
        .map(Element::text)
}
