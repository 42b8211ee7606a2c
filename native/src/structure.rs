//! A note's Markdown structure from pulldown-cmark's events (the version pyromark 0.10.3 wraps), read the
//! way `tests/processors/reference/structure_walk.py` reads pyromark's: sections split on top-level
//! headings, each with its blocks (paragraphs, list items, table rows with their table's header, quote
//! paragraphs, code, HTML blocks, nested headings), every block with its plain text, links, images and lead.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use crate::markup::{clean_heading, html_sources, html_text, is_back_text, section_number};
use crate::unicode::{char_count, collapse, collapse_owned, is_space, newline_count};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Paragraph,
    ListItem,
    TableRow,
    Quote,
    Code,
    Html,
    Heading,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Paragraph => "paragraph",
            Kind::ListItem => "list_item",
            Kind::TableRow => "table_row",
            Kind::Quote => "quote",
            Kind::Code => "code",
            Kind::Html => "html",
            Kind::Heading => "heading",
        }
    }
}

pub type Link = (String, String);

/// A block as the product sees it (`processors.structure.Block`).
pub struct BlockOut {
    pub kind: Kind,
    pub text: String,
    pub line: usize,
    pub links: Vec<Link>,
    pub images: Vec<Link>,
    pub lead: String,
    pub depth: usize,
    pub checked: Option<bool>,
    pub quoted: bool,
    pub cells: Vec<String>,
    pub cell_links: Vec<Vec<Link>>,
    pub header: Option<usize>, // index into StructureOut::headers
}

/// A section (`processors.structure.SectionNode`); `start`/`end` are character offsets into the body,
/// `bytes` the same span in bytes.
pub struct SectionOut {
    pub level: usize,
    pub number: Option<String>,
    pub heading: String,
    pub head: Option<BlockOut>,
    pub start: usize,
    pub end: usize,
    pub bytes: (usize, usize),
    pub blocks: Vec<BlockOut>,
}

pub struct StructureOut {
    pub sections: Vec<SectionOut>,
    pub headers: Vec<Vec<String>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Inline {
    Link,
    Image,
    Other,
}

struct Open {
    tag: Inline,
    start: usize, // byte offset into `parts`
    url: String,
    outer_alt: Option<String>,
}

/// A block being read: its inline text, links, images and lead, filled as events arrive.
struct Builder {
    kind: Kind,
    line: usize,
    depth: usize,
    quoted: bool,
    parts: String,
    part_count: usize,
    links: Vec<Link>,
    images: Vec<Link>,
    lead: String,
    lead_open: bool,
    lead_at: Option<usize>,
    inline: Vec<Open>,
    alt: Option<String>,
    checked: Option<bool>,
    cells: Vec<usize>,
    nav: Vec<(usize, usize)>,
    header: Option<usize>,
}

impl Builder {
    fn new(kind: Kind, line: usize, depth: usize, quoted: bool) -> Self {
        Builder {
            kind,
            line,
            depth,
            quoted,
            parts: String::new(),
            part_count: 0,
            links: Vec::new(),
            images: Vec::new(),
            lead: String::new(),
            lead_open: true,
            lead_at: None,
            inline: Vec::new(),
            alt: None,
            checked: None,
            cells: Vec::new(),
            nav: Vec::new(),
            header: None,
        }
    }

    fn text(&mut self, value: &str) {
        if let Some(alt) = self.alt.as_mut() {
            alt.push_str(value);
            return;
        }
        self.parts.push_str(value);
        self.part_count += 1;
        if self.lead_open && self.lead_at.is_none() && !value.chars().all(is_space) {
            self.lead_open = false;
        }
    }

    fn open(&mut self, tag: Inline, leads: bool, url: String) {
        if self.lead_open && self.lead_at.is_none() && leads {
            self.lead_at = Some(self.inline.len());
        }
        let outer_alt = if tag == Inline::Image {
            self.alt.replace(String::new())
        } else {
            None
        };
        self.inline.push(Open {
            tag,
            start: self.parts.len(),
            url,
            outer_alt,
        });
    }

    fn close(&mut self) {
        let Some(open) = self.inline.pop() else {
            return;
        };
        match open.tag {
            Inline::Image => {
                let alt = self.alt.take().unwrap_or_default();
                self.images.push((collapse(&alt), open.url));
                self.alt = open.outer_alt;
            }
            Inline::Link => {
                let text = collapse(&self.parts[open.start..]);
                let nav = self.kind == Kind::Heading
                    && (open.url.starts_with('#')
                        || (text.chars().count() <= 40 && is_back_text(&text)));
                if nav {
                    self.nav.push((open.start, self.parts.len()));
                }
                self.links.push((text, open.url));
            }
            Inline::Other => {}
        }
        if self.lead_at == Some(self.inline.len()) {
            self.lead = collapse(&self.parts[open.start..]);
            self.lead_at = None;
            self.lead_open = false;
        }
    }

