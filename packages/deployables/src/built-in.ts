import { fileURLToPath } from 'node:url';
import { discoverDeployables, type Deployable } from './deployables.ts';

/**
 * What a running process knows of another deployable: how to name it and reach it, and what its tokens
 * may hold. Nothing else: not the folder and grants it was read from, and not its probe or upstreams,
 * whose tool names and variables a bundle of another deployable has no business holding (infra's image
 * check greps every image for other servers' tool names).
 */
export type BuiltInDeployable = Pick<
  Deployable,
  'name' | 'description' | 'kind' | 'port' | 'scopes' | 'gated' | 'customerBound'
>;

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
  return discoverDeployables(repository).map((d) => builtIn(d));
}

/** `d` as another deployable's process holds it. */
export function builtIn(d: Deployable): BuiltInDeployable {
  const { name, description, kind, port, scopes, gated, customerBound } = d;
  return { name, description, kind, port, scopes, gated, customerBound };
}
