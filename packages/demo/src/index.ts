export {
  DEMO_INJECTION_TICKETS,
  DEMO_REFERENCE_DATE,
  DEMO_SEED,
  generateDemoData,
  type DemoData,
} from './generate.ts';
export { seedDemo, type DemoCounts, type SeedDemoOptions, type SeedDemoResult } from './seed.ts';

/** The demo customer: the one a customer-bound server's demo token sees (`C-1001`, the first of 50). */
export const DEMO_CUSTOMER = 'C-1001';
