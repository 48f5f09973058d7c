import { nip19 } from 'nostr-tools';
import { parsePubkey } from './npub.js';

const HEX = '7e7e9c42a91bfef19fa929e5fda1b72e0ebc1a4c1141673e2794234d86addf4e';

describe('parsePubkey', () => {
  it('accepts hex in either case and an npub, giving lowercase hex', () => {
    expect(parsePubkey(HEX.toUpperCase())).toEqual({ ok: true, pubkey: HEX });
    expect(parsePubkey(nip19.npubEncode(HEX))).toEqual({ ok: true, pubkey: HEX });
    expect(parsePubkey(`  ${nip19.npubEncode(HEX).toUpperCase()} `)).toEqual({ ok: true, pubkey: HEX });
  });

  it('agrees with nostr-tools on random keys', () => {
    for (let i = 0; i < 50; i++) {
      const hex = Buffer.from(Array.from({ length: 32 }, () => Math.floor(Math.random() * 256))).toString('hex');
      expect(parsePubkey(nip19.npubEncode(hex))).toEqual({ ok: true, pubkey: hex });
    }
  });

  it('refuses a typo, another prefix, short hex and junk with a reason', () => {
    const npub = nip19.npubEncode(HEX);
    const typo = npub.slice(0, 10) + (npub[10] === 'q' ? 'p' : 'q') + npub.slice(11);
    expect(parsePubkey(typo)).toEqual({ ok: false, reason: 'npub checksum does not match (a typo?)' });
    expect(parsePubkey(nip19.noteEncode(HEX))).toMatchObject({ ok: false });
    expect(parsePubkey(HEX.slice(2))).toMatchObject({ ok: false });
    expect(parsePubkey('npub1')).toMatchObject({ ok: false });
    expect(parsePubkey('alice')).toMatchObject({ ok: false });
  });
});
