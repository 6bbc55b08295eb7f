import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { WebSocket } from 'undici';

/**
 * A real browser for the HTML report: Debian's chromium, driven headless over the DevTools protocol with
 * undici's WebSocket (Node 20 has no global one), so no browser-automation dependency is needed. When the
 * machine has no chromium it is installed from Debian's packages (CI runs as root with apt); when that is
 * impossible the test fails saying so, never skips.
 */

const NAMES = ['chromium', 'chromium-browser'];

function onPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const file = path.join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // Not in this folder.
    }
  }
  return null;
}

function findChromium(): string | null {
  for (const name of NAMES) {
    const found = onPath(name);
    if (found) return found;
  }
  return null;
}

function run(command: string, args: string[]): { ok: boolean; output: string } {
  const result = spawnSync(command, args, {
    encoding: 'utf8',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    // Downloading and unpacking chromium takes about a minute on CI; a hung mirror must not hang the test.
    timeout: 240_000,
  });
  return {
    ok: result.status === 0,
    output: `${result.stdout ?? ''}${result.stderr ?? ''}${result.error ?? ''}`,
  };
}

/** The chromium binary, installed with apt-get first when missing. */
export function chromiumPath(): string {
  const found = findChromium();
  if (found) return found;
  const root = process.getuid?.() === 0;
  const prefix = root ? [] : onPath('sudo') ? ['sudo', '-n'] : null;
  if (prefix === null)
    throw new Error(
      'chromium is not installed and cannot be: not root and no sudo. Install it (apt-get install -y chromium) and run the test again.',
    );
  const apt = (args: string[]) =>
    prefix.length ? run(prefix[0]!, [...prefix.slice(1), 'apt-get', ...args]) : run('apt-get', args);
  let install = apt(['install', '-y', '--no-install-recommends', 'chromium']);
  // A fresh CI image has no package lists yet.
  if (!install.ok) {
    const update = apt(['update']);
    if (!update.ok)
      throw new Error(`chromium is missing and apt-get update failed:\n${update.output.slice(-2000)}`);
    install = apt(['install', '-y', '--no-install-recommends', 'chromium']);
  }
  const installed = findChromium();
  if (!install.ok || !installed)
    throw new Error(
      `chromium is missing and apt-get install chromium failed:\n${install.output.slice(-2000)}`,
    );
  return installed;
}

interface CdpMessage {
  id?: number;
  method?: string;
  sessionId?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { message: string };
}

export interface LoadedPage {
  /** Uncaught exceptions, console errors and browser log errors (a CSP violation among them). */
  errors: string[];
  /** Every request the page made that is not the file itself or a data: URL: there must be none. */
  requests: string[];
  /** Evaluates an expression in the page and returns its value (JSON-serializable). */
  evaluate: <T>(expression: string) => Promise<T>;
  close: () => Promise<void>;
}

/** Opens `file` in headless chromium and waits for its load event (scripts have run by then). */
export async function openInChromium(file: string): Promise<LoadedPage> {
  const binary = chromiumPath();
  const profile = await mkdtemp(path.join(os.tmpdir(), 'store-sync-chromium-'));
  const child: ChildProcess = spawn(
    binary,
    [
      '--headless=new',
      '--disable-gpu',
      '--no-sandbox',
      '--no-first-run',
      '--no-default-browser-check',
      '--disable-extensions',
      '--remote-debugging-port=0',
      `--user-data-dir=${profile}`,
      'about:blank',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
    await rm(profile, { recursive: true, force: true });
  };
  try {
    const endpoint = await new Promise<string>((resolve, reject) => {
      let stderr = '';
      const timer = setTimeout(
        () =>
          reject(new Error(`chromium did not open its DevTools port within 60 s:\n${stderr.slice(-2000)}`)),
        60_000,
      );
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
        stderr += chunk;
        const match = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(
          new Error(`chromium exited (${code}) before opening its DevTools port:\n${stderr.slice(-2000)}`),
        );
      });
    });
    const socket = new WebSocket(endpoint);
    await new Promise<void>((resolve, reject) => {
      socket.addEventListener('open', () => resolve(), { once: true });
      socket.addEventListener('error', () => reject(new Error(`cannot connect to ${endpoint}`)), {
        once: true,
      });
    });
    let next = 1;
    const pending = new Map<
      number,
      { resolve: (r: Record<string, unknown>) => void; reject: (e: Error) => void }
    >();
    const listeners: ((message: CdpMessage) => void)[] = [];
    socket.addEventListener('message', (event) => {
      const message = JSON.parse(String(event.data)) as CdpMessage;
      if (message.id !== undefined) {
        const waiting = pending.get(message.id);
        pending.delete(message.id);
        if (message.error) waiting?.reject(new Error(message.error.message));
        else waiting?.resolve(message.result ?? {});
      } else for (const listener of listeners) listener(message);
    });
    const send = (method: string, params: Record<string, unknown> = {}, sessionId?: string) =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const id = next++;
        pending.set(id, { resolve, reject });
        socket.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
      });

    const { targetId } = (await send('Target.createTarget', { url: 'about:blank' })) as { targetId: string };
    const { sessionId } = (await send('Target.attachToTarget', { targetId, flatten: true })) as {
      sessionId: string;
    };
    const errors: string[] = [];
    const requests: string[] = [];
    const url = `file://${file}`;
    let loaded: () => void = () => undefined;
    const load = new Promise<void>((resolve) => {
      loaded = resolve;
    });
    listeners.push((message) => {
      if (message.sessionId !== sessionId) return;
      const params = message.params ?? {};
      if (message.method === 'Runtime.exceptionThrown')
        errors.push(`exception: ${JSON.stringify(params.exceptionDetails)}`);
      else if (
        message.method === 'Runtime.consoleAPICalled' &&
        ['error', 'assert'].includes(String(params.type))
      )
        errors.push(`console.${params.type}: ${JSON.stringify(params.args)}`);
      else if (message.method === 'Log.entryAdded') {
        const entry = params.entry as { level: string; text: string; url?: string };
        if (entry.level === 'error') errors.push(`log: ${entry.text} ${entry.url ?? ''}`);
      } else if (message.method === 'Network.requestWillBeSent') {
        const requested = String((params.request as { url: string }).url);
        if (requested !== url && !requested.startsWith('data:')) requests.push(requested);
      } else if (message.method === 'Page.loadEventFired') loaded();
    });
    for (const domain of ['Runtime.enable', 'Log.enable', 'Network.enable', 'Page.enable'])
      await send(domain, {}, sessionId);
    const navigated = (await send('Page.navigate', { url }, sessionId)) as { errorText?: string };
    if (navigated.errorText) throw new Error(`chromium could not open ${url}: ${navigated.errorText}`);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      load,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${url} did not load within 60 s`)), 60_000);
      }),
    ]).finally(() => clearTimeout(timer));
    return {
      errors,
      requests,
      evaluate: async <T>(expression: string) => {
        const answer = (await send(
          'Runtime.evaluate',
          { expression, returnByValue: true, awaitPromise: true },
          sessionId,
        )) as { result: { value?: unknown }; exceptionDetails?: unknown };
        if (answer.exceptionDetails)
          throw new Error(`evaluating ${expression} failed: ${JSON.stringify(answer.exceptionDetails)}`);
        return answer.result.value as T;
      },
      close: async () => {
        socket.close();
        await close();
      },
    };
  } catch (error) {
    await close();
    throw error;
  }
}
