import type { Provider } from '@nestjs/common';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/config.tokens.js';
import { counter, gauge } from '@buzz-relay/read-path/internal';
import { MemoryBudget, MemoryMetrics } from './memory-budget.js';

/** The memory families (docs/operator.md): the budget and use per kind, refusals per kind and reason. */
export function memoryMetrics(): MemoryMetrics {
  return {
    budget: gauge({ name: 'buzz_memory_budget_bytes', help: 'Bytes of the process memory budget given to each kind of client-driven memory', labelNames: ['kind'] }),
    inUse: gauge({ name: 'buzz_memory_in_use_bytes', help: 'Bytes of the process memory budget in use, by kind', labelNames: ['kind'] }),
    refusals: counter({
      name: 'buzz_memory_refusals_total',
      help: 'Work refused because it did not fit the memory budget: reason=process, the kind is full; reason=key, the key holds its share',
      labelNames: ['kind', 'reason'],
    }),
  };
}

/** One MemoryBudget per process, sized by BUZZ_MEMORY_BUDGET_BYTES (default half the heap limit). */
export const memoryBudgetProvider: Provider = {
  provide: MemoryBudget,
  inject: [APP_CONFIG],
  useFactory: (config: AppConfig) => new MemoryBudget(config.limits.memoryBudgetBytes, config.limits.keySharePercent, memoryMetrics(), { output: config.limits.sendBufferTotalBytes }),
};
