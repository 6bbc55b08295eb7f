#!/usr/bin/env node
// The CLI is written in TypeScript and run through tsx's loader, so the installed
// command and `npm start` always run the current sources with no build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
