//! A bounded HTML parse: html5ever's tree builder, fed through a filter that keeps its work
//! linear in the size of the page.
//!
//! html5ever follows the HTML standard, whose tree building is not linear on hostile input: a
//! start tag scans the stack of open elements (every `<div>` looks for an open `<p>` to close),
//! so 2 MiB of nested `<div>`s took minutes; and formatting elements left open are re-created
//! inside every later block, so 50 KiB of paragraphs that each leave a `<b id=…>` open grew a tree
//! of millions of nodes. The filter sits between the tokenizer and the tree builder and
//! guarantees:
//!
//! * **bounded state**: a start tag that arrives while the tree builder holds [`MAX_HELD`]
//!   elements (its open elements plus its active formatting elements, counted with
//!   [`TreeBuilder::trace_handles`]) does not reach it: the markup deeper than the limit is
//!   flattened into the element at the limit, its text kept. Line breaks, images and rules
//!   (`<br>`, `<img>`, `<hr>`, `<wbr>`), which open nothing, still pass. The content of a raw-text
//!   element dropped this way (`<script>`, `<style>`, `<textarea>`…) is dropped with it. Every
//!   token then costs the tree builder at most a constant times [`MAX_HELD`];
//! * **bounded tree**: the tree may hold [`ELEMENTS_PER_TAG`] elements per start tag that reached
//!   the tree builder, plus [`SPARE_ELEMENTS`]. Parsing stops at the first token that grows it
//!   past that (re-created formatting elements, in practice; one token adds at most about
//!   [`MAX_HELD`]): the page is rendered up to that point and the result says it was cut;
//! * **a deadline**: the filter reads the clock every [`CLOCK_EVERY`] tokens and stops at the
//!   deadline, so a parse that outlives its fetch ends soon after, having done little more work.
//!
//! Within the limits a page parses exactly as html5ever (and so `html2text` itself) parses it,
//! with scripting off as `html2text` sets it.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::time::Instant;

use html2text::{Handle, RcDom};
use html5ever::interface::{ElementFlags, NodeOrText, QuirksMode, Tracer, TreeSink};
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use html5ever::tree_builder::{TreeBuilder, TreeBuilderOpts};
use html5ever::{Attribute, ExpandedName, LocalName, QualName, TokenizerResult};

/// The most elements the tree builder may hold (open elements plus active formatting elements)
/// when a start tag reaches it. Browsers bound the depth of the tree similarly (Blink at 512);
/// real pages nest a few dozen deep.
pub(crate) const MAX_HELD: usize = 256;

/// Elements the tree may hold per start tag that reached the tree builder: the tag's own element
/// and what the standard adds around it (an implied `<tbody>`, a re-created `<b>`…).
pub(crate) const ELEMENTS_PER_TAG: usize = 4;

/// Elements the tree may hold beyond [`ELEMENTS_PER_TAG`] per start tag.
pub(crate) const SPARE_ELEMENTS: usize = 16_384;

/// How many tokens pass between two looks at the clock.
const CLOCK_EVERY: u32 = 1024;

/// How much of the page is handed to the tokenizer at a time; the parse stops between pieces
/// once the filter stopped.
const PIECE: usize = 64 * 1024;

/// A parsed page.
pub(crate) struct Parsed {
    /// The tree, ready for `html2text`.
    pub(crate) dom: RcDom,
    /// Whether parsing stopped at the tree bound, before the end of the page.
    pub(crate) cut: bool,
}

/// Parsing did not finish by its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the page was not parsed by the deadline")]
pub(crate) struct DeadlinePassed;

