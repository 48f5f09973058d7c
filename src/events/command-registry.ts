/**
 * The kinds that are executed rather than stored (relay.md §1.3, §5.2 steps 7 and 11): moderation,
 * relay administration, reports. Ingest knows them only through this registry; the commands live
 * above events/ (src/commands/) and register the kinds they handle when their module starts.
 */
import { Injectable } from '@nestjs/common';
import { EXECUTED_KINDS } from '../nostr/kinds.js';
import { NostrEvent } from '../nostr/nostr.types.js';

/** One command family: the kinds it handles and how it executes one of them. */
export interface EventCommand {
  readonly kinds: ReadonlySet<number>;
  /** Resolves with the `OK` message, or throws a Rejection. */
  execute(communityId: string, event: NostrEvent): Promise<string>;
}

@Injectable()
export class CommandRegistry {
  private readonly byKind = new Map<number, EventCommand>();

  /** Registers a command for its kinds; a kind claimed twice is a wiring error, and registers none of them. */
  register(command: EventCommand): void {
    const taken = [...command.kinds].find((kind) => this.byKind.has(kind));
    if (taken !== undefined) throw new Error(`kind ${taken} already has a command`);
    for (const kind of command.kinds) this.byKind.set(kind, command);
  }

  /**
   * The command that executes `kind`, or undefined for a kind that is stored. A kind the relay
   * executes (EXECUTED_KINDS) with no command registered is a wiring fault (a composition without
   * CommandsModule): it throws, so the event is refused as an internal error rather than stored
   * as if it were an ordinary one.
   */
  commandFor(kind: number): EventCommand | undefined {
    const command = this.byKind.get(kind);
    if (command === undefined && EXECUTED_KINDS.has(kind)) throw new Error(`kind ${kind} is executed by the relay but no command is registered for it`);
    return command;
  }
}
