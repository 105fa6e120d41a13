// The Tasks view's rows (docs/WORKTREES.md, B-WT-1): worktree sessions only, with branch, state and diff stat.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lib, makeClient, startFakeProvider, tempDir } from '../support/harness.mjs';

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
    ['ses_a', 'Fix login', 'running · 2 files +10 −3 · threadline/fix', 'threadline.task.active'],
    ['ses_b', 'threadline/b', 'merged · 1 file +10 −3 · threadline/b', 'threadline.task.merged'],
    ['ses_c', 'Fix login', 'discarded · 2 files +10 −3 · threadline/fix', 'threadline.task.discarded'],
  ]);
  assert.equal(rows[0].tooltip, 'Fix login\nthreadline/fix · running · 2 files +10 −3 · 1 ahead of main\n/h/worktrees/repo-1/fix/fix\nses_a');
});

test('B-WT-1 a merge says the commit, or names the conflicting files', () => {
  assert.equal(lib.mergeMessage('threadline/x', { merged: true, commit: '0123456789abcdef' }), 'Threadline: threadline/x merged (0123456789ab).');
  assert.match(lib.mergeMessage('threadline/x', { merged: false, conflicts: ['a.txt', 'b.txt'] }), /conflict .*: a\.txt, b\.txt$/);
});

test('B-WT-1 against the real server: a worktree session becomes a row with its diff stat, and merges', async () => {
  const { execFileSync } = await import('node:child_process');
  const fs = await import('node:fs');
  const path = await import('node:path');
  const git = (cwd, ...args) => execFileSync('git', ['-C', cwd, '-c', 'user.name=T', '-c', 'user.email=t@t', ...args], { encoding: 'utf8' });
  const repo = tempDir('tl-tasks-repo-');
  git(repo, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(repo, 'a.txt'), 'a\n');
  git(repo, 'add', '.');
  git(repo, 'commit', '-qm', 'start');
  const provider = await startFakeProvider();
  const { client } = makeClient(provider);
  try {
    await client.start();
    const made = await client.request('createSession', { cwd: repo, worktree: 'vscode' });
    const wt = made.worktree.path;
    fs.writeFileSync(path.join(wt, 'b.txt'), 'b\n');
    git(wt, 'add', '.');
    git(wt, 'commit', '-qm', 'task work');
    const { sessions } = await client.request('listSessions', { limit: 200, includeChildren: true });
    const rows = lib.taskRows(sessions);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].description, 'idle · 1 file +1 −0 · threadline/vscode');
    const merged = await client.request('mergeWorktree', { sessionId: made.sessionId });
    assert.equal(merged.merged, true);
    assert.equal(fs.readFileSync(path.join(repo, 'b.txt'), 'utf8'), 'b\n');
    const after = lib.taskRows((await client.request('listSessions', {})).sessions);
    assert.equal(after[0].contextValue, 'threadline.task.merged');
  } finally {
    await client.stop();
    provider.stop();
  }
});

test('B-WT-1 Open Diff shows what the row counts: commits, uncommitted edits and new untracked files, not ignored ones', async () => {
  const { execFileSync } = await import('node:child_process');
  const fs = await import('node:fs');
  const path = await import('node:path');
  const git = (cwd, ...args) => execFileSync('git', ['-C', cwd, '-c', 'user.name=T', '-c', 'user.email=t@t', ...args], { encoding: 'utf8' });
  const repo = tempDir('tl-taskdiff-');
  git(repo, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(repo, 'a.txt'), 'a\n');
  fs.writeFileSync(path.join(repo, '.gitignore'), '*.log\n');
  git(repo, 'add', '.');
  git(repo, 'commit', '-qm', 'start');
  const wt = path.join(tempDir('tl-taskdiff-wt-'), 'wt');
  git(repo, 'worktree', 'add', '-q', '-b', 'threadline/t', wt);
  fs.writeFileSync(path.join(wt, 'committed.txt'), 'c\n');
  git(wt, 'add', '.');
  git(wt, 'commit', '-qm', 'work');
  fs.writeFileSync(path.join(wt, 'a.txt'), 'a2\n');
  fs.mkdirSync(path.join(wt, 'new'));
  fs.writeFileSync(path.join(wt, 'new', 'untracked.txt'), 'u\n');
  fs.writeFileSync(path.join(wt, 'debug.log'), 'ignored\n');
  const diff = await lib.taskDiff(wt, 'main');
  assert.match(diff, /\+\+\+ b\/committed\.txt\n@@ -0,0 \+1 @@\n\+c\n/);
  assert.match(diff, /--- a\/a\.txt\n\+\+\+ b\/a\.txt\n@@ -1 \+1 @@\n-a\n\+a2\n/);
  assert.match(diff, /\+\+\+ b\/new\/untracked\.txt\n@@ -0,0 \+1 @@\n\+u\n/);
  assert.doesNotMatch(diff, /debug\.log/);
  assert.equal(git(wt, 'status', '--porcelain', '--untracked-files=all'), ' M a.txt\n?? new/untracked.txt\n', 'the worktree is as it was');
  await assert.rejects(lib.taskDiff(wt, 'no-such-base'), /git diff failed: .*no-such-base/);
});
