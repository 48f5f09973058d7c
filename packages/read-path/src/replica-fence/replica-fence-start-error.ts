/**
 * Start-up refused because the fence cannot open (ReplicaFenceModule `required`): `app.init()`,
 * `listen()` and `createApplicationContext` reject with it, its message saying why.
 */
export class ReplicaFenceStartError extends Error {
  override readonly name = 'ReplicaFenceStartError';

  constructor(reason: string, options?: { cause?: unknown }) {
    super(`ReplicaFenceModule required: ${reason}`, options);
  }
}
