import { DatabaseUnavailableError, HistoryReadRejectedError, QueryTimedOutError, ReadShareExceededError, WriterReadRejectedError } from '../../packages/read-path/src/database/database-errors.js';
import { Refusal } from '../nostr/refusal.js';
import { closedFrame, closedReason, noticeFrame, okReason, okRefused } from './ws-reasons.js';

describe('WebSocket reasons (relay.md §2.12), one mapper for every handler', () => {
  it('a history read that hit its deadline ends with the terminal reason', () => {
    expect(closedReason(new QueryTimedOutError('canceling statement due to statement timeout', { code: '57014' })).wire).toBe('error: query timed out');
  });

  it.each([
    ['a shed read (cap)', new HistoryReadRejectedError('history_read_cap')],
    ['a shed read (saturated reader)', new HistoryReadRejectedError('reader_acquire_timeout')],
    ['a refused writer read', new WriterReadRejectedError()],
    ['an unavailable database', new DatabaseUnavailableError('Connection terminated unexpectedly')],
    ['an untyped failure', new Error('boom')],
  ])('%s ends with the retryable reason', (_what, err) => {
    expect(closedReason(err).wire).toBe('error: database error');
  });

  it('an admission lookup says database error even for a deadline, and an EVENT failure is internal', () => {
    expect(closedReason(new QueryTimedOutError('x'), 'admission').wire).toBe('error: database error');
    expect(okReason(new QueryTimedOutError('x')).wire).toBe('error: internal server error');
    expect(okReason(new DatabaseUnavailableError('x'), 'auth_ban_check').wire).toBe('error: internal error checking restriction state');
  });

  it.each(['writer_reads', 'history_reads', 'search'] as const)('a read refused for its key’s share of %s tells the client to slow down', (gate) => {
    expect(closedReason(new ReadShareExceededError(gate)).wire).toBe('rate-limited: too many concurrent reads for this key');
  });

  it('renders each frame from the refusal, and a CLOSE acknowledged with an empty reason', () => {
    const refusal = new Refusal('restricted', 'not a channel member');
    expect(okRefused('e1', refusal)).toEqual(['OK', 'e1', false, 'restricted: not a channel member']);
    expect(closedFrame('s1', refusal)).toEqual(['CLOSED', 's1', 'restricted: not a channel member']);
    expect(closedFrame('s1')).toEqual(['CLOSED', 's1', '']);
    expect(noticeFrame(refusal)).toEqual(['NOTICE', 'restricted: not a channel member']);
  });
});
