/** The registry ingest looks an executed kind's command up in. */
import { NostrEvent } from '../nostr/nostr.types.js';
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
    const first = command([9030]);
    registry.register(first);
    expect(() => registry.register(command([9031, 9030]))).toThrow('kind 9030 already has a command');
    expect(registry.commandFor(9030)).toBe(first);
    expect(registry.commandFor(9031)).toBeUndefined();
  });
});
