import { Counter, CounterConfiguration, Gauge, GaugeConfiguration, Histogram, HistogramConfiguration, register } from 'prom-client';

/**
 * Metric constructors that reuse an already registered family of the same name,
 * so several app instances in one process (tests) share the default registry.
 */
export function counter<L extends string>(cfg: CounterConfiguration<L>): Counter<L> {
  return (register.getSingleMetric(cfg.name) as Counter<L> | undefined) ?? new Counter(cfg);
}

export function gauge<L extends string>(cfg: GaugeConfiguration<L>): Gauge<L> {
  return (register.getSingleMetric(cfg.name) as Gauge<L> | undefined) ?? new Gauge(cfg);
}

export function histogram<L extends string>(cfg: HistogramConfiguration<L>): Histogram<L> {
  return (register.getSingleMetric(cfg.name) as Histogram<L> | undefined) ?? new Histogram(cfg);
}

/** Seconds-suffixed histograms use buckets 0.001…5 s. */
export const SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** The HTTP middleware's millisecond histograms use buckets 5…10000 ms (relay.md §6.3). */
export const MILLISECONDS_BUCKETS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000];
