"""A page read without a parser: how deeply its tags nest, and its plain text (SPEC B-WEB-2).

Both are one linear pass of a regular expression that never scans past the next ``<`` or ``>``, so no page makes
them slow: the nesting depth decides whether a page is given to BeautifulSoup and markdownify at all (both slow
down with depth and end in ``RecursionError``), and the plain text is what the model reads of a page that could
not be converted. Stdlib only: ``convert_worker`` loads this file by its path in a bare interpreter.
"""

from __future__ import annotations

import html
import re

_TAG_BYTES = re.compile(rb"<(/?)([A-Za-z][^\s/<>]*)[^<>]*>")
_TAG = re.compile(r"<(/?)([A-Za-z][^\s/<>]*)[^<>]*>")
_META_CHARSET = re.compile(rb"""<meta[^<>]*?charset\s*=\s*["']?([\w.:-]+)""", re.IGNORECASE)
_VOID = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "keygen",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)  # never hold anything
_RAW = frozenset(["script", "style", "textarea", "title", "xmp", "noscript", "template"])  # text, not tags
_SKIPPED = frozenset(["script", "style", "noscript", "template"])  # never content
_BLOCK = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "br",
        "dd",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "li",
        "main",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
    ]
)
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")
_BLANKS = re.compile(r"\n{3,}")


def nesting_depth(page: bytes) -> int:
    """How many elements deep the page nests, as an HTML parser that closes an end tag's element and all opened
    inside it would see (a stray end tag closes nothing; void elements hold nothing)."""
    lower = page.lower()
    stack: list[bytes] = []
    open_by_name: dict[bytes, int] = {}
    deepest = pos = 0
    while match := _TAG_BYTES.search(lower, pos):
        pos = match.end()
        closing, name = match.group(1), match.group(2)
        if closing:
            if open_by_name.get(name):
                while stack:
                    top = stack.pop()
                    open_by_name[top] -= 1
                    if top == name:
                        break
            continue
        text_name = name.decode("latin-1")
        if text_name in _VOID or match.group(0).endswith(b"/>"):
            continue
        if text_name in _RAW:
            end = lower.find(b"</" + name, pos)
            pos = len(lower) if end < 0 else end
            continue
        stack.append(name)
        open_by_name[name] = open_by_name.get(name, 0) + 1
        deepest = max(deepest, len(stack))
    return deepest


def decoded(page: bytes, charset: str | None) -> str:
    """The page as text: in ``charset``, else the one its ``<meta>`` names, else UTF-8 (bad bytes replaced)."""
    if charset is None and (found := _META_CHARSET.search(page[:4096])):
        charset = found.group(1).decode("ascii", errors="replace")
    try:
        return page.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return page.decode("utf-8", errors="replace")


def plain_text(page: bytes, charset: str | None = None) -> tuple[str, str]:
    """The page's title and its text: tags dropped (a block's tag leaves a line break), scripts and styles left
    out, entities resolved, spaces collapsed."""
    text = decoded(page, charset)
    title = ""
    pieces: list[str] = []
    pos = 0
    while match := _TAG.search(text, pos):
        pieces.append(text[pos : match.start()])
        pos = match.end()
        name = match.group(2).lower()
        if not match.group(1) and name in _RAW:  # its text runs to its end tag, tags or not
            end = _end_tag(name).search(text, pos)
            inner_end = end.start() if end else len(text)
            if name == "title":
                title = title or " ".join(html.unescape(text[pos:inner_end]).split())
            elif name not in _SKIPPED:
                pieces.append(text[pos:inner_end])
            pos = inner_end
        elif name in _BLOCK:
            pieces.append("\n")
    pieces.append(text[pos:])
    body = html.unescape("".join(pieces))
    lines = (_SPACES.sub(" ", line).strip() for line in body.split("\n"))
    return title, _BLANKS.sub("\n\n", "\n".join(lines)).strip()


_END_TAGS: dict[str, re.Pattern[str]] = {}


def _end_tag(name: str) -> re.Pattern[str]:
    if name not in _END_TAGS:
        _END_TAGS[name] = re.compile(f"</{re.escape(name)}", re.IGNORECASE)
    return _END_TAGS[name]
