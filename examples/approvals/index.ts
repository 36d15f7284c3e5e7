/**
 * The example flows module served by `baton serve examples/approvals`:
 * approvals (deploy, expense), release notes (roots + sampling with a
 * fallback) and single-use access codes (needs a ledger).
 */
import { grantTemporaryAccess, redeemAccessCode } from './accessCodes.js';
import { deployProduction } from './deployProduction.js';
import { expenseApproval } from './expenseApproval.js';
import { draftReleaseNotes } from './releaseNotes.js';

export { deployProduction, draftReleaseNotes, expenseApproval, grantTemporaryAccess, redeemAccessCode };
export default [deployProduction, expenseApproval, draftReleaseNotes, grantTemporaryAccess, redeemAccessCode];
