/**
 * What a person sees once `npm start` is up, when stdout is a terminal (main.ts): where to connect,
 * which database it uses and the next three commands, as one plain block after the JSON start-up
 * lines. Piped or collected output stays JSON only.
 */

export interface BannerInput {
  /** ws://host:port of the relay. */
  readonly wsUrl: string;
  readonly metricsUrl: string;
  readonly writerUrl: string;
  readonly readerUrl?: string;
  /** Set when the relay started its own Postgres pair (no DATABASE_URL): where its data lives. */
  readonly embeddedDir?: string;
}

const DEFAULT_WS_URL = 'ws://localhost:3000';

/** A connection URL without its password (`postgres://user:***@host/db`). */
export function withoutPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password === '') return url;
    u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}

export function startBanner(b: BannerInput): string {
  const httpUrl = b.wsUrl.replace(/^ws/, 'http');
  const reader = b.readerUrl ? withoutPassword(b.readerUrl) : 'none (history reads use the writer)';
  const database = b.embeddedDir
    ? [`embedded writer + streaming replica, data in ${b.embeddedDir}`, `writer ${withoutPassword(b.writerUrl)}`, `reader ${reader}`]
    : [`writer ${withoutPassword(b.writerUrl)}`, `reader ${reader}`];
  const relayEnv = b.wsUrl === DEFAULT_WS_URL ? '' : `RELAY_URL=${b.wsUrl} `;
  const rows: Array<[string, string[]]> = [
    ['WebSocket', [`${b.wsUrl}  (NIP-01, authenticate with NIP-42)`]],
    ['HTTP bridge', [`${httpUrl}  (POST /query, /count, /events with NIP-98; GET / for NIP-11)`]],
    ['Metrics', [b.metricsUrl]],
    ['Database', database],
  ];
  const next: Array<[string, string]> = [
    ['create a channel', `${relayEnv}npm run create-channel -- general`],
    // On the embedded pair the CLI finds this relay's database itself (.data/embedded.json).
    ['add a member', `npm run admin -- add-member <npub>${b.embeddedDir ? '' : "  (with this relay's DATABASE_URL)"}`],
    ['open the docs', 'README.md (first contact), docs/moderation.md (channels, members), docs/operator.md'],
  ];
  const lines = ['', 'buzz-relay is ready', ''];
  for (const [label, values] of rows) values.forEach((v, i) => lines.push(`  ${(i === 0 ? label : '').padEnd(12)} ${v}`));
  lines.push('', 'Next:');
  for (const [what, command] of next) lines.push(`  ${what.padEnd(17)} ${command}`);
  lines.push('', 'Stop with Ctrl-C. Logs above are JSON (pipe stdout to get only those).', '');
  return lines.join('\n');
}
