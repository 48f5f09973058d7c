import { Inject, Logger, Module, OnApplicationShutdown } from '@nestjs/common';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { ChannelsModule } from '../channels/channels.module.js';
import { ModerationModule } from '../moderation/moderation.module.js';
import { RedisModule } from '../redis/redis.module.js';
import { TenancyModule } from '../tenancy/tenancy.module.js';
import { EventBus } from './event-bus.js';
import { memoryBudgetProvider } from '../memory/memory-budget.provider.js';
import { MemoryBudget } from '../memory/memory-budget.js';
import { IngestGates } from './ingest-gates.service.js';
import { TargetVisibility } from './target-visibility.service.js';
import { SearchGate } from './search-gate.js';
import { SearchRepository } from './search.repository.js';
import { SearchService } from './search.service.js';
import { CountService } from './count.service.js';
import { EventQueryService } from './event-query.service.js';
import { EventReadRepository } from './event-read.repository.js';
import { EventWriteRepository } from './event-write.repository.js';
import { EventWriter } from './event-writer.service.js';
import { IngestService } from './ingest.service.js';
import { SignatureVerifier } from './signature-verifier.js';
import { CommandRegistry } from './command-registry.js';
import { EventPlacement } from './event-placement.service.js';
import { IngestFanout } from './ingest-fanout.js';
import { ThreadSummaryPublisher } from './thread-summary.publisher.js';
import { DeletionStorage } from './storage/deletion.storage.js';
import { EventStorage } from './storage/event-storage.service.js';
import { GroupCommandStorage } from './storage/group-command.storage.js';
import { ReactionStorage } from './storage/reaction.storage.js';
import { ReplaceableStorage } from './storage/replaceable.storage.js';

@Module({
  imports: [ChannelsModule, ModerationModule, TenancyModule, RedisModule],
  providers: [
    memoryBudgetProvider,
    IngestGates,
    TargetVisibility,
    SearchGate,
    SearchRepository,
    SearchService,
    {
      provide: SignatureVerifier,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => {
        const verifier = new SignatureVerifier({ poolSize: config.verifierThreads > 0 ? config.verifierThreads : undefined });
        const { backend, workers } = verifier.stats();
        new Logger('SignatureVerifier').log(`BIP-340 checks on ${workers} worker thread(s) with the ${backend === 'native' ? 'native libsecp256k1' : 'WASM (tiny-secp256k1)'} backend`);
        return verifier;
      },
    },
    EventBus,
    EventReadRepository,
    EventWriteRepository,
    EventWriter,
    EventQueryService,
    CountService,
    IngestService,
    CommandRegistry,
    EventPlacement,
    ThreadSummaryPublisher,
    IngestFanout,
    GroupCommandStorage,
    ReactionStorage,
    DeletionStorage,
    ReplaceableStorage,
    EventStorage,
  ],
  exports: [
    SignatureVerifier,
    MemoryBudget,
    EventBus,
    EventQueryService,
    CountService,
    IngestService,
    SearchService,
    // For the commands (src/commands/): they register here, and write and read like ingest.
    CommandRegistry,
    EventWriter,
    EventWriteRepository,
    TargetVisibility,
    ChannelsModule,
    ModerationModule,
  ],
})
export class EventsModule implements OnApplicationShutdown {
  constructor(@Inject(SignatureVerifier) private readonly verifier: SignatureVerifier) {}

  async onApplicationShutdown(): Promise<void> {
    await this.verifier.close();
  }
}
