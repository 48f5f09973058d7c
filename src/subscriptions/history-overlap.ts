/**
 * Exactly once per subscription. A REQ registers for live delivery before it reads its history
 * (so nothing stored while the page is read is missed), which means an event stored in between
 * can reach the subscription twice: live, and in the page. Both paths ask here before they send:
 * while the page is being read and sent, every id either path sends is recorded, and an id
 * already recorded is not sent again. So an event is sent by whichever path gets to it first.
 *
 * The live path decides when the event is published on this pod (LiveFanout.deliver, which runs
 * synchronously) and gets a LiveClaim; its frame is queued later (after an access check, in an
 * output turn). If the page reaches that event before the live frame was queued, the page takes
 * the claim over and sends the event itself, and the live send is skipped: otherwise the page
 * would skip a row whose only copy then arrives after EOSE, and the client would count fewer
 * events before EOSE than the history holds (a page of `limit` n would look like the end of the
 * history). A live copy the page skipped was therefore always queued before the page's EOSE
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

/** A live copy decided at publish time: sent by the live path unless the page took it over first. */
export interface LiveClaim {
  /** The live frame was queued. */
  sent: boolean;
  /** The page reached the event first and sends it itself; the live path must not. */
  takenByPage: boolean;
}

const PAGE_SENT = 'page';

export class HistoryOverlap {
  private ids: Map<string, LiveClaim | typeof PAGE_SENT> | undefined = new Map();
  private reading = true;

  constructor(
    private readonly maxIds = OVERLAP_MAX_IDS,
    private readonly lingerMs = OVERLAP_LINGER_MS,
  ) {}

  /**
   * True when the page may send `id`: neither path has sent it. A live copy decided but not yet
   * queued is taken over: the page sends the event (before its EOSE) and the live send is dropped.
   */
  pageMay(id: string): boolean {
    if (!this.reading || this.ids === undefined) return true;
    const entry = this.ids.get(id);
    if (entry === undefined) return true;
    if (entry === PAGE_SENT || entry.sent) return false;
    entry.takenByPage = true;
    return true;
  }

  /** The page queued `id`'s frame. */
  pageSent(id: string): void {
    if (this.reading) this.remember(id, PAGE_SENT);
  }

  /**
   * Called once when an event for this subscription is published on this pod: the claim of its
   * live copy, or undefined when none is to be sent (the page has it, or it was claimed already).
   * The live path queues the frame only if the claim was not taken by the page meanwhile, and
   * marks it sent when it does.
   */
  liveMay(id: string): LiveClaim | undefined {
    if (this.ids?.has(id)) return undefined;
    const claim: LiveClaim = { sent: false, takenByPage: false };
    if (this.reading) this.remember(id, claim);
    return claim;
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

  private remember(id: string, entry: LiveClaim | typeof PAGE_SENT): void {
    if (this.ids !== undefined && (this.ids.size < this.maxIds || this.ids.has(id))) this.ids.set(id, entry);
  }
}
