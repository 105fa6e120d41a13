// A task's changes against its base as one unified diff (the Tasks view's "Open Diff", docs/WORKTREES.md): what
// its commits and its uncommitted edits changed (`git diff BASE` in the worktree), then each new file git does not
// track yet, so the diff shows what the row's stat counts. No vscode import: the plain-Node tests use it.
import { execFile } from 'node:child_process';

/** git's output; `--no-index` answers 1 when the files differ, which is what it is asked for. */
function git(cwd: string, args: string[], okCodes = [0]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile('git', ['-C', cwd, ...args], { maxBuffer: 64 << 20 }, (err, out, errText) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      if (okCodes.includes(code)) resolve(out);
      else reject(new Error(`git ${args[0]} failed: ${(errText || err?.message || '').trim()}`));
    }));
}

export async function taskDiff(worktree: string, base: string): Promise<string> {
  const parts = [await git(worktree, ['diff', base, '--'])];
  const untracked = (await git(worktree, ['ls-files', '-z', '--others', '--exclude-standard'])).split('\0').filter(Boolean);
  for (const file of untracked) parts.push(await git(worktree, ['diff', '--no-index', '--', '/dev/null', file], [0, 1]));
  return parts.join('');
}
