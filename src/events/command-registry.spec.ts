/** The registry ingest looks an executed kind's command up in. */
import { NostrEvent } from '../nostr/nostr.types.js';
import { KIND } from '../nostr/kinds.js';
import { CommandRegistry, EventCommand } from './command-registry.js';

const command = (kinds: number[], answer = ''): EventCommand => ({
  kinds: new Set(kinds),
  execute: async (_communityId: string, _event: NostrEvent) => answer,
});

describe('CommandRegistry', () => {
  it('finds the command registered for a kind, and none for a stored kind', () => {
    const registry = new CommandRegistry();
    const moderation = command([9040, 9041]);
    const reports = command([1984]);
    registry.register(moderation);
    registry.register(reports);
    expect(registry.commandFor(9041)).toBe(moderation);
    expect(registry.commandFor(1984)).toBe(reports);
    expect(registry.commandFor(1)).toBeUndefined();
  });

  it('refuses a command that claims a taken kind, and registers none of its kinds', () => {
    const registry = new CommandRegistry();
    const first = command([31030]);
    registry.register(first);
    expect(() => registry.register(command([31031, 31030]))).toThrow('kind 31030 already has a command');
    expect(registry.commandFor(31030)).toBe(first);
    expect(registry.commandFor(31031)).toBeUndefined();
  });

  it('fails closed on an executed kind with no command: the event is never taken for a stored one', () => {
    const registry = new CommandRegistry();
    registry.register(command([KIND.MODERATION_BAN]));
    expect(() => registry.commandFor(KIND.REPORT)).toThrow(`kind ${KIND.REPORT} is executed by the relay but no command is registered for it`);
    expect(() => registry.commandFor(KIND.RELAY_ADMIN_ADD_MEMBER)).toThrow(/no command is registered/);
    expect(registry.commandFor(KIND.MODERATION_BAN)).toBeDefined();
  });
});
