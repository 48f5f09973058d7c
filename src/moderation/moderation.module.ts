import { Module } from '@nestjs/common';
import { AccessRevocations } from './access-revocations.js';
import { BanCache } from './ban-cache.js';
import { BanGate } from './ban-gate.service.js';
import { BanNotices } from './ban-notices.js';
import { BanNotifyListener } from './ban-notify-listener.service.js';
import { ModerationQueueRepository } from './moderation-queue.repository.js';
import { ModerationRepository } from './moderation.repository.js';
import { RelayAuthority } from './relay-authority.service.js';
import { RelayMembershipRepository } from './relay-membership.repository.js';

const EXPORTED = [ModerationRepository, BanGate, BanNotices, AccessRevocations, RelayMembershipRepository, RelayAuthority, ModerationQueueRepository];

@Module({
  providers: [...EXPORTED, BanCache, BanNotifyListener],
  exports: EXPORTED,
})
export class ModerationModule {}
