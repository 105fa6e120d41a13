// Messages between the extension host and the webviews (no vscode import: the webview bundle uses them too).
import type {
  ApprovalDecision,
  CommandInfo,
  ContextViewResult,
  EventItem,
  McpServerInfo,
  RequestApprovalParams,
  SessionInfo,
  SessionUpdate,
  SubmitTurnResult,
  TranscriptItem,
} from '../rpc/protocol';

export type ServerState = 'starting' | 'running' | 'crashed' | 'stopped';

export type ToWebview =
  | { type: 'server'; state: ServerState; message?: string }
  | { type: 'sessions'; sessions: SessionInfo[]; currentId?: string }
  | { type: 'session'; session: SessionInfo | { sessionId: string; title: string }; history: TranscriptItem[];
      events?: EventItem[] }
  | { type: 'update'; params: SessionUpdate }
  | { type: 'approval'; requestId: string; params: RequestApprovalParams }
  | { type: 'approvalClosed'; requestId: string; decision?: ApprovalDecision }
  | { type: 'turn'; running: boolean; result?: SubmitTurnResult; error?: string }
  | { type: 'meter'; contextTokens: number; contextWindowTokens: number; estimated?: boolean; budget?: string }
  | { type: 'error'; message: string }
  | { type: 'focusInput' }
  | { type: 'mcpServers'; servers: McpServerInfo[] }
  | { type: 'prefill'; text: string }
  | { type: 'model'; label: string }
  | { type: 'sandbox'; text: string; title: string; warn: boolean }
  | { type: 'contextView'; view: ContextViewResult; sessionTitle?: string }
  | { type: 'chips'; chips: { label: string; index: number }[] }
  | { type: 'completions'; prefix: string; items: string[] }
  | { type: 'commands'; commands: CommandInfo[] };

export type FromWebview =
  | { type: 'ready' }
  | { type: 'submit'; text: string }
  | { type: 'steer'; text: string }
  | { type: 'queue'; text: string }
  | { type: 'compact' }
  | { type: 'rewindTurn'; turnId: string; text?: string }
  | { type: 'rewindEdit'; turnId: string; toolCallId: string }
  | { type: 'openDiff'; toolCallId: string }
  | { type: 'cancel' }
  | { type: 'newSession' }
  | { type: 'selectSession'; sessionId: string }
  | { type: 'forkSession'; atSeq?: number }
  | { type: 'deleteSession' }
  | { type: 'approve'; requestId: string; decision: ApprovalDecision }
  | { type: 'openArtifact'; artifactId: string }
  | { type: 'showContextView' }
  | { type: 'pickModel' }
  | { type: 'refreshContextView' }
  | { type: 'removeChip'; index: number }
  | { type: 'complete'; prefix: string };
