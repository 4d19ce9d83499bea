#!/usr/bin/env node
// `bulkhead`: runs the CLI from its bundle (packages/cli/bundle.mjs), rebuilt first when a source changed.
import { pathToFileURL } from 'node:url';
import { ensureBundle } from '../bundle.mjs';

await import(pathToFileURL(await ensureBundle()).href);
