/**
 * The kinds of the process memory budget and how it is divided between them (sums to 1). Config
 * derives the default total output buffer from the `output` share; the budget itself lives in
 * memory/memory-budget.ts.
 */
export type MemoryKind = 'output' | 'history' | 'filters' | 'auth_hold';

export const MEMORY_SHARES: Readonly<Record<MemoryKind, number>> = {
  output: 0.3,
  history: 0.3,
  filters: 0.3,
  auth_hold: 0.1,
};
