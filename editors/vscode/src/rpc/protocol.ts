// Wire types of the Threadline protocol (camelCase), mirroring protocol/messages.py and protocol/updates.py.
// protocol/schema.json is the source of truth; test/unit/schema.test.mjs checks these names against it.

export type ApprovalPolicy = 'ask' | 'autoEdit' | 'auto';
export type ApprovalDecision = 'allowOnce' | 'allowAlways' | 'reject';
export type StopReason = 'endTurn' | 'cancelled' | 'maxIterations' | 'error';
export type ViewMode = 'full' | 'microcompacted' | 'summarized' | 'fallback';

export interface ProviderOptions {
  baseUrl?: string;
  apiKey?: string;
  model?: string;
  contextWindowTokens?: number;
}

export interface InitializationOptions {
  provider?: ProviderOptions;
  approvalPolicy?: ApprovalPolicy;
}

export interface OpenAIToolCall {
  id: string;
  type?: 'function';
  function: { name: string; arguments: string };
}

export interface SessionInfo {
  sessionId: string;
  title: string;
  cwd: string;
  createdAt: string;
  updatedAt: string;
  messageCount: number;
  parentSessionId?: string;
  model?: string;
  approvalPolicy?: ApprovalPolicy;
  /** The session's stored usage, summed; absent before its first model call. `costUsd` absent: no price known. */
  totals?: { inputTokens: number; outputTokens: number; cachedInputTokens: number; cacheWriteTokens: number; costUsd?: number };
}

export interface TranscriptItem {
  seq: number;
  role: string;
  content: string | null;
  createdAt?: string;
  toolCalls?: OpenAIToolCall[];
  toolCallId?: string;
  name?: string;
  reasoning?: string;
  status?: 'complete' | 'interrupted';
  turnId?: string;
  /** Tool messages: how the call ended. */
  toolStatus?: 'ok' | 'error' | 'denied';
}

export interface TurnUsage {
  inputTokens: number;
  outputTokens: number;
  contextTokens: number;
  contextWindowTokens: number;
  cachedInputTokens?: number; // B-CACHE-5: of inputTokens, served from the provider's prompt cache
}

export interface TurnError {
  code: string;
  message: string;
}

export interface SubmitTurnResult {
  turnId: string;
  stopReason: StopReason;
  usage: TurnUsage;
  error?: TurnError;
}

export interface ContextViewResult {
  messages: Array<Record<string, unknown>>;
  estimatedTokens: number;
  thresholdTokens: number;
  contextWindowTokens: number;
  keepRecentTokens: number;
  mode: ViewMode;
  compactedToolOutputs: number;
  transcriptMessages: number;
  beforeTokens?: number;
  summary?: string;
  reservedTokens?: number;
  compactTargetTokens?: number; // what a new summary compaction aims at (B-CACHE-2)
  stablePrefixTokens?: number; // leading tokens identical to the last request sent (B-CACHE-1)
}

export interface CompactSessionResult {
  compacted: boolean;
  mode: ViewMode;
  beforeTokens: number;
  afterTokens: number;
  summary?: string;
}

export interface ReadArtifactParams {
  sessionId: string;
  artifactId: string;
  byteRange?: { offset: number; length: number };
  lineRange?: { start: number; end: number };
  search?: { pattern: string; maxMatches?: number };
}

export interface ReadArtifactResult {
  artifactId: string;
  totalBytes: number;
  totalLines: number;
  content?: string;
  matches?: Array<{ line: number; text: string; byteOffset: number }>;
  searchNote?: string;
}

export type Update =
  | { kind: 'turnStarted' }
  | { kind: 'userMessage'; text: string; steered?: boolean }
  | { kind: 'assistantDelta'; text: string }
  | { kind: 'reasoningDelta'; text: string }
  | { kind: 'assistantMessage'; content: string; reasoning?: string; toolCalls?: OpenAIToolCall[]; interrupted?: boolean }
  | { kind: 'toolCall'; toolCallId: string; tool: string; arguments: unknown; title?: string }
  | { kind: 'toolResult'; toolCallId: string; tool: string; status: 'ok' | 'error' | 'denied'; content: string; artifactId?: string;
      diff?: FileDiff }
  | { kind: 'artifactCreated'; artifactId: string; toolCallId: string; totalBytes: number; totalLines: number }
  | { kind: 'contextCompacted'; mode: ViewMode; beforeTokens: number; afterTokens: number; summary: string }
  | { kind: 'usage'; contextTokens: number; contextWindowTokens: number; inputTokens: number; outputTokens: number;
      cachedInputTokens?: number; cacheWriteTokens?: number; costUsd?: number;
      totals?: { inputTokens: number; outputTokens: number; cachedInputTokens?: number; cacheWriteTokens?: number;
        costUsd?: number } }
  | { kind: 'turnCompleted'; stopReason: StopReason; error?: TurnError }
  | { kind: 'notice'; level: 'info' | 'warning' | 'error'; message: string }
  | { kind: 'mcpServerStatus'; name: string; state: McpServerState; transport: 'stdio' | 'http'; reason?: string;
      tools?: string[] };

export type McpServerState = 'stopped' | 'starting' | 'ready' | 'failed' | 'needsApproval';

/** One MCP server (listMcpServers). */
export interface McpServerInfo {
  name: string;
  origin: 'user' | 'project' | 'client';
  transport: 'stdio' | 'http';
  state: McpServerState;
  commandLine: string;
  tools: Array<{ name: string; modelName: string; description?: string }>;
  reason?: string;
  restarts?: number;
}

