// Entry point of out/testing.js: the vscode-free parts the plain-Node tests exercise.
export { ThreadlineClient, RpcError } from './rpc/client';
export type { CrashInfo, ClientOptions } from './rpc/client';
export { serverCommand, splitCommandLine } from './rpc/command';
export { METHOD_NAMES } from './rpc/protocol';
export { buildWebviewHtml, makeNonce } from './sidebar/html';
export { interleaveCompactions, storedDiffs } from './webview/history';
export { budgetText, cachedShare, meterLabel, sessionCost } from './webview/meter';
export { processPickItems } from './sidebar/processes';
export { afterRestart, forgetUnattached } from './sidebar/seqs';
export { forkSeqBefore, planRewind, rewindDone, turnPickItems } from './sidebar/rewind';
export { modelButtonLabel, modelPickItems, priceText, windowText } from './models';
export { outsideSandboxMark, sandboxBadge } from './sandbox';
export { APPLIED_EDITS_KEY, DiffStates, PENDING_REVIEWS_KEY, diffSidePath, toolCallOfPath } from './diffKeys';
export { childProgress, childSummary } from './webview/subagents';
export { breakdownSegments, commandLabel, completeCommand, planItems, planProgress, slashMatches } from './webview/issue33';
export { toolBadge } from './webview/toolBadges';
