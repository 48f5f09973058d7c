import { Injectable } from '@nestjs/common';

/**
 * Where the process is in its life: serving, or draining after SIGTERM. Readiness
 * reports it, and teardown-time side effects (clearing presence when a pubkey's
 * last socket closes) are skipped while draining: those clients are being moved
 * to another pod, not leaving.
 */
@Injectable()
export class LifecycleState {
  private drainingSince: number | undefined;

  get draining(): boolean {
    return this.drainingSince !== undefined;
  }

  startDraining(): void {
    this.drainingSince ??= Date.now();
  }
}