export interface SessionUpdate {
  sessionId: string;
  turnId?: string;
  seq?: number;
  update: Update;
}

/** An edit_file/write_file change as whole texts (oldText is empty for a new file). */
export interface FileDiff {
  path: string;
  oldText: string;
  newText: string;
}

export interface RequestApprovalParams {
  sessionId: string;
  turnId: string;
  toolCallId: string;
  tool: string;
  title: string;
  detail: string;
  options: ApprovalDecision[];
  diff?: FileDiff;
}

/** listCheckpoints: each turn and the files its tool calls changed. */
export interface TurnCheckpoints {
  turnId: string;
  seq: number;
  createdAt: string;
  files: Array<{ path: string; change: 'created' | 'modified'; restorable: boolean; toolCallId: string; note?: string }>;
}

export type RewindStatus = 'restored' | 'unchanged' | 'conflicted' | 'notRestorable';

export interface RewindFilesResult {
  files: Array<{ path: string; status: RewindStatus; change?: 'restored' | 'removed'; detail?: string }>;
  dryRun?: boolean;
  note: string;
}


/** A stored event (readEvents): compactions, approval requests and decisions, notices. */
export interface EventItem {
  id: number;
  kind: string;
  createdAt: string;
  turnId?: string;
  payload: Record<string, unknown>;
}

/** A remembered "allow always" (listApprovals / revokeApproval). */
export interface RememberedApproval {
  id: string;
  tool: string;
  scope: string;
  covers: string;
  createdAt: string;
}

/** USD per million tokens; `cachedInput` and `cacheWrite` absent mean the input rate. */
export interface ModelPrice {
  input: number;
  output: number;
  cachedInput?: number | null;
  cacheWrite?: number | null;
}

/** A configured model (listModels); `name` is null for the server's default provider. */
export interface ModelInfo {
  name: string | null;
  provider: string;
  model: string;
  contextWindowTokens: number;
  price?: ModelPrice | null;
}

export interface ListModelsResult {
  models: ModelInfo[];
  default?: ModelInfo | null;
}

/** The session's settings after updateSession; absent fields mean the server's defaults. */
export interface UpdateSessionResult {
  sessionId: string;
  model?: string | null;
  approvalPolicy?: ApprovalPolicy | null;
  contextWindowTokens: number;
}

/** Client -> server methods: params and result of each. */
export interface Methods {
  createSession: [{ cwd: string; title?: string; approvalPolicy?: ApprovalPolicy; model?: string }, { sessionId: string }];
  updateSession: [{ sessionId: string; model?: string | null; approvalPolicy?: ApprovalPolicy | null }, UpdateSessionResult];
  listModels: [Record<string, never>, ListModelsResult];
  listSessions: [{ cwd?: string; limit?: number }, { sessions: SessionInfo[] }];
  readTranscript: [{ sessionId: string; afterSeq?: number; limit?: number }, { items: TranscriptItem[]; nextSeq?: number }];
  searchTranscript: [{ query: string; sessionId?: string; limit?: number },
    { hits: Array<{ sessionId: string; seq: number; role: string; snippet: string }> }];
  forkSession: [{ sessionId: string; atSeq?: number }, { sessionId: string }];
  deleteSession: [{ sessionId: string }, Record<string, never>];
  submitTurn: [{ sessionId: string; text: string; images?: Array<{ mimeType: string; data: string }>; queue?: boolean },
    SubmitTurnResult];
  cancelTurn: [{ sessionId: string }, { cancelled: boolean }];
  steerTurn: [{ sessionId: string; text: string }, { turnId: string }];
  compactSession: [{ sessionId: string; focus?: string }, CompactSessionResult];
  listCheckpoints: [{ sessionId: string }, { turns: TurnCheckpoints[]; note: string }];
  rewindFiles: [{ sessionId: string; toTurnId: string; toolCallId?: string; dryRun?: boolean; force?: boolean },
    RewindFilesResult];
  getContextView: [{ sessionId: string; contextWindowTokens?: number; thresholdRatio?: number; keepRecentTokens?: number },
    ContextViewResult];
  readArtifact: [ReadArtifactParams, ReadArtifactResult];
  readEvents: [{ sessionId: string; kinds?: string[]; afterId?: number; limit?: number },
    { events: EventItem[]; nextId?: number }];
  listApprovals: [{ sessionId: string }, { approvals: RememberedApproval[] }];
  revokeApproval: [{ sessionId: string; id: string }, { revoked: RememberedApproval }];
  listMcpServers: [{ sessionId?: string }, { servers: McpServerInfo[] }];
  revokeMcpServerApproval: [{ cwd: string; name: string }, { revoked: boolean }];
}

export type MethodName = keyof Methods;
export type ParamsOf<M extends MethodName> = Methods[M][0];
export type ResultOf<M extends MethodName> = Methods[M][1];
export const METHOD_NAMES: MethodName[] = [
  'createSession', 'listSessions', 'readTranscript', 'searchTranscript', 'forkSession', 'deleteSession',
  'submitTurn', 'cancelTurn', 'getContextView', 'readArtifact', 'readEvents', 'listApprovals', 'revokeApproval',
  'compactSession', 'steerTurn', 'listCheckpoints', 'rewindFiles', 'listMcpServers', 'revokeMcpServerApproval',
  'updateSession', 'listModels',
];
