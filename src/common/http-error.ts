/** An HTTP answer decided by the relay: a status and the `{"error": …}` body text. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body?: Record<string, unknown>,
    /** Sent as `Retry-After` (seconds) when set: the refusal is for now, not for good. */
    readonly retryAfterSecs?: number,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}
