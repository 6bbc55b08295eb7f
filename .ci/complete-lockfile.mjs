// npm leaves out of package-lock.json the platform packages it cannot find in the registry
// (npm/cli#4828). The registry this project's machines reach holds the current native packages of
// @duckdb/node-bindings and @biomejs/cli only for linux-x64, so `npm ci` refuses the lock as
// "Missing: … from lock file" even on linux-x64. This adds an entry, with its os/cpu/libc, for every
// optional platform package the lock lacks; `npm ci` skips those on other platforms and installs the
// matching one where it exists. Run it after `npm install` changes the lock: node .ci/complete-lockfile.mjs
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const platformOf = (name) => {
  const os = ['android', 'darwin', 'linux', 'win32', 'freebsd'].find((o) => name.includes(`-${o}-`));
  const cpu = ['arm64', 'x64', 'ia32', 'arm'].find((c) => new RegExp(`-${c}(-|$)`).test(name));
  return os && cpu ? { os, cpu, musl: name.endsWith('-musl') } : null;
};
let added = 0;
for (const [where, entry] of Object.entries(lock.packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    const platform = platformOf(name);
    if (lock.packages[key] || !platform) continue;
    lock.packages[key] = {
      version,
      cpu: [platform.cpu],
      ...(platform.os === 'linux' ? { libc: [platform.musl ? 'musl' : 'glibc'] } : {}),
      ...(entry.dev ? { dev: true } : {}),
      optional: true,
      os: [platform.os],
    };
    added++;
    console.log(`added ${key}@${version} (from ${where || 'the project'})`);
  }
}
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`${added} entries added`);