/// Parse `html` within the bounds of the module documentation, giving up at `deadline`.
pub(crate) fn parse(html: &str, deadline: Instant) -> Result<Parsed, DeadlinePassed> {
    let builder = TreeBuilder::new(
        Metered::default(),
        TreeBuilderOpts {
            scripting_enabled: false,
            ..TreeBuilderOpts::default()
        },
    );
    let tokenizer = Tokenizer::new(Filter::new(builder, deadline), TokenizerOpts::default());
    let input = BufferQueue::default();
    let mut rest = html;
    while !rest.is_empty() && tokenizer.sink.stopped.get().is_none() {
        let mut end = PIECE.min(rest.len());
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let (piece, tail) = rest.split_at(end);
        input.push_back(StrTendril::from(piece));
        while !matches!(tokenizer.feed(&input), TokenizerResult::Done) {}
        rest = tail;
    }
    tokenizer.end();
    let filter = tokenizer.sink;
    match filter.stopped.get() {
        Some(Stop::Deadline) => Err(DeadlinePassed),
        stopped => Ok(Parsed {
            dom: filter.builder.sink.dom,
            cut: stopped == Some(Stop::TreeBound),
        }),
    }
}

/// Why the filter stopped passing tokens on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Deadline,
    TreeBound,
}

/// The token filter in front of the tree builder (see the module documentation).
struct Filter {
    builder: TreeBuilder<Handle, Metered>,
    deadline: Instant,
    /// Tokens since the clock was last read.
    since_clock: Cell<u32>,
    /// Start tags that reached the tree builder.
    start_tags: Cell<usize>,
    /// What [`Filter::held`] counted, until the next token reaches the tree builder.
    held: Cell<Option<usize>>,
    /// The raw-text element whose start tag was dropped: its text and end tag are dropped too.
    skipping: RefCell<Option<LocalName>>,
    /// Set once the filter stopped; every later token is dropped.
    stopped: Cell<Option<Stop>>,
}

impl Filter {
    fn new(builder: TreeBuilder<Handle, Metered>, deadline: Instant) -> Self {
        Self {
            builder,
            deadline,
            since_clock: Cell::new(0),
            start_tags: Cell::new(0),
            held: Cell::new(None),
            skipping: RefCell::new(None),
            stopped: Cell::new(None),
        }
    }

    /// How many elements the tree builder holds: its open elements and active formatting
    /// elements (an element in both counts twice), the document and the head and form pointers.
    /// Counted again only after a token reached the tree builder, so a run of dropped start tags
    /// costs one count.
    fn held(&self) -> usize {
        if let Some(n) = self.held.get() {
            return n;
        }
        let counter = Counter::default();
        self.builder.trace_handles(&counter);
        let n = counter.0.get();
        self.held.set(Some(n));
        n
    }

    /// Read the clock every [`CLOCK_EVERY`] tokens; stop at the deadline.
    fn tick(&self) {
        let n = self.since_clock.get() + 1;
        if n < CLOCK_EVERY {
            self.since_clock.set(n);
            return;
        }
        self.since_clock.set(0);
        if Instant::now() >= self.deadline {
            self.stopped.set(Some(Stop::Deadline));
        }
    }

    /// A start tag that does not reach the tree builder. The tokenizer is still told to read a
    /// raw-text element's content as text (the tree builder would have told it), and that
    /// content is dropped up to the element's end tag.
    fn drop_start_tag(&self, name: &LocalName) -> TokenSinkResult<Handle> {
        let raw = match &**name {
            "script" => RawKind::ScriptData,
            "style" | "xmp" | "iframe" | "noembed" | "noframes" => RawKind::Rawtext,
            "textarea" | "title" => RawKind::Rcdata,
            _ => return TokenSinkResult::Continue,
        };
        *self.skipping.borrow_mut() = Some(name.clone());
        TokenSinkResult::RawData(raw)
    }
}

impl TokenSink for Filter {
    type Handle = Handle;

