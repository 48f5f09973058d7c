/**
 * How one kind of event is stored (events/storage/): its own transaction when the event changes
 * more than its row. EventStorage picks the strategy by kind; a plain event goes to the writer's
 * grouped commit instead.
 */
import { WriteOutcome } from '../event-writer.service.js';
import { StoredEventInput } from '../stored-event.js';

export interface StorageStrategy {
  store(communityId: string, item: StoredEventInput): Promise<WriteOutcome>;
}