    fn plain(&self) -> String {
        collapse(&self.parts)
    }

    /// `plain`, the parts given up: a block's builder is read once, at the end.
    fn take_plain(&mut self) -> String {
        collapse_owned(std::mem::take(&mut self.parts))
    }

    /// The heading without its back-links (unless nothing else is left), cleaned.
    fn heading_text(&self) -> String {
        if !self.nav.is_empty() {
            let mut keep = String::with_capacity(self.parts.len());
            let mut at = 0;
            for &(start, end) in &self.nav {
                keep.push_str(&self.parts[at..start]);
                at = end;
            }
            keep.push_str(&self.parts[at..]);
            let cleaned = clean_heading(&keep);
            if !cleaned.is_empty() {
                return cleaned;
            }
        }
        clean_heading(&self.parts)
    }
}

/// Byte offsets to character offsets and line numbers, by cursors that move both ways.
struct Offsets<'a> {
    text: &'a str,
    byte: usize,
    char: usize,
    line_byte: usize,
    line: usize,
    ascii: bool,
}

impl Offsets<'_> {
    fn char_of(&mut self, b: usize) -> usize {
        if self.ascii {
            return b;
        }
        if b >= self.byte {
            self.char += char_count(&self.text[self.byte..b]);
        } else {
            self.char -= char_count(&self.text[b..self.byte]);
        }
        self.byte = b;
        self.char
    }

    fn line_of(&mut self, b: usize) -> usize {
        let bytes = self.text.as_bytes();
        if b >= self.line_byte {
            self.line += newline_count(&bytes[self.line_byte..b]);
        } else {
            self.line -= newline_count(&bytes[b..self.line_byte]);
        }
        self.line_byte = b;
        self.line
    }
}

#[derive(Default)]
struct Section {
    level: usize,
    head: Option<usize>,
    heading_start: usize,
    text_start: usize,
    blocks: Vec<usize>,
}

#[derive(PartialEq, Eq)]
enum Container {
    Paragraph,
    Heading,
    TableHead,
    TableRow,
    List,
    BlockQuote,
    Table,
    Other,
}

/// The open block containers of the event walk, and the sections read so far.
struct Walk<'a> {
    offsets: Offsets<'a>,
    arena: Vec<Builder>,
    sections: Vec<Section>,
    stack: Vec<(Container, Option<usize>)>,
    target: Option<usize>,
    header: Vec<Option<usize>>, // the header (index into `headers`) of each open table
    headers: Vec<Vec<String>>,
    quotes: usize,
    lists: usize,
}