    fn process_token(&self, token: Token, line_number: u64) -> TokenSinkResult<Handle> {
        if self.stopped.get().is_some() {
            return TokenSinkResult::Continue;
        }
        self.tick();
        if self.stopped.get().is_some() {
            return TokenSinkResult::Continue;
        }
        let skipping = self.skipping.borrow().clone();
        if let Some(raw) = skipping {
            match &token {
                Token::TagToken(tag) if tag.kind == TagKind::EndTag && tag.name == raw => {
                    *self.skipping.borrow_mut() = None;
                    return TokenSinkResult::Continue;
                }
                Token::EOFToken => {}
                _ => return TokenSinkResult::Continue,
            }
        }
        if let Token::TagToken(tag) = &token
            && tag.kind == TagKind::StartTag
        {
            let opens_nothing = matches!(&*tag.name, "br" | "img" | "hr" | "wbr");
            if !opens_nothing && self.held() >= MAX_HELD {
                return self.drop_start_tag(&tag.name);
            }
            self.start_tags.set(self.start_tags.get() + 1);
        }
        self.held.set(None);
        let result = self.builder.process_token(token, line_number);
        let allowed = self
            .start_tags
            .get()
            .saturating_mul(ELEMENTS_PER_TAG)
            .saturating_add(SPARE_ELEMENTS);
        if self.builder.sink.elements.get() > allowed {
            self.stopped.set(Some(Stop::TreeBound));
        }
        result
    }

    fn end(&self) {
        self.builder.end();
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
        self.builder
            .adjusted_current_node_present_but_not_in_html_namespace()
    }
}

/// Counts the handles the tree builder traces.
#[derive(Default)]
struct Counter(Cell<usize>);

impl Tracer for Counter {
    type Handle = Handle;

    fn trace_handle(&self, _node: &Handle) {
        self.0.set(self.0.get() + 1);
    }
}

/// `html2text`'s tree, counting the elements created in it. Parse errors are not kept (nothing
/// reads them, and a hostile page has one per tag).
#[derive(Default)]
struct Metered {
    dom: RcDom,
    elements: Cell<usize>,
}

impl TreeSink for Metered {
    type Handle = Handle;
    type Output = Self;
    type ElemName<'a> = ExpandedName<'a>;

    fn finish(self) -> Self {
        self
    }

