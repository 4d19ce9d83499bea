export {
  discoverDeployables,
  readDeployable,
  ManifestError,
  type Deployable,
  type Probe,
} from './deployables.ts';
