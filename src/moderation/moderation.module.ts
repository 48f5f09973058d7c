import { Module } from '@nestjs/common';
import { AccessRevocations } from './access-revocations.js';
import { BanGate } from './ban-gate.service.js';
import { BanNotices } from './ban-notices.js';
import { ModerationRepository } from './moderation.repository.js';
import { RelayAuthority } from './relay-authority.service.js';
import { RelayMembershipRepository } from './relay-membership.repository.js';

const PROVIDERS = [ModerationRepository, BanGate, BanNotices, AccessRevocations, RelayMembershipRepository, RelayAuthority];

@Module({ providers: PROVIDERS, exports: PROVIDERS })
export class ModerationModule {}
