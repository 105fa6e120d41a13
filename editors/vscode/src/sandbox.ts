// The sandbox state shown beside the approval policy (B-SBX-1/2), and how an approval that would run a command
// outside the sandbox is marked (B-SBX-3). vscode-free, so the plain-Node unit tests check it.
import type { RequestApprovalParams, SandboxStatus } from './rpc/protocol';

export interface SandboxBadge {
  text: string;
  title: string;
  warn: boolean; // commands are not confined as the mode says: every command asks
}

/** "ask · sandbox: workspace-write", or a warning when the mode cannot be enforced on this machine. */
export function sandboxBadge(policy: string, status: SandboxStatus | null | undefined): SandboxBadge {
  if (!status) return { text: `${policy} · sandbox: unknown`, title: 'The server did not report a sandbox', warn: false };
  const net = status.network ? 'network on' : 'network off';
  if (status.mode === 'off') {
    return { text: `${policy} · sandbox: off`, title: 'Commands run with all your rights (sandbox off)', warn: false };
  }
  if (!status.enforced) {
    return {
      text: `${policy} · sandbox: NOT enforced`,
      title: `The ${status.mode} sandbox cannot be enforced here: ${status.reason ?? 'no reason given'}. Every command asks.`,
      warn: true,
    };
  }
  return { text: `${policy} · sandbox: ${status.mode}`, title: `Commands are confined (${status.mechanism}, ${net})`, warn: false };
}

/** The mark on an approval card whose command would run unconfined, or undefined for an ordinary request. */
export function outsideSandboxMark(params: RequestApprovalParams): string | undefined {
  if (!params.outsideSandbox) return undefined;
  return params.reason ? `Runs outside the sandbox — reason: ${params.reason}` : 'Runs outside the sandbox';
}
