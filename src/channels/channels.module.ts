import { Module } from '@nestjs/common';
import { ChannelAccessService } from './channel-access.service.js';
import { ChannelRepository } from './channel.repository.js';
import { GroupCommandService } from './group-commands.service.js';
import { ReadAccessService } from './read-access.service.js';

@Module({
  providers: [ChannelRepository, ChannelAccessService, GroupCommandService, ReadAccessService],
  exports: [ChannelRepository, ChannelAccessService, GroupCommandService, ReadAccessService],
})
export class ChannelsModule {}
