/**
 * `npm run admin -- <command>`: what an operator does before any client can: create the community,
 * add the first members, ban and unban, list members. Each command goes through the services the
 * events use (RelayAdminCommands, ModerationCommands) with the operator's authority, so the
 * NIP-43 state (8000/8001, 13534) and the revocation of open sockets (over Redis, when
 * BUZZ_REDIS_URL is set) follow as they do for a signed command. Usage: docs/operator.md.
 * Loaded only after the command line parsed (admin-args.ts).
 */
import { INestApplicationContext } from '@nestjs/common';
import type { AppConfig } from '../config/app-config.js';
import { ModerationCommands } from '../commands/moderation.commands.js';
import { RelayAdminCommands } from '../commands/relay-admin.commands.js';
import { RelayMembershipRepository } from '../moderation/relay-membership.repository.js';
import { CommunityRepository } from '../tenancy/community.repository.js';
import { hostWithoutPort } from '../common/host.js';
import { ParsedCommand, UsageError } from './admin-args.js';

/** Runs one parsed command; resolves with the lines to print. A refusal throws the service's Rejection. */
export async function runCommand(app: INestApplicationContext, cmd: ParsedCommand, config: AppConfig): Promise<string[]> {
  const communities = app.get(CommunityRepository);
  const members = app.get(RelayMembershipRepository);
  if (cmd.command === 'create-community') {
    // One host belongs to one community: a host that is already another community's (its
    // primary host or an alias) is not taken over, which would leave its clients in an empty one.
    const owner = await communities.findByHost([cmd.host]);
    if (owner !== undefined && owner.host !== cmd.host) {
      // The host is an alias of another community (its own host is never taken: that community
      // would be left with none). Moving it is said explicitly, and said before it is done.
      if (!cmd.move) {
        throw new UsageError(
          `host ${cmd.host} already belongs to the community of ${owner.host} (${owner.id}): one host belongs to one community; ` +
            `to move it to a new community (its clients then see that community's history, not this one's): create-community --host ${cmd.host} --move`,
        );
      }
      process.stderr.write(`admin: moving host ${cmd.host} from the community of ${owner.host} (${owner.id}) to a new community\n`);
    }
    const id = await communities.ensureCommunity([cmd.host], cmd.name ?? cmd.host, owner !== undefined && owner.host !== cmd.host);
    const lines = [`community ${cmd.host}: ${id}`];
    if (config.relayOwnerPubkey !== undefined) {
      await members.ensureOwnerEverywhere(config.relayOwnerPubkey);
      lines.push(`owner ${config.relayOwnerPubkey} (RELAY_OWNER_PUBKEY)`);
    } else {
      lines.push('no RELAY_OWNER_PUBKEY set: add an admin with add-member --role admin');
    }
    return lines;
  }
  const community = await communities.findByHost([cmd.host, hostWithoutPort(cmd.host)]);
  if (!community) throw new UsageError(`no community for host ${cmd.host} (create it with create-community --host ${cmd.host})`);
  const admin = app.get(RelayAdminCommands);
  const moderation = app.get(ModerationCommands);
  const pk = cmd.pubkey!;
  switch (cmd.command) {
    case 'list-members': {
      const rows = await members.withWriter('maintenance', (db) => members.members(db, community.id));
      return rows.length === 0 ? [`no members in ${cmd.host}`] : rows.map((r) => `${r.pubkey} ${r.role}`);
    }
    case 'add-member': {
      const wanted = cmd.role ?? 'member';
      await admin.addMember(community.id, 'operator', pk, wanted);
      // Said as it is now: an existing member keeps their role, whatever --role asked for.
      const rows = await members.withWriter('maintenance', (db) => members.members(db, community.id));
      const role = rows.find((r) => r.pubkey === pk)?.role ?? wanted;
      if (role === wanted) return [`${pk} is ${withArticle(role)} of ${cmd.host}`];
      return [`${pk} is already ${withArticle(role)} of ${cmd.host} and stays one: add-member never changes a role (set-role ${pk} --role ${wanted} does)`];
    }
    case 'set-role': {
      const before = (await members.withWriter('maintenance', (db) => members.members(db, community.id))).find((r) => r.pubkey === pk)?.role;
      if (before === undefined) throw new UsageError(`${pk} is not a member of ${cmd.host} (add-member --role ${cmd.role} adds them)`);
      if (before === cmd.role) return [`${pk} is already ${withArticle(before)} of ${cmd.host}: nothing changed`];
      await admin.changeRole(community.id, 'operator', pk, cmd.role);
      return [`${pk} is now ${withArticle(cmd.role!)} of ${cmd.host} (was ${withArticle(before)})`];
    }
    case 'remove-member':
      await admin.removeMember(community.id, 'operator', pk);
      return [`${pk} removed from ${cmd.host}`];
    case 'ban':
      await moderation.ban(community.id, 'operator', pk, cmd.reason ?? null, cmd.expires);
      return [`${pk} banned from ${cmd.host}${cmd.expires ? ` until ${cmd.expires}` : ''}`];
    default:
      await moderation.unban(community.id, 'operator', pk);
      return [`${pk} unbanned in ${cmd.host}`];
  }
}

/** `a member`, `an admin`, `an owner`. */
function withArticle(role: string): string {
  return `${/^[aeiou]/.test(role) ? 'an' : 'a'} ${role}`;
}
