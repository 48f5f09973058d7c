import { presenceStatus, PRESENCE_STATUS_MAX_BYTES } from './presence.service.js';

describe('presenceStatus', () => {
  it('takes a bare string or the status field of a JSON object', () => {
    expect(presenceStatus('away')).toBe('away');
    expect(presenceStatus('{"status":"in a meeting","emoji":"📅"}')).toBe('in a meeting');
    expect(presenceStatus('offline')).toBe('offline');
  });

  it('keeps content that only looks like JSON as the status itself', () => {
    expect(presenceStatus('{not json')).toBe('{not json');
    expect(presenceStatus('{"status":42}')).toBe('{"status":42}');
  });

  it('truncates to 128 UTF-8 bytes without splitting a character', () => {
    const long = 'é'.repeat(100); // 200 bytes
    const status = presenceStatus(long);
    expect(Buffer.byteLength(status)).toBe(PRESENCE_STATUS_MAX_BYTES);
    expect(status).toBe('é'.repeat(64));
    expect(Buffer.byteLength(presenceStatus('🙂'.repeat(40)))).toBe(128);
  });
});
