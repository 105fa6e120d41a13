"""Threadline's request-view policy as it was at commit b10667b, kept runnable in the bench only.

``view``, ``clip``, ``fallback``, ``micro``, ``repair``, ``summary``, ``tail`` and ``tokens`` are verbatim copies
of ``server/context/`` at b10667b (``git show b10667b:server/context/NAME.py``), so the "Threadline before" line
of the cost section does not move when the server's pipeline changes. ``policy`` drives them the way
``server/agent/views.py`` and the loop did then: one view per model call, the summary anchors carried within a
user turn and reset at the next, the view clipped to the window. Nothing in ``server`` imports this.
"""
