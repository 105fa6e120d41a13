"""Paths and parameters every benchmark shares."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
TRAJECTORIES = Path(os.environ.get("THREADLINE_TRAJECTORIES", REPO / "data" / "trajectories"))
SIZES = (1_000, 10_000, 100_000)  # stored messages for the latency and memory runs
WINDOWS = (16_000, 32_000, 64_000)  # context windows for the token replays
MASK_KEEP = 10  # observation masking keeps the latest 10 tool observations verbatim
MASK_TEXT = "[old tool output omitted]"