    fn parse_error(&self, _msg: Cow<'static, str>) {}

    fn get_document(&self) -> Handle {
        self.dom.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a Handle) -> ExpandedName<'a> {
        self.dom.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> Handle {
        self.elements.set(self.elements.get() + 1);
        self.dom.create_element(name, attrs, flags)
    }

    fn create_comment(&self, text: StrTendril) -> Handle {
        self.dom.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> Handle {
        self.dom.create_pi(target, data)
    }

    fn append(&self, parent: &Handle, child: NodeOrText<Handle>) {
        self.dom.append(parent, child);
    }

    fn append_based_on_parent_node(
        &self,
        element: &Handle,
        prev_element: &Handle,
        child: NodeOrText<Handle>,
    ) {
        self.dom
            .append_based_on_parent_node(element, prev_element, child);
    }

    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.dom
            .append_doctype_to_document(name, public_id, system_id);
    }

    fn mark_script_already_started(&self, node: &Handle) {
        self.dom.mark_script_already_started(node);
    }

    fn pop(&self, node: &Handle) {
        self.dom.pop(node);
    }

    fn get_template_contents(&self, target: &Handle) -> Handle {
        self.dom.get_template_contents(target)
    }

    fn same_node(&self, x: &Handle, y: &Handle) -> bool {
        self.dom.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.dom.set_quirks_mode(mode);
    }

    fn append_before_sibling(&self, sibling: &Handle, new_node: NodeOrText<Handle>) {
        self.dom.append_before_sibling(sibling, new_node);
    }

    fn add_attrs_if_missing(&self, target: &Handle, attrs: Vec<Attribute>) {
        self.dom.add_attrs_if_missing(target, attrs);
    }

    fn associate_with_form(
        &self,
        target: &Handle,
        form: &Handle,
        nodes: (&Handle, Option<&Handle>),
    ) {
        self.dom.associate_with_form(target, form, nodes);
    }

    fn remove_from_parent(&self, target: &Handle) {
        self.dom.remove_from_parent(target);
    }

    fn reparent_children(&self, node: &Handle, new_parent: &Handle) {
        self.dom.reparent_children(node, new_parent);
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &Handle) -> bool {
        self.dom.is_mathml_annotation_xml_integration_point(handle)
    }

    fn set_current_line(&self, line_number: u64) {
        self.dom.set_current_line(line_number);
    }

    fn allow_declarative_shadow_roots(&self, intended_parent: &Handle) -> bool {
        self.dom.allow_declarative_shadow_roots(intended_parent)
    }

    fn attach_declarative_shadow(
        &self,
        location: &Handle,
        template: &Handle,
        attrs: &[Attribute],
    ) -> bool {
        self.dom
            .attach_declarative_shadow(location, template, attrs)
    }

    fn maybe_clone_an_option_into_selectedcontent(&self, option: &Handle) {
        self.dom.maybe_clone_an_option_into_selectedcontent(option);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn parse_now(html: &str) -> Parsed {
        parse(html, Instant::now() + Duration::from_secs(600)).unwrap()
    }

    /// The deepest element and the number of elements in the tree.
    fn shape(dom: &RcDom) -> (usize, usize) {
        let (mut deepest, mut elements) = (0, 0);
        let mut todo = vec![(dom.document.clone(), 0)];
        while let Some((node, depth)) = todo.pop() {
            if let html2text::Element { .. } = node.data {
                elements += 1;
                deepest = deepest.max(depth);
            }
            for child in node.children.borrow().iter() {
                todo.push((child.clone(), depth + 1));
            }
        }
        (deepest, elements)
    }

    fn render(dom: &RcDom) -> String {
        let config = html2text::config::plain().allow_width_overflow();
        let tree = config.dom_to_render_tree(dom).unwrap();
        config.render_to_string(tree, 100).unwrap()
    }

    #[test]
    fn markup_deeper_than_the_limit_is_flattened_with_its_text() {
        let html = format!(
            "{}<p>deep<br>text</p><script>var hidden = '<b>';</script><span>after</span>{}",
            "<div>".repeat(10_000),
            "</div>".repeat(10_000)
        );
        let parsed = parse_now(&html);
        let (deepest, elements) = shape(&parsed.dom);
        assert!(deepest <= MAX_HELD, "{deepest}");
        assert!(elements <= MAX_HELD + 8, "{elements}");
        assert!(!parsed.cut);
        let text = render(&parsed.dom);
        assert!(text.contains("deep\ntext"), "{text}");
        assert!(text.contains("after"), "{text}");
        assert!(!text.contains("hidden"), "{text}");
    }

    #[test]
    fn formatting_elements_left_open_stop_at_the_tree_bound() {
        // Each paragraph leaves a distinct `<b>` open, which the standard re-creates inside every
        // later paragraph: unbounded, 50 KiB of this grows millions of elements.
        let mut html = String::new();
        let mut tags = 0;
        while html.len() < 200 * 1024 {
            html.push_str(&format!("<p><b id={tags}>x</p>"));
            tags += 2;
        }
        let parsed = parse_now(&html);
        assert!(parsed.cut);
        let (_, elements) = shape(&parsed.dom);
        assert!(
            elements <= tags * ELEMENTS_PER_TAG + SPARE_ELEMENTS + MAX_HELD,
            "{elements}"
        );
    }

    #[test]
    fn a_page_within_the_bounds_is_not_cut() {
        // One `<b>` left open is re-created in each of thousands of paragraphs: within bounds.
        let html = format!("<p><b>bold{}", "<p>x</p>".repeat(20_000));
        let parsed = parse_now(&html);
        assert!(!parsed.cut);
        assert_eq!(render(&parsed.dom).matches("**x**").count(), 20_000);
    }

    #[test]
    fn the_deadline_stops_the_parse() {
        let html = "<div>x</div>".repeat(10_000);
        assert!(matches!(parse(&html, Instant::now()), Err(DeadlinePassed)));
    }

    #[test]
    fn pieces_split_on_character_boundaries() {
        // A multi-byte character straddles the first piece boundary.
        let html = format!("{}é€😀 end", "a".repeat(PIECE - 1));
        let text = render(&parse_now(&html).dom);
        let tail: String = text.chars().rev().take(20).collect();
        assert!(text.contains("é€😀") && text.contains("end"), "{tail:?}");
    }
}
