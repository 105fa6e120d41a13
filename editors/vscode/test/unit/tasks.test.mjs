// The Tasks view's rows (docs/WORKTREES.md, B-WT-1): worktree sessions only, with branch, state and diff stat.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lib } from '../support/harness.mjs';

const worktree = (state, extra = {}) => ({
  path: '/h/worktrees/repo-1/fix/fix', branch: 'threadline/fix', base: 'main',
  filesChanged: 2, insertions: 10, deletions: 3, ahead: 1, state, ...extra,
});
const session = (id, extra) => ({ sessionId: id, title: 'Fix login', cwd: '/h', createdAt: '', updatedAt: '', messageCount: 2, ...extra });

test('B-WT-1 the Tasks view lists worktree sessions with branch, state and diff stat', () => {
  const rows = lib.taskRows([
    session('ses_a', { worktree: worktree('active'), running: true }),
    session('ses_plain', {}),
    session('ses_b', { title: '', worktree: worktree('merged', { filesChanged: 1, branch: 'threadline/b' }) }),
    session('ses_c', { worktree: worktree('discarded'), waitingForApproval: true }),
  ]);
  assert.deepEqual(rows.map((r) => [r.sessionId, r.label, r.description, r.contextValue]), [
    ['ses_a', 'Fix login', 'threadline/fix · running · 2 files +10 −3 · 1 ahead of main', 'threadline.task.active'],
    ['ses_b', 'threadline/b', 'threadline/b · merged · 1 file +10 −3 · 1 ahead of main', 'threadline.task.merged'],
    ['ses_c', 'Fix login', 'threadline/fix · discarded · 2 files +10 −3 · 1 ahead of main', 'threadline.task.discarded'],
  ]);
});

test('B-WT-1 a merge says the commit, or names the conflicting files', () => {
  assert.equal(lib.mergeMessage('threadline/x', { merged: true, commit: '0123456789abcdef' }), 'Threadline: threadline/x merged (0123456789ab).');
  assert.match(lib.mergeMessage('threadline/x', { merged: false, conflicts: ['a.txt', 'b.txt'] }), /conflict .*: a\.txt, b\.txt$/);
});
