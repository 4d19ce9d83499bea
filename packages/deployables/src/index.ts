export {
  discoverDeployables,
  readDeployable,
  ManifestError,
  type Deployable,
  type Probe,
} from './deployables.ts';
export {
  manifestSchema,
  manifestProblems,
  mcpUpstreamManifestSchema,
  type McpUpstreamManifest,
  upstreamAuthSchema,
  upstreamManifestSchema,
  upstreamsManifestSchema,
  type Manifest,
  type UpstreamManifest,
} from './manifest.ts';
