"""Worktree sessions (B-WT-1): a session's own git worktree and branch, made, measured, merged and removed here.

``record`` is what is stored of one (a session event), ``git`` how git is run, ``create`` makes one, ``stats``
measures its work, ``sync`` brings the task's commits into the repository, ``merge`` merges them into the main
checkout, ``remove`` discards the worktree. The sandbox grant that lets a confined command commit there is
``server.sandbox.policy.SandboxPolicy.with_git_grant``, fed by ``WorktreeRecord.grant``.
"""
