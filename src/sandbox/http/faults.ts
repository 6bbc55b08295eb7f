import { ERROR_CODES, StoreSyncError } from '../../errors.js';
import { Rng } from '../model/random.js';

/**
 * Fault injection for API routes (never `/__sandbox/`). Grammar of the spec string (docs/sandbox.md):
 *
 *   SPEC  := "" | "none" | ITEM ("," ITEM)*
 *   ITEM  := KIND ":" PROBABILITY | "seed:" INTEGER | "stall-ms:" INTEGER
 *   KIND  := 500 | 502 | 503 | 429 | reset | truncate | stall | foreign-next
 *
 * Each API request draws ONE number from a seeded PRNG and gets at most one fault, so the
 * probabilities must add up to at most 1, and the same seed and request order give the same faults.
 */

export const FAULT_KINDS = [
  '500',
  '502',
  '503',
  '429',
  'reset',
  'truncate',
  'stall',
  'foreign-next',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultSpec {
  rates: Partial<Record<FaultKind, number>>;
  /** PRNG seed; defaults to the sandbox's data seed. */
  seed?: number;
  /** How long `stall` holds a response before answering normally (default 30 s, or until the client gives up). */
  stallMs?: number;
}

export const DEFAULT_STALL_MS = 30_000;
/** A `429` fault starts a storm: this many consecutive API requests are answered 429. */
export const STORM_LENGTH = 3;

const usage = (message: string) => new StoreSyncError(ERROR_CODES.USAGE, `--faults: ${message}`);

export function parseFaultSpec(text: string): FaultSpec {
  const spec: FaultSpec = { rates: {} };
  const trimmed = text.trim();
  if (trimmed === '' || trimmed === 'none') return spec;
  for (const item of trimmed.split(',')) {
    const [name, value, extra] = item.trim().split(':');
    if (!name || value === undefined || extra !== undefined) {
      throw usage(`"${item}" is not KIND:PROBABILITY (e.g. 500:0.05,reset:0.02)`);
    }
    if (name === 'seed' || name === 'stall-ms') {
      if (!/^\d{1,15}$/.test(value)) throw usage(`${name} must be a non-negative integer (got "${value}")`);
      if (name === 'seed') spec.seed = Number(value);
      else spec.stallMs = Number(value);
      continue;
    }
    if (!(FAULT_KINDS as readonly string[]).includes(name)) {
      throw usage(`unknown fault "${name}"; known: ${FAULT_KINDS.join(', ')}, plus seed:N and stall-ms:N`);
    }
    if (!/^(\d+(\.\d*)?|\.\d+)$/.test(value)) {
      throw usage(`the probability of ${name} must be a number from 0 to 1 (got "${value}")`);
    }
    spec.rates[name as FaultKind] = Number(value);
  }
  return validateFaultSpec(spec);
}

/** Checks a spec given as an object (code or the JSON of PUT /__sandbox/faults). */
export function validateFaultSpec(spec: FaultSpec): FaultSpec {
  let total = 0;
  for (const [kind, rate] of Object.entries(spec.rates ?? {})) {
    if (!(FAULT_KINDS as readonly string[]).includes(kind)) throw usage(`unknown fault "${kind}"`);
    if (typeof rate !== 'number' || !Number.isFinite(rate) || rate < 0 || rate > 1) {
      throw usage(`the probability of ${kind} must be a number from 0 to 1 (got ${String(rate)})`);
    }
    total += rate;
  }
  if (total > 1 + 1e-9) throw usage(`the probabilities add up to ${total}; they must add up to at most 1`);
  for (const [name, value] of [
    ['seed', spec.seed],
    ['stall-ms', spec.stallMs],
  ] as const) {
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 0)) {
      throw usage(`${name} must be a non-negative integer (got ${String(value)})`);
    }
  }
  return { rates: { ...spec.rates }, seed: spec.seed, stallMs: spec.stallMs };
}

export function formatFaultSpec(spec: FaultSpec): string {
  const items = FAULT_KINDS.filter((k) => spec.rates[k] !== undefined).map((k) => `${k}:${spec.rates[k]}`);
  if (spec.seed !== undefined) items.push(`seed:${spec.seed}`);
  if (spec.stallMs !== undefined) items.push(`stall-ms:${spec.stallMs}`);
  return items.length ? items.join(',') : 'none';
}

export class FaultInjector {
  private current: FaultSpec = { rates: {} };
  private random: () => number = Math.random;
  private stormLeft = 0;

  constructor(
    spec: string | FaultSpec | undefined,
    private readonly defaultSeed: number,
  ) {
    this.set(spec ?? { rates: {} });
  }

  /** Replaces the mix; the PRNG restarts from the seed so a test can replay a sequence. */
  set(spec: string | FaultSpec): FaultSpec {
    this.current = typeof spec === 'string' ? parseFaultSpec(spec) : validateFaultSpec(spec);
    const rng = new Rng(this.current.seed ?? this.defaultSeed);
    this.random = () => rng.next();
    this.stormLeft = 0;
    return this.spec();
  }

  spec(): FaultSpec {
    return { ...this.current, rates: { ...this.current.rates } };
  }

  get stallMs(): number {
    return this.current.stallMs ?? DEFAULT_STALL_MS;
  }

  /** The fault for the next API request, or null. */
  roll(): FaultKind | null {
    if (this.stormLeft > 0) {
      this.stormLeft--;
      return '429';
    }
    const kinds = FAULT_KINDS.filter((k) => (this.current.rates[k] ?? 0) > 0);
    if (kinds.length === 0) return null;
    let draw = this.random();
    for (const kind of kinds) {
      draw -= this.current.rates[kind]!;
      if (draw < 0) {
        if (kind === '429') this.stormLeft = STORM_LENGTH - 1;
        return kind;
      }
    }
    return null;
  }
}