impl Walk<'_> {
    fn push(&mut self, tag: Container, builder: Option<usize>) {
        self.stack.push((tag, builder));
        self.target = builder;
    }

    fn add(&mut self, builder: Builder) -> usize {
        self.arena.push(builder);
        self.arena.len() - 1
    }

    fn block(&mut self, kind: Kind, at: usize, depth: usize) -> usize {
        let line = self.offsets.line_of(at);
        let id = self.add(Builder::new(kind, line, depth, self.quotes > 0));
        self.sections.last_mut().expect("a section").blocks.push(id);
        id
    }

    fn start(&mut self, tag: &Tag, at: usize) {
        let target = self.target;
        match tag {
            Tag::Paragraph => {
                if let Some(t) = target.filter(|&t| self.arena[t].kind == Kind::ListItem) {
                    if self.arena[t].part_count > 0 {
                        self.arena[t].text(" ");
                    }
                    self.push(Container::Paragraph, Some(t));
                } else {
                    let kind = if self.quotes > 0 {
                        Kind::Quote
                    } else {
                        Kind::Paragraph
                    };
                    let b = self.block(kind, at, 0);
                    self.push(Container::Paragraph, Some(b));
                }
            }
            Tag::Item => {
                let b = self.block(Kind::ListItem, at, self.lists.saturating_sub(1));
                self.push(Container::Other, Some(b));
            }
            Tag::Heading { level, .. } => {
                let line = self.offsets.line_of(at);
                let b = self.add(Builder::new(Kind::Heading, line, 0, self.quotes > 0));
                if self.stack.is_empty() {
                    self.sections.push(Section {
                        level: *level as usize,
                        head: Some(b),
                        heading_start: at,
                        text_start: at,
                        blocks: Vec::new(),
                    });
                } else {
                    // A heading inside a quote or a list is a block, not a section.
                    self.sections.last_mut().expect("a section").blocks.push(b);
                }
                self.push(Container::Heading, Some(b));
            }
            Tag::TableHead | Tag::TableRow => {
                let line = self.offsets.line_of(at);
                let mut row = Builder::new(Kind::TableRow, line, 0, self.quotes > 0);
                let head = matches!(tag, Tag::TableHead);
                if !head {
                    // The head row is read for its cells only: it is no row of the table.
                    row.header = self.header.last().copied().flatten();
                }
                let b = self.add(row);
                if !head {
                    self.sections.last_mut().expect("a section").blocks.push(b);
                }
                self.push(
                    if head {
                        Container::TableHead
                    } else {
                        Container::TableRow
                    },
                    Some(b),
                );
            }
            Tag::TableCell => {
                let cell = self.add(Builder::new(Kind::Paragraph, 0, 0, false));
                if let Some(t) = target {
                    self.arena[t].cells.push(cell);
                }
                self.push(Container::Other, Some(cell));
            }
            Tag::HtmlBlock => {
                let b = self.block(Kind::Html, at, 0);
                self.push(Container::Other, Some(b));
            }
            Tag::CodeBlock(_) => {
                self.block(Kind::Code, at, 0);
                self.push(Container::Other, None);
            }
            _ => {
                // Containers whose text belongs to their children: lists, quotes, tables, footnotes.
                let container = match tag {
                    Tag::List(_) => Container::List,
                    Tag::BlockQuote(_) => Container::BlockQuote,
                    Tag::Table(_) => Container::Table,
                    _ => Container::Other,
                };
                match container {
                    Container::List => self.lists += 1,
                    Container::BlockQuote => self.quotes += 1,
                    Container::Table => self.header.push(None),
                    _ => {}
                }
                self.push(container, None);
            }
        }
    }

    fn end(&mut self, at: usize) {
        let Some((tag, builder)) = self.stack.pop() else {
            return;
        };
        self.target = self.stack.last().and_then(|(_, b)| *b);
        match tag {
            Container::List => self.lists -= 1,
            Container::BlockQuote => self.quotes -= 1,
            Container::Table => {
                self.header.pop();
            }
            Container::TableHead => {
                if let (Some(b), false) = (builder, self.header.is_empty()) {
                    let cells = self.arena[b]
                        .cells
                        .iter()
                        .map(|&c| self.arena[c].plain())
                        .collect();
                    self.headers.push(cells);
                    *self.header.last_mut().expect("an open table") = Some(self.headers.len() - 1);
                }
            }
            Container::Heading => {
                let last = self.sections.last_mut().expect("a section");
                if self.stack.is_empty() && last.head == builder {
                    last.text_start = at;
                }
            }
            _ => {}
        }
    }
}

fn is_inline(tag: &Tag) -> Option<(Inline, bool, String)> {
    Some(match tag {
        Tag::Link { dest_url, .. } => (Inline::Link, true, dest_url.to_string()),
        Tag::Image { dest_url, .. } => (Inline::Image, false, dest_url.to_string()),
        Tag::Strong => (Inline::Other, true, String::new()),
        Tag::Emphasis | Tag::Strikethrough | Tag::Superscript | Tag::Subscript => {
            (Inline::Other, false, String::new())
        }
        _ => return None,
    })
}

fn is_inline_end(tag: &TagEnd) -> bool {
    matches!(
        tag,
        TagEnd::Strong
            | TagEnd::Emphasis
            | TagEnd::Strikethrough
            | TagEnd::Link
            | TagEnd::Image
            | TagEnd::Superscript
            | TagEnd::Subscript
    )
}

/// The options the reference passes pyromark: tables, strikethrough, task lists, footnotes.
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES
}

