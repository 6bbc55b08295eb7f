import assert from 'node:assert/strict';
import type { z } from 'zod';
import { buildStore, type StoreParts } from '../../src/sandbox/model/store.js';
import type { ListView, Scale } from '../../src/sandbox/model/types.js';

/** Shared set-up for the sandbox model tests (test/sandbox/model-*.test.ts). */

export const ANCHOR = new Date('2026-01-01T00:00:00Z');
export const NOW = Date.parse('2026-01-15T12:00:00Z');

/** A clock that starts at NOW and moves one second per reading, so every write gets a later time. */
export function steppingClock(startMs = NOW): () => Date {
  let t = startMs;
  return () => {
    t += 1000;
    return new Date(t);
  };
}

/** A seeded store with its internals, so tests can compare filters against the hidden facts. */
export function storeParts(seed = 7, scale: Scale = 'small'): StoreParts {
  return buildStore({ seed, scale, clock: steppingClock() });
}

export function matching<T extends { id: number }>(view: ListView<T>): T[] {
  return view.items.filter((item) => view.matches(item));
}

export function assertValid(schema: z.ZodType, value: unknown, label: string): void {
  const result = schema.safeParse(value);
  if (!result.success) {
    assert.fail(`${label} does not match its schema: ${JSON.stringify(result.error.issues.slice(0, 3))}`);
  }
}

/** YYYY-MM-DD of a day number. */
export const dayText = (day: number) => new Date(day * 86_400_000).toISOString().slice(0, 10);
export const dayOf = (timestamp: string) => Math.floor(Date.parse(timestamp) / 86_400_000);
