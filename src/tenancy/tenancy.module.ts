import { Module } from '@nestjs/common';
import { CommunityRepository } from './community.repository.js';
import { TenancyService } from './tenancy.service.js';

@Module({
  providers: [CommunityRepository, TenancyService],
  exports: [CommunityRepository, TenancyService],
})
export class TenancyModule {}
