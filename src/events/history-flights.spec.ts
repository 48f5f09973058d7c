import { HistoryFlights } from './history-flights.js';

class Shed extends Error {}

describe('HistoryFlights', () => {
  it('a joiner of a flight that was shed retries with its own read, not the starter’s', async () => {
    const flights = new HistoryFlights((err) => err instanceof Shed);
    const ran: string[] = [];
    let refuse!: (err: unknown) => void;
    const starter = flights.run('page', undefined, () => {
      ran.push('starter');
      return new Promise<string>((_resolve, reject) => (refuse = reject));
    });
    const joiner = flights.run('page', undefined, async () => {
      ran.push('joiner');
      return 'rows for the joiner';
    });
    starter.catch(() => undefined);
    refuse(new Shed('the starter was over its share'));
    await expect(starter).rejects.toBeInstanceOf(Shed);
    await expect(joiner).resolves.toBe('rows for the joiner');
    expect(ran).toEqual(['starter', 'joiner']);
  });
});
