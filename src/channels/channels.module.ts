import { Module } from '@nestjs/common';
import { RelaySigner } from '../common/relay-signer.js';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { ChannelAccessService } from './channel-access.service.js';
import { ChannelRanks } from './channel-ranks.service.js';
import { ChannelRepository } from './channel.repository.js';
import { GroupCommandService } from './group-commands.service.js';
import { GroupStateService } from './group-state.service.js';
import { ReadAccessService } from './read-access.service.js';
import { ModerationModule } from '../moderation/moderation.module.js';

/**
 * Channels, membership and NIP-29 state. It also owns the relay's one signing key
 * (BUZZ_RELAY_PRIVATE_KEY, random per process when unset), so stored group state and the
 * bridge's overlays are signed by the same key.
 */
@Module({
  imports: [ModerationModule],
  providers: [
    ChannelRepository,
    ChannelAccessService,
    ChannelRanks,
    GroupCommandService,
    GroupStateService,
    ReadAccessService,
    { provide: RelaySigner, inject: [APP_CONFIG], useFactory: (config: AppConfig) => new RelaySigner(config.relayPrivateKey) },
  ],
  exports: [ChannelRepository, ChannelAccessService, GroupCommandService, GroupStateService, ReadAccessService, RelaySigner],
})
export class ChannelsModule {}
