/**
 * Typed accessors over an environment map. Every problem is collected, so one
 * start-up attempt reports all bad variables at once, each with its accepted range.
 */
import { isHex64 } from '../nostr/hex.js';

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

export class EnvReader {
  private readonly problems: string[] = [];

  constructor(private readonly env: NodeJS.ProcessEnv) {}

  present(name: string): boolean {
    return this.raw(name) !== undefined;
  }

  fail(name: string, message: string): void {
    this.problems.push(`${name} ${message}`);
  }

  throwIfInvalid(): void {
    if (this.problems.length > 0) throw new ConfigError(this.problems);
  }

  string(name: string, fallback: string): string {
    return this.raw(name) ?? fallback;
  }

  int(name: string, fallback: number, min: number, max: number, message?: string): number {
    const raw = this.raw(name);
    if (raw === undefined) return fallback;
    const value = /^-?\d+$/.test(raw) ? Number(raw) : NaN;
    if (!Number.isSafeInteger(value) || value < min || value > max) {
      const range = max >= Number.MAX_SAFE_INTEGER ? `>= ${min}` : `${min}..${max}`;
      this.fail(name, `${message ?? `must be an integer in ${range}`}, got ${JSON.stringify(raw)}`);
      return fallback;
    }
    return value;
  }

  bool(name: string, fallback: boolean): boolean {
    const raw = this.raw(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
    if (['0', 'false', 'no', 'off'].includes(raw)) return false;
    this.fail(name, `must be one of true/false/1/0/yes/no/on/off, got ${JSON.stringify(raw)}`);
    return fallback;
  }

  oneOf<T extends string>(name: string, fallback: T, allowed: readonly T[]): T {
    const raw = this.raw(name);
    if (raw === undefined) return fallback;
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    this.fail(name, `must be one of ${allowed.join(', ')}, got ${JSON.stringify(raw)}`);
    return fallback;
  }

  list(name: string, fallback: readonly string[]): readonly string[] {
    const raw = this.raw(name);
    if (raw === undefined) return fallback;
    return raw.split(',').map((s) => s.trim().toLowerCase()).filter((s) => s.length > 0);
  }

  /** A 64-hex secret; never echoed. */
  hex64(name: string): string | undefined {
    const raw = this.raw(name)?.toLowerCase();
    if (raw === undefined) return undefined;
    if (!isHex64(raw)) {
      this.fail(name, 'must be 64 hex characters (a 32-byte secret key)');
      return undefined;
    }
    return raw;
  }

  url(name: string, fallback: string, protocols: readonly string[]): string {
    return this.optionalUrl(name, protocols) ?? fallback;
  }

  /** Trimmed; blank means unset. The value is never echoed (it may hold a password). */
  optionalUrl(name: string, protocols: readonly string[]): string | undefined {
    const raw = this.raw(name);
    if (raw === undefined) return undefined;
    let parsed: URL;
    try {
      parsed = new URL(raw);
    } catch {
      this.fail(name, `must be a URL with scheme ${protocols.join(' or ')}`);
      return undefined;
    }
    if (!protocols.includes(parsed.protocol)) {
      this.fail(name, `must use scheme ${protocols.join(' or ')}, got ${parsed.protocol}`);
      return undefined;
    }
    return raw;
  }

  private raw(name: string): string | undefined {
    const v = this.env[name]?.trim();
    return v === undefined || v === '' ? undefined : v;
  }
}
