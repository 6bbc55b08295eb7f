/**
 * The event ids of the latest `capacity` events spooled, to recognise a redelivery (the platform retries an
 * event it thinks failed, for days). Bounded: beyond the window a redelivered event is spooled again, and
 * ingest's newest-wins rule makes the second copy change nothing.
 */
export class DedupWindow {
  private readonly ids = new Set<string>();

  constructor(
    private readonly capacity: number,
    initial: Iterable<string> = [],
  ) {
    for (const id of initial) this.add(id);
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  add(id: string): void {
    if (this.capacity === 0) return;
    // Re-adding moves nothing: a Set keeps first insertion order, and an id is added once, when spooled.
    this.ids.add(id);
    if (this.ids.size > this.capacity) {
      const oldest = this.ids.values().next().value;
      if (oldest !== undefined) this.ids.delete(oldest);
    }
  }

  get size(): number {
    return this.ids.size;
  }
}
