/**
 * The production install gives `ws` its native frame unmasker. Without `bufferutil`, `ws` unmasks
 * every client frame in JavaScript: under a flood of unauthenticated 8 KB frames that was about
 * 1.7 s of the relay's 13 CPU-seconds in 15 s (docs/journal/26). Both packages fall back silently,
 * so only a test notices when a lockfile change or an install flag drops the addon.
 */
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.join(process.cwd(), 'package.json'));

describe('native addons of the production install', () => {
  it('ws resolves bufferutil, and bufferutil loads its compiled unmasker rather than the fallback', () => {
    const fromWs = createRequire(require.resolve('ws'));
    const bufferutil = fromWs('bufferutil') as { unmask: (b: Buffer, m: Buffer) => void };
    const fallback = fromWs('bufferutil/fallback') as { unmask: (b: Buffer, m: Buffer) => void };
    expect(bufferutil.unmask).not.toBe(fallback.unmask);

    const frame = Buffer.from('["EVENT",{"kind":1}]');
    const mask = Buffer.from([0x12, 0x34, 0x56, 0x78]);
    const masked = Buffer.from(frame.map((byte, i) => byte ^ mask[i % 4]));
    bufferutil.unmask(masked, mask);
    expect(masked.toString()).toBe(frame.toString());
  });

  it('is a production dependency, so the image (npm ci --omit=dev --omit=optional) installs it', () => {
    const manifest = require('./package.json') as { dependencies: Record<string, string> };
    expect(manifest.dependencies.bufferutil).toBeDefined();
  });
});
