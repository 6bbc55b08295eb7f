import { OPERATIONS, type OperationSpec } from '../../../schemas/index.js';
import { HttpError } from './errors.js';

/**
 * Routes API requests by method and path template, straight from the operation table, so a path the
 * spec does not list cannot be served. POST /orders/ holds two operations told apart later by version.
 */

/** Path parameters that are integers in the spec (part 1: ids are integers unless stated). */
const INTEGER_PARAMS = new Set(['id', 'fulfillmentId']);

export interface RouteMatch {
  /** One operation, or several sharing a method and path that differ by version. */
  operations: OperationSpec[];
  params: Record<string, string | number>;
  /** `METHOD /template/`, the key of the stats by route. */
  key: string;
}

interface Route {
  template: string;
  pattern: RegExp;
  names: string[];
  byMethod: Map<string, OperationSpec[]>;
}

function compile(): Route[] {
  const routes = new Map<string, Route>();
  for (const spec of Object.values(OPERATIONS) as OperationSpec[]) {
    let route = routes.get(spec.path);
    if (!route) {
      const names: string[] = [];
      const source = spec.path
        .split(/(\{\w+\})/)
        .map((part) => {
          const param = /^\{(\w+)\}$/.exec(part);
          if (!param) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
          names.push(param[1]!);
          return '([^/]+)';
        })
        .join('');
      route = { template: spec.path, pattern: new RegExp(`^${source}$`), names, byMethod: new Map() };
      routes.set(spec.path, route);
    }
    const list = route.byMethod.get(spec.method) ?? [];
    list.push(spec);
    route.byMethod.set(spec.method, list);
  }
  // Literal segments beat parameters (`/products/variants/1/` is not a product id).
  return [...routes.values()].sort((a, b) => a.names.length - b.names.length);
}

const ROUTES = compile();

/** Matches an API path (relative to the base URL, starting with `/`); 404 and 405 are thrown. */
export function matchRoute(method: string, path: string): RouteMatch {
  const allowed = new Set<string>();
  for (const route of ROUTES) {
    const found = route.pattern.exec(path);
    if (!found) continue;
    const operations = route.byMethod.get(method);
    if (!operations) {
      for (const m of route.byMethod.keys()) allowed.add(m);
      continue;
    }
    return { operations, params: parseParams(route, found), key: `${method} ${route.template}` };
  }
  if (allowed.size) {
    const allow = [...allowed].sort().join(', ');
    throw new HttpError(
      405,
      'method_not_allowed',
      `${method} is not allowed on ${path}; use ${allow}.`,
      undefined,
      {
        Allow: allow,
      },
    );
  }
  throw new HttpError(
    404,
    'not_found',
    `No API operation at ${path}. Paths are relative to the base URL and end with "/" (e.g. products/); see docs/sandbox.md.`,
  );
}

function parseParams(route: Route, found: RegExpExecArray): Record<string, string | number> {
  const params: Record<string, string | number> = {};
  route.names.forEach((name, i) => {
    let value: string;
    try {
      value = decodeURIComponent(found[i + 1]!);
    } catch {
      throw new HttpError(400, 'validation_error', `Path parameter ${name} is not valid percent-encoding.`, [
        { field: name, message: 'invalid percent-encoding' },
      ]);
    }
    if (INTEGER_PARAMS.has(name)) {
      if (!/^\d{1,15}$/.test(value)) {
        throw new HttpError(404, 'not_found', `No resource with ${name} "${value}": ${name} is an integer.`);
      }
      params[name] = Number(value);
    } else {
      params[name] = value;
    }
  });
  return params;
}
