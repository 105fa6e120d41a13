"""File checkpoints: keep what a file-writing tool call found, and put it back on request.

``capture`` runs around each write in a turn; ``rewind`` lists and restores; ``blobs`` keeps the contents, one file
per distinct content per session under ``$THREADLINE_HOME/checkpoints``. Changes made by ``run_command`` are not
seen here and cannot be rewound.
"""

from server.checkpoints.blobs import Blobs
from server.checkpoints.capture import Checkpointer
from server.checkpoints.rewind import RUN_COMMAND_NOTE, list_turn_checkpoints, rewind_files

__all__ = ["RUN_COMMAND_NOTE", "Blobs", "Checkpointer", "list_turn_checkpoints", "rewind_files"]
