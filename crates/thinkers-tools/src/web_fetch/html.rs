//! HTML to readable text, and the page title.
//!
//! The text comes from `html2text`'s plain rendering, which reads like Markdown: `#` headings,
//! `*` list items and emphasis, tables, and link targets as numbered footnotes (made absolute
//! against the page's URL, so a model can fetch them in turn). The page is parsed by
//! [`bounded::parse`](super::bounded::parse), which keeps the work linear in the page's size, and
//! the tree handed to `html2text` to render. The title is read with html5ever's tokenizer, which
//! `html2text` already builds on, because `html2text` renders the body and offers no way to read
//! the head.
//!
//! Everything here is synchronous and CPU-bound: the tool runs it on a blocking thread.

use std::cell::RefCell;
use std::time::Instant;

use html5ever::TokenizerResult;
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};

use super::bounded::{self, DeadlinePassed};

/// The wrap width of the rendered text. Wide enough that prose is not broken mid-sentence too
/// often, narrow enough that tables stay readable.
const WIDTH: usize = 100;

/// A page rendered as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rendered {
    /// The readable text.
    pub(crate) text: String,
    /// Whether the text stops before the end of the page because its markup exceeded the
    /// parse's bounds (see [`bounded`]).
    pub(crate) cut: bool,
}

