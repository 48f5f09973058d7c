import { Module } from '@nestjs/common';
import { BanCache } from './ban-cache.js';
import { BanGate } from './ban-gate.service.js';
import { BanNotices } from './ban-notices.js';
import { BanNotifyListener } from './ban-notify-listener.service.js';
import { ModerationRepository } from './moderation.repository.js';

@Module({
  providers: [ModerationRepository, BanCache, BanGate, BanNotices, BanNotifyListener],
  exports: [ModerationRepository, BanGate, BanNotices],
})
export class ModerationModule {}
