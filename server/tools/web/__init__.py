"""The web tools: ``web_fetch`` (a page as Markdown or text, SPEC B-WEB-1, B-WEB-2) and ``web_search`` (through the
configured provider). ``tools`` holds the tools; the parts are one module each: ``addresses`` (which addresses a
fetch may reach, pure), ``connect`` (the checked connection), ``fetch``, ``decode`` (one content coding, undone in
bounded steps), ``convert`` (HTML to Markdown in a process of its own, ``convert_worker``), ``markdown``, ``plain``
(nesting depth and plain text without a parser), ``search``, ``settings``."""