/// Why a page could not be rendered.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RenderError {
    /// The deadline passed before the text was ready.
    #[error(transparent)]
    Deadline(#[from] DeadlinePassed),
    /// `html2text` failed on the tree.
    #[error(transparent)]
    Html(#[from] html2text::Error),
}

/// Render an HTML document as plain text; relative link footnotes are resolved against `base`.
/// The work is linear in the size of `html` (see [`bounded`]); past `deadline` the rendering
/// gives up with [`RenderError::Deadline`] at its next look at the clock.
pub(crate) fn to_text(
    html: &str,
    base: &url::Url,
    deadline: Instant,
) -> Result<Rendered, RenderError> {
    let parsed = bounded::parse(html, deadline)?;
    let config = html2text::config::plain().allow_width_overflow();
    let tree = config.dom_to_render_tree(&parsed.dom)?;
    if Instant::now() >= deadline {
        return Err(DeadlinePassed.into());
    }
    let text = config.render_to_string(tree, WIDTH)?;
    Ok(Rendered {
        text: absolute_footnotes(&tidy(&text), base),
        cut: parsed.cut,
    })
}

/// Rewrite footnote lines (`[3]: /docs`) so their targets are absolute URLs.
fn absolute_footnotes(text: &str, base: &url::Url) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let target = line
            .strip_prefix('[')
            .and_then(|rest| rest.split_once("]: "))
            .filter(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        match target.and_then(|(n, href)| Some((n, base.join(href).ok()?))) {
            Some((n, url)) => out.push_str(&format!("[{n}]: {url}")),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out.truncate(out.trim_end().len());
    out
}

/// Trim trailing spaces from every line and keep at most one blank line in a row.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}

/// The text of the document's `<title>` in its head, whitespace collapsed. A `<title>` in the
/// body (an SVG's, say) does not name the page.
pub(crate) fn title(html: &str) -> Option<String> {
    let tokenizer = Tokenizer::new(TitleSink::default(), TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(StrTendril::from(html));
    while let TokenizerResult::Script(()) = tokenizer.feed(&input) {}
    tokenizer.end();
    let sink = tokenizer.sink;
    let title = sink.title.into_inner()?;
    let title = crate::xml::collapse_whitespace(&title);
    (!title.is_empty()).then_some(title)
}

#[derive(Default)]
struct TitleSink {
    /// Inside the title, collecting.
    collecting: RefCell<Option<String>>,
    /// The finished title.
    title: RefCell<Option<String>>,
    /// The body started (or the title was found): ignore the rest.
    done: RefCell<bool>,
}

impl TokenSink for TitleSink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        if *self.done.borrow() {
            return TokenSinkResult::Continue;
        }
        match token {
            Token::TagToken(tag) => {
                let name: &str = &tag.name;
                match (tag.kind, name) {
                    (TagKind::StartTag, "title") => {
                        *self.collecting.borrow_mut() = Some(String::new());
                        // The tokenizer only knows the title's content is text when told so.
                        return TokenSinkResult::RawData(RawKind::Rcdata);
                    }
                    (TagKind::EndTag, "title") => {
                        *self.title.borrow_mut() = self.collecting.borrow_mut().take();
                        *self.done.borrow_mut() = true;
                    }
                    (TagKind::StartTag, "script") => {
                        return TokenSinkResult::RawData(RawKind::ScriptData);
                    }
                    (TagKind::StartTag, "style" | "noscript" | "xmp" | "iframe") => {
                        return TokenSinkResult::RawData(RawKind::Rawtext);
                    }
                    // Any element that cannot sit in the head starts the body.
                    (
                        TagKind::StartTag,
                        "html" | "head" | "meta" | "link" | "base" | "template",
                    ) => {}
                    (TagKind::StartTag, _) => *self.done.borrow_mut() = true,
                    (TagKind::EndTag, _) => {}
                }
            }
            Token::CharacterTokens(text) => {
                if let Some(t) = self.collecting.borrow_mut().as_mut() {
                    t.push_str(&text);
                }
            }
            Token::EOFToken => {
                // An unclosed title still names the page.
                let open = self.collecting.borrow_mut().take();
                if self.title.borrow().is_none() {
                    *self.title.borrow_mut() = open;
                }
            }
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn base() -> url::Url {
        url::Url::parse("https://example.com/a/page").unwrap()
    }

    fn text(html: &str) -> Rendered {
        to_text(html, &base(), Instant::now() + Duration::from_secs(600)).unwrap()
    }

    #[test]
    fn title_and_text() {
        let html = r#"<!doctype html><html><head>
            <script>var s = "<title>not this</title>";</script>
            <title> Seats &amp;  budgets </title></head>
            <body><h1>Admission</h1><p>A job waits until its <b>whole</b> reservation fits.</p>
            <svg><title>nor this</title></svg>
            <ul><li>one</li><li>two</li></ul></body></html>"#;
        assert_eq!(title(html).as_deref(), Some("Seats & budgets"));
        let Rendered { text, cut } = text(html);
        assert!(!cut);
        assert!(text.contains("Admission"), "{text}");
        assert!(
            text.contains("A job waits until its **whole** reservation fits."),
            "{text}"
        );
        assert!(text.contains("one") && text.contains("two"), "{text}");
        assert!(!text.contains("var s"), "{text}");
    }

    #[test]
    fn link_footnotes_become_absolute() {
        let text = text(r#"<p><a href="../docs">docs</a> <a href="https://x.org/">x</a></p>"#).text;
        assert!(text.contains("[1]: https://example.com/docs"), "{text}");
        assert!(text.contains("[2]: https://x.org/"), "{text}");
    }

    #[test]
    fn no_title_in_the_body() {
        assert_eq!(title("<p>text</p><svg><title>icon</title></svg>"), None);
        assert_eq!(title("<title></title>"), None);
    }

    #[test]
    fn a_page_within_the_bounds_reads_as_html2text_reads_it() {
        let pages = [
            include_str!("../../tests/fixtures/web/article.html"),
            "<table><tr><td>a<td>b<tr><td>c</table><p>after",
            "<p><b>bold<p>still bold</b> plain<ul><li>x<li>y</ul>",
            "<div><span>open <a href=/x>link <a href=/y>next</div><pre>  kept  </pre>",
            "<svg><title>t</title><path/></svg><math><mi>x</mi></math><noscript>ns</noscript>",
            "<textarea><b>raw</b></textarea><xmp><i>raw</i></xmp><template><p>t</template>",
        ];
        for html in pages {
            let theirs = html2text::config::plain()
                .allow_width_overflow()
                .string_from_read(html.as_bytes(), WIDTH)
                .unwrap();
            let theirs = absolute_footnotes(&tidy(&theirs), &base());
            assert_eq!(
                text(html),
                Rendered {
                    text: theirs,
                    cut: false
                },
                "{html}"
            );
        }
    }

    #[test]
    fn two_mebibytes_of_nested_divs_render_their_text() {
        let html = format!(
            "<title>Deep</title>{}deep text",
            "<div>".repeat(2 * 1024 * 1024 / 5)
        );
        assert_eq!(title(&html).as_deref(), Some("Deep"));
        let Rendered { text, cut } = text(&html);
        assert_eq!(text, "deep text");
        assert!(!cut);
    }

    #[test]
    fn a_passed_deadline_gives_up() {
        let html = "<p>x</p>".repeat(10_000);
        let err = to_text(&html, &base(), Instant::now()).unwrap_err();
        assert!(matches!(err, RenderError::Deadline(_)), "{err}");
        let err = to_text("<p>small</p>", &base(), Instant::now()).unwrap_err();
        assert!(matches!(err, RenderError::Deadline(_)), "{err}");
    }
}