/// The sections and blocks of a Markdown body.
pub fn parse(body: &str) -> StructureOut {
    let mut walk = Walk {
        offsets: Offsets {
            text: body,
            byte: 0,
            char: 0,
            line_byte: 0,
            line: 1,
            ascii: body.is_ascii(),
        },
        arena: Vec::new(),
        sections: vec![Section::default()],
        stack: Vec::new(),
        target: None,
        header: Vec::new(),
        headers: Vec::new(),
        quotes: 0,
        lists: 0,
    };
    for (event, span) in Parser::new_ext(body, options()).into_offset_iter() {
        match event {
            Event::Text(v) | Event::Code(v) | Event::InlineMath(v) | Event::DisplayMath(v) => {
                if let Some(t) = walk.target {
                    walk.arena[t].text(&v);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some(t) = walk.target {
                    walk.arena[t].text(" ");
                }
            }
            Event::Start(tag) => match is_inline(&tag) {
                Some((inline, leads, url)) => {
                    if let Some(t) = walk.target {
                        walk.arena[t].open(inline, leads, url);
                    }
                }
                None => walk.start(&tag, span.start),
            },
            Event::End(tag) => {
                if is_inline_end(&tag) {
                    if let Some(t) = walk.target {
                        walk.arena[t].close();
                    }
                } else {
                    walk.end(span.end);
                }
            }
            Event::Html(v) => {
                if let Some(t) = walk.target.filter(|&t| walk.arena[t].kind == Kind::Html) {
                    walk.arena[t].parts.push_str(&v);
                    walk.arena[t].part_count += 1;
                }
            }
            Event::TaskListMarker(checked) => {
                if let Some(t) = walk.target {
                    walk.arena[t].checked = Some(checked);
                }
            }
            Event::Rule | Event::InlineHtml(_) | Event::FootnoteReference(_) => {}
        }
    }
    finish(body, walk)
}

/// The block of builder `b`, its parts and lists moved out: each builder is one block's (or one cell's).
fn block_out(arena: &mut [Builder], b: usize) -> BlockOut {
    let kind = arena[b].kind;
    let mut out = BlockOut {
        kind,
        text: String::new(),
        line: arena[b].line,
        links: Vec::new(),
        images: Vec::new(),
        lead: String::new(),
        depth: 0,
        checked: None,
        quoted: arena[b].quoted,
        cells: Vec::new(),
        cell_links: Vec::new(),
        header: None,
    };
    match kind {
        Kind::TableRow => {
            let cells = std::mem::take(&mut arena[b].cells);
            out.cells = cells.iter().map(|&c| arena[c].take_plain()).collect();
            out.text = out
                .cells
                .iter()
                .filter(|c| !c.is_empty())
                .cloned()
                .collect::<Vec<_>>()
                .join(" · ");
            out.images = cells
                .iter()
                .flat_map(|&c| std::mem::take(&mut arena[c].images))
                .collect();
            out.lead = cells
                .iter()
                .zip(&out.cells)
                .find(|(_, t)| !t.is_empty())
                .map(|(&c, _)| std::mem::take(&mut arena[c].lead))
                .unwrap_or_default();
            out.cell_links = cells
                .iter()
                .map(|&c| std::mem::take(&mut arena[c].links))
                .collect();
            out.links = out.cell_links.iter().flatten().cloned().collect();
            out.header = arena[b].header;
        }
        Kind::Html => {
            out.text = html_text(&arena[b].parts);
            out.images = html_sources(&arena[b].parts)
                .into_iter()
                .map(|u| (String::new(), u))
                .collect();
        }
        _ => {
            let builder = &mut arena[b];
            out.text = if kind == Kind::Code {
                String::new()
            } else {
                builder.take_plain()
            };
            out.links = std::mem::take(&mut builder.links);
            out.images = std::mem::take(&mut builder.images);
            out.lead = std::mem::take(&mut builder.lead);
            out.depth = builder.depth;
            out.checked = builder.checked;
        }
    }
    out
}

fn finish(body: &str, mut walk: Walk) -> StructureOut {
    let size = body.len();
    let mut out = Vec::with_capacity(walk.sections.len());
    let starts: Vec<usize> = walk.sections.iter().map(|s| s.heading_start).collect();
    for (i, s) in walk.sections.iter().enumerate() {
        let end_byte = starts.get(i + 1).copied().unwrap_or(size);
        let start_byte = s.text_start.min(end_byte);
        let start = walk.offsets.char_of(start_byte);
        let end = walk.offsets.char_of(end_byte);
        let raw = &body[start_byte..end_byte];
        let trimmed_start = raw.trim_start_matches(['\r', '\n']);
        let lead_bytes = raw.len() - trimmed_start.len();
        let text = trimmed_start.trim_end_matches(['\r', '\n']);
        if s.level == 0 && text.chars().all(is_space) {
            continue;
        }
        let lead_chars = lead_bytes; // the trimmed characters are one byte each
        let _ = start;
        let text_chars = char_count(text);
        let heading = s
            .head
            .map(|h| walk.arena[h].heading_text())
            .unwrap_or_default();
        out.push(SectionOut {
            level: s.level,
            number: s.head.and_then(|_| section_number(&heading)),
            heading,
            head: s.head.map(|h| block_out(&mut walk.arena, h)),
            start: start + lead_chars,
            end: start + lead_chars + text_chars,
            bytes: (
                start_byte + lead_bytes,
                start_byte + lead_bytes + text.len(),
            ),
            blocks: s
                .blocks
                .iter()
                .map(|&b| block_out(&mut walk.arena, b))
                .collect(),
        });
        let _ = end;
    }
    StructureOut {
        sections: out,
        headers: std::mem::take(&mut walk.headers),
    }
}
