"""A fetched HTML page as Markdown the model reads: the content, not the page's machinery.

BeautifulSoup parses the page (it finds the encoding from the bytes and ``<meta charset>``); what never is content
is removed first (scripts, styles, templates, frames, forms, navigation, site headers and footers, hidden parts);
then ``markdownify`` writes headings (``#``), lists, links, tables and fenced code blocks. When the page marks its
content (one ``<main>``, else one ``<article>``), only that part is kept.
"""

from __future__ import annotations

import re
from typing import Any

from bs4 import BeautifulSoup, Tag
from markdownify import ATX, MarkdownConverter

# Never content: code, styling, embedded documents and controls.
_MACHINERY = ("script", "style", "noscript", "template", "iframe", "object", "embed", "svg", "canvas", "link", "meta")
_CONTROLS = ("form", "button", "input", "select", "textarea", "dialog")
# A site's chrome, dropped unless it is inside the page's content (an article's own header keeps its title).
_CHROME = ("nav", "header", "footer", "aside")
_CHROME_ROLES = ("navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar")
_LANGUAGE = re.compile(r"(?:language|lang|highlight-source)-([\w+#-]+)")


def _code_language(element: Tag) -> str:
    """The language a ``<pre>`` block names in its classes (``language-python``), for the fence."""
    for tag in [element, *element.find_all("code", limit=1)]:
        classes: Any = tag.get("class") or []
        for name in classes if isinstance(classes, list) else [classes]:
            if match := _LANGUAGE.fullmatch(str(name)):
                return match[1]
    return ""


def html_to_markdown(html: bytes | str, encoding: str | None = None) -> tuple[str, str]:
    """The page's title and its content as Markdown."""
    soup = (
        BeautifulSoup(html, "html.parser", from_encoding=encoding)
        if isinstance(html, bytes)
        else BeautifulSoup(html, "html.parser")
    )
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup.find_all([*_MACHINERY, *_CONTROLS, "title", "head"]):
        tag.decompose()
    for tag in soup.find_all(True):
        if vars(tag).get("_decomposed"):  # not ``tag.decomposed``: bs4 looks that up as a search of every descendant
            continue
        hidden = tag.has_attr("hidden") or tag.get("aria-hidden") == "true"
        style = str(tag.get("style") or "").replace(" ", "").lower()
        chrome = tag.name in _CHROME or tag.get("role") in _CHROME_ROLES
        if hidden or "display:none" in style or (chrome and tag.find_parent(["main", "article"]) is None):
            tag.decompose()
    for img in soup.find_all("img"):
        if str(img.get("src") or "").startswith("data:"):  # inline image bytes are not text to read
            img.decompose()
    root = _content(soup)
    converter = MarkdownConverter(
        heading_style=ATX, bullets="-", code_language_callback=_code_language, escape_underscores=False
    )
    markdown = converter.convert_soup(root) if root is not None else ""
    return title, re.sub(r"\n{3,}", "\n\n", str(markdown)).strip()


def _content(soup: BeautifulSoup) -> BeautifulSoup | Tag | None:
    for name in ("main", "article"):
        found = soup.find_all(name)
        if len(found) == 1 and isinstance(found[0], Tag):
            return found[0]
    body = soup.find("body")
    return body if isinstance(body, Tag) else soup
