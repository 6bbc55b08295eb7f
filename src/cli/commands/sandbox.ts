import type { CommandModule } from 'yargs';
import { ERROR_CODES, StoreSyncError } from '../../errors.js';
import type { Scale } from '../../sandbox/model/types.js';
import { integerOption } from '../context.js';
import { EXIT } from '../exit-codes.js';

interface SandboxArgs {
  host: string;
  port: number;
  seed: number;
  scale: string;
  'page-size': number;
  'rate-limit': number;
  'latency-ms': number;
  faults?: string;
  token?: string[];
  'version-header'?: string;
}

const usage = (message: string) => new StoreSyncError(ERROR_CODES.USAGE, message);

export function parseScale(text: string): Scale {
  if (text === 'small' || text === 'medium' || text === 'large') return text;
  if (/^\d+$/.test(text) && Number(text) >= 1 && Number(text) <= 10_000_000) return Number(text);
  throw usage(`--scale must be small, medium, large or a count of subscriptions from 1 (got "${text}")`);
}

export const sandboxCommand: CommandModule<object, SandboxArgs> = {
  command: 'sandbox',
  describe:
    'Serve a seeded, local copy of the Store Administration API (for tests, demos and your own clients)',
  builder: (yargs) =>
    yargs
      .option('host', { type: 'string', default: '127.0.0.1', description: 'Address to listen on' })
      .option('port', { type: 'number', default: 0, description: 'Port to listen on (0 picks a free one)' })
      .option('seed', {
        type: 'number',
        default: 1,
        description: 'Seed of the generated store: same seed, same data',
      })
      .option('scale', {
        type: 'string',
        default: 'small',
        description:
          'Store size: small, medium (~10x), large (~100x, 100k+ subscriptions) or a subscription count',
      })
      .option('page-size', { type: 'number', default: 100, description: 'Items per page of list operations' })
      .option('rate-limit', {
        type: 'number',
        default: 4,
        description: 'Requests per second per token (token bucket); 0 turns the limit off',
      })
      .option('latency-ms', {
        type: 'number',
        default: 0,
        description: 'Extra latency added to every API request',
      })
      .option('faults', {
        type: 'string',
        description:
          'Fault mix, e.g. 500:0.05,429:0.03,reset:0.02,truncate:0.02,stall:0.01 (see docs/sandbox.md)',
      })
      .option('token', {
        type: 'string',
        array: true,
        description: 'Accepted bearer token VALUE[:scope,scope...]; repeatable; without scopes it holds all',
      })
      .option('version-header', {
        type: 'string',
        description:
          'Request header the API version is read from, as a deployment naming it differently would (default X-Platform-API-Version); a version sent under another name is not seen',
      })
      .example('$0 sandbox', 'Serve a small store on a free port with the token sandbox-token')
      .example(
        '$0 sandbox --port 8787 --token T1 --token T2:catalogue:read,orders:read',
        'Two tokens, the second limited to two scopes',
      )
      .example('$0 sandbox --rate-limit 0 --faults 500:0.05,reset:0.02', 'No rate limit, some failures')
      .example(
        '$0 sandbox --version-header X-Api-Version',
        'Take the API version in X-Api-Version (a store with apiVersionHeader: "X-Api-Version")',
      ) as never,
  handler: async (args) => {
    const rateLimit = args['rate-limit'];
    if (!Number.isFinite(rateLimit) || rateLimit < 0) {
      throw usage(
        `--rate-limit must be a number of requests per second, or 0 for none (got ${String(rateLimit)})`,
      );
    }
    // Loaded on demand: other commands should not pay for importing the sandbox and its data generator.
    const { startSandbox } = await import('../../sandbox/index.js');
    const { SCOPES } = await import('../../../schemas/index.js');
    const sandbox = await startSandbox({
      host: args.host,
      port: integerOption('port', args.port, 0, 65535),
      seed: integerOption('seed', args.seed, 0, 2 ** 32 - 1),
      scale: parseScale(String(args.scale)),
      pageSize: integerOption('page-size', args['page-size'], 1, 10_000),
      rateLimit,
      latencyMs: integerOption('latency-ms', args['latency-ms'], 0, 600_000),
      faults: args.faults,
      tokens: args.token,
      versionHeader: args['version-header'],
    });
    process.stdout.write(`${sandbox.baseUrl}\n`);
    const token = sandbox.tokens[0]!;
    const lines = [
      `sandbox: serving a ${args.scale} store (seed ${args.seed}) at ${sandbox.baseUrl}`,
      ...sandbox.tokens.map(
        (t) =>
          `token: ${t.token} (${t.scopes.length === SCOPES.length ? 'every scope' : t.scopes.join(', ')})`,
      ),
      'try:',
      `  curl -H 'Authorization: Bearer ${token.token}' -H '${sandbox.versionHeader}: 2024-04-01' ${sandbox.baseUrl}products/`,
      `  curl ${sandbox.origin}/__sandbox/stats`,
      'stop with Ctrl-C',
    ];
    process.stderr.write(`${lines.join('\n')}\n`);
    await new Promise<void>((resolve) => {
      const stop = () => {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        sandbox.close().then(resolve, resolve);
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
    process.exitCode = EXIT.OK;
  },
};
