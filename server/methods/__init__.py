"""One module per wire method; importing this package registers every handler (``server.rpc.HANDLERS``)."""

from server.methods import (  # noqa: F401
    cancel_turn,
    compact_session,
    create_session,
    delete_session,
    fork_session,
    get_context_view,
    import_session,
    list_approvals,
    list_mcp_servers,
    list_checkpoints,
    list_sessions,
    read_artifact,
    read_events,
    read_transcript,
    revoke_approval,
    revoke_mcp_server_approval,
    rewind_files,
    search_transcript,
    steer_turn,
    submit_turn,
)
