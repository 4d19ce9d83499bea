import type { Browser, Page } from 'playwright-core';

/** A page of the approvers' console at `origin`, signed in with an approver token, on its approvals list. */
export async function signInToConsole(
  browser: Browser,
  origin: string,
  approverToken: string,
): Promise<Page> {
  const page = await browser.newPage();
  page.setDefaultTimeout(10_000);
  await page.goto(origin);
  await page.getByLabel('Approver token').fill(approverToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Waiting for approval' }).waitFor();
  return page;
}

/**
 * A person's decision in the console, in Chromium, as an approver makes it: the request opened from the
 * list, `shown` (when given) read on its page, the reason written, the button pressed, the outcome shown.
 */
export async function decideInConsole(
  page: Page,
  origin: string,
  decision: { id: string; verdict: 'approve' | 'reject'; reason: string; shown?: string },
): Promise<void> {
  await page.goto(`${origin}/`);
  await page.getByRole('link', { name: `Review and decide ${decision.id}` }).click();
  if (decision.shown) await page.getByText(decision.shown, { exact: false }).first().waitFor();
  await page.getByLabel('Reason').fill(decision.reason);
  await page
    .getByRole('button', { name: decision.verdict === 'approve' ? 'Approve and run' : 'Reject' })
    .click();
  await page.getByRole('status').waitFor();
}
