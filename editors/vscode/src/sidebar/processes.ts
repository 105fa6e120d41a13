// Background processes, in words (no vscode import: the plain-Node tests use it). The "Background Processes"
// command lists the session's processes (listProcesses); picking a running one stops it (stopProcess).
import type { ProcessInfo } from '../rpc/protocol';

export interface ProcessPickItem {
  label: string;
  description: string;
  detail: string;
  processId: string;
  running: boolean;
}

/** The quick pick's items: running processes first, each newest first, with its state and command. */
export function processPickItems(processes: ProcessInfo[]): ProcessPickItem[] {
  const order = [...processes].reverse().sort((a, b) => Number(b.status === 'running') - Number(a.status === 'running'));
  return order.map((p) => ({
    label: `${p.status === 'running' ? '$(debug-stop)' : '$(circle-slash)'} ${p.processId}`,
    description: p.status === 'running' ? `running, pid ${p.pid}` : `${p.status} (exit code ${p.exitCode ?? '?'})`,
    detail: p.command.length > 120 ? `${p.command.slice(0, 119)}…` : p.command,
    processId: p.processId,
    running: p.status === 'running',
  }));
}
