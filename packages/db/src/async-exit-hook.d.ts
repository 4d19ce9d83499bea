declare module 'async-exit-hook' {
  /** The parts of async-exit-hook that Bulkhead uses. */
  const hook: { unhookEvent(event: string): void; hookedEvents(): string[] };
  export default hook;
}
