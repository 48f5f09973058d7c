import { Module } from '@nestjs/common';
import { BanGate } from './ban-gate.service.js';
import { BanNotices } from './ban-notices.js';
import { ModerationRepository } from './moderation.repository.js';

@Module({
  providers: [ModerationRepository, BanGate, BanNotices],
  exports: [ModerationRepository, BanGate, BanNotices],
})
export class ModerationModule {}
