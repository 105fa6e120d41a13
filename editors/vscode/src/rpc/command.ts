/** Split a command line like a POSIX shell would for plain words: spaces separate, quotes group, `\` escapes. */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (quote) {
      if (ch === quote) quote = null;
      else if (ch === '\\' && quote === '"' && i + 1 < line.length) word += line[++i];
      else word += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      inWord = true;
    } else if (ch === '\\' && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += ch;
      inWord = true;
    }
  }
  if (quote) throw new Error(`unterminated ${quote} quote in command: ${line}`);
  if (inWord) words.push(word);
  return words;
}

/** With the daemon, the same command's `serve` becomes `connect` (a bridge to the per-user daemon, started on
 *  demand), so sessions outlive the window and other clients' sessions can be attached. */
export function serverCommand(command: string, useDaemon: boolean): string {
  return useDaemon ? command.replace(/(^|\s)serve(\s|$)/, '$1connect$2') : command;
}
