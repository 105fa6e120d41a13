// Wire types of the Threadline protocol (camelCase). They are generated from protocol/schema.json into
// protocol.generated.ts (scripts/gen-protocol.mjs; test/unit/protocol.test.mjs fails when that file is stale);
// this module only names the parts the extension refers to and lists the methods it calls.
import type * as G from './protocol.generated';

export type {
  CommandInfo, CompactionRecord, ContextBreakdown, PlanEntry,
  CompactSessionResult, ContextViewResult, EventItem, FileDiff, InitializationOptions, ListModelsResult, McpServerInfo,
  ModelInfo, ModelPrice, OpenAIToolCall, ProcessInfo, ProviderOptions, ReadArtifactParams, ReadArtifactResult, RememberedApproval, RequestApprovalParams,
  RewindFilesResult, SandboxStatus, SessionInfo, SessionUpdate, SubmitTurnResult, TranscriptItem, TurnCheckpoints, TurnError,
  TurnUsage, UpdateSessionResult, WorktreeInfo, MergeWorktreeResult,
} from './protocol.generated';

export type ApprovalPolicy = NonNullable<G.CreateSessionParams['approvalPolicy']>;
export type ApprovalDecision = G.RequestApprovalResult['decision'];
export type StopReason = G.SubmitTurnResult['stopReason'];
export type ViewMode = G.ContextViewResult['mode'];
export type McpServerState = G.McpServerInfo['state'];
export type RewindStatus = G.RewoundFile['status'];
/** One `sessionUpdate`'s payload, discriminated by `kind`. */
export type Update = G.SessionUpdate['update'];

/** Client -> server methods: params and result of each, as the schema has them. */
export type Methods = G.GeneratedMethods;
export type MethodName = keyof Methods;
export type ParamsOf<M extends MethodName> = Methods[M][0];
export type ResultOf<M extends MethodName> = Methods[M][1];
/** The methods this client calls (each must be in the schema, or this does not compile). */
export const METHOD_NAMES: MethodName[] = [
  'createSession', 'listSessions', 'readTranscript', 'searchTranscript', 'forkSession', 'deleteSession',
  'submitTurn', 'cancelTurn', 'getContextView', 'readArtifact', 'readEvents', 'listApprovals', 'revokeApproval',
  'compactSession', 'steerTurn', 'listCheckpoints', 'rewindFiles', 'listMcpServers', 'revokeMcpServerApproval',
  'updateSession', 'listModels', 'listCommands', 'listProcesses', 'stopProcess', 'mergeWorktree', 'discardWorktree',
];
