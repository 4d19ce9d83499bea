import { fileURLToPath } from 'node:url';
import { discoverDeployables, type Deployable } from './deployables.ts';

/** What a running process knows of a deployable: its manifest, without the folder and grants it was read from. */
export type BuiltInDeployable = Omit<Deployable, 'dir' | 'grantsSql'>;

/** The repository this file is in: packages/deployables/src → the root. */
const repository = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * The deployables of the repository this code was built from, for a running process that needs the
 * others' manifests (the console lists the MCP servers it grants tokens for). Run from source, that is
 * the repository around this file; in a bundle, packages/cli/build-server.mjs replaces this module by
 * the list it read at build time, so that a bundled process (a copy, an image) reads no folder of a
 * repository it does not have.
 */
export function builtInDeployables(): BuiltInDeployable[] {
  return discoverDeployables(repository).map((d) => withoutFiles(d));
}

/** `d` as a running process holds it: no path of the machine it was read on, no other deployable's SQL. */
export function withoutFiles({ dir: _dir, grantsSql: _grants, ...d }: Deployable): BuiltInDeployable {
  return d;
}
