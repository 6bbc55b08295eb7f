/**
 * Seeded randomness for the sandbox. Every generator takes its numbers from an `Rng` seeded by a hash of
 * (store seed, purpose, index), so a record can be regenerated on its own (lazy orders, carts) and the same
 * seed always yields the same store. Math.random and the clock are never used.
 */

/** Mixes any number of 32-bit values into one (murmur3 finalizer per step). */
export function hash32(...parts: number[]): number {
  let h = 0x9e3779b9;
  for (const part of parts) {
    let k = Math.imul(part | 0, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    h ^= Math.imul(k, 0x1b873593);
    h = Math.imul((h << 13) | (h >>> 19), 5) + 0xe6546b64;
    // Keep the high half of large indexes (ids above 2^32 never occur, but seeds may be any safe integer).
    h ^= Math.floor(part / 0x100000000) | 0;
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** A stable number for a purpose label, so streams for different purposes never overlap. */
export function tag(label: string): number {
  let h = 2166136261;
  for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** sfc32: small, fast and good enough for test data; period far beyond what a store needs. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    this.a = 0x9e3779b9;
    this.b = 0x243f6a88;
    this.c = 0xb7e15162;
    this.d = seed >>> 0;
    for (let i = 0; i < 12; i++) this.u32();
  }

  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.u32() / 4294967296;
  }

  /** Uniform integer in [min, max], both inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** A string of decimal digits, leading zeros allowed (card numbers, postcodes, auth codes). */
  digits(count: number): string {
    // Built from 9-digit chunks: adding one character at a time leaves a chain of cons strings in the heap.
    let out = '';
    while (out.length < count) out += String(this.u32() % 1_000_000_000).padStart(9, '0');
    return out.slice(0, count);
  }

  hex(count: number): string {
    let out = '';
    while (out.length < count) out += this.u32().toString(16).padStart(8, '0');
    return out.slice(0, count);
  }
}

/** The generator for one purpose and one record: `rngFor(seed, 'order', 42)` is the same everywhere. */
export function rngFor(seed: number, purpose: string, index = 0): Rng {
  return new Rng(hash32(seed, tag(purpose), index));
}

/**
 * Builds a picker over weighted choices once, so drawing in a hot loop is a short scan with no allocation.
 * Weights are relative; they need not sum to 1.
 */
export function weighted<T>(choices: readonly (readonly [T, number])[]): (rng: Rng) => T {
  const total = choices.reduce((sum, [, weight]) => sum + weight, 0);
  const cumulative = choices.map(([value], i) => ({
    value,
    upTo: choices.slice(0, i + 1).reduce((sum, [, weight]) => sum + weight, 0) / total,
  }));
  return (rng) => {
    const r = rng.next();
    for (const entry of cumulative) if (r < entry.upTo) return entry.value;
    return cumulative[cumulative.length - 1]!.value;
  };
}

/** `count` distinct indexes below `size`, in ascending order (partial Fisher-Yates over a sparse map). */
export function sampleIndexes(rng: Rng, size: number, count: number): number[] {
  const n = Math.min(size, count);
  if (n <= 8 && size >= 4 * n) {
    // Few picks from many: retrying on a repeat is cheaper than a swap map.
    const out: number[] = [];
    while (out.length < n) {
      const i = rng.int(0, size - 1);
      if (!out.includes(i)) out.push(i);
    }
    return out.sort((x, y) => x - y);
  }
  const swapped = new Map<number, number>();
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const j = rng.int(i, size - 1);
    const atJ = swapped.get(j) ?? j;
    swapped.set(j, swapped.get(i) ?? i);
    out.push(atJ);
  }
  return out.sort((x, y) => x - y);
}
