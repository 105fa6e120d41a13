// The scripted "long task" used by the recorder and the in-editor test: streamed markdown (with an injection
// attempt), reasoning, a read-only tool, an approved write, a command whose output becomes an artifact, then
// enough filler turns that a small context window compacts.
export const INJECTION = 'Model says <script>window.__pwned = 1</script> and <img src=x onerror="window.__pwned = 2">.';

export const TURNS = [
  {
    text: 'Look around and tell me what is here.',
    script: [
      { reasoning: 'The user wants an overview. I will list the files first.', content: 'Let me list the files.', chunks: 3,
        tool_calls: [{ id: 'call_ls', name: 'list_files', arguments: { path: '.' } }] },
      { content: `## Overview\n\nThe folder holds **notes.md** and \`app.py\`.\n\n\`\`\`python\nprint("hello")\n\`\`\`\n\n${INJECTION}\n\n- [docs](https://example.com/docs)\n- [bad](javascript:alert(1))`, chunks: 6 },
    ],
  },
  {
    text: 'Write hello.txt, then run the big report command.',
    script: [
      { content: 'Writing the file.', tool_calls: [{ id: 'call_write', name: 'write_file', arguments: { path: 'hello.txt', content: 'hello from threadline\n' } }] },
      { content: 'Now the report.', tool_calls: [{ id: 'call_report', name: 'run_command', arguments: { command: "python3 -c \"print('\\n'.join('report line %d ' % i + 'x' * 40 for i in range(3000)))\"" } }] },
      { content: 'The report is long, so it was stored as an artifact. Open it from the tool card.', chunks: 3 },
    ],
    approvals: ['allowOnce', 'allowOnce'],
  },
];

const filler = (i) => `Step ${i}: ${'working through the task in detail; '.repeat(40)}`;
export const FILLER_TURNS = Array.from({ length: 8 }, (_, i) => ({
  text: `Continue with step ${i + 1}. ${'Please keep the earlier context in mind. '.repeat(10)}`,
  script: [{ content: filler(i + 1), chunks: 4 }],
}));

// Issue 18: an edit_file proposed twice, reviewed in VS Code's diff editor (rejected, then allowed), then rewound
// from its turn's menu. app.py starts as print("hello").
const edit = (id) => ({ content: 'Proposing an edit to app.py.', tool_calls: [{ id, name: 'edit_file', arguments: { path: 'app.py', old_string: 'hello', new_string: 'bonjour' } }] });
export const EDIT_TURNS = [
  { text: 'Say bonjour in app.py.', script: [edit('call_edit_rejected'), { content: 'Understood, app.py stays as it is.' }] },
  { text: 'Please do change app.py to bonjour.', script: [edit('call_edit_allowed'), { content: 'app.py now says bonjour.' }] },
];
