import { CORS_MAX_AGE_SECS, CorsPolicy } from './cors-policy.js';

describe('CorsPolicy', () => {
  it('with no list allows every origin and answers with a fixed *', () => {
    const any = new CorsPolicy([]);
    expect(any.allows('https://anywhere.example')).toBe(true);
    expect(any.allows(undefined)).toBe(true);
    expect(any.options()).toMatchObject({ origin: '*', maxAge: CORS_MAX_AGE_SECS, credentials: false });
  });

  it('with a list allows exactly those origins, and requests that carry no Origin', () => {
    const listed = new CorsPolicy(['https://chat.example.com']);
    expect(listed.allows('https://chat.example.com')).toBe(true);
    expect(listed.allows('https://chat.example.com.evil.example')).toBe(false);
    expect(listed.allows('http://chat.example.com')).toBe(false);
    expect(listed.allows('null')).toBe(false);
    expect(listed.allows(undefined)).toBe(true);
    // An array even for one origin: @fastify/cors then compares it and sends Vary: Origin.
    expect(listed.options().origin).toEqual(['https://chat.example.com']);
  });

  it('lets a page send the NIP-98 Authorization header', () => {
    expect(new CorsPolicy([]).options().allowedHeaders).toEqual(expect.arrayContaining(['Authorization', 'Content-Type']));
  });
});
