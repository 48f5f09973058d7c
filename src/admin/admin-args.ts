/**
 * The operator CLI's command line (admin.cli.ts): parsed and checked before any service is loaded,
 * so bad input is answered at once with a clear message (exit status 2).
 */
import { parseArgs } from 'node:util';
import type { AppConfig } from '../config/app-config.js';
import { parsePubkey } from '../nostr/npub.js';
import { normalizeHost } from '../common/host.js';

export const USAGE = `usage: npm run admin -- <command> [options]
  create-community --host <host> [--name <name>] [--move]
  add-member <npub|hex> [--role member|admin] [--host <host>]
  set-role <npub|hex> --role member|admin [--host <host>]
  remove-member <npub|hex> [--host <host>]
  ban <npub|hex> [--reason <text>] [--expires <unix seconds>] [--host <host>]
  unban <npub|hex> [--host <host>]
  list-members [--host <host>]
  help
--host defaults to the first of BUZZ_DEFAULT_COMMUNITY_HOSTS (localhost).
The database is DATABASE_URL's; without it, that of the relay \`npm start\` runs in this checkout.`;

/** `help`, `--help` or `-h` anywhere: print USAGE and exit 0. */
export function wantsHelp(argv: readonly string[]): boolean {
  return argv[0] === 'help' || argv.includes('--help') || argv.includes('-h');
}

/** Bad input: exit 2 with the message and the usage. */
export class UsageError extends Error {}

export interface ParsedCommand {
  readonly command: string;
  readonly pubkey?: string;
  readonly host: string;
  /** No `--host` was given: the command acts on the first of BUZZ_DEFAULT_COMMUNITY_HOSTS (and says so). */
  readonly defaultHost: boolean;
  readonly role?: string;
  readonly reason?: string;
  readonly expires?: number;
  readonly name?: string;
  /** create-community: take the host from the community that has it as an alias. */
  readonly move?: boolean;
}

const NEEDS_PUBKEY = new Set(['add-member', 'set-role', 'remove-member', 'ban', 'unban']);
const COMMANDS = new Set([...NEEDS_PUBKEY, 'list-members', 'create-community']);

export function parseCommand(argv: readonly string[], config: AppConfig): ParsedCommand {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: { host: { type: 'string' }, role: { type: 'string' }, reason: { type: 'string' }, expires: { type: 'string' }, name: { type: 'string' }, move: { type: 'boolean' } },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const [command, ...rest] = parsed.positionals;
  const { values } = parsed;
  if (command === undefined) throw new UsageError('no command given');
  if (!COMMANDS.has(command)) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  const wantsPubkey = NEEDS_PUBKEY.has(command);
  if (rest.length !== (wantsPubkey ? 1 : 0)) throw new UsageError(wantsPubkey ? `${command} takes exactly one <npub|hex> pubkey` : `${command} takes no positional arguments`);
  if (command === 'create-community' && values.host === undefined) throw new UsageError('create-community needs --host <host>');
  const host = normalizeHost(values.host ?? config.defaultCommunityHosts[0]);
  if (host === undefined || /[\s/]/.test(host)) throw new UsageError(`invalid --host ${JSON.stringify(values.host ?? '')}`);
  if (command === 'set-role' && values.role === undefined) throw new UsageError('set-role needs --role member|admin');
  const allowed: Record<string, readonly string[]> = { 'add-member': ['role'], 'set-role': ['role'], ban: ['reason', 'expires'], 'create-community': ['name'] };
  if (values.move === true && command !== 'create-community') throw new UsageError(`--move does not apply to ${command}`);
  for (const opt of ['role', 'reason', 'expires', 'name'] as const) {
    if (values[opt] !== undefined && !(allowed[command] ?? []).includes(opt)) throw new UsageError(`--${opt} does not apply to ${command}`);
  }
  let pubkey: string | undefined;
  if (wantsPubkey) {
    const p = parsePubkey(rest[0]);
    if (!p.ok) throw new UsageError(p.reason);
    pubkey = p.pubkey;
  }
  if (values.role !== undefined && values.role !== 'member' && values.role !== 'admin') throw new UsageError('--role must be member or admin');
  let expires: number | undefined;
  if (values.expires !== undefined) {
    if (!/^\d{1,12}$/.test(values.expires) || Number(values.expires) <= Math.floor(Date.now() / 1000)) throw new UsageError('--expires must be a future unix time in seconds');
    expires = Number(values.expires);
  }
  return { command, pubkey, host, defaultHost: values.host === undefined, role: values.role, reason: values.reason, expires, name: values.name, move: values.move };
}
