/**
 * Exactly once per subscription. A REQ registers for live delivery before it reads its history
 * (so nothing stored while the page is read is missed), which means an event stored in between
 * can reach the subscription twice: live, and in the page. Both paths ask here before they send:
 * while the page is being read and sent, every id either path sends is recorded, and an id
 * already recorded is not sent again. So an event is sent by whichever path gets to it first.
 *
 * The live path decides when the event is published on this pod (LiveFanout.deliver, which runs
 * synchronously), not when its send runs later, so a live copy the page skipped is always sent
 * (unless the reader lost the channel meanwhile, when neither path may send it). The page
 * records an id only once its frame was queued.
 *
 * After EOSE nothing more is recorded, but the page's ids are still checked for LINGER_MS: an
 * event can be in the page and reach this pod's fan-out only afterwards (accepted by another pod
 * and relayed over Redis, or accepted here in the same moment as the read), and that copy is
 * not sent again. Then the set is dropped.
 *
 * Bounded: at most MAX_IDS ids are recorded. Pages are sent newest first, and the newest rows
 * are the ones that can overlap live delivery, so a page beyond the bound loses protection only
 * for rows that were stored long before the REQ.
 */
export const OVERLAP_MAX_IDS = 1024;
/** How long after EOSE a late live copy of a page row is still recognised. */
export const OVERLAP_LINGER_MS = 2000;

export class HistoryOverlap {
  private ids: Set<string> | undefined = new Set();
  private reading = true;

  constructor(
    private readonly maxIds = OVERLAP_MAX_IDS,
    private readonly lingerMs = OVERLAP_LINGER_MS,
  ) {}

  /** True when the page may send `id`: neither path has sent it. */
  pageMay(id: string): boolean {
    return !this.reading || this.ids === undefined || !this.ids.has(id);
  }

  /** The page queued `id`'s frame. */
  pageSent(id: string): void {
    if (this.reading) this.remember(id);
  }

  /**
   * Called once when an event for this subscription is published on this pod: true when it is to
   * be sent live (and, while the page is read, the page will then skip it).
   */
  liveMay(id: string): boolean {
    if (this.ids === undefined) return true;
    if (this.ids.has(id)) return false;
    if (this.reading) this.remember(id);
    return true;
  }

  /** EOSE went out: stop recording; keep checking the page's ids for a while, then forget them. */
  end(): void {
    if (!this.reading) return;
    this.reading = false;
    if (this.ids === undefined || this.ids.size === 0) {
      this.ids = undefined;
      return;
    }
    setTimeout(() => (this.ids = undefined), this.lingerMs).unref();
  }

  private remember(id: string): void {
    if (this.ids !== undefined && this.ids.size < this.maxIds) this.ids.add(id);
  }
}
