/**
 * Whether a process with this id is running (EPERM: it is, under another user). Files a process leaves
 * behind (a spool's lock, a warehouse's running file) are judged stale by it once their process is gone.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
