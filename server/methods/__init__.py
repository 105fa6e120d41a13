"""One module per wire method; importing this package registers every handler (``server.rpc.HANDLERS``)."""

from server.methods import (  # noqa: F401
    create_session,
    delete_session,
    fork_session,
    import_session,
    list_sessions,
    read_transcript,
    search_transcript,
)
