export {
  DEMO_INJECTION_TICKETS,
  DEMO_REFERENCE_DATE,
  DEMO_SEED,
  generateDemoData,
  type DemoData,
} from './generate.ts';
export { seedDemo, type DemoCounts, type SeedDemoOptions, type SeedDemoResult } from './seed.ts';
