import type { Location, LocationAddress, LocationCreateRequest } from '../../../schemas/index.js';
import { postcodeFor } from './customers.js';
import { rngFor } from './random.js';
import type { IdCounter } from './scale.js';
import { type ListView, SandboxRuleError } from './types.js';
import { REGIONS, STREETS } from './vocab.js';

const KINDS = ['Warehouse', 'Fulfillment Center', 'Store', 'Dark Store', '3PL Hub'];

/** Seeded location i (1-based) sits in a different region each time round the region list. */
export function makeLocation(seed: number, id: number): Location {
  const rng = rngFor(seed, 'location', id);
  const region = REGIONS[(id - 1) % REGIONS.length]!;
  const kind = id === 1 ? 'Warehouse' : rng.pick(KINDS);
  return {
    accept_return: id === 1 || rng.chance(0.6),
    address: {
      country: region.country,
      line1: `${rng.int(1, 400)} ${rng.pick(STREETS)}`,
      line2: rng.chance(0.4) ? `Unit ${rng.int(1, 40)}` : '',
      line3: '',
      line4: region.city,
      phone_number: `${region.phonePrefix}${rng.int(2, 9)}${rng.digits(8)}`,
      postcode: postcodeFor(rng, region.postcode),
      state: region.state,
    },
    callback_url: rng.chance(0.5) ? `https://fulfillment.example/callbacks/${id}` : null,
    id,
    name: `${region.city} ${kind}${id > REGIONS.length ? ` ${Math.ceil(id / REGIONS.length)}` : ''}`,
  };
}

/** The fulfillment locations in id order. Removed ones disappear from the list but stay resolvable. */
export class LocationBook {
  readonly items: Location[] = [];
  private readonly all = new Map<number, Location>();

  constructor(
    seeded: Location[],
    private readonly ids: IdCounter,
  ) {
    for (const location of seeded) this.push(location);
  }

  private push(location: Location): void {
    this.items.push(location);
    this.all.set(location.id, location);
  }

  /** A current location, or undefined when it never existed or was removed. */
  current(id: number): Location | undefined {
    return this.items.find((l) => l.id === id);
  }

  /** Any location ever known (fulfillments keep pointing at removed ones). */
  known(id: number): Location | undefined {
    return this.all.get(id);
  }

  list(): ListView<Location> {
    return { items: this.items, matches: () => true };
  }

  create(body: LocationCreateRequest): Location {
    const address: LocationAddress = {};
    for (const key of [
      'country',
      'line1',
      'line2',
      'line3',
      'line4',
      'phone_number',
      'postcode',
      'state',
    ] as const) {
      const value = body.address[key];
      if (value !== undefined && value !== null) address[key] = value;
    }
    if (!address.country) {
      throw new SandboxRuleError(
        400,
        'invalid',
        'address.country is required for a location',
        'address.country',
      );
    }
    const id = this.ids.next();
    const location: Location = {
      accept_return: body.accept_return ?? false,
      address,
      callback_url: body.callback_url ?? null,
      id,
      name: body.name ?? `Location ${id}`,
    };
    this.push(location);
    return location;
  }

  remove(id: number): boolean {
    const at = this.items.findIndex((l) => l.id === id);
    if (at < 0) return false;
    this.items.splice(at, 1);
    return true;
  }
}
