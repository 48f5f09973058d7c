/**
 * The commands carried as events: moderation (9040–9044), relay administration (9030–9033, the
 * NIP-43 leave 28936) and reports (1984). Each registers its kinds with ingest's CommandRegistry
 * when the module starts, so events/ executes them without importing them. The operator CLI calls
 * the relay-admin and moderation operations directly.
 */
import { Module, OnModuleInit } from '@nestjs/common';
import { EventsModule } from '../events/events.module.js';
import { CommandRegistry } from '../events/command-registry.js';
import { ModerationModule } from '../moderation/moderation.module.js';
import { RedisModule } from '../redis/redis.module.js';
import { TenancyModule } from '../tenancy/tenancy.module.js';
import { CommandReplayGuard } from './command-replay.guard.js';
import { ModerationCommands } from './moderation.commands.js';
import { Nip43State } from './nip43-state.service.js';
import { RelayAdminCommands } from './relay-admin.commands.js';
import { ReportIntake } from './report.commands.js';
import { MembershipChanges } from './membership-changes.service.js';
import { WorkspaceProfiles } from './workspace-profiles.service.js';

@Module({
  imports: [EventsModule, ModerationModule, TenancyModule, RedisModule],
  providers: [CommandReplayGuard, Nip43State, MembershipChanges, WorkspaceProfiles, RelayAdminCommands, ModerationCommands, ReportIntake],
  exports: [RelayAdminCommands, ModerationCommands],
})
export class CommandsModule implements OnModuleInit {
  constructor(
    private readonly registry: CommandRegistry,
    private readonly relayAdmin: RelayAdminCommands,
    private readonly moderation: ModerationCommands,
    private readonly reports: ReportIntake,
  ) {}

  onModuleInit(): void {
    for (const command of [this.reports, this.moderation, this.relayAdmin]) this.registry.register(command);
  }
}
