/**
 * The `path` labels of buzz_db_route_decision and buzz_db_reader_spill_total. The relay's own
 * eighteen (database.md §6.1) are always known; a service that imports the read path adds its
 * own at module set-up, and the set is closed from the first routed read on, so the metrics'
 * series stay bounded per process and a typo fails loudly instead of minting a series.
 *
 *   RoutedReaderModule.forRoot({ readMaxAgeMs: 2000, routePathLabels: ['reports_daily', 'reports_export'] })
 *   // or, in a provider's constructor: routePaths.register('reports_daily')
 *
 * RoutedReaderModule provides it (routed-reader.module.ts).
 */
import { ROUTE_PATHS, type RoutePathLabel } from '../metrics/database-metrics.service.js';

/** A label is a Prometheus label value the relay would also pick: lower snake case, at most 63 characters. */
const LABEL_SHAPE = /^[a-z][a-z0-9_]{0,62}$/;

/** A routed read named a path nobody registered. */
export class UnknownRoutePathError extends Error {
  constructor(readonly path: string) {
    super(`unknown route path label "${path}": register it with RoutePaths.register() (or RoutedReaderModule's routePathLabels) at module set-up`);
    this.name = 'UnknownRoutePathError';
  }
}

export class RoutePaths {
  private readonly known = new Set<string>(ROUTE_PATHS);
  private sealed = false;

  constructor(labels: readonly string[] | null = null) {
    this.register(...(labels ?? []));
  }

  /**
   * Adds labels (idempotent for one already known). Refused once a routed read has run: the set
   * is closed per process from then on.
   */
  register(...labels: string[]): this {
    for (const label of labels) {
      if (this.known.has(label)) continue;
      if (this.sealed) throw new Error(`route path label "${label}" registered after the first routed read: register labels at module set-up`);
      if (!LABEL_SHAPE.test(label)) throw new Error(`route path label "${label}" is not lower snake case (a-z, 0-9, _; at most 63 characters, starting with a letter)`);
      this.known.add(label);
    }
    return this;
  }

  /** The label of a routed read: known, or an UnknownRoutePathError. The first call closes the set. */
  check(path: RoutePathLabel): RoutePathLabel {
    this.sealed = true;
    if (!this.known.has(path)) throw new UnknownRoutePathError(path);
    return path;
  }

  /** Every known label, the relay's first. */
  list(): readonly string[] {
    return [...this.known];
  }
}
