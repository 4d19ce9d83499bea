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
  upstreamAuthSchema,
  upstreamManifestSchema,
  upstreamsManifestSchema,
  type Manifest,
  type UpstreamManifest,
} from './manifest.ts';
