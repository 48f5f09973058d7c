import { Module } from '@nestjs/common';
import { ModerationRepository } from './moderation.repository.js';

@Module({
  providers: [ModerationRepository],
  exports: [ModerationRepository],
})
export class ModerationModule {}
